"""Crash safety and tampering: SIGKILL writers at random moments (200+ times), flip bytes in 50 stored files."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import HANG_S

from measure.evidence.envelope import Evidence, digest
from measure.evidence.store import Store

REPO = Path(__file__).resolve().parent.parent
KILLS = 200

# A writer that stores new documents as fast as it can until it is killed. Documents are
# ~6 kB so a kill often lands inside the write/fsync/link sequence rather than between puts.
WRITER = r"""
import sys
from measure.evidence.envelope import Evidence
from measure.evidence.store import Store
store, worker = Store(sys.argv[1]), int(sys.argv[2])
print("ready", flush=True)
i = 0
while True:
    store.put(Evidence(probe="step-scaling", probe_version=1, params={"worker": worker, "i": i},
                       data={"samples": [{"tokens": 128 * (k + 1), "step_s": 0.001 * (k + 1)} for k in range(150)]},
                       created_at="2026-11-29T08:00:00Z"))
    i += 1
"""


def _kill_one_writer(root: Path, worker: int, delay_s: float) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(root), str(worker)],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert proc.stdout.readline() == b"ready\n"
        time.sleep(delay_s)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=HANG_S)
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL


@pytest.mark.slow
def test_sigkilled_writers_leave_only_verifiable_files_and_ignorable_temps(archive, cli):
    rng = random.Random(20261129)
    delays = [rng.uniform(0.0, 0.04) for _ in range(KILLS)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(lambda job: _kill_one_writer(archive, *job), enumerate(delays)))

    store = Store(archive)
    ids = store.ids()
    temps = store.temp_files()
    assert len(ids) > KILLS  # the writers did get work done between kills
    # no file under a final name fails verification, and each is complete, valid evidence
    assert store.verify() == []
    assert store.invalid() == []
    # every reader ignores the leftovers (a kill between create and unlink leaves one; in trials
    # on a 2-core ext4 machine about 40% of kills did, so none at all means the kills missed)
    assert temps and all(p.name.startswith(".tmp-") for p in temps)
    ls = cli("--archive", str(archive), "archive", "ls", "--json")
    assert ls.returncode == 0 and ls.stderr == ""
    assert sorted(r["id"] for r in json.loads(ls.stdout)) == ids
    assert cli("--archive", str(archive), "archive", "show", ids[-1][:19]).returncode == 0
    # and `verify --clean` removes them
    out = cli("--archive", str(archive), "archive", "verify", "--clean")
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"{len(temps)} temp file(s) removed" in out.stdout
    assert out.stdout.splitlines()[-1] == f"ok: {len(ids)} evidence file(s) match their names"
    assert store.temp_files() == [] and store.ids() == ids


def test_tamper_verify_names_exactly_the_50_flipped_files(archive, cli):
    store = Store(archive)
    for i in range(120):
        store.put(
            Evidence(
                probe="step-scaling",
                probe_version=1,
                params={"i": i},
                data={"samples": [{"tokens": 128, "step_s": 0.5 + i}]},
                created_at="2026-11-29T08:00:00Z",
            )
        )
    rng = random.Random(50)
    paths = list(store.iter_paths())
    victims = rng.sample(paths, 50)
    expected = {}
    for path in victims:
        raw = bytearray(path.read_bytes())
        raw[rng.randrange(len(raw))] ^= 1 << rng.randrange(8)  # flip one bit of one byte
        os.chmod(path, 0o644)
        path.write_bytes(bytes(raw))
        expected[str(path)] = (f"sha256:{path.parent.name}{path.name[:-5]}", digest(bytes(raw)))
    out = cli("--archive", str(archive), "archive", "verify")
    assert out.returncode == 1
    reported = {}
    for line in out.stdout.splitlines():
        if line.startswith("MISMATCH "):
            where, rest = line[len("MISMATCH ") :].split(": expected ")
            exp, act = rest.split(", actual ")
            reported[where] = (exp, act)
    assert reported == expected
    assert out.stderr.splitlines()[0] == "probebook: 50 of 120 evidence file(s) do not match their names"
