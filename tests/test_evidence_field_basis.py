"""What a number read from evidence says of its uncertainty (issue 23): render.derive.fields' rule over a field's
path, the windows a recorded median was taken over, and value() and median() stating an interval or their basis."""

from __future__ import annotations

from typing import Any

import pytest

from measure.errors import ProbebookError
from render.derive import basis, correctness, fields, intervals
from render.functions.derivations import Library
from render.functions.page import Page

IDENT = "sha256:" + "ab" * 32


@pytest.mark.parametrize(
    ("path", "said"),
    [
        ("params.batch", "exact"),
        ("data.samples.3.tokens", "exact"),
        ("data.findings", "exact"),
        ("data.peak_concurrent_jobs", "exact"),  # a count of jobs, not a memory peak
        ("data.expert_gemm.calls", "exact"),
        ("data.consistency.bounds.0", "exact"),
        ("data.utilisation.interval_s", "exact"),
        ("data.band_check.layers.0.lookahead_keys", "exact"),
        ("machine.power_limit_w", "observed"),
        ("machine.sm_clock_max_mhz", "observed"),
        ("data.clocks.sm_mhz_before", "observed"),
        ("data.points.1.cv", "observed"),
        ("data.summary.baseline_cv", "observed"),
        ("data.samples.2.peak_before_oom_bytes", "observed"),
        ("data.samples.0.step_s", "observed"),  # one window's own figure
        ("data.agreement.checks.0.checks.1.rel_l2", "observed"),
        ("data.reference_loss", "observed"),
        ("data.shares.gemm", "as recorded"),
        ("data.shares.loss", "as recorded"),
        ("data.summary.optimizer_share", "as recorded"),
        ("data.summary.optimizer_median_s", "as recorded"),
    ],
)
def test_a_fields_basis_is_decided_by_its_path(path: str, said: str) -> None:
    assert fields.field_basis(path) == said


def test_only_a_recorded_time_or_rate_is_looked_up_in_its_windows() -> None:
    assert fields.timed("data.summary.optimizer_median_s")
    assert fields.timed("data.summary.training_only_tok_s")
    assert not fields.timed("data.summary.optimizer_share")
    assert not fields.timed("data.utilisation.interval_s")  # a setting, exact
    assert not fields.timed("data.samples.0.step_s")  # one window, observed


def test_a_list_beside_the_field_whose_median_is_the_recorded_number() -> None:
    data = {"event_step": {"median_s": 2.0, "cv": 0.5, "windows_s": [4.0, 1.0, 2.0]}}
    found = fields.windows(data, "data.event_step.median_s", 2.0)
    assert found == fields.Windows((4.0, 1.0, 2.0), "data.event_step.windows_s", None)
    assert fields.windows(data, "data.event_step.median_s", 2.5) is None  # not those windows' median


def _arms() -> list[dict[str, Any]]:
    base = [{"arm": "baseline", "round": i, "step_s": v} for i, v in enumerate([1.0, 2.0, 3.0])]
    other = [{"arm": "other", "round": i, "step_s": v} for i, v in enumerate([0.0, 2.0, 5.0, 7.0])]
    return base + other


def test_the_rows_one_name_picks_come_before_all_rows_that_share_the_median() -> None:
    # all seven rows have median 2.0 too (0, 1, 2, 2, 3, 5, 7): the arm's own rows are the ones a summary names
    found = fields.windows({"samples": _arms()}, "data.summary.baseline_median_s", 2.0)
    assert found == fields.Windows((1.0, 2.0, 3.0), "step_s of samples where arm='baseline'", (0, 1, 2))
    assert fields.windows({"samples": _arms()}, "data.summary.other_median_s", 3.5) == fields.Windows(
        (0.0, 2.0, 5.0, 7.0), "step_s of samples where arm='other'", (3, 4, 5, 6)
    )


def test_a_points_own_rows_are_those_that_agree_with_it() -> None:
    rows = [{"tokens": 8, "batch": 2, "step_s": v} for v in (0.4, 0.5, 0.6)]
    rows += [{"tokens": 16, "batch": 2, "step_s": v} for v in (1.0, 1.1, 1.2)]
    data = {"points": [{"tokens": 8, "batch": 2, "median_step_s": 0.5}], "samples": rows}
    found = fields.windows(data, "data.points.0.median_step_s", 0.5)
    assert found == fields.Windows((0.4, 0.5, 0.6), "step_s of samples where batch=2, tokens=8", (0, 1, 2))


def test_a_median_of_round_differences_is_found_in_the_interleaved_rounds() -> None:
    rows = [{"arm": "a", "round": i, "step_s": v} for i, v in enumerate([3.0, 5.0, 9.0])]
    rows += [{"arm": "b", "round": i, "step_s": v} for i, v in enumerate([1.0, 2.0, 4.0])]
    found = fields.windows({"samples": rows}, "data.summary.median_of_round_differences_s", 3.0)
    assert found == fields.Windows((2.0, 3.0, 5.0), "per-round step_s of arm='a' − arm='b'", (0, 3, 1, 4, 2, 5))


