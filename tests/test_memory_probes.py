"""batch-sweep and loss-memory on CPU with the tiny preset, through the real CLI into a temp archive, read by
render's derivations."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

import pytest
from conftest import HANG_S, REPO, assert_measured

from measure import peakmem
from measure.compare import relative_error
from measure.errors import ProbebookError
from measure.evidence.contracts import tokens_per_second
from measure.evidence.envelope import MEASURED, parse
from measure.evidence.store import Store
from measure.probes import batch_sweep
from measure.probes.batch_sweep import plan_batches, unchanged
from measure.probes.loss_memory import loss_path
from measure.run.isolate import MARKER, is_oom
from measure.timing import calls_per_window
from measure.workload.presets import PRESETS, param_count
from render.derive import batchsweep, lossmem

pytest.importorskip("torch")

PLUGINS = str(Path(__file__).resolve().parent / "fixtures" / "measure_plugins")
FAST = ["--device", "cpu", "--preset", "tiny", "--warmup", "1", "--windows", "2", "--iters", "1", "--quiet"]
TINY = PRESETS["tiny"]


def stored(cli, archive, *args, expect_rc=0, env=None):
    """Run one probe through the CLI; return its stored, re-validated document."""
    out = cli("--archive", str(archive), "measure", *args, env=env)
    if expect_rc == 0:
        assert_measured(out)
    else:
        assert out.returncode == expect_rc, out.stderr
    ident = out.stdout.strip().splitlines()[-1]
    doc = parse(Store(archive).read_bytes(ident), ident)
    assert not Store(archive).verify()
    assert not list((archive / "journal").glob("*.jsonl")), "journal left behind after a stored run"
    return doc


# --- pure functions, literal inputs ---------------------------------------------------------


def test_plan_batches_doubles_up_to_the_caps():
    assert plan_batches(1024, 1, None, 1 << 20) == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    assert plan_batches(64, 1, 8, 512) == [1, 2, 4, 8]
    assert plan_batches(100, 3, None, 1300) == [3, 6, 12]
    assert plan_batches(3000, 1, None, 1000) == []


def test_throughput_and_loss_path_arithmetic():
    assert tokens_per_second(4 * 256, 0.5) == 2048.0
    assert tokens_per_second(1024, 0.25) == 4096.0
    assert relative_error(10.0, 9.9) == pytest.approx(0.01, rel=1e-12)
    assert loss_path(1, 1, 4096, 4096, 1024) == "materialized"
    assert loss_path(8, 4, 1024, 4096, 1024) == "chunked"  # 4 chunks, each recomputed once in backward
    assert loss_path(2, 1, 256, 256, 1024) == "chunked"  # one short chunk, still checkpointed
    assert loss_path(6, 3, 1000, 2500, 1000) == "chunked"  # 1000 + 1000 + 500
    assert loss_path(4, 4, 1024, 4096, 1024) == "other"  # chunked but not recomputed
    assert loss_path(1, 1, 2048, 4096, 1024) == "other"  # one softmax over half the tokens


def test_unchanged_names_a_sweep_that_varies_nothing():
    row = {"status": "ok", "peak_bytes": 100, "step_s": 0.5, "batch_elements": 64}
    assert unchanged([row, {**row, "batch_elements": 128, "peak_bytes": 150}]) is None
    assert unchanged([row, {**row, "peak_bytes": 150}]).startswith("make_batch returned 64 elements")
    assert unchanged([row, {**row, "batch_elements": 128}]) == "every batch gave the same peak and the same step time"
    assert unchanged([row]) is None


def test_status_bytes_reads_proc_fields():
    text = "Name:\tpython\nVmHWM:\t  366968 kB\nVmRSS:\t  12 kB\n"
    assert peakmem.status_bytes(text, "VmHWM") == 366968 * 1024
    assert peakmem.status_bytes(text, "VmRSS") == 12288
    with pytest.raises(ProbebookError, match="no VmSize line"):
        peakmem.status_bytes(text, "VmSize")


def test_is_oom_reads_the_allocator_message():
    assert is_oom(MemoryError(), "cpu")
    assert is_oom(
        RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 8388608 bytes"), "cpu"
    )
    assert is_oom(RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate(handle)"), "cpu")
    assert not is_oom(RuntimeError("simulated device fault"), "cpu")
    assert not is_oom(ValueError("out of memory"), "cpu")  # only runtime/allocator errors count


def test_on_cuda_only_a_cuda_allocation_failure_is_an_oom():
    import torch

    assert is_oom(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"), "cuda")
    assert is_oom(RuntimeError("CUDA error: out of memory"), "cuda")
    assert is_oom(RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate(handle)"), "cuda")
    # the host ran short: an error of the point, never its OOM boundary
    assert not is_oom(MemoryError(), "cuda")
    assert not is_oom(OSError(12, "Cannot allocate memory"), "cuda")
    assert not is_oom(RuntimeError("[Errno 12] Cannot allocate memory"), "cuda")
    assert not is_oom(RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 8 bytes"), "cuda")
    assert not is_oom(torch.OutOfMemoryError("DefaultCPUAllocator: can't allocate memory"), "cuda")
    assert not is_oom(RuntimeError("simulated device fault"), "cuda")


def test_a_host_memory_error_on_cuda_is_an_error_point():
    from measure.run.isolate import attempt

    def host_short(spec, facts):
        raise MemoryError("host ran out")

    assert attempt(host_short, {"device": "cuda"}, {})["status"] == "error"
    assert attempt(host_short, {"device": "cpu"}, {})["status"] == "oom"


# --- the point process -----------------------------------------------------------------------


# slow: end to end (real builds or probe runs in child processes), 2-7 s of CPU each; .ci/run runs -m slow
@pytest.mark.slow
def test_a_point_runs_in_its_own_process_and_prints_one_line():
    config = batch_sweep.Config(device="cpu", warmup=1, windows=2, iters=1)
    spec = {"config": asdict(config), "device": "cpu", "context": 16, "batch": 2}
    out = subprocess.run(
        [sys.executable, "-m", "measure.probes.batch_sweep", "--point", json.dumps(spec)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=HANG_S,
        env={**os.environ, **peakmem.cpu_env(), "PYTHONPATH": str(REPO)},
    )
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stdout.splitlines() if line.startswith(MARKER)]
    assert len(lines) == 1
    result = json.loads(lines[0][len(MARKER) :])
    assert result["status"] == "ok" and len(result["times_s"]) >= 2
    assert result["n_params"] == param_count(TINY)
    assert result["batch_elements"] == 2 * 2 * 16  # inputs and targets, 2 x 16 tokens each
    assert result["peak_method"] == "linux-vmhwm" and result["peak_bytes"] > 0


def test_phase_peaks_keep_a_setup_peak_the_measurement_never_sees():
    from measure import peakmem

    peaks = peakmem.PhasePeaks("cpu")
    peaks.end("setup")  # the process so far
    big = bytearray(256 * 2**20)  # a setup-only allocation, touched so the pages are resident
    big[::4096] = b"\1" * len(big[::4096])
    del big
    peaks.end("warmup")
    after = peakmem.read("cpu")["peak_bytes"]  # the measurement's peak, after the reset
    assert peaks.peaks["warmup_peak_bytes"] >= after + 200 * 2**20
    with pytest.raises(ValueError, match="unknown phase 'timed'"):
        peaks.end("timed")


# slow: real probe child processes, each importing torch (about 6 s of CPU), end to end; .ci/run runs it with -m slow
@pytest.mark.slow
def test_spawned_ahead_children_wait_ready_and_are_stopped_unused():
    from measure.run.isolate import PointProcess

    config = batch_sweep.Config(device="cpu", dtype="fp32", warmup=0, windows=1, iters=1)
    spec = {"config": asdict(config), "device": "cpu", "context": 16, "batch": 1}
    with PointProcess("measure.probes.batch_sweep", peakmem.cpu_env(), ahead=1) as points:
        first = points.run(spec)
        (waiting,) = points.waiting()
        time.sleep(2.0)  # the next point arrives later than the waiting child's imports finish
        second = points.run({**spec, "batch": 2})
        assert waiting not in points.waiting() and len(points.waiting()) == 1
        left = points.waiting()
    assert first.result["status"] == "ok" and second.result["status"] == "ok"
    # the second child was started during the first point and had its imports done before its spec came
    assert second.result["idle_before_spec_s"] > 1.0 and second.result["batch_elements"] == 2 * 2 * 16
    for pid in left:  # the unused child was stopped and reaped
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


# --- batch-sweep through the CLI ---------------------------------------------------------------


@pytest.mark.slow
def test_batch_sweep_walks_each_context_to_the_cap(cli, archive):
    doc = stored(cli, archive, "batch-sweep", *FAST, "--contexts", "32,64", "--max-tokens", "64")
    rows = doc["data"]["samples"]
    assert [(r["context"], r["batch"]) for r in rows] == [(32, 1), (32, 2), (64, 1)]
    assert doc["params"]["planned_batches"] == {"32": [1, 2], "64": [1]}
    assert doc["params"]["oom_source"].startswith("none")  # CPU without a limit: no OOM is ever claimed
    for r in rows:
        assert r["status"] == "ok" and r["error"] is None
        assert (r["model"], r["params"]) == ("tiny", param_count(TINY))
        assert r["tok_s"] == tokens_per_second(r["batch"] * r["context"], r["step_s"])
        assert isinstance(r["peak_bytes"], int) and r["peak_bytes"] > 0 and r["peak_method"] == "linux-vmhwm"
        assert r["batch_elements"] == 2 * r["batch"] * r["context"]
        assert r["sdpa_backend"] not in (None, "none") and r["compile_engaged"] is False
        # the phases before the measurement keep their own peaks (issue 27); no graph capture on CPU
        assert r["setup_peak_bytes"] > 0 and r["warmup_peak_bytes"] > 0 and r["capture_peak_bytes"] is None
    windows = doc["data"]["windows"]
    assert len(windows) == sum(r["windows"] for r in rows)
    assert all(math.isfinite(w["step_s"]) and w["step_s"] > 0 for w in windows)
    summary = {s.context: s for s in batchsweep.summarize(rows)}
    assert set(summary) == {32, 64}
    assert summary[32].first_oom_batch is None and summary[64].first_oom_batch is None
    stable = [b for b in (1, 2) if b not in summary[32].unstable_batches]  # a busy CPU can make both unstable
    assert summary[32].fastest_stable_batch in (stable or [None]) and summary[64].largest_fitting_batch == 1


@pytest.mark.slow
def test_batch_sweep_takes_the_optimizer_probes_settings_and_records_what_the_optimizer_held(cli, archive):
    # version 3: --beta1/--weight-decay set on the tiny preset's AdamW groups, --clip clipping inside every step
    args = ["--contexts", "32", "--max-tokens", "32", "--beta1", "0.85", "--weight-decay", "0.05", "--clip", "0.5"]
    doc = stored(cli, archive, "batch-sweep", *FAST, *args)
    assert doc["probe_version"] == 3
    assert {k: doc["params"][k] for k in ("clip", "beta1", "beta2", "weight_decay")} == {
        "clip": 0.5,
        "beta1": 0.85,
        "beta2": None,
        "weight_decay": 0.05,
    }
    settings = doc["data"]["optimizer_settings"]  # read from the optimizer's group 0 after the settings were set
    assert settings["betas"][0] == 0.85 and settings["betas"][1] != 0.85 and settings["weight_decay"] == 0.05
    assert settings["clip_max_norm"] == 0.5 and settings["lr"] > 0
    assert [r["status"] for r in doc["data"]["samples"]] == ["ok"]
    # the default is the earlier step: the workload's own betas and weight decay, no clip
    plain = stored(cli, archive, "batch-sweep", *FAST, "--contexts", "32", "--max-tokens", "32")
    assert plain["params"]["clip"] == 0.0 and plain["data"]["optimizer_settings"]["clip_max_norm"] is None
    assert plain["data"]["optimizer_settings"]["betas"][0] != 0.85
    bad = cli("--archive", str(archive), "measure", "batch-sweep", *FAST, "--contexts", "32", "--beta2", "1.5")
    assert bad.returncode == 2 and bad.stderr.strip().splitlines()[-1].endswith("--beta2 must be in [0, 1), got 1.5")


@pytest.mark.slow
def test_batch_sweep_sizes_its_windows_by_time(cli, archive):
    # version 2: the last warm-up step is timed and every window runs the calls that fill window_s
    args = [a if a != "2" else "3" for a in FAST]  # three windows
    doc = stored(
        cli,
        archive,
        "batch-sweep",
        *args,
        "--warmup",
        "2",
        "--contexts",
        "32",
        "--max-tokens",
        "64",
        "--window-s",
        "0.05",
    )
    assert doc["probe_version"] == 3 and doc["params"]["window_s"] == 0.05
    for row in doc["data"]["samples"]:
        assert row["calibration_step_s"] > 0
        assert row["window_iters"] == calls_per_window(0.05, row["calibration_step_s"], 1)
        assert row["trace_s"] > 0 and row["sdpa_backend"] not in (None, "none")  # the profile, read after the point
        windows = [w for w in doc["data"]["windows"] if w["batch"] == row["batch"]]
        assert [w["updates"] for w in windows] == [row["window_iters"]] * row["windows"]


@pytest.mark.slow
def test_batch_sweep_stops_at_a_real_cpu_oom(cli, archive):
    # a real address-space limit per point process: the allocator genuinely refuses past it
    doc = stored(
        cli,
        archive,
        "batch-sweep",
        *FAST,
        "--contexts",
        "256",
        "--start-batch",
        "4",
        "--max-tokens",
        str(256 * 256),
        "--cpu-memory-limit-bytes",
        str(100 * 2**20),
    )
    rows = doc["data"]["samples"]
    assert doc["status"] in MEASURED and doc["params"]["oom_source"].startswith("RLIMIT_AS")
    assert rows[0]["status"] == "ok"
    assert [r["status"] for r in rows] == ["ok"] * (len(rows) - 1) + ["oom"]  # the walk stops at the first OOM
    oom = rows[-1]
    assert oom["tok_s"] is None and oom["peak_bytes"] is None and "allocate" in oom["error"]
    assert [s["batch"] for s in doc["data"]["skipped"]] == [b for b in (4, 8, 16, 32, 64, 128, 256) if b > oom["batch"]]
    (summary,) = batchsweep.summarize(rows)
    assert summary.first_oom_batch == oom["batch"]
    assert summary.largest_fitting_batch is None or summary.largest_fitting_batch < oom["batch"]


@pytest.mark.slow
def test_batch_sweep_of_a_plugged_in_harness_keeps_points_before_a_crash(cli, archive):
    # crashes_late raises a non-OOM error at batch 2 of context 9: a failure, not an OOM row
    doc = stored(
        cli,
        archive,
        "batch-sweep",
        *FAST,
        "--workload",
        "toy_harness:crashes_late",
        "--contexts",
        "8,9",
        "--max-tokens",
        "18",
        expect_rc=1,
        env={"PYTHONPATH": f"{PLUGINS}:{REPO}"},
    )
    assert doc["status"] == "partial" and "simulated device fault" in doc["error"]
    rows = doc["data"]["samples"]
    assert [(r["context"], r["batch"], r["status"]) for r in rows] == [(8, 1, "ok"), (8, 2, "ok"), (9, 1, "ok")]
    toy_params = (32 * 64 + 64) + (64 * 32 + 32)  # the fixture's two Linear layers, weights and biases
    assert {(r["model"], r["params"]) for r in rows} == {("toy_harness:crashes_late", toy_params)}
    (failure,) = doc["data"]["failures"]
    assert (failure["context"], failure["batch"]) == (9, 2) and "simulated device fault" in failure["error"]
    assert len(batchsweep.summarize(rows)) == 2


@pytest.mark.slow
def test_budget_and_point_time_limit_store_what_was_measured(cli, archive):
    doc = stored(
        cli,
        archive,
        "batch-sweep",
        *FAST,
        "--contexts",
        "32",
        "--max-tokens",
        "128",
        "--budget-s",
        "0.001",
        expect_rc=1,
    )
    assert doc["status"] == "partial" and "time budget" in doc["error"]
    assert [r["batch"] for r in doc["data"]["samples"]] == [1]
    dead = stored(cli, archive, "batch-sweep", *FAST, "--contexts", "32,64", "--point-timeout-s", "0.05", expect_rc=1)
    assert dead["status"] == "failed" and dead["data"]["samples"] == []
    assert [(f["context"], f["batch"]) for f in dead["data"]["failures"]] == [(32, 1), (64, 1)]
    assert all("point time limit" in f["error"] for f in dead["data"]["failures"])


@pytest.mark.slow
def test_a_killed_sweep_keeps_every_point_it_measured(cli, archive):
    # persist after every point: SIGKILL the probe once one point is journaled, then recover the journal
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "probebook",
            "--archive",
            str(archive),
            "measure",
            "batch-sweep",
            *FAST,
            "--contexts",
            "32",
            "--max-tokens",
            "512",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    journal = None
    deadline = time.monotonic() + HANG_S
    while time.monotonic() < deadline and proc.poll() is None:
        found = list((archive / "journal").glob("batch-sweep-*.jsonl")) if (archive / "journal").is_dir() else []
        if found and '"rows"' in found[0].read_text():
            journal = found[0]
            break
        time.sleep(0.2)
    assert journal is not None and proc.poll() is None, "no point was journaled while the probe ran"
    os.killpg(proc.pid, signal.SIGKILL)  # the probe and the point process it runs: its own session
    proc.wait()
    assert not (archive / "evidence").exists()  # nothing was stored by the killed run
    out = cli("--archive", str(archive), "measure", "recover", str(journal))
    assert out.returncode == 0, out.stderr
    ident = out.stdout.strip().splitlines()[-1]
    doc = parse(Store(archive).read_bytes(ident), ident)
    assert doc["probe"] == "batch-sweep" and doc["status"] == "partial"
    rows = doc["data"]["samples"]
    assert 1 <= len(rows) < 5 and [r["batch"] for r in rows] == [1, 2, 4, 8, 16][: len(rows)]
    assert batchsweep.summarize(rows)[0].context == 32


# --- loss-memory through the CLI ---------------------------------------------------------------


@pytest.mark.slow
def test_loss_memory_arms_their_observed_paths_and_render_slopes(cli, archive):
    # fp32: the same two loss paths, without CPU bf16 emulation's minutes (bf16 is the GPU campaign's).
    # Context 512 so that at 16 sequences the materialized logits (8192 x vocab 512 x 4 B, plus their
    # gradient and log-softmax) stand well clear of the few MiB by which a CPU peak RSS wanders; at
    # context 128 the two arms' peaks differed by less than that noise.
    doc = stored(
        cli,
        archive,
        "loss-memory",
        *FAST,
        "--dtype",
        "fp32",
        "--context",
        "512",
        "--microbatches",
        "1,4,16",
        "--chunk-tokens",
        "512",
    )
    rows = doc["data"]["samples"]
    assert [(r["microbatch"], r["arm"]) for r in rows] == [
        (1, "materialized"),
        (1, "chunked"),
        (4, "materialized"),
        (4, "chunked"),
        (16, "materialized"),
        (16, "chunked"),
    ]
    for r in rows:
        assert r["tokens_per_step"] == 512 and r["vocab"] == TINY.vocab and r["step_tokens"] == 512 * r["microbatch"]
        assert r["loss_path"] == r["arm"]  # observed from the profiled step, not from the name
        assert r["tok_s"] == tokens_per_second(r["step_tokens"], r["step_s"])
        if r["arm"] == "materialized":
            assert (r["logits_rows_max"], r["loss_forward_calls"], r["loss_backward_calls"]) == (r["step_tokens"], 1, 1)
        else:
            chunks = r["step_tokens"] // 512
            assert (r["logits_rows_max"], r["loss_forward_calls"], r["loss_backward_calls"]) == (
                512,
                2 * chunks,
                chunks,
            )
            assert r["chunk_tokens"] == 512
    assert doc["status"] in MEASURED and all(c["passed"] for c in doc["data"]["checks"])
    assert len(doc["data"]["windows"]) == sum(r["windows"] for r in rows)
    heavy = lossmem.marginal_bytes_per_microbatch(rows, "materialized")
    light = lossmem.marginal_bytes_per_microbatch(rows, "chunked")
    per_logit = lossmem.bytes_per_logit_element(rows, "materialized", "chunked")
    assert per_logit == pytest.approx((heavy.bytes_per_microbatch - light.bytes_per_microbatch) / (512 * TINY.vocab))
    # the materialized arm holds every logit at once; at 16 sequences that costs memory the chunked arm never holds
    assert per_logit > 0
    peak = {(r["arm"], r["microbatch"]): r["peak_bytes"] for r in rows}
    assert peak[("chunked", 16)] < peak[("materialized", 16)]
    assert lossmem.largest_usable_microbatch(rows, "chunked") in (1, 4, 16)


@pytest.mark.parametrize(
    "args, message",
    [
        (["batch-sweep", "--device", "cpu", "--contexts", "0,64"], "--contexts must be positive integers"),
        (
            ["batch-sweep", "--device", "cpu", "--start-batch", "4", "--max-batch", "2"],
            "--max-batch 2 is below --start-batch 4",
        ),
        (["batch-sweep", "--device", "cpu", "--contexts", "4096", "--max-tokens", "1000"], "context 4096: no batch"),
        (["batch-sweep", "--device", "cpu", "--budget-s", "0"], "--budget-s must be > 0"),
        (["batch-sweep", "--device", "cpu", "--window-s", "0.2", "--warmup", "0"], "give --warmup >= 1"),
        (["batch-sweep", "--device", "cpu", "--window-s", "-1"], "--window-s must be > 0"),
        (["loss-memory", "--device", "cpu", "--microbatches", "4,4"], "--microbatches needs at least 2 distinct"),
        (["loss-memory", "--device", "cpu", "--arms", "materialized,fused"], "--arms must be a comma list"),
    ],
)
def test_bad_options_are_one_line_and_archive_nothing(cli_here, archive, args, message):
    # in this process (the probes' own checks); test_measure_cli runs the real process's one-line refusals
    out = cli_here("--archive", str(archive), "measure", *args)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], out.stderr
    assert not (archive / "evidence").exists()


# --- on a CUDA device (skipped cleanly without one) --------------------------------------------


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda(), reason="needs a CUDA device")
def test_memory_probes_on_cuda_read_the_caching_allocator(archive):
    from measure.probes import batch_sweep, loss_memory

    fast = {"preset": "tiny", "device": "cuda", "warmup": 1, "windows": 2, "iters": 1}
    sweep = batch_sweep.run(batch_sweep.Config(**fast, contexts=(128,), max_tokens=512))
    assert sweep.status in MEASURED, sweep.error
    rows = sweep.data["samples"]
    assert [r["batch"] for r in rows] == [1, 2, 4] and sweep.params["spawn_ahead"] == 3
    assert all(r["peak_method"] == "torch.cuda.max_memory_allocated" and r["peak_over_device"] is False for r in rows)
    assert rows[0]["peak_bytes"] < rows[-1]["peak_bytes"] <= rows[-1]["reserved_bytes"]
    loss = loss_memory.run(loss_memory.Config(**fast, context=256, microbatches=(1, 2, 4), chunk_tokens=128))
    assert loss.status in MEASURED, loss.error
    assert all(r["loss_path"] == r["arm"] for r in loss.data["samples"])
    assert lossmem.bytes_per_logit_element(loss.data["samples"], "materialized", "chunked") > 0
    Store(archive).put(sweep)
    Store(archive).put(loss)
    assert not Store(archive).verify()
