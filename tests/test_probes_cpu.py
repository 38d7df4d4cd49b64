"""Every probe with the tiny preset on CPU through the real CLI into a temp archive: stored, verified, listed, fields present."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from measure.evidence import parse
from measure.store import Store

pytest.importorskip("torch")

PLUGINS = str(Path(__file__).resolve().parent / "fixtures" / "measure_plugins")
FAST = ["--device", "cpu", "--preset", "tiny", "--warmup", "1", "--windows", "3", "--iters", "1", "--quiet"]


def measure(cli, archive, *args, env=None):
    """Run one probe; return its stored, re-validated document."""
    out = cli("--archive", str(archive), "measure", *args, env=env)
    assert out.returncode == 0, out.stderr
    ident = out.stdout.strip().splitlines()[-1]
    assert ident.startswith("sha256:")
    store = Store(archive)
    doc = parse(store.read_bytes(ident), ident)
    assert doc["status"] == "complete", doc.get("error")
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
    assert (square["shape"], square["m"], square["flops"]) == ("square-128", 128, 2 * 128 ** 3)
    for p in points:
        assert p["tflop_s"] == pytest.approx(p["flops"] / p["median_s"] / 1e12)
    ceiling = doc["data"]["ceiling"]
    assert ceiling["flop_weighted_tflop_s"] > 0 and ceiling["square_8192_tflop_s"] is None
    assert doc["params"]["gemm_dtype"] == "fp32"
    assert set(doc["data"]["clocks"]) == {"sm_mhz_before", "sm_mhz_after"}


def test_copy(cli, archive):
    doc = measure(cli, archive, "copy", *FAST)
    rows = doc["data"]["samples"]
    assert {(r["direction"], r["memory"], r["pattern"]) for r in rows} == {
        ("d2d", "device", "contiguous"), ("d2d", "device", "per-layer")}
    assert {"direction", "memory", "pattern", "bytes", "window", "time_s", "gb_s"} <= set(rows[0])
    # d2d counts read + written: twice the pattern's bytes
    assert all(r["bytes"] == 2 * doc["params"]["pattern_bytes"] for r in rows)
    assert len(doc["data"]["skipped"]) == 4
    assert all("CUDA" in s["reason"] for s in doc["data"]["skipped"])


def test_step_scaling(cli, archive):
    doc = measure(cli, archive, "step-scaling", *FAST, "--seq-lens", "16,32,64", "--batch", "2",
                  "--tokens-per-step", "128")
    rows, points = doc["data"]["samples"], doc["data"]["points"]
    assert {"mode", "tokens", "batch", "tokens_per_step", "window", "step_s"} <= set(rows[0])
    assert [(p["mode"], p["tokens"], p["batch"]) for p in points] == [
        ("fixed_batch", 16, 2), ("fixed_batch", 32, 2), ("fixed_batch", 64, 2),
        ("fixed_tokens", 16, 8), ("fixed_tokens", 32, 4), ("fixed_tokens", 64, 2)]
    for p in points:
        assert {"mode", "tokens", "batch", "median_step_s", "cv", "windows", "unstable"} <= set(p)
        assert p["windows"] == sum(1 for r in rows if (r["mode"], r["tokens"]) == (p["mode"], p["tokens"]))
    params = doc["params"]
    assert params["n_params"] == 361088 and params["compile_engaged"] is False
    assert params["sdpa_backend"] not in (None, "none")
    assert params["observed_dtype"] == "bfloat16"
    assert set(params["model_flops_per_token"]) == {"16", "32", "64"}
    assert params["model_flops_per_token"]["64"] == 6 * 361088 + 12 * 2 * 2 * 64 * 64
    assert all(math.isfinite(r["step_s"]) and r["step_s"] > 0 for r in rows)


def test_step_scaling_times_a_plugged_in_harness(cli, archive):
    doc = measure(cli, archive, "step-scaling", *FAST, "--workload", "toy_harness:factory", "--seq-lens", "4,8,16",
                  "--modes", "fixed_batch", env={"PYTHONPATH": f"{PLUGINS}:{Path(__file__).resolve().parent.parent}"})
    assert doc["params"]["workload_name"] == "toy_harness:factory"
    assert doc["params"]["sdpa_backend"] == "none"       # the toy harness has no attention: observed, not assumed
    assert doc["params"]["model_flops_per_token"] is None
    assert len(doc["data"]["points"]) == 3
