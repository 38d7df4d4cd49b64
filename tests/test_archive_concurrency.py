"""Concurrency: 8 processes write 1,000 documents, each document by two of them, into one archive at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HANG_S

from measure.evidence.store import Store

REPO = Path(__file__).resolve().parent.parent
PROCESSES = 8
DOCUMENTS = 1000

# Each writer builds documents from their index alone, so two writers of the same index make
# identical bytes. Writer p stores every index i with i % 8 in (p, p+1 mod 8): each document is
# written by two processes, one walking forward and one backward, to make them collide.
WRITER = r"""
import json, sys
from measure.evidence.envelope import Evidence
from measure.evidence.store import Store
root, me, n, procs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
mine = [i for i in range(n) if i % procs in (me, (me + 1) % procs)]
if me % 2:
    mine.reverse()
docs = [Evidence(probe="step-scaling", probe_version=1, params={"doc": i},
                 data={"samples": [{"tokens": 128 * (k + 1), "step_s": 0.01 * (k + 1) + i * 1e-6} for k in range(8)]},
                 created_at="2026-11-29T08:00:00Z") for i in mine]
print("ready", flush=True)
sys.stdin.readline()  # wait for "go", so all eight write at the same time
store = Store(root)
print(json.dumps({str(i): store.put(d) for i, d in zip(mine, docs)}), flush=True)
"""


@pytest.mark.slow
def test_eight_writers_with_overlaps_store_all_1000_documents(archive):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(archive), str(p), str(DOCUMENTS), str(PROCESSES)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        for p in range(PROCESSES)
    ]
    for proc in procs:
        assert proc.stdout.readline() == "ready\n"
    for proc in procs:
        proc.stdin.write("go\n")
        proc.stdin.flush()
    reports = []
    for proc in procs:
        out, _ = proc.communicate(timeout=HANG_S)
        assert proc.returncode == 0
        reports.append(json.loads(out))

    ids_by_doc: dict[str, set[str]] = {}
    for report in reports:
        for doc, ident in report.items():
            ids_by_doc.setdefault(doc, set()).add(ident)
    assert len(ids_by_doc) == DOCUMENTS
    assert all(len(ids) == 1 for ids in ids_by_doc.values())  # both writers of a document agree on its id
    assert sum(len(r) for r in reports) == 2 * DOCUMENTS

    store = Store(archive)
    assert store.ids() == sorted(ident for ids in ids_by_doc.values() for ident in ids)
    assert store.verify() == []
    assert store.invalid() == []
    assert store.temp_files() == []
