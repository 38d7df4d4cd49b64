"""Bootstrap intervals of medians, ratios and savings (render.derive.intervals), and how project() and mfu() carry
a rate's interval into the numbers made from it, on literal inputs with exact values."""

from __future__ import annotations

import pytest

from render.derive import intervals
from render.functions.rates import _mfu_interval
from render.numbers.quantity import Quantity

ID_A, ID_B = "sha256:" + "a1" * 32, "sha256:" + "b2" * 32


def test_fewer_than_three_windows_give_no_interval():
    assert intervals.median_interval([1.0, 2.0]) is None
    assert intervals.saving_interval([1.0, 1.0, 1.0], [2.0, 2.0]) is None


def test_equal_windows_give_the_degenerate_interval():
    assert intervals.median_interval([2.0, 2.0, 2.0]) == (2.0, 2.0)
    assert intervals.ratio_interval([2.0, 2.0, 2.0], [1.0, 1.0, 1.0]) == (2.0, 2.0)
    assert intervals.saving_interval([1.0, 1.0, 1.0], [2.0, 2.0, 2.0]) == (0.5, 0.5)


def test_three_windows_span_their_range():
    # a resample of three windows has a median among them; with 20,000 resamples the 2.5% and 97.5% points are
    # the smallest and largest window (each drawn as the median with probability 7/27)
    assert intervals.median_interval([50.0, 52.0, 54.0]) == (50.0, 54.0)


def test_a_saving_is_one_minus_the_ratio_interval_reversed():
    assert intervals.ratio_interval([1.0, 2.0, 3.0], [4.0, 4.0, 4.0]) == (0.25, 0.75)
    assert intervals.saving_interval([1.0, 2.0, 3.0], [4.0, 4.0, 4.0]) == (0.25, 0.75)
    assert intervals.saving_interval([4.0, 4.0, 4.0], [1.0, 2.0, 4.0]) == (-3.0, 0.0)


def test_the_same_windows_give_the_same_interval_every_time():
    values = [1.0, 1.1, 0.9, 1.05, 0.97, 1.2, 1.01]
    assert intervals.median_interval(values) == intervals.median_interval(list(values))


def test_scaled_and_reciprocal():
    assert intervals.scaled((1.0, 2.0), -1.0) == (-2.0, -1.0)
    assert intervals.scaled(None, 2.0) is None
    assert intervals.reciprocal((2.0, 4.0), 8.0) == (2.0, 4.0)
    assert intervals.reciprocal((0.0, 4.0), 8.0) is None


def _rate(ci: tuple[float, float] | None, evidence: str = ID_A) -> Quantity:
    return Quantity(value=100.0, unit="tok/s", uncertainty=ci, evidence=(evidence,), key="rate")


def test_mfu_against_a_datasheet_scales_the_rate_interval():
    assert _mfu_interval(_rate((90.0, 110.0)), None, 0.5) == ((0.45, 0.55), None, "")
    assert _mfu_interval(_rate(None), None, 0.5) == (None, None, "")


def test_mfu_against_a_measured_peak_adds_relative_errors_or_states_none():
    peak = Quantity(value=1e15, unit="FLOP/s", uncertainty=(0.9e15, 1.1e15), evidence=(ID_B,), key="peak")
    (low, high), _, _ = _mfu_interval(_rate((90.0, 110.0)), peak, 0.5)  # type: ignore[misc]
    # both ±10% at 95%: the quotient's relative error is √2·10%
    assert (low, high) == pytest.approx((0.5 - 0.5 * 0.1 * 2**0.5, 0.5 + 0.5 * 0.1 * 2**0.5), rel=1e-12)
    shared = Quantity(value=1e15, unit="FLOP/s", uncertainty=(0.9e15, 1.1e15), evidence=(ID_A,), key="peak")
    assert _mfu_interval(_rate((90.0, 110.0)), shared, 0.5)[0] is None  # one document: needs joint resampling


# -- joint resampling of numbers that stand on one document ----------------------------------------------------