def test_no_windows_where_none_give_the_recorded_number() -> None:
    assert fields.windows({"samples": _arms()}, "data.summary.total_s", 42.0) is None
    assert fields.windows({"samples": _arms()}, "machine.power_limit_w", 2.0) is None
    assert fields.windows({}, "data.summary.step_s", 2.0) is None


def test_a_stream_arms_observed_steps_give_its_stall_and_copy_windows() -> None:
    visit = {"kind": "visit", "arm": "d1"}
    rows = [
        {**visit, "step": 0, "stall_s": 0.5, "copy_s": 1.0, "grad_copy_s": None},
        {**visit, "step": 0, "stall_s": 0.25, "copy_s": 2.0, "grad_copy_s": 3.0},
        {**visit, "step": 1, "stall_s": 0.125, "copy_s": 4.0, "grad_copy_s": None},
        {"kind": "round", "arm": "d1", "round": 0, "step_s": 9.0},
        {"kind": "visit", "arm": "d2", "step": 0, "stall_s": 8.0, "copy_s": 8.0, "grad_copy_s": 8.0},
    ]
    assert correctness.stream_step_windows(rows, "d1") == {
        "stall": [0.75, 0.125],
        "layer_copy": [1.0, 2.0, 4.0],
        "layer_grad_copy": [3.0],
    }


def _page(doc: dict[str, Any]) -> dict[str, Any]:
    full = {"probe": "optimizer", "params": {"batch": 4}, "machine": {"power_limit_w": 700.0}, **doc}
    return Page(Library({IDENT: full}), {"ev": IDENT}).context()


SAMPLES = [{"arm": "baseline", "step_s": v} for v in (0.25, 0.5, 0.75, 1.0, 2.0)] + [
    {"arm": "eval", "step_s": v} for v in (3.0, 5.0)
]
SUMMARY = {"baseline_median_s": 0.75, "eval_s": 4.0, "share": 0.5, "total_s": 10.0}


def test_value_gives_a_recorded_median_the_interval_of_its_windows() -> None:
    q = _page({"data": {"samples": SAMPLES, "summary": SUMMARY}})["value"]("ev", "data.summary.baseline_median_s", "s")
    assert q.uncertainty == intervals.median_interval([0.25, 0.5, 0.75, 1.0, 2.0]) == (0.25, 2.0)
    assert q.stated_basis == "interval"
    assert q.derivation == (
        "evidence field data.summary.baseline_median_s; this run's interval: exact order-statistic interval of the "
        "median (distribution-free) over its 5 windows, step_s of samples where arm='baseline', coverage 93.8%"
    )
    assert q.resample == ("median", (0.25, 0.5, 0.75, 1.0, 2.0), f"{IDENT}|[0, 1, 2, 3, 4]")


def test_value_states_few_windows_as_recorded_exact_or_observed() -> None:
    fns = _page({"data": {"samples": SAMPLES, "summary": SUMMARY}})
    few = fns["value"]("ev", "data.summary.eval_s", "s")
    assert (few.uncertainty, few.stated_basis) == (None, basis.FEW)
    assert few.derivation == (
        "evidence field data.summary.eval_s; the median of its 2 windows, step_s of samples where arm='eval', "
        "too few to resample"
    )
    assert fns["value"]("ev", "data.summary.total_s", "s").stated_basis == basis.RECORDED  # no windows give 10.0
    assert fns["value"]("ev", "data.summary.share").stated_basis == basis.RECORDED
    assert fns["value"]("ev", "params.batch").stated_basis == basis.EXACT
    assert fns["value"]("ev", "machine.power_limit_w", "W").stated_basis == basis.OBSERVED


def test_median_of_fewer_than_three_samples_says_why_it_has_no_interval() -> None:
    fns = _page({"data": {"samples": SAMPLES}})
    assert fns["median"]("ev", "step_s", arm="eval").stated_basis == basis.FEW
    one = fns["median"]("ev", "step_s", arm="eval", step_s=5.0)
    assert (one.value, one.stated_basis) == (5.0, basis.OBSERVED)  # one window's own reading
    assert "bootstrap" not in one.derivation
    assert fns["median"]("ev", "step_s", arm="baseline").stated_basis == "interval"


def test_a_share_of_two_readings_is_a_reading() -> None:
    fns = _page({"data": {"clocks": {"sm_mhz_before": 1980.0, "sm_mhz_after": 1650.0}}})
    share = fns["share_of"](
        fns["value"]("ev", "data.clocks.sm_mhz_after"), fns["value"]("ev", "data.clocks.sm_mhz_before")
    )
    assert (share.value, share.stated_basis) == (1650.0 / 1980.0, basis.OBSERVED)
    mixed = fns["share_of"](fns["value"]("ev", "data.clocks.sm_mhz_after"), fns["value"]("ev", "params.batch"))
    assert mixed.stated_basis == basis.OBSERVED  # an exact operand keeps the other's basis


