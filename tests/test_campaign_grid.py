"""Grid campaigns of any probe: the spec's grid checked against the probe's Config (a bad probe or option is one
line, exit 2, nothing written), each combination one point whose recorded command rebuilds its config, and plan,
run (submitit's local executor), status, resume, collect and audit of a real gemm grid on CPU."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
from pathlib import Path

import pytest
from conftest import run_cli

from measure.errors import ProbebookError
from measure.evidence.store import Store
from probebook.campaign import receipts, spec
from probebook.reproduce.commands import build_config

# a gemm run this small takes a few seconds on CPU (16 tokens, one window of one call)
CONFIG = {"device": "cpu", "preset": "tiny", "warmup": 0, "windows": 1, "iters": 1, "tokens": 16, "window_s": 0.001}
BASE = {
    "campaign": "gemm-grid",
    "probe": "gemm",
    "config": CONFIG,
    "grid": {"square": [16, 32]},
    "executor": {"max_concurrent": 2, "point_timeout_s": 240, "grace_s": 60},
}


def test_each_combination_is_one_point_in_grid_order():
    doc = {**BASE, "grid": {"square": [16, 32], "gemm_dtype": ["auto", "fp32"]}}
    points = spec.points(spec.parse(doc, "s.yaml"))
    assert [p["key"] for p in points] == ["p0-16-auto", "p1-16-fp32", "p2-32-auto", "p3-32-fp32"]
    assert [p["options"] for p in points][1] == {"square": 16, "gemm_dtype": "fp32"}
    assert all(p["curve"] == p["key"] and p["probe"] == "gemm" and p["batch"] is None for p in points)
    # the shared config and the point's values, resolved through the probe's own Config (defaults filled in)
    assert points[3]["config"]["square"] == 32 and points[3]["config"]["tokens"] == 16
    assert points[3]["config"]["dtype"] == "bf16"


def test_a_points_command_rebuilds_its_config():
    doc = {
        "campaign": "s",
        "probe": "step-scaling",
        "config": {"device": "cpu", "preset": "tiny"},
        "grid": {"seq_lens": [[8, 16, 32], [16, 32, 64]], "compile": [False, True]},
    }
    points = spec.points(spec.parse(doc, "s.yaml"))
    assert [p["key"] for p in points] == [
        "p0-8_16_32-false",
        "p1-8_16_32-true",
        "p2-16_32_64-false",
        "p3-16_32_64-true",
    ]
    last = points[3]
    assert last["command"].startswith("python -m measure step-scaling ")
    assert "--seq-lens 16,32,64" in last["command"] and "--compile" in last["command"]
    rebuilt = build_config(last["command"].replace("python -m measure", "probebook measure", 1))
    assert json.loads(json.dumps(dataclasses.asdict(rebuilt))) == last["config"]


def test_the_walk_stays_the_batch_sweeps():
    doc = {
        "campaign": "t",
        "probe": "batch-sweep",
        "config": {"device": "cpu"},
        "grid": {"preset": ["tiny"], "context": [32]},
        "walk": {"max_tokens": 64},
    }
    parsed = spec.parse(doc, "s.yaml")
    assert parsed.walk is not None and "walk" in parsed.to_json()
    assert [p["key"] for p in spec.points(parsed)] == ["tiny-s32-b1", "tiny-s32-b2"]
    assert "walk" not in spec.parse(BASE, "s.yaml").to_json()  # a grid's spec written back gains no walk


@pytest.mark.parametrize(
    "change, message",
    [
        ({"grid": {"colour": [1]}}, "s.yaml: grid.colour is not an option of the gemm probe"),
        ({"grid": {"square": [16, 16]}}, "s.yaml: grid.square must be a non-empty list without repeats"),
        ({"grid": {"square": ["big"]}}, "s.yaml: grid.square[0] must be int or null"),
        ({"grid": {"square": [0]}}, "s.yaml: point p0-0: --square must be >= 1, got 0"),
        ({"grid": {"device": ["cpu"]}}, "s.yaml: grid.device is also given in config"),
        ({"grid": {}}, "s.yaml: grid: list at least one option of the gemm probe"),
        ({"grid": {"square": [[16, 32]]}}, "s.yaml: grid.square[0] must be one value, not a list"),
        ({"walk": {"max_tokens": 64}}, "s.yaml: walk: only batch-sweep points walk to an OOM"),
        ({"config": {**CONFIG, "colour": 1}}, "s.yaml: config.colour is not an option of the gemm probe"),
    ],
)
def test_grid_errors_name_the_file_and_option(change, message):
    with pytest.raises(ProbebookError) as err:
        spec.parse({**BASE, **change}, "s.yaml")
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    "change, named",
    [({"probe": "gemmm"}, "probe: 'gemmm' is not a registered probe"), ({"grid": {"sqare": [16]}}, "grid.sqare")],
)
def test_a_bad_probe_or_option_exits_2_and_writes_nothing(tmp_path, change, named):
    path = tmp_path / "grid.yaml"
    path.write_text(json.dumps({**BASE, **change}))  # JSON is YAML
    out = run_cli("campaign", "plan", str(path), "--output", str(tmp_path / "c"))
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and named in lines[0], out.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grid.yaml"]


def ok(out: subprocess.CompletedProcess[str], rc: int = 0) -> str:
    assert out.returncode == rc, out.stdout + out.stderr
    return out.stdout


@pytest.mark.slow
def test_gemm_grid_plan_run_status_resume_collect_audit(tmp_path: Path):
    path = tmp_path / "grid.yaml"
    path.write_text(json.dumps(BASE))
    folder, archive = tmp_path / "c", tmp_path / "archive"
    manifest_id = ok(run_cli("campaign", "plan", str(path), "--output", str(folder))).strip()
    manifest = Store(folder / "archive").get(manifest_id)
    assert manifest["data"]["kind"] == "grid" and [p["key"] for p in manifest["data"]["points"]] == ["p0-16", "p1-32"]
    dry = ok(run_cli("campaign", "run", str(folder), "--dry-run"))
    assert re.search(r"# runs: python -m measure gemm .*--square 16 ", dry) and not (folder / "jobs").exists()

    # one job at a time and a budget spent at once: the first point runs, the second waits for a resume
    stopped = run_cli("campaign", "run", str(folder), "--max-concurrent", "1", "--budget-s", "0.01")
    assert stopped.returncode == 3, stopped.stderr
    assert "with 1 point(s) to go" in stopped.stderr
    first = receipts.load_all(folder)
    assert {k: r["state"] for k, r in first.items()} == {"p0-16": "ok"}
    status = json.loads(ok(run_cli("campaign", "status", str(folder), "--json")))
    assert [(r["curve"], r["state"], r["options"]) for r in status] == [
        ("p0-16", "done", {"square": 16}),
        ("p1-32", "ready", {"square": 32}),
    ]
    assert "1/2 points done" in ok(run_cli("campaign", "status", str(folder)))

    resumed = run_cli("campaign", "run", str(folder), "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert "p1-32: submitted" in resumed.stderr and "p0-16: submitted" not in resumed.stderr
    got = receipts.load_all(folder)
    assert {k: r["state"] for k, r in got.items()} == {"p0-16": "ok", "p1-32": "ok"}
    assert got["p0-16"] == first["p0-16"]  # the finished point: not run again, its receipt untouched
    store = Store(folder / "archive")
    for key, square in (("p0-16", 16), ("p1-32", 32)):
        doc = store.get(got[key]["evidence"])
        assert doc["probe"] == "gemm" and doc["params"]["square"] == square and doc["params"]["tokens"] == 16
    assert "2/2 points done" in ok(run_cli("campaign", "status", str(folder)))
    again = run_cli("campaign", "run", str(folder), "--resume")  # nothing left: nothing submitted
    assert again.returncode == 0 and "submitted" not in again.stderr

    collected = Store(archive).get(ok(run_cli("--archive", str(archive), "campaign", "collect", str(folder))).strip())
    assert collected["status"] == "complete" and collected["params"]["kind"] == "grid"
    assert {p["point"]: p["options"] for p in collected["data"]["points"]} == {
        "p0-16": {"square": 16},
        "p1-32": {"square": 32},
    }
    assert {r["point"] for r in collected["data"]["samples"]} == {"p0-16", "p1-32"}
    audited = run_cli("--archive", str(archive), "campaign", "audit", str(folder), "--json")
    assert json.loads(audited.stdout)["findings"] == [] and audited.returncode == 0, audited.stdout

    # the audit reads the evidence, not the receipt: a receipt pointing at the other point's run is caught
    receipt = json.loads(receipts.path(folder, "p0-16").read_text())
    receipt["evidence"] = got["p1-32"]["evidence"]
    receipts.path(folder, "p0-16").write_text(json.dumps(receipt))
    tampered = run_cli("--archive", str(archive), "campaign", "audit", str(folder))
    assert tampered.returncode == 1
    assert "point p0-16: evidence params.square is 32, the manifest says 16" in tampered.stdout
