"""probebook remeasure: a record's twins collapse into one queue entry, an entry is done once the archive holds
session-design evidence of its key on the card (a real CPU run), run skips what a tiny --hard-s leaves no time
for, and bad input is one line with exit 2; all through real CLI processes on a temp archive and docs tree."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, run_cli, run_cli_here

from measure.evidence.configkey import card_of
from measure.evidence.envelope import canonical_bytes
from measure.evidence.reading import parse_archived
from measure.evidence.store import Store

# slow: every test here reads the one real three-session CPU probe run (about 10 s of CPU), end to end
pytestmark = pytest.mark.slow

RECORD = """---
title: A record citing one configuration twice and another once
version: 1
date: 2026-12-07
evidence:
  run: {run}
  run_again: {again}
  other: {other}
---
The queue's fixture record.
"""


@pytest.fixture(scope="module")
def session_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict]:
    """One real three-session CPU run of the optimizer probe: (its archive, its id, its document)."""
    new = tmp_path_factory.mktemp("session") / "archive"
    argv = [sys.executable, "-m", "measure", "--archive", str(new), "optimizer", "--preset", "tiny", "--device"]
    argv += ["cpu", "--sessions", "3", "--batch", "1", "--seq-len", "16", "--warmup", "1", "--windows", "2"]
    done = subprocess.run(
        [*argv, "--quiet"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=300,
    )
    assert done.returncode in (0, 1), done.stderr  # 1: stored unstable on a busy CPU, still measured
    ident = done.stdout.strip().splitlines()[-1]
    return new, ident, parse_archived(Store(new).read_bytes(ident), ident)


def _cited(doc: dict, created: str, **params: object) -> bytes:
    """A one-session document of ``doc``'s run (what a record cited before the session design), params changed."""
    older = copy.deepcopy(doc)
    older["params"].update(params)
    older["created_at"] = created
    return canonical_bytes(older)


@pytest.fixture
def site(tmp_path: Path, session_run: tuple[Path, str, dict]) -> tuple[Path, Path, str]:
    """(docs, archive, card): a record citing ``run`` and ``run_again`` (one key, other effort) and ``other``."""
    _new, _ident, doc = session_run
    archive, docs = tmp_path / "archive", tmp_path / "docs"
    store = Store(archive)
    run = store.put_bytes(_cited(doc, "2026-12-01T00:00:00Z", sessions=1, windows=5))
    again = store.put_bytes(_cited(doc, "2026-12-02T00:00:00Z", sessions=1, windows=7, iters=2))
    other = store.put_bytes(_cited(doc, "2026-12-03T00:00:00Z", sessions=1, batch=2))
    (docs / "records" / "twins").mkdir(parents=True)
    (docs / "index.md").write_text("---\ntitle: Queue fixture\n---\nThe queue's fixture site.\n")
    (docs / "records" / "twins" / "v1.md").write_text(RECORD.format(run=run, again=again, other=other))
    return docs, archive, card_of(doc["machine"])


def _entries(stdout: str) -> list[list[str]]:
    return [line.split() for line in stdout.splitlines() if line.split()[:1] in (["pending"], ["done"])]


def test_twins_are_one_entry_and_session_evidence_of_the_key_marks_it_done(site, session_run) -> None:
    docs, archive, card = site
    args = ("--archive", str(archive), "remeasure", "list", "--docs", str(docs), "--card", card, "--device", "cpu")
    before = run_cli(*args)
    assert before.returncode == 0, before.stderr
    rows = _entries(before.stdout)
    assert [(r[0], r[1]) for r in rows] == [("pending", "twins/other"), ("pending", "twins/run+run_again")]
    assert "twins v1: 2 entries: 2 pending" in before.stdout
    assert "records that wait: twins (2)" in before.stdout
    command = next(line for line in before.stdout.splitlines() if "twins/run+run_again" in line)
    # the recorded effort is dropped, so today's defaults apply, and three sessions are asked for
    assert "--windows" not in command and "--warmup" not in command and "--sessions 3 --device cpu" in command

    new, ident, _doc = session_run
    Store(archive).put_bytes(Store(new).read_bytes(ident))
    after = run_cli(*args)
    assert after.returncode == 0, after.stderr
    rows = _entries(after.stdout)
    assert [(r[0], r[1]) for r in rows] == [("pending", "twins/other"), ("done", "twins/run+run_again")]
    assert f"(by {ident[:19]})" in after.stdout
    assert "twins v1: 2 entries: 1 done, 1 pending" in after.stdout

    other_card = run_cli_here(*args[:-4], "--card", "NVIDIA H200")  # the same evidence says nothing of another card
    assert [r[0] for r in _entries(other_card.stdout)] == ["pending", "pending"]
    as_json = json.loads(run_cli_here(*args, "--json").stdout)
    assert [(e["aliases"], e["status"]) for e in as_json["entries"]] == [
        (["other"], "pending"),
        (["run", "run_again"], "done"),
    ]


def test_run_with_a_tiny_budget_starts_nothing_and_says_what_waits(site, tmp_path: Path) -> None:
    docs, archive, card = site
    out, log = tmp_path / "lease" / "archive", tmp_path / "lease" / "log.tsv"
    r = run_cli(
        "--archive", str(archive), "remeasure", "run", "--docs", str(docs), "--card", card, "--device", "cpu",
        "--hard-s", "5", "--out", str(out), "--log", str(log),
    )  # fmt: skip
    assert r.returncode == 3, r.stderr  # entries still pending: resume in the next lease
    skips = [line for line in r.stdout.splitlines() if line.startswith("skip ")]
    assert len(skips) == 2 and all("left of --hard-s 5 (< 20 s)" in line for line in skips)
    assert "waits: pending twins/other" in r.stdout and "2 pending" in r.stdout
    assert not log.exists() and not list(out.rglob("*.json"))  # nothing ran, nothing stored


def test_bad_input_is_one_line_and_exit_2(site, tmp_path: Path) -> None:
    docs, archive, _card = site
    unknown = run_cli("--archive", str(archive), "remeasure", "--docs", str(docs), "--records", "nope")
    assert unknown.returncode == 2
    assert unknown.stderr.strip().count("\n") == 0 and "--records nope: no such current record" in unknown.stderr
    missing = run_cli_here("--archive", str(tmp_path / "none"), "remeasure", "list", "--docs", str(docs))
    assert missing.returncode == 2 and "no such archive folder" in missing.stderr
    assert missing.stderr.strip().count("\n") == 0
    budget = run_cli_here(
        "--archive",
        str(archive),
        "remeasure",
        "run",
        "--docs",
        str(docs),
        "--hard-s",
        "0",
        "--out",
        str(tmp_path / "o"),
    )
    assert budget.returncode == 2 and "--hard-s 0: give a positive number" in budget.stderr
