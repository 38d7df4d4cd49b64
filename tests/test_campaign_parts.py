"""Campaign parts without running a job: spec checks, planned points, Slurm submission parameters, audit arithmetic."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from measure.errors import ProbebookError
from probebook.campaign import audit, executors, receipts, spec

BASE = {
    "campaign": "t",
    "probe": "batch-sweep",
    "config": {"device": "cpu", "warmup": 1, "windows": 3, "iters": 1},
    "grid": {"preset": ["tiny"], "context": [32, 64]},
    "walk": {"max_tokens": 128, "window_tokens": 128},
}


def test_points_walk_each_curve_with_resolved_configs():
    points = spec.points(spec.parse(BASE, "s.yaml"))
    assert [p["key"] for p in points] == ["tiny-s32-b1", "tiny-s32-b2", "tiny-s32-b4", "tiny-s64-b1", "tiny-s64-b2"]
    first = points[0]["config"]
    assert (first["contexts"], first["start_batch"], first["max_batch"], first["max_tokens"]) == ([32], 1, 1, 32)
    assert [p["config"]["iters"] for p in points] == [4, 2, 1, 2, 1]  # >= 128 tokens per window


def test_window_iters():
    assert spec.window_iters(1, 1, 512, 32768) == 64
    assert spec.window_iters(1, 3, 512, 32768) == 22
    assert spec.window_iters(5, 64, 4096, 32768) == 5
    assert spec.window_iters(2, 1, 512, 0) == 2


@pytest.mark.parametrize(
    "change, message",
    [
        ({"probe": "nope"}, "probe: 'nope' is not a registered probe (one of gemm, "),
        ({"probe": "gemm"}, "walk: only batch-sweep points walk to an OOM"),
        ({"config": {"contexts": [1]}}, "config.contexts is set per point"),
        ({"config": {"colour": 1}}, "config.colour is not an option of the batch-sweep probe"),
        ({"config": {"device": "tpu"}}, "--device must be one of"),
        ({"grid": {"preset": ["tiny"]}}, "exactly the lists 'preset' and 'context'"),
        ({"grid": {"preset": ["huge"], "context": [32]}}, "--preset 'huge' is unknown"),
        ({"walk": {"max_tokens": 0}}, "walk.max_tokens must be an integer from 1"),
        ({"executor": {"slurm": {"time_min": 1}}}, "must cover point_timeout_s + grace_s"),
        ({"executor": {"nodes": 2}}, "unknown field 'nodes'"),
        ({"campaign": "a b"}, "'campaign' must be a name"),
    ],
)
def test_spec_errors_name_the_field(change, message):
    with pytest.raises(ProbebookError, match=re.escape("s.yaml")) as err:
        spec.parse({**BASE, **change}, "s.yaml")
    assert message in str(err.value)


def test_slurm_submission_carries_the_spec_settings(tmp_path):
    doc = {
        **BASE,
        "executor": {
            "point_timeout_s": 600,
            "grace_s": 60,
            "slurm": {
                "account": "lab",
                "partition": "gpu",
                "gpus": 1,
                "time_min": 15,
                "cpus": 16,
                "mem_gb": 200,
                "constraint": "h100",
            },
        },
    }
    settings = spec.parse(doc, "s.yaml").executor
    params = executors.parameters("slurm", settings, "pb-t-tiny-s32-b1-a1", [])
    assert params == {
        "job_name": "pb-t-tiny-s32-b1-a1",
        "time": 15,
        "nodes": 1,
        "ntasks_per_node": 1,
        "gpus_per_node": 1,
        "cpus_per_task": 16,
        "mem": "200GB",
        "signal_delay_s": 60,
        "setup": [],
        "partition": "gpu",
        "account": "lab",
        "constraint": "h100",
    }
    text = executors.submission_text("slurm", tmp_path / "a1", params)
    for line in (
        "--account=lab",
        "--partition=gpu",
        "--gpus-per-node=1",
        "--time=15",
        "--cpus-per-task=16",
        "--mem=200GB",
        "--constraint=h100",
        "--job-name=pb-t-tiny-s32-b1-a1",
        "--signal=USR2@60",
    ):
        assert f"#SBATCH {line}\n" in text
    assert "-m submitit.core._submit" in text
    from submitit.slurm.slurm import _get_default_parameters

    assert set(params) <= set(_get_default_parameters())  # names submitit's SlurmExecutor accepts


def test_local_executor_passes_the_runner_gpu_on():
    assert executors.local_gpus("cuda", "1") == {"gpus_per_node": 1, "visible_gpus": [1]}
    assert executors.local_gpus("cuda", None) == {"gpus_per_node": 1, "visible_gpus": [0]}
    assert executors.local_gpus("cpu", "1") == {"gpus_per_node": 0}


def test_curve_state():
    keys = ["a-b1", "a-b2", "a-b4"]
    ok = {"state": "ok", "attempts": []}
    assert receipts.curve_state(keys, {}) == ("ready", "a-b1")
    assert receipts.curve_state(keys, {"a-b1": ok, "a-b2": {"state": "submitted"}}) == ("running", "a-b2")
    assert receipts.curve_state(keys, {"a-b1": ok, "a-b2": {"state": "failed"}}) == ("blocked", "a-b2")
    assert receipts.curve_state(keys, {"a-b1": ok, "a-b2": {"state": "failed", "retry": True}}) == ("ready", "a-b2")
    assert receipts.curve_state(keys, {"a-b1": ok, "a-b2": {"state": "oom"}}) == ("oom", "a-b2")
    assert receipts.curve_state(keys, dict.fromkeys(keys, ok)) == ("cap", None)


def test_boundary_findings():
    assert audit.boundary_findings("c", [1, 2, 4, 8], {1: "ok", 2: "ok", 4: "oom"}) == []
    assert audit.boundary_findings("c", [1, 2, 4, 8], {1: "ok", 4: "ok"}) == [
        "curve c: batch 2 has no receipt but larger batches do (non-contiguous walk)"
    ]
    assert audit.boundary_findings("c", [1, 2, 4], {1: "ok", 2: "oom", 4: "ok"}) == [
        "curve c: batch 4 fit above the OOM at batch 2 (non-contiguous boundary)"
    ]


def test_timing_findings_rederive_the_row():
    row = {"batch": 2, "context": 8, "tokens": 16, "windows": 3, "step_s": 0.2, "tok_s": 80.0, "cv": 0.5}
    windows = [0.1, 0.2, 0.3]
    assert audit.timing_findings("p", row, windows, 3) == []
    bad = {**row, "tok_s": 81.0, "windows": 4}
    assert audit.timing_findings("p", bad, windows, 5) == [
        "p: 3 raw windows but the row says 4",
        "p: 3 windows, fewer than the 5 planned",
        "p: tok_s 81.0 != batch x context / median step",
    ]


def test_update_findings_count_each_windows_optimizer_steps():
    assert audit.update_findings("p", [4, 4, None], 4) == []
    assert audit.update_findings("p", [4, 3, 4], 4) == ["p: window 1 made 3 optimizer updates in 4 steps"]


def test_concurrency_and_allocation_failures():
    assert audit.concurrency([(0, 2), (1, 3), (2, 4)]) == 2
    assert audit.concurrency([(0, 1), (1, 2)]) == 1
    cuda_oom = "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    assert audit.is_allocation_failure(cuda_oom, "cuda") and audit.is_allocation_failure(cuda_oom, "cpu")
    assert audit.is_allocation_failure("RuntimeError: CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate", "cuda")
    # the host running short is a boundary of a CPU run, an error of a CUDA run (the probe's own rule)
    assert audit.is_allocation_failure("MemoryError: ", "cpu")
    assert not audit.is_allocation_failure("MemoryError: ", "cuda")
    host = "RuntimeError: [enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: can't allocate memory"
    assert audit.is_allocation_failure(host, "cpu") and not audit.is_allocation_failure(host, "cuda")
    assert not audit.is_allocation_failure("OSError: [Errno 12] Cannot allocate memory", "cuda")
    assert not audit.is_allocation_failure("RuntimeError: the harness lost its data shard at batch 2", "cuda")
    assert not audit.is_allocation_failure(None, "cuda")


def attempt(job_id: str, start: float, end: float | None, executor: str = "local", **where) -> dict:
    return {"n": 1, "executor": executor, "job_id": job_id, "submitted_unix": start, "ended_unix": end, **where}


def test_repeated_jobs_are_one_job_on_one_machine_only():
    # the H200 campaign's two device calls: pid 3092 named a job of each call, 25 minutes apart
    # (receipts of that run record neither host nor boot)
    first, second = attempt("3092", 1796065378.6, 1796065392.3), attempt("3092", 1796066850.8, 1796066858.0)
    assert audit.repeated_jobs([("90m-s512-b8", first), ("500m-s512-b128", second)]) == []
    # the same pid on two machines at the same time: their boot ids differ
    a = attempt("3092", 100.0, 110.0, host="gpu", boot_id="boot-1")
    b = attempt("3092", 105.0, 115.0, host="gpu", boot_id="boot-2")
    assert audit.repeated_jobs([("p1", a), ("p2", b)]) == []
    # one boot, overlapping lifetimes: one process cannot be two jobs (a receipt copied from another point's)
    c = attempt("3092", 105.0, 115.0, host="gpu", boot_id="boot-1")
    assert audit.repeated_jobs([("p1", a), ("p2", c)]) == [
        "job 3092: named by attempt 1 of p1 and attempt 1 of p2 while both ran on one machine"
    ]
    # an attempt that never ended still holds its pid
    assert len(audit.repeated_jobs([("p1", attempt("7", 100.0, None)), ("p2", attempt("7", 200.0, 210.0))])) == 1
    # a Slurm job id is one job on its cluster whenever it appears
    s1, s2 = attempt("4242", 100.0, 110.0, "slurm"), attempt("4242", 500.0, 510.0, "slurm")
    assert audit.repeated_jobs([("p1", s1), ("p2", s2)]) == ["job 4242: named by attempt 1 of p1 and attempt 1 of p2"]


def test_runner_machine_names_this_boot():
    here = executors.runner_machine()
    assert here["host"] and here["boot_id"] == Path("/proc/sys/kernel/random/boot_id").read_text().strip()


@pytest.fixture
def planned(tmp_path):
    """A planned (not run) campaign folder with Slurm settings."""
    import json

    from probebook.campaign.plan import plan

    doc = {**BASE, "executor": {"slurm": {"account": "lab", "partition": "gpu", "constraint": "h100"}}}
    (tmp_path / "spec.yaml").write_text(json.dumps(doc))
    plan(tmp_path / "spec.yaml", tmp_path / "c")
    return tmp_path / "c"


def tree(folder):
    return sorted((p.relative_to(folder).as_posix(), p.stat().st_mtime_ns) for p in folder.rglob("*"))


@pytest.mark.slow
def test_dry_run_prints_the_sbatch_scripts_and_touches_nothing(planned):
    from conftest import run_cli

    before = tree(planned)
    # a machine without Slurm (no sbatch on PATH): the scripts print, Slurm's own check is said not to have run
    no_slurm = {"PATH": str(Path(sys.executable).parent)}
    out = run_cli("campaign", "run", str(planned), "--executor", "slurm", "--dry-run", env=no_slurm)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("#!/bin/bash") == 2  # the first point of each curve (max_concurrent 2)
    assert out.stdout.count("# sbatch --test-only: not run (no sbatch on PATH)") == 2
    assert "# point tiny-s32-b1, attempt 1, executor slurm" in out.stdout
    for line in ("--account=lab", "--partition=gpu", "--constraint=h100"):
        assert f"#SBATCH {line}\n" in out.stdout
    manifest = (planned / "manifest.id").read_text().strip()[7:19]  # job names carry the manifest's id
    assert f"#SBATCH --job-name=pb-t-{manifest}-tiny-s64-b1-a1\n" in out.stdout
    local = run_cli("campaign", "run", str(planned), "--dry-run")
    assert "gpus_per_node=0" in local.stdout and "timeout_min=11" in local.stdout
    assert tree(planned) == before


@pytest.mark.slow
def test_resume_settles_unresolved_submissions_before_submitting(planned):
    from probebook.campaign.runner import Runner

    never = receipts.new({"key": "tiny-s32-b1", "curve": "tiny-s32", "batch": 1})
    never["attempts"].append(
        {"n": 1, "executor": "local", "job_id": None, "submitted_unix": 1.0, "state": "submitting"}
    )
    receipts.write(planned, never)
    gone = receipts.new({"key": "tiny-s64-b1", "curve": "tiny-s64", "batch": 1})
    gone["attempts"].append({"n": 1, "executor": "local", "job_id": None, "submitted_unix": 1.0, "state": "submitting"})
    receipts.write(planned, gone)
    folder = planned / "jobs" / "tiny-s64-b1" / "a1"
    folder.mkdir(parents=True)
    (folder / "999999999_submitted.pkl").write_bytes(b"")  # submitit got the job id down; the runner did not
    runner = Runner(planned, "local")
    runner.reconcile()
    got = receipts.load_all(planned)
    assert "tiny-s32-b1" not in got  # never reached the scheduler: it will be submitted, once
    assert got["tiny-s64-b1"]["state"] == "lost" and got["tiny-s64-b1"]["attempts"][0]["job_id"] == "999999999"
    assert runner.ready() == ["tiny-s32-b1"]  # the lost point blocks its curve until --retry-failed
    assert runner.retry_failed() == ["tiny-s64-b1"] and runner.ready() == ["tiny-s32-b1", "tiny-s64-b1"]
