"""What a run could not record or did not honour, named in a warning and in ``data.engagement_warnings``: FLOPs
unknown, an option the plug-in's factory never read, a dtype the step did not run in, a skipped ablate arm; an
ablate with nothing to compare refused before running (issue 40). Pure marks with literal inputs, then real runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import assert_measured, run_cli_here

from measure.evidence.envelope import parse
from measure.evidence.store import Store
from measure.workload import WorkloadOptions
from measure.workload.observe import engagement_marks, workload_marks
from measure.workload.plugin import ignored_options, options_read, watched
from render.derive.marks import warnings

HERE = Path(__file__).resolve().parent
TOY = {"PYTHONPATH": f"{HERE / 'fixtures' / 'measure_plugins'}:{HERE.parent}"}


def test_a_workload_without_attention_shape_has_unknown_flops():
    marks = workload_marks(attention_shape=False, ignored={})
    assert [m["kind"] for m in marks] == ["flops-unknown"]
    assert "model FLOPs per token are not recorded" in marks[0]["message"]
    assert workload_marks(attention_shape=True, ignored={}) == []


def test_an_option_never_read_is_named_with_its_value():
    marks = workload_marks(attention_shape=True, ignored={"checkpointing": True, "sliding_window": 512})
    assert [(m["kind"], m["requested"]) for m in marks] == [("option-ignored", True), ("option-ignored", 512)]
    assert marks[1]["message"].startswith("--sliding-window 512 was given but the plug-in's factory never read")


def test_ignored_options_are_those_set_and_never_read():
    options = WorkloadOptions(checkpointing=True, seed=3, dtype="fp32", compile=True)
    seen = watched(options)
    assert options_read(seen) == set()  # construction's own checks do not count as reads
    assert seen.seed == 3
    # seed was read; dtype and compile are judged from the step itself; defaults are no input
    assert ignored_options(options, options_read(seen)) == {"checkpointing": True}


@pytest.mark.parametrize(
    ("requested", "ran", "marked"),
    [("bf16", "float32", True), ("bf16", "bfloat16", False), ("fp32", "bfloat16", True), ("fp32", "float32", False)],
)
def test_a_dtype_the_step_did_not_run_in_is_marked(requested, ran, marked):
    marks = engagement_marks({"dtype": ran}, compile_requested=False, device="cpu", dtype=requested, where="S=8")
    assert [m["kind"] for m in marks] == (["dtype-not-honoured"] if marked else [])
    if marked:
        assert marks[0]["requested"] == requested and marks[0]["observed"] == ran
        assert marks[0]["message"].startswith(f"--dtype {requested} was requested but the model's output was {ran}")


def test_a_batch_sweep_row_names_its_dtype_observed_dtype():
    row = {"observed_dtype": "float32", "sdpa_backend": None}
    marks = engagement_marks(row, compile_requested=False, device="cuda", dtype="bf16")
    assert [m["kind"] for m in marks] == ["dtype-not-honoured"]


def test_each_mark_has_its_own_notice_title():
    doc = {
        "data": {
            "engagement_warnings": [
                *workload_marks(attention_shape=False, ignored={"seed": 2}),
                {"kind": "arm-skipped", "message": "ablate arm no-input-copy skipped: on CPU"},
                {"kind": "compile-not-engaged", "message": "--compile was requested"},
            ]
        }
    }
    assert [m.title for m in warnings(doc)] == [
        "Not recorded",
        "Option not taken",
        "Arm skipped",
        "Requested but not engaged",
    ]


def test_ablate_with_nothing_to_compare_is_refused_before_running(archive, monkeypatch):
    pytest.importorskip("torch")
    # in this process, which already imported torch (conftest.run_cli_here): a child imported it again only to be
    # refused, about 2.6 s of CPU; a refusal's real exit status and stderr are test_measure_cli's and test_exit_table's
    monkeypatch.syspath_prepend(str(HERE / "fixtures" / "measure_plugins"))  # what TOY's PYTHONPATH gives a child
    out = run_cli_here(
        "--archive", str(archive), "measure", "ablate", "--device", "cpu", "--workload", "toy_harness:factory",
        "--warmup", "1", "--windows", "2",
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("probebook: error: ablate: nothing to compare:")
    assert "no-input-copy skipped: on CPU there is no host->device input copy" in lines[0]
    assert not (archive / "evidence").exists()


@pytest.mark.slow
def test_a_tuple_plugin_run_names_everything_it_lost(cli, archive):
    pytest.importorskip("torch")
    out = cli(
        "--archive", str(archive), "measure", "step-scaling", "--device", "cpu", "--workload", "toy_harness:factory",
        "--checkpointing", "--seq-lens", "4,8,16", "--modes", "fixed_batch", "--warmup", "1", "--windows", "2",
        "--iters", "1", env=TOY,
    )  # fmt: skip
    assert_measured(out)
    doc = parse(Store(archive).read_bytes(out.stdout.split()[-1]), out.stdout.split()[-1])
    marks = doc["data"]["engagement_warnings"]
    assert [m["kind"] for m in marks] == ["flops-unknown", "option-ignored"] + ["dtype-not-honoured"] * 3
    assert doc["params"]["model_flops_per_token"] is None
    for mark in marks:  # each said once on stderr, prefixed
        assert out.stderr.count(f"probebook: warning: {mark['message']}") == 1
    assert "USDT:" not in out.stderr  # the profiler's own lines stay off stderr
