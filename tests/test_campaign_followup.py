"""The optimizer-timing follow-up of a finished batch sweep on CPU through the local executor: what it inherits,
where its curves stop, the sweep's optimizer settings in both workers, both workers' evidence per point, a clean
audit, a failure blocking only its curve, and the refusals (an unfinished sweep, a spec given with the flag,
``--optimizer-mode captured`` over a CPU sweep)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

from measure.evidence.envelope import parse
from measure.evidence.store import Store
from probebook.campaign import receipts
from probebook.campaign.plan import load_manifest

pytestmark = pytest.mark.slow


def sweep_spec(path: Path) -> Path:
    doc = {
        "campaign": "tiny-sweep",
        "probe": "batch-sweep",
        # the optimizer settings the follow-up inherits (batch-sweep v3 takes the optimizer probe's)
        "config": {
            "device": "cpu",
            "warmup": 1,
            "windows": 2,
            "iters": 1,
            "clip": 0.5,
            "beta1": 0.85,
            "weight_decay": 0.05,
        },
        "grid": {"preset": ["tiny"], "context": [32, 64]},
        "walk": {"start_batch": 1, "max_tokens": 128},
        "executor": {"max_concurrent": 2, "point_timeout_s": 240, "grace_s": 60},
    }
    path.write_text(json.dumps(doc))  # JSON is YAML
    return path


@pytest.fixture(scope="module")
def followed(tmp_path_factory) -> tuple[Path, Path, str]:
    root = tmp_path_factory.mktemp("followup")
    sweep = root / "sweep"
    out = run_cli("campaign", "plan", str(sweep_spec(root / "spec.yaml")), "--output", str(sweep))
    assert out.returncode == 0, out.stderr
    out = run_cli("campaign", "run", str(sweep))
    assert out.returncode == 0, out.stderr
    follow = root / "opt"
    out = run_cli("campaign", "plan", "--optimizer-timing-from", str(sweep), "--output", str(follow))
    assert out.returncode == 0, out.stderr
    out = run_cli("campaign", "run", str(follow))
    assert out.returncode == 0, out.stderr
    return sweep, follow, out.stderr


def test_the_followup_inherits_the_sweep_and_stops_at_its_largest_fitting_batch(followed):
    sweep, follow, _log = followed
    sweep_id, sweep_doc = load_manifest(sweep)
    _ident, doc = load_manifest(follow)
    assert doc["data"]["kind"] == "optimizer-timing"
    assert doc["data"]["follows"] == sweep_id
    assert doc["params"]["name"] == "tiny-sweep-optimizer"
    assert doc["params"]["grid"] == sweep_doc["params"]["grid"]
    assert doc["params"]["executor"] == sweep_doc["params"]["executor"]
    # max_tokens 128: context 32 fits 1, 2, 4 and context 64 fits 1, 2 (the sweep's cap, no OOM)
    assert [(c["curve"], c["points"]) for c in doc["data"]["curves"]] == [
        ("tiny-s32", ["tiny-s32-b1", "tiny-s32-b2", "tiny-s32-b4"]),
        ("tiny-s64", ["tiny-s64-b1", "tiny-s64-b2"]),
    ]
    b4 = next(p for p in doc["data"]["points"] if p["key"] == "tiny-s32-b4")
    assert (b4["optimizer_config"]["batch"], b4["optimizer_config"]["seq_len"]) == (4, 32)
    assert b4["optimizer_config"]["windows"] == 2
    # the sweep's optimizer settings, never the optimizer probe's defaults (its clip is 1.0), and today's eager mode
    assert {k: b4["optimizer_config"][k] for k in ("clip", "beta1", "beta2", "weight_decay", "mode")} == {
        "clip": 0.5,
        "beta1": 0.85,
        "beta2": None,
        "weight_decay": 0.05,
        "mode": "eager",
    }
    assert doc["data"]["optimizer_mode"] == "eager"


def test_each_point_stores_its_baseline_and_instrumented_evidence_and_audits_clean(followed, tmp_path):
    _sweep, follow, _log = followed
    got = receipts.load_all(follow)
    assert sorted(got) == ["tiny-s32-b1", "tiny-s32-b2", "tiny-s32-b4", "tiny-s64-b1", "tiny-s64-b2"]
    store = Store(follow / "archive")
    for key, receipt in got.items():
        assert receipt["state"] == "ok", key
        result = receipt["result"]
        base = parse(store.read_bytes(result["baseline_evidence"]), result["baseline_evidence"])
        timed = parse(store.read_bytes(result["instrumented_evidence"]), result["instrumented_evidence"])
        assert base["probe"] == "batch-sweep" and base["data"]["samples"][0]["status"] == "ok"
        assert timed["probe"] == "optimizer" and timed["status"] == "complete"
        assert (timed["params"]["batch"], timed["params"]["seq_len"]) == (receipt["batch"], int(key[6:8]))
        assert 0 < result["optimizer_share"] < 1
        assert result["overhead_verdict"] == timed["data"]["summary"]["overhead_verdict"]  # optimizer v3's flag
        assert result["optimizer_mode"] == timed["params"]["mode"] == "eager"
        # both workers ran the sweep's optimizer settings
        assert timed["params"]["optimizer_settings"]["betas"][0] == 0.85
        assert timed["params"]["optimizer_settings"]["weight_decay"] == 0.05
        assert timed["data"]["summary"]["clip_max_norm"] == 0.5
        assert base["data"]["optimizer_settings"] == {**timed["params"]["optimizer_settings"], "clip_max_norm": 0.5}
    out = run_cli("--archive", str(tmp_path / "a"), "campaign", "audit", str(follow))
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout == ""


def test_a_curves_points_run_in_parallel(followed):
    _sweep, follow, _log = followed
    got = receipts.load_all(follow)
    a = got["tiny-s32-b1"]["attempts"][0]
    b = got["tiny-s32-b2"]["attempts"][0]
    # with max_concurrent 2 the second point of a curve goes out before the first has ended
    assert b["submitted_unix"] < a["ended_unix"]


def test_the_audit_catches_a_followup_receipt_naming_the_wrong_evidence(followed, tmp_path):
    import shutil

    _sweep, follow, _log = followed
    copy = tmp_path / "opt"
    shutil.copytree(follow, copy)
    receipt = json.loads((copy / "receipts" / "tiny-s64-b2.json").read_text())
    other = json.loads((copy / "receipts" / "tiny-s64-b1.json").read_text())
    receipt["result"]["instrumented_evidence"] = other["result"]["instrumented_evidence"]
    (copy / "receipts" / "tiny-s64-b2.json").write_text(json.dumps(receipt))
    out = run_cli("--archive", str(tmp_path / "a"), "campaign", "audit", str(copy))
    assert out.returncode == 1
    assert out.stdout.splitlines() == ["point tiny-s64-b2: its instrumented evidence timed batch 1 seq_len 64"]


def test_an_unfinished_sweep_or_a_spec_with_the_flag_is_refused(followed, tmp_path):
    sweep, _follow, _log = followed
    fresh = tmp_path / "fresh"
    assert run_cli("campaign", "plan", str(sweep_spec(tmp_path / "s.yaml")), "--output", str(fresh)).returncode == 0
    out = run_cli("campaign", "plan", "--optimizer-timing-from", str(fresh), "--output", str(tmp_path / "o"))
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert f"{fresh}: curve tiny-s32 is ready; finish the sweep before its follow-up" in out.stderr
    assert not (tmp_path / "o").exists()
    out = run_cli("campaign", "plan", "x.yaml", "--optimizer-timing-from", str(sweep), "--output", str(tmp_path / "p"))
    assert out.returncode != 0
    assert "give --output DIR and no spec (it inherits the sweep's)" in out.stderr


def test_the_combined_report_joins_the_pair_and_records_its_inputs(followed, tmp_path):
    sweep, follow, _log = followed
    output = tmp_path / "report.json"
    args = ["--archive", str(tmp_path / "a"), "campaign", "report", "--throughput", str(sweep)]
    out = run_cli(*args, "--optimizer", str(follow), "--output", str(output))
    assert out.returncode == 0, out.stderr
    report = json.loads(output.read_text())
    assert report["id"] == out.stdout.strip()
    assert report["params"]["inputs"] == [
        {"throughput": load_manifest(sweep)[0], "optimizer": load_manifest(follow)[0]}
    ]
    rows = report["data"]["samples"]
    assert [(r["curve"], r["batch"]) for r in rows] == [
        ("tiny-s32", 1),
        ("tiny-s32", 2),
        ("tiny-s32", 4),
        ("tiny-s64", 1),
        ("tiny-s64", 2),
    ]
    sweep_got, opt_got = receipts.load_all(sweep), receipts.load_all(follow)
    assert rows[2]["throughput_evidence"] == sweep_got["tiny-s32-b4"]["evidence"]
    assert rows[2]["optimizer_evidence"] == opt_got["tiny-s32-b4"]["result"]["instrumented_evidence"]
    assert rows[2]["tok_s"] == sweep_got["tiny-s32-b4"]["result"]["tok_s"]
    before = output.read_bytes()
    again = run_cli(*args, "--optimizer", str(follow), "--output", str(output))
    assert again.returncode != 0 and "Traceback" not in again.stderr
    assert f"{output}: exists (an audited report is written once); write to a new file" in again.stderr
    assert output.read_bytes() == before


def test_the_combined_report_refuses_overlapping_contexts_and_incomplete_grids(followed, tmp_path):
    import shutil

    sweep, follow, _log = followed
    base = ["--archive", str(tmp_path / "a"), "campaign", "report", "--output", str(tmp_path / "r.json")]
    out = run_cli(*base, "--throughput", str(sweep), "--optimizer", str(follow), "--throughput", str(sweep))
    assert out.returncode != 0
    assert "2 --throughput and 1 --optimizer campaigns; they pair by order, one each" in out.stderr
    pair = ["--throughput", str(sweep), "--optimizer", str(follow)]
    out = run_cli(*base, *pair, *pair)
    assert out.returncode != 0
    assert f"{sweep}: curve tiny-s32 of pair 2 is also in pair 1: the contexts overlap" in out.stderr
    # a follow-up with a point's receipt gone: its curve is not finished, so the grid is incomplete
    partial = tmp_path / "opt"
    shutil.copytree(follow, partial)
    (partial / "receipts" / "tiny-s64-b2.json").unlink()
    out = run_cli(*base, "--throughput", str(sweep), "--optimizer", str(partial))
    assert out.returncode != 0
    assert f"{partial}: curve tiny-s64 is ready: the grid is incomplete" in out.stderr
    assert not (tmp_path / "r.json").exists()


def test_an_unexpected_oom_in_the_followup_blocks_only_its_curve(tmp_path):
    from conftest import REPO

    plugins = str(Path(__file__).resolve().parent / "fixtures" / "measure_plugins")
    oom = tmp_path / "oom-now"
    env = {"PYTHONPATH": f"{plugins}:{REPO}", "TOY_HARNESS_OOM": str(oom)}
    spec = json.loads(sweep_spec(tmp_path / "spec.yaml").read_text())
    spec["config"]["workload"] = "toy_harness:ooms_at_batch_2"
    (tmp_path / "spec.yaml").write_text(json.dumps(spec))
    sweep, follow = tmp_path / "sweep", tmp_path / "opt"
    assert run_cli("campaign", "plan", str(tmp_path / "spec.yaml"), "--output", str(sweep), env=env).returncode == 0
    out = run_cli("campaign", "run", str(sweep), env=env)
    assert out.returncode == 0, out.stderr  # the sweep fits batch 2 and 4
    out = run_cli("campaign", "plan", "--optimizer-timing-from", str(sweep), "--output", str(follow), env=env)
    assert out.returncode == 0, out.stderr
    oom.touch()
    out = run_cli("campaign", "run", str(follow), "--max-concurrent", "1", env=env)
    assert out.returncode == 1
    got = receipts.load_all(follow)
    assert {k: r["state"] for k, r in got.items()} == {
        "tiny-s32-b1": "ok",
        "tiny-s32-b2": "failed",
        "tiny-s64-b1": "ok",
        "tiny-s64-b2": "failed",
    }
    assert got["tiny-s32-b2"]["attempts"][0]["error"].startswith(
        "unexpected OOM at batch 2 (the sweep fit it): MemoryError: simulated: out of memory at batch 2"
    )
    assert "2 curve(s) blocked by a failed point (tiny-s32, tiny-s64)" in out.stderr


def test_presets_selects_curves_records_the_selection_and_refuses_an_unmeasured_preset(followed, tmp_path):
    sweep, _follow, _log = followed
    part = tmp_path / "part"
    out = run_cli("campaign", "plan", "--optimizer-timing-from", str(sweep), "--presets", "tiny", "--output", str(part))
    assert out.returncode == 0, out.stderr
    _ident, doc = load_manifest(part)
    assert doc["data"]["presets"] == ["tiny"]
    assert [c["curve"] for c in doc["data"]["curves"]] == ["tiny-s32", "tiny-s64"]
    out = run_cli(
        "campaign", "plan", "--optimizer-timing-from", str(sweep), "--presets", "20m", "--output", str(tmp_path / "x")
    )
    assert out.returncode == 2
    assert out.stderr.strip().splitlines()[-1].endswith("--presets 20m: the sweep measured only tiny")
    assert not (tmp_path / "x").exists()
    out = run_cli("campaign", "plan", str(tmp_path / "spec.yaml"), "--presets", "tiny", "--output", str(tmp_path / "y"))
    assert out.returncode == 2 and "only with --optimizer-timing-from" in out.stderr


def test_captured_mode_over_a_cpu_sweep_is_refused_at_plan_time_and_writes_nothing(followed, tmp_path):
    sweep, _follow, _log = followed
    folder = tmp_path / "captured"
    out = run_cli(
        "campaign",
        "plan",
        "--optimizer-timing-from",
        str(sweep),
        "--optimizer-mode",
        "captured",
        "--output",
        str(folder),
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].endswith(
        f"{sweep}: --optimizer-mode captured: the sweep ran on the CPU and captured mode replays a CUDA graph; "
        "use --optimizer-mode eager"
    )
    assert not folder.exists()
    out = run_cli("campaign", "plan", str(tmp_path / "s.yaml"), "--optimizer-mode", "eager", "--output", str(folder))
    assert out.returncode == 2 and "--optimizer-mode: only with --optimizer-timing-from" in out.stderr
