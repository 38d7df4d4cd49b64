"""probebook reproduce end to end on the CPU: the fixture record re-measured with real probe runs through the campaign
machinery, stopped at its budget and resumed without re-running a finished run, then compared: a flipped claim and a
number outside its uncertainty, archived as a verifiable reproduction document."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from measure.evidence.store import Store

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "reproduce"
sys.path.insert(0, str(FIXTURE))
from make_fixtures import SHORT_SLEEP_S  # noqa: E402

LAYOUT = {
    "record", "version", "title", "mode", "original", "new", "rule", "numbers", "claims", "summary", "commands",
    "campaign_commands", "wall_s",
}  # fmt: skip
NUMBER = {
    "key", "label", "old", "new", "old_low", "old_high", "new_low", "new_high", "unit", "shown_old", "shown_new",
    "change", "verdict", "reason", "basis", "outcome", "judged_by", "effect", "effect_low", "effect_high", "delta",
}  # fmt: skip


@pytest.mark.slow
def test_reproduce_remeasures_resumes_and_finds_the_flipped_claim(cli, tmp_path: Path) -> None:
    archive, folder = tmp_path / "archive", tmp_path / "run"
    shutil.copytree(FIXTURE / "archive", archive)
    env = {
        "PYTHONPATH": os.pathsep.join([str(REPO), str(FIXTURE / "plugins")]),
        "PROBEBOOK_TEST_SLEEP_S": SHORT_SLEEP_S,  # the original ran with a long sleep
    }
    args = ["--archive", str(archive), "reproduce", "sleepy-step", "--docs", str(FIXTURE / "docs")]
    args += ["--workload", "sleepy:factory", "--workload", "sleepy:fixed"]  # the plug-ins its evidence names
    args += ["--folder", str(folder), "--json"]
    # a budget spent once the first run is submitted: it finishes, the second waits (exit 3)
    first = cli(*args, "--budget-s", "0.5", env=env, timeout=300)
    assert first.returncode == 3, first.stderr
    assert "stopped at the budget; run the same command again to resume" in first.stderr
    receipts = {p.stem: json.loads(p.read_text()) for p in (folder / "receipts").glob("*.json")}
    assert list(receipts) == ["reference"] and receipts["reference"]["state"] == "ok"
    done = receipts["reference"]["evidence"]

    second = cli(*args, env=env, timeout=300)
    assert second.returncode == 0, second.stderr
    receipts = {p.stem: json.loads(p.read_text()) for p in (folder / "receipts").glob("*.json")}
    assert sorted(receipts) == ["reference", "sweep"]
    assert len(receipts["reference"]["attempts"]) == 1 and receipts["reference"]["evidence"] == done  # not re-run
    assert len(receipts["sweep"]["attempts"]) == 1

    data = json.loads(second.stdout)
    ident = data.pop("evidence")
    assert set(data) == LAYOUT and all(set(n) == NUMBER for n in data["numbers"])
    assert data["mode"] == "reproduction" and data["new"] == {"reference": done, "sweep": receipts["sweep"]["evidence"]}
    assert len(data["commands"]) == 2 and all(c.startswith("probebook measure step-scaling ") for c in data["commands"])
    by_label = {n["label"]: n for n in data["numbers"]}
    moved = by_label["Fixed part of the sleeping step"]
    # the fixed part is a time: judged by where a new session lands, from the sessions this archive holds of it
    assert moved["judged_by"] == "across sessions" and moved["change"] < -0.5
    assert (moved["verdict"] == "outside") == (moved["new"] < moved["old_low"])
    assert moved["unit"] == "s" and moved["shown_old"].endswith("ms")
    [claim] = [c for c in data["claims"] if c["text"] == "the sleeping step takes longer than the reference step"]
    assert (claim["old"], claim["new"], claim["verdict"]) == (True, False, "flipped")
    assert data["summary"]["flipped"] == 1

    stored = Store(archive)
    doc = stored.get(ident)
    assert doc["probe"] == "reproduction" and doc["data"] == data and doc["machine"]["gpu"] is None
    assert {done, receipts["sweep"]["evidence"]} <= set(stored.ids())  # the new runs are evidence beside it
    verify = cli("--archive", str(archive), "archive", "verify")
    assert verify.returncode == 0, verify.stdout + verify.stderr

    # the two-machine path: the measuring half (here: nothing left to run), then --with the folder it filled
    measured = cli(*args[:-1], "--measure-only", env=env, timeout=300)
    assert measured.returncode == 0, measured.stderr
    shown = [ln for ln in measured.stdout.splitlines() if ln.startswith(("# ", "probebook measure "))]
    assert sum(ln.startswith("probebook measure step-scaling ") for ln in shown) == 2  # printed before running
    ids = [ln for ln in measured.stdout.splitlines() if ln not in shown]
    assert " ".join(ids).split() == ["reference", done, "sweep", receipts["sweep"]["evidence"]]
    matched = cli(*args[:6], "--with", str(folder), "--json", env=env, timeout=300)  # paired by its manifest
    assert matched.returncode == 0, matched.stderr
    again = json.loads(matched.stdout)
    assert again["mode"] == "reproduction" and again["new"] == data["new"]
    assert [n["verdict"] for n in again["numbers"]] == [n["verdict"] for n in data["numbers"]]
    assert again["claims"] == data["claims"] and again["commands"] == []

    # compared again from the earlier reproduction's runs, as it paired them (after the code changed, say)
    redone = cli(*args[:6], "--with", ident, "--json", env=env, timeout=300)
    assert redone.returncode == 0, redone.stderr
    third = json.loads(redone.stdout)
    assert third["new"] == data["new"] and third["mode"] == "reproduction" and third["claims"] == data["claims"]
    assert [n["verdict"] for n in third["numbers"]] == [n["verdict"] for n in data["numbers"]]
    assert Store(archive).get(third["evidence"])["params"]["with"] == ident
    wrong = cli(*args[:6], "--with", done, env=env, timeout=300)  # a step-scaling run, not a reproduction
    assert wrong.returncode != 0 and "not a reproduction" in wrong.stderr and "Traceback" not in wrong.stderr
