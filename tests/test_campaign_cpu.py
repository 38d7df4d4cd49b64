"""Campaigns end to end on CPU with submitit's local executor: plan, run, status, collect, audit; a SIGKILLed
runner resumed; a failing point blocking its curve until --retry-failed; the audit catching tampering."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import HANG_S, REPO, run_cli

from measure.evidence.envelope import MEASURED, parse
from measure.evidence.store import Store
from probebook.campaign import receipts

PLUGINS = str(Path(__file__).resolve().parent / "fixtures" / "measure_plugins")
pytestmark = pytest.mark.slow


def write_spec(path: Path, contexts: list[int], max_tokens: int, config: dict | None = None, **executor) -> Path:
    cfg = {"device": "cpu", "warmup": 1, "windows": 2, "iters": 1, **(config or {})}
    doc = {
        "campaign": "tiny-cpu",
        "probe": "batch-sweep",
        "config": cfg,
        "grid": {"preset": ["tiny"], "context": contexts},
        "walk": {"start_batch": 1, "max_tokens": max_tokens},
        "executor": {"max_concurrent": 2, "point_timeout_s": 240, "grace_s": 60, **executor},
    }
    path.write_text(json.dumps(doc))  # JSON is YAML
    return path


def ok(out: subprocess.CompletedProcess[str], rc: int = 0) -> str:
    assert out.returncode == rc, out.stdout + out.stderr
    return out.stdout


def attempts(folder: Path) -> dict[str, list[dict]]:
    return {k: r["attempts"] for k, r in receipts.load_all(folder).items()}


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> tuple[Path, Path, str]:
    """A planned, run and collected tiny campaign: two curves (context 32: batches 1, 2; context 64: batch 1)."""
    root = tmp_path_factory.mktemp("campaign")
    spec = write_spec(root / "spec.yaml", [32, 64], 64)
    folder, archive = root / "c", root / "archive"
    manifest = ok(run_cli("campaign", "plan", str(spec), "--output", str(folder))).strip()
    ok(run_cli("campaign", "run", str(folder)))
    collected = ok(run_cli("--archive", str(archive), "campaign", "collect", str(folder))).strip()
    assert Store(archive).get(manifest)["probe"] == "campaign-plan"
    return folder, archive, collected


def test_tiny_campaign_end_to_end(finished):
    folder, archive, collected = finished
    got = receipts.load_all(folder)
    assert {k: r["state"] for k, r in got.items()} == {"tiny-s32-b1": "ok", "tiny-s32-b2": "ok", "tiny-s64-b1": "ok"}
    assert all(len(r["attempts"]) == 1 and r["attempts"][0]["job_id"] for r in got.values())
    doc = Store(archive).get(collected)
    assert doc["probe"] == "campaign" and doc["status"] == "complete"
    assert sorted((r["context"], r["batch"]) for r in doc["data"]["samples"]) == [(32, 1), (32, 2), (64, 1)]
    for point in doc["data"]["points"]:  # each point's own evidence came along, hash-checked
        assert Store(archive).get(point["evidence"])["data"]["samples"][0]["status"] == "ok"
    from render.charts import draw as charts
    from render.derive import batchsweep
    from render.tables import kinds

    # render reads the campaign document as batch-sweep evidence: summaries, table, both charts
    assert {g.context for g in batchsweep.summarize(doc["data"]["samples"])} == {32, 64}
    assert "tiny" in kinds.render("batch-sweep", [doc]).markdown
    assert "peak device memory" in charts.render("batch-sweep", [doc], y="peak_bytes").alt
    assert "tokens per second" in charts.render("batch-sweep", [doc], model="tiny").alt
    status = ok(run_cli("campaign", "status", str(folder)))
    assert "tiny-s32" in status and "2/2 curves done, 3 points measured" in status
    watched = ok(run_cli("campaign", "status", str(folder), "--watch"))  # every curve done: it returns at once
    assert "2/2 curves done" in watched
    as_json = json.loads(ok(run_cli("campaign", "status", str(folder), "--json")))
    assert [(c["curve"], c["state"], c["measured"]) for c in as_json] == [
        ("tiny-s32", "cap", 2),
        ("tiny-s64", "cap", 1),
    ]
    audited = run_cli("--archive", str(archive), "campaign", "audit", str(folder), "--json")
    assert audited.returncode == 0, audited.stderr
    assert json.loads(audited.stdout)["findings"] == [] and json.loads(audited.stdout)["counts"]["curves"] == 2
    out = run_cli("--archive", str(archive), "campaign", "audit", str(folder))
    assert out.returncode == 0 and out.stdout == "", out.stdout + out.stderr
    verdict = Store(archive).get(out.stderr.strip().split()[-1])
    assert verdict["data"]["verdict"] == "clean" and verdict["data"]["rows_checked"] == 3
    again = run_cli("campaign", "run", str(folder))
    assert again.returncode == 2 and "add --resume" in again.stderr
    resumed = run_cli("campaign", "run", str(folder), "--resume")  # nothing left: nothing submitted
    assert resumed.returncode == 0 and "submitted" not in resumed.stderr
    replan = run_cli("campaign", "plan", str(folder.parent / "spec.yaml"), "--output", str(folder))
    assert replan.returncode == 2 and "frozen" in replan.stderr


def tampered(finished, tmp_path: Path, change) -> list[str]:
    folder, _archive, _ = finished
    copy = tmp_path / "c"
    shutil.copytree(folder, copy)
    change(copy)
    out = run_cli("--archive", str(tmp_path / "a"), "campaign", "audit", str(copy))
    assert out.returncode == 1, out.stdout + out.stderr
    return out.stdout.splitlines()


def edit(folder: Path, key: str, **fields) -> None:
    path = receipts.path(folder, key)
    receipt = json.loads(path.read_text())
    for name, value in fields.items():
        target = receipt
        *parents, last = name.split("__")
        for part in parents:
            target = target[part]
        target[last] = value
    path.write_text(json.dumps(receipt))


def test_audit_catches_a_tampered_receipt(finished, tmp_path):
    lines = tampered(finished, tmp_path, lambda c: edit(c, "tiny-s32-b2", result__tok_s=1e9))
    assert lines == ["point tiny-s32-b2: receipt tok_s 1000000000.0 != evidence " + lines[0].split("evidence ")[1]]
    assert "(tampered receipt?)" in lines[0]


def test_audit_catches_a_non_contiguous_boundary(finished, tmp_path):
    lines = tampered(finished, tmp_path, lambda c: receipts.path(c, "tiny-s32-b1").unlink())
    assert lines == ["curve tiny-s32: batch 1 has no receipt but larger batches do (non-contiguous walk)"]


def test_audit_catches_a_tampered_evidence_file(finished, tmp_path):
    def change(copy: Path) -> None:
        ident = receipts.load_all(copy)["tiny-s64-b1"]["evidence"]
        path = Store(copy / "archive").path_for(ident[7:])
        path.chmod(0o644)
        path.write_bytes(path.read_bytes().replace(b'"status":"ok"', b'"status":"OK"'))

    lines = tampered(finished, tmp_path, change)
    assert len(lines) == 1 and lines[0].startswith("point tiny-s64-b1: ") and "changed after writing" in lines[0]


def test_a_failing_point_blocks_its_curve_until_retried(tmp_path):
    healed = tmp_path / "healed"
    env = {"PYTHONPATH": f"{PLUGINS}:{REPO}", "TOY_HARNESS_HEALED": str(healed)}
    spec = write_spec(tmp_path / "spec.yaml", [32, 64], 64, {"workload": "toy_harness:fails_at_batch_2"})
    folder = tmp_path / "c"
    ok(run_cli("campaign", "plan", str(spec), "--output", str(folder), env=env))
    out = run_cli("campaign", "run", str(folder), env=env)
    assert out.returncode == 1 and "blocked by a failed point (tiny-s32)" in out.stderr, out.stderr
    got = receipts.load_all(folder)
    assert {k: r["state"] for k, r in got.items()} == {
        "tiny-s32-b1": "ok",
        "tiny-s32-b2": "failed",
        "tiny-s64-b1": "ok",
    }
    assert "lost its data shard at batch 2" in got["tiny-s32-b2"]["attempts"][0]["error"]
    blocked = run_cli("campaign", "run", str(folder), "--resume", env=env)  # no retry asked: nothing runs
    assert blocked.returncode == 1 and "submitted" not in blocked.stderr
    # the failure was not an OOM: claiming it was is caught
    lines = tampered((folder, None, None), tmp_path / "t", lambda c: edit(c, "tiny-s32-b2", state="oom"))
    assert lines[0].startswith("point tiny-s32-b2: recorded as OOM but its evidence records a failure: ")
    healed.touch()
    before = attempts(folder)
    out = run_cli("campaign", "run", str(folder), "--resume", "--retry-failed", env=env)
    assert out.returncode == 0, out.stderr
    after = attempts(folder)
    assert after["tiny-s32-b1"] == before["tiny-s32-b1"] and after["tiny-s64-b1"] == before["tiny-s64-b1"]
    assert [a["state"] for a in after["tiny-s32-b2"]] == ["failed", "ok"]
    ok(run_cli("--archive", str(tmp_path / "a"), "campaign", "audit", str(folder), env=env))


def test_sigkilled_runner_resumes_without_losing_or_repeating_a_point(tmp_path):
    spec = write_spec(tmp_path / "spec.yaml", [32], 128, max_concurrent=1)
    folder = tmp_path / "c"
    ok(run_cli("campaign", "plan", str(spec), "--output", str(folder)))
    runner = subprocess.Popen(
        [sys.executable, "-m", "probebook", "campaign", "run", str(folder)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 600
    while time.time() < deadline:  # kill it while batch 2 is in flight, after batch 1 settled
        got = receipts.load_all(folder)
        if got.get("tiny-s32-b2", {}).get("state") == "submitted":
            break
        time.sleep(0.2)
    runner.send_signal(signal.SIGKILL)
    runner.wait()
    killed = attempts(folder)
    assert killed["tiny-s32-b1"][0]["state"] == "ok" and killed["tiny-s32-b2"][0]["state"] == "submitted"
    out = run_cli("campaign", "run", str(folder), "--resume", timeout=HANG_S)
    assert out.returncode == 0, out.stderr
    assert f"job {killed['tiny-s32-b2'][0]['job_id']} from an earlier run is" in out.stderr
    final = attempts(folder)
    assert {k: len(v) for k, v in final.items()} == {"tiny-s32-b1": 1, "tiny-s32-b2": 1, "tiny-s32-b4": 1}
    assert final["tiny-s32-b2"][0]["job_id"] == killed["tiny-s32-b2"][0]["job_id"]  # the same job, not a new one
    assert all(v[0]["state"] == "ok" for v in final.values())
    for v in final.values():  # each point's evidence exists once and is its own
        doc = parse(Store(folder / "archive").read_bytes(v[0]["evidence"]), "point")
        assert doc["status"] in MEASURED  # complete, or unstable: a loaded CPU's tiny steps are noisy