def _median(values: list[float], rows: str, key: str = "m") -> Quantity:
    recipe = intervals.median_recipe(values, f"{ID_A}|{rows}")
    return Quantity(
        value=sorted(values)[len(values) // 2],
        unit="s",
        uncertainty=intervals.median_interval(values),
        evidence=(ID_A,),
        key=key,
        resample=recipe,
    )


def test_the_same_windows_are_redrawn_with_the_same_indices():
    a = intervals.median_recipe([1.0, 2.0, 3.0, 4.0, 5.0], f"{ID_A}|[0, 1, 2, 3, 4]")
    b = intervals.median_recipe([1.0, 2.0, 3.0, 4.0, 5.0], f"{ID_A}|[0, 1, 2, 3, 4]")
    assert a is not None and b is not None
    assert (intervals.draws(a) == intervals.draws(b)).all() and len(intervals.draws(a)) == intervals.RESAMPLES
    assert intervals.median_recipe([1.0, 2.0], "x") is None  # fewer than three windows: nothing to redraw


def test_numbers_of_one_document_combined_get_the_joint_interval():
    a = _median([1.0, 2.0, 3.0, 4.0, 5.0], "[0, 1, 2, 3, 4]", "a")
    same = _median([1.0, 2.0, 3.0, 4.0, 5.0], "[0, 1, 2, 3, 4]", "b")
    # a number over itself: every replicate is exactly 1 (0), where first-order propagation states nothing
    assert (a / same).uncertainty == (1.0, 1.0) and (a - same).uncertainty == (0.0, 0.0)
    assert "resampled jointly" in (a / same).derivation
    other = _median([2.0, 4.0, 6.0, 8.0, 10.0], "[5, 6, 7, 8, 9]", "c")
    low, high = (other / a).uncertainty  # type: ignore[misc]
    assert low < 2.0 < high  # other rows: drawn independently, so the ratio spreads


def test_a_saving_recipe_is_one_minus_the_ratio_of_its_arms_replicates():
    arm = intervals.median_recipe([1.0, 1.0, 1.0], "arm")
    base = intervals.median_recipe([2.0, 2.0, 2.0], "base")
    assert set(intervals.draws(("saving", arm, base)).tolist()) == {0.5}


def test_recorded_params_are_exact_operands():
    steps = Quantity(value=4.0, unit="", evidence=(ID_A,), key="value(k, params.steps)", exact=True)
    time = _median([1.0, 2.0, 3.0, 4.0, 5.0], "[0, 1, 2, 3, 4]", "t")
    per_step = time / steps  # one document, but the param is exact: the median's interval over 4
    assert per_step.uncertainty == pytest.approx((time.uncertainty[0] / 4, time.uncertainty[1] / 4))  # type: ignore[index]
    both = steps / Quantity(value=8.0, unit="", evidence=(ID_A,), key="value(k, params.n)", exact=True)
    assert (both.value, both.uncertainty, both.exact) == (0.5, None, True)


def test_an_hvp_candidates_warm_windows_give_its_interval_only_where_their_median_is_the_reported_one():
    from render.functions.correctness import reported_windows, window_spans

    assert reported_windows([0.02, 0.04, 0.03], 0.03) == [0.02, 0.04, 0.03]
    spans, recipes = window_spans([0.02, 0.04, 0.03], 0.03, 1000.0, "k", "warm")
    assert spans["warm"] == (0.02, 0.04)  # three windows: their range (see above)
    assert spans["tok_s"] == pytest.approx((30.0 / 0.04, 30.0 / 0.02))  # 30 tokens over the warm call's ends
    assert recipes["warm"] == ("median", (0.02, 0.04, 0.03), "k")
    assert reported_windows([0.02, 0.04, 0.03], 0.05) == []  # another median: none
    assert window_spans([], 0.03, 1000.0, "k", "warm") == ({}, {})


def test_order_ranks_are_the_narrowest_pair_at_the_level_and_state_their_coverage():
    # Binomial(n, 1/2) sums by hand: n=5 [x1,x5] 1 - 2/32; n=7 [x1,x7] 1 - 2/128 (x2..x6 is 1 - 16/128 = 87.5%,
    # below 95%); n=9 [x2,x8] 1 - 2*(1+9)/512; n=3 [x1,x3] 1 - 2/8
    assert intervals.order_ranks(5) == (1, 5, 1 - 2 / 32)
    assert intervals.order_ranks(7) == (1, 7, 1 - 2 / 128)
    assert intervals.order_ranks(9) == (2, 8, 1 - 20 / 512)
    assert intervals.order_ranks(3) == (1, 3, 0.75)
    assert intervals.median_coverage(5) == 0.9375


def test_median_interval_takes_the_order_statistics_not_a_resample():
    values = [9.0, 1.0, 8.0, 2.0, 7.0, 3.0, 6.0, 4.0, 5.0]
    assert intervals.median_interval(values) == (2.0, 8.0)
    assert intervals.median_interval([4.0, 1.0, 3.0, 2.0, 5.0, 6.0, 7.0]) == (1.0, 7.0)
