"""Every probe with the tiny preset on CPU through the real CLI into a temp archive: stored, verified, listed,
fields present."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import HANG_S, assert_measured

from measure.evidence.envelope import MEASURED, parse
from measure.evidence.store import Store
from measure.probes import kernels as kernels_probe

pytest.importorskip("torch")
pytestmark = pytest.mark.slow  # every test runs a real probe end to end

PLUGINS = str(Path(__file__).resolve().parent / "fixtures" / "measure_plugins")
FAST = ["--device", "cpu", "--preset", "tiny", "--warmup", "1", "--windows", "3", "--iters", "1", "--quiet"]


def measure(cli, archive, *args, env=None):
    """Run one probe; return its stored, re-validated document."""
    out = cli("--archive", str(archive), "measure", *args, env=env)
    assert_measured(out)
    ident = out.stdout.strip().splitlines()[-1]
    assert ident.startswith("sha256:")
    store = Store(archive)
    doc = parse(store.read_bytes(ident), ident)
    assert doc["status"] in MEASURED, doc.get("error")
    assert doc["params"]["device"] == "cpu"
    assert not list((archive / "journal").glob("*.jsonl")), "journal left behind after a stored run"
    verify = cli("--archive", str(archive), "archive", "verify")
    assert verify.returncode == 0 and "ok:" in verify.stdout
    listed = json.loads(cli("--archive", str(archive), "archive", "ls", "--json").stdout)
    assert ident in {row["id"] for row in listed}
    return doc


def test_gemm(cli, archive):
    doc = measure(cli, archive, "gemm", *FAST, "--tokens", "64", "--square", "128", "--window-s", "0.002")
    rows, points = doc["data"]["samples"], doc["data"]["points"]
    assert {"shape", "m", "n", "k", "window", "time_s", "tflop_s"} <= set(rows[0])
    assert len(points) == 19  # 6 linears x (fwd, dgrad, wgrad) + the square reference
    square = points[-1]
    assert (square["shape"], square["m"], square["flops"]) == ("square-128", 128, 2 * 128**3)
    for p in points:
        assert p["tflop_s"] == pytest.approx(p["flops"] / p["median_s"] / 1e12)
    ceiling = doc["data"]["ceiling"]
    assert ceiling["flop_weighted_tflop_s"] > 0 and ceiling["square_8192_tflop_s"] is None
    assert doc["params"]["gemm_dtype"] == "fp32"
    assert set(doc["data"]["clocks"]) == {"sm_mhz_before", "sm_mhz_after"}
    # version 2: every window has its clock columns (None on CPU, where NVML samples nothing) and says why
    assert doc["probe_version"] == 2 and rows[0]["sm_clock_mhz_median"] is None and rows[0]["nvml_readings"] is None
    assert doc["data"]["clock_sampling"] == {
        "sampling": False,
        "why_not": "no NVML on a CPU run",
        "interval_s": None,
        "nvml_device": None,
    }
    assert ceiling["sm_clock_mhz_median"] is None


def test_copy(cli, archive):
    doc = measure(cli, archive, "copy", *FAST)
    rows = doc["data"]["samples"]
    assert {(r["direction"], r["memory"], r["pattern"]) for r in rows} == {
        ("d2d", "device", "contiguous"),
        ("d2d", "device", "per-layer"),
    }
    assert {"direction", "memory", "pattern", "bytes", "window", "time_s", "gb_s"} <= set(rows[0])
    # d2d counts read + written: twice the pattern's bytes
    assert all(r["bytes"] == 2 * doc["params"]["pattern_bytes"] for r in rows)
    assert len(doc["data"]["skipped"]) == 4
    assert all("CUDA" in s["reason"] for s in doc["data"]["skipped"])


def test_step_scaling(cli, archive):
    doc = measure(
        cli, archive, "step-scaling", *FAST, "--seq-lens", "16,32,64", "--batch", "2", "--tokens-per-step", "128"
    )
    rows, points = doc["data"]["samples"], doc["data"]["points"]
    assert {"mode", "tokens", "batch", "tokens_per_step", "window", "step_s"} <= set(rows[0])
    assert [(p["mode"], p["tokens"], p["batch"]) for p in points] == [
        ("fixed_batch", 16, 2),
        ("fixed_batch", 32, 2),
        ("fixed_batch", 64, 2),
        ("fixed_tokens", 16, 8),
        ("fixed_tokens", 32, 4),
        ("fixed_tokens", 64, 2),
    ]
    for p in points:
        assert {"mode", "tokens", "batch", "median_step_s", "cv", "windows", "unstable"} <= set(p)
        assert p["windows"] == sum(1 for r in rows if (r["mode"], r["tokens"]) == (p["mode"], p["tokens"]))
    params = doc["params"]
    observed = doc["data"]["observed"]  # what ran is observed data, never an input (ARCHITECTURE.md §Invariants)
    assert params["n_params"] == 361088 and observed["compile_engaged"] is False
    assert observed["sdpa_backend"] not in (None, "none") and "sdpa_backend" not in params
    assert observed["dtype"] == "bfloat16"
    assert set(params["model_flops_per_token"]) == {"16", "32", "64"}
    assert params["model_flops_per_token"]["64"] == 6 * 361088 + 12 * 2 * 2 * 64 * 64
    assert all(math.isfinite(r["step_s"]) and r["step_s"] > 0 for r in rows)


def test_step_scaling_times_a_plugged_in_harness(cli, archive):
    doc = measure(
        cli,
        archive,
        "step-scaling",
        *FAST,
        "--workload",
        "toy_harness:factory",
        "--seq-lens",
        "4,8,16",
        "--modes",
        "fixed_batch",
        env={"PYTHONPATH": f"{PLUGINS}:{Path(__file__).resolve().parent.parent}"},
    )
    assert doc["params"]["workload_name"] == "toy_harness:factory"
    assert doc["data"]["observed"]["sdpa_backend"] == "none"  # the toy harness has no attention: observed
    assert doc["params"]["model_flops_per_token"] is None
    assert len(doc["data"]["points"]) == 3


def test_kernels(cli, archive):
    doc = measure(cli, archive, "kernels", *FAST, "--steps", "2", "--seq-len", "32")
    rows = doc["data"]["samples"]
    assert {"kernel", "category", "calls", "device_time_s"} <= set(rows[0])
    shares = doc["data"]["shares"]
    assert set(shares) == {"attention", "gemm", "norm-elementwise", "loss", "optimizer", "other"}
    assert sum(shares.values()) == pytest.approx(1.0)
    assert shares["gemm"] > 0 and shares["attention"] > 0 and shares["optimizer"] > 0
    check = doc["data"]["consistency"]
    assert check["ratio"] == pytest.approx(check["kernel_total_s"] / check["event_step_s"])
    assert check["kernel_total_s"] == pytest.approx(sum(r["device_time_s"] for r in rows) / 2)
    # record_function labels are kept apart, never summed (since version 2 of the probe); what ran is
    # observed data, not params (version 3); the expert GEMM share (4, from the launched kernels in 5)
    assert doc["probe_version"] == 7 and "sdpa_backend" in doc["data"]["observed"]
    # version 7: the trace's host-wait attribution, absent on the CPU (no host launches a kernel) and saying why
    assert doc["data"]["attribution"] == {"absent": kernels_probe.NO_ATTRIBUTION}
    # version 6: inside optimizer.step is the optimizer's, whatever the operator's name
    assert {r["category"] for r in rows if (r.get("within") or "").startswith("Optimizer.step#")} == {"optimizer"}
    assert "sdpa_backend" not in doc["params"]
    assert not [r for r in rows if r["kernel"].startswith(("Optimizer.", "ProfilerStep#"))]
    assert "Optimizer.step#AdamW.step" in [a["kernel"] for a in doc["data"]["annotations"]]
    assert doc["data"]["unit"] == "operator self CPU time"


def test_ablate(cli, archive):
    doc = measure(cli, archive, "ablate", *FAST, "--seq-len", "32")
    rows, arms = doc["data"]["samples"], doc["data"]["arms"]
    assert {"arm", "round", "step_s", "sm_clock_mhz"} == set(rows[0])  # one session on the CPU; no clock there (None)
    names = [a["arm"] for a in arms]
    assert names == ["baseline", "no-optimizer", "no-loss-head", "no-attention"]
    assert arms[0]["delta_vs_baseline"] == 0.0
    assert {a["arm"]: a["timing_only"] for a in arms} == {
        "baseline": False,
        "no-optimizer": False,
        "no-loss-head": True,
        "no-attention": True,
    }
    for a in arms:
        assert {"arm", "median_s", "iqr_s", "delta_vs_baseline", "timing_only"} <= set(a)
    # interleaved: every round runs every arm, in the same order
    order = doc["data"]["order"]
    assert [o["arm"] for o in order[:4]] == names and len(order) == 4 * (len(rows) // 4)
    assert doc["data"]["skipped"] == [{"arm": "no-input-copy", "reason": "on CPU there is no host->device input copy"}]


def test_ablate_runs_a_user_defined_arm(cli, archive):
    env = {"PYTHONPATH": f"{PLUGINS}:{Path(__file__).resolve().parent.parent}"}
    doc = measure(cli, archive, "ablate", *FAST, "--workload", "toy_harness:factory_with_arm", env=env)
    arms = {a["arm"]: a for a in doc["data"]["arms"]}
    assert set(arms) == {"baseline", "forward-only"}
    assert arms["forward-only"]["timing_only"] is True


def test_optimizer(cli, archive):
    doc = measure(cli, archive, "optimizer", *FAST, "--seq-len", "32", "--rounds", "3")
    rows = doc["data"]["samples"]
    assert {r["arm"] for r in rows} == {"instrumented", "baseline"}
    assert all(r["optimizer_s"] is None for r in rows if r["arm"] == "baseline")
    assert all(r["optimizer_s"] > 0 for r in rows if r["arm"] == "instrumented")
    summary = doc["data"]["summary"]
    assert 0 < summary["optimizer_share"] < 1
    assert summary["instrumentation_overhead"] == pytest.approx(
        summary["instrumented_median_s"] / summary["baseline_median_s"] - 1
    )
    assert doc["params"]["optimizer_class"] == "AdamW"
    # version 3: the overhead's interval over the 3 paired rounds, judged against the stated limit
    assert doc["probe_version"] == 3 and summary["overhead_limit"] == 0.05
    span = summary["instrumentation_overhead_interval"]
    assert span["low"] <= span["high"]
    expected = "above" if span["low"] > 0.05 else "below" if span["high"] < 0.05 else "not resolved"
    assert summary["overhead_verdict"] == expected
    assert summary["overhead_flagged"] is (expected == "above")


def test_a_crash_mid_sweep_keeps_what_was_measured_as_partial(cli, archive):
    env = {"PYTHONPATH": f"{PLUGINS}:{Path(__file__).resolve().parent.parent}"}
    # the harness fails at sequence length 9: points 1..8 were measured and must survive
    out = cli(
        "--archive",
        str(archive),
        "measure",
        "step-scaling",
        *FAST,
        "--workload",
        "toy_harness:crashes_late",
        "--seq-lens",
        "1,2,3,4,5,6,7,8,9,10",
        "--modes",
        "fixed_batch",
        "--batch",
        "2",
        env=env,
    )
    assert out.returncode == 1
    assert "stored as partial: RuntimeError: simulated device fault" in out.stderr
    doc = Store(archive).get(out.stdout.strip())
    assert doc["status"] == "partial" and doc["error"] == "RuntimeError: simulated device fault"
    assert [p["tokens"] for p in doc["data"]["points"]] == [1, 2, 3, 4, 5, 6, 7, 8]


def test_recover_archives_a_journal_left_by_a_dead_process(cli, archive, tmp_path):
    from measure.run.runner import Recorder

    journal = tmp_path / "step-scaling-dead.jsonl"
    rec = Recorder("step-scaling", {"preset": "tiny"}, journal)
    rec.header(1, {"gpu": None}, {"probebook": "0.1.0"})
    rec.point(
        [{"mode": "fixed_batch", "tokens": 16, "batch": 2, "tokens_per_step": 32, "window": 0, "step_s": 0.01}],
        {"mode": "fixed_batch", "tokens": 16},
    )
    with open(journal, "a") as fh:
        fh.write('{"rows": [{"mode": "fixed_b')  # torn last line: the process died mid-write
    out = cli("--archive", str(archive), "measure", "recover", str(journal))
    assert_measured(out)
    doc = Store(archive).get(out.stdout.strip())
    assert doc["status"] == "partial" and "recovered from a journal" in doc["error"]
    assert doc["data"]["samples"][0]["step_s"] == 0.01


def test_sigterm_mid_sweep_stores_partial_evidence(archive):
    import os
    import signal
    import subprocess
    import sys
    import time

    from conftest import REPO

    env = {**os.environ, "PYTHONPATH": f"{PLUGINS}:{REPO}"}
    seq_lens = ",".join(str(s) for s in range(1, 400))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "measure",
            "--archive",
            str(archive),
            "step-scaling",
            *FAST,
            "--workload",
            "toy_harness:factory",
            "--seq-lens",
            seq_lens,
            "--modes",
            "fixed_batch",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    journal_dir = archive / "journal"
    deadline = time.time() + 120
    while time.time() < deadline:  # wait until two points are journalled
        files = list(journal_dir.glob("*.jsonl")) if journal_dir.exists() else []
        # point lines only: a plug-in's journal also holds its source fingerprint after the header
        if files and sum('"rows"' in line for line in files[0].read_text().splitlines()) >= 2:
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=HANG_S)
    assert proc.returncode == 130, err  # interrupted (README's exit table), after storing what it measured
    doc = Store(archive).get(out.strip())
    assert doc["status"] == "partial" and doc["error"] == "KeyboardInterrupt: stopped by signal 15"
    assert 2 <= len(doc["data"]["points"]) < 399


def test_window_clock_is_the_median_of_sampled_windows():
    from measure.evidence.clocks import window_clock_mhz

    rows = [{"sm_clock_mhz_median": 1980}, {"sm_clock_mhz_median": None}, {"sm_clock_mhz_median": 1755.0}, {}]
    assert window_clock_mhz(rows) == 1867.5
    assert window_clock_mhz([{"sm_clock_mhz_median": None}]) is None
