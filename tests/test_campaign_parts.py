"""Campaign parts without running a job: spec checks, planned points, Slurm submission parameters, audit arithmetic."""

from __future__ import annotations

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
        ({"probe": "gemm"}, "'probe' must be one of batch-sweep"),
        ({"config": {"contexts": [1]}}, "config.contexts is set per point"),
        ({"config": {"colour": 1}}, "config.colour is not an option of the batch-sweep probe"),
        ({"config": {"device": "tpu"}}, "--device must be one of"),
        ({"grid": {"preset": ["tiny"]}}, "exactly the lists 'preset' and 'context'"),
        ({"grid": {"preset": ["huge"], "context": [32]}}, "--preset 'huge' is unknown"),
        ({"walk": {"max_tokens": 0}}, "walk.max_tokens must be an integer >= 1"),
        ({"executor": {"slurm": {"time_min": 1}}}, "must cover point_timeout_s + grace_s"),
        ({"executor": {"nodes": 2}}, "unknown field 'nodes'"),
        ({"campaign": "a b"}, "'campaign' must be a name"),
    ],
)
def test_spec_errors_name_the_field(change, message):
    with pytest.raises(ProbebookError, match="s.yaml") as err:
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
    assert receipts.curve_state(keys, {k: ok for k in keys}) == ("cap", None)


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


def test_concurrency_and_allocation_failures():
    assert audit.concurrency([(0, 2), (1, 3), (2, 4)]) == 2
    assert audit.concurrency([(0, 1), (1, 2)]) == 1
    assert audit.is_allocation_failure("OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    assert audit.is_allocation_failure("MemoryError: ")
    assert not audit.is_allocation_failure("RuntimeError: the harness lost its data shard at batch 2")
    assert not audit.is_allocation_failure(None)