def _context(probe: str, data: dict[str, Any]) -> dict[str, Any]:
    return Page(Library({IDENT: {"probe": probe, "params": {}, "data": data}}), {"ev": IDENT}).context()


def test_a_stream_arm_gives_its_stall_and_copies_the_interval_of_its_observed_steps() -> None:
    visits = [
        {"kind": "visit", "arm": "d1", "step": s, "layer": 0, "stall_s": st, "copy_s": c, "grad_copy_s": None}
        for s, st, c in ((0, 0.5, 1.0), (1, 0.25, 2.0), (2, 0.75, 3.0), (3, 1.0, 4.0))
    ]
    rounds = [{"kind": "round", "arm": "d1", "round": i, "step_s": v} for i, v in enumerate((2.0, 3.0))]
    arm = {"arm": "d1", "median_step_s": 2.5, "tok_s": 400.0, "stall_s": 0.625, "stall_share": 0.25}
    arm |= {"layer_copy_s": 2.5, "layer_grad_copy_s": None}
    view = _context("stream", {"arms": [arm], "samples": visits + rounds})["stream"]("ev", "d1")
    assert view.stall.uncertainty == intervals.median_interval([0.5, 0.25, 0.75, 1.0])
    assert view.layer_copy.uncertainty == intervals.median_interval([1.0, 2.0, 3.0, 4.0])
    assert view.step.stated_basis == basis.FEW  # its 2 rounds reproduce it, too few to resample
    assert view.stall_share.stated_basis == basis.RECORDED  # the observed steps' times are not stored


def test_a_stream_arm_shows_loads_stores_bytes_and_their_rate_over_the_step() -> None:
    # two layers, two observed steps: each step loads 4 blocks and stores 2 gradients, each copy a 1000 B block
    visits = [
        {"kind": "visit", "arm": "d1", "step": s, "phase": p, "layer": i, "stall_s": 0.0, "copy_s": 0.5,
         "grad_copy_s": 0.25 if p == "backward" else None}
        for s in (0, 1) for p, i in (("forward", 0), ("forward", 1), ("backward", 1), ("backward", 0))
    ]  # fmt: skip
    rounds = [{"kind": "round", "arm": "d1", "round": i, "step_s": v} for i, v in enumerate((1.0, 2.0, 3.0))]
    arm = {"arm": "d1", "median_step_s": 2.0, "tok_s": 50.0}
    doc = {
        "probe": "stream",
        "params": {"block_weight_bytes": 1000},
        "data": {"arms": [arm], "samples": visits + rounds},
    }
    view = Page(Library({IDENT: doc}), {"ev": IDENT}).context()["stream"]("ev", "d1")
    assert (view.loads.value, view.stores.value, view.bytes.value) == (4, 2, 6000)
    assert view.bytes.stated_basis == basis.EXACT
    assert view.rate.value == 3000.0  # 6000 B over the 2 s median step
    step = intervals.median_interval([1.0, 2.0, 3.0])
    assert view.rate.uncertainty == (6000 / step[1], 6000 / step[0])
    no_size = {**doc, "params": {}}
    view = Page(Library({IDENT: no_size}), {"ev": IDENT}).context()["stream"]("ev", "d1")
    assert view.loads.value == 4 and view.bytes.value is None and "block_weight_bytes" in (view.rate.note or "")
    resident = {**doc, "data": {"arms": [{**arm, "arm": "resident"}], "samples": rounds}}
    view = Page(Library({IDENT: resident}), {"ev": IDENT}).context()["stream"]("ev", "resident")
    assert view.loads.value is None and "no per-layer events" in (view.loads.note or "")
    assert correctness.bytes_per_s(6000, 2.0) == 3000.0
    with pytest.raises(ProbebookError, match="positive time"):
        correctness.bytes_per_s(6000, 0.0)


def test_an_agreement_arms_errors_are_readings_its_limits_exact_its_verdict_a_test() -> None:
    rows = [
        {"arm": "bf16", "quantity": q, "rel_l2": 2e-3, "noise_floor": 1e-3, "limit": 1e-2, "cosine": 0.99}
        for q in ("loss", "logits", "grads")
    ]
    arms = [{"arm": "bf16", "status": "ok", "passed": True, "floor": 1e-3}]
    view = _context("agreement", {"arms": arms, "samples": rows})["agreement"]("ev", "bf16")
    said = {name: getattr(view, name).stated_basis for name in ("grads", "noise_grads", "limit_grads", "passed")}
    assert said == {"grads": "observed", "noise_grads": "observed", "limit_grads": "exact", "passed": "a test"}
    assert view.grads_times_noise.value == pytest.approx(2.0)
    assert view.grads_times_noise.stated_basis == basis.OBSERVED
