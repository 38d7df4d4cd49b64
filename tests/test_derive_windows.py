"""The intervals the tables show (issue 23): a point's windows, GEMM shapes, batch-sweep, loss-memory and mask rows.

Literal windows, exact expected intervals: the windows are nine distinct times, so each end of the median's 95%
percentile interval is one of them (the 2nd and the 8th of nine, 20,000 resamples, fixed seed).
"""

from __future__ import annotations

import pytest

from render.derive import batchsweep, gemm, lossmem, windows
from render.derive import padding as padmod

MS = [14, 10, 17, 12, 11, 16, 13, 18, 15]
"""Nine windows, in ms, out of order: median 14, interval 11 to 17."""
TIMES = [t / 1000 for t in MS]


def test_a_points_windows_give_their_median_its_interval_and_their_extremes_none() -> None:
    w = windows.timed_windows(TIMES)
    assert w == windows.Windows(9, 0.014, 0.010, 0.018, (0.011, 0.017))
    # a rate at the median: the slower end of the time is the lower rate
    assert windows.rate_interval(2048, w.median_ci_s) == (2048 / 0.017, 2048 / 0.011)
    assert windows.timed_windows([0.02, 0.03]).median_ci_s is None  # fewer than 3: nothing to resample
    assert windows.rate_interval(2048, None) is None
    assert windows.median_ci([0.02, 0.02, 0.02]) == (0.02, 0.02)  # equal windows: the interval they show
    assert windows.too_few(2) and not windows.too_few(3)
    with pytest.raises(ValueError, match="at least one timed window"):
        windows.timed_windows([])


def test_kept_windows_back_a_row_only_when_they_are_the_ones_its_median_was_taken_over() -> None:
    kept = [{"context": 512, "batch": 4, "window": i, "step_s": t} for i, t in enumerate(TIMES)]
    kept += [{"context": 512, "batch": 8, "window": 0, "step_s": 0.5}]  # another point's window
    row = {"context": 512, "batch": 4, "step_s": 0.014, "windows": 9}
    assert windows.recorded_windows(kept, row, ("context", "batch")) == TIMES
    assert windows.recorded_windows(kept, {**row, "windows": 8}, ("context", "batch")) is None  # another count
    assert windows.recorded_windows(kept, {**row, "step_s": 0.015}, ("context", "batch")) is None  # another median
    assert windows.recorded_windows([], row, ("context", "batch")) is None  # no windows kept
    assert windows.recorded_windows(kept, {"context": 512, "batch": 4, "step_s": 0.014}, ("context",)) is None
    # a campaign's windows name their point: two points at one (context, batch) stay apart
    named = [{**w, "point": "20m-b4"} for w in kept] + [{"context": 512, "batch": 4, "step_s": 1.0, "point": "90m-b4"}]
    assert windows.recorded_windows(named, {**row, "point": "20m-b4"}, ("context", "batch")) == TIMES


def test_a_gemm_shapes_median_time_and_tflops_carry_the_interval_of_its_windows() -> None:
    rows = [{"shape": "sq", "m": 1024, "n": 1024, "k": 1024, "time_s": t * 2.0**-14} for t in MS]
    rows += [{"shape": "few", "m": 8, "n": 8, "k": 8, "time_s": t} for t in (1.0, 2.0)]
    spans = gemm.gemm_shape_intervals(rows)
    assert spans == {
        ("sq", 1024, 1024, 1024): (
            (11 * 2.0**-14, 17 * 2.0**-14),
            # 2·1024³ FLOPs over the slower and the faster end of the median time
            (2.0**45 / 17 / 1e12, 2.0**45 / 11 / 1e12),
        ),
        ("few", 8, 8, 8): (None, None),
    }
    (sq, _) = gemm.gemm_shapes(rows)
    assert spans[("sq", 1024, 1024, 1024)][1][0] < sq.median_tflop_s < spans[("sq", 1024, 1024, 1024)][1][1]


def test_a_batch_sweep_rows_tokens_per_second_carries_its_windows_interval() -> None:
    kept = [{"context": 512, "batch": 4, "window": i, "step_s": t} for i, t in enumerate(TIMES)]
    row = {"status": "ok", "context": 512, "batch": 4, "step_s": 0.014, "windows": 9, "tok_s": 2048 / 0.014}
    assert batchsweep.tok_s_interval(row, kept) == (2048 / 0.017, 2048 / 0.011)
    assert batchsweep.tok_s_interval({**row, "status": "oom"}, kept) is None
    assert batchsweep.tok_s_interval(row, []) is None  # an older document keeps no windows


def test_a_loss_memory_rows_tokens_per_second_carries_its_windows_interval() -> None:
    kept = [{"arm": "fused", "microbatch": 2, "window": i, "step_s": t} for i, t in enumerate(TIMES)]
    kept += [{"arm": "eager", "microbatch": 2, "window": 0, "step_s": 0.9}]
    row = {"arm": "fused", "microbatch": 2, "tokens_per_step": 1024, "step_s": 0.014, "windows": 9}
    # the step's tokens are microbatch × the per-sequence tokens: 2 × 1024
    assert lossmem.tok_s_interval(row, kept) == (2048 / 0.017, 2048 / 0.011)
    assert lossmem.tok_s_interval({**row, "arm": "eager"}, kept) is None


def test_a_mask_kinds_median_and_slowdown_carry_the_interval_of_their_rounds() -> None:
    padded = [28, 21, 33, 25, 22, 31, 26, 35, 30]
    rows = []
    for i, (c, p) in enumerate(zip(MS, padded, strict=True)):
        rows += [{"kind": "causal", "round": i, "step_s": c / 1000}, {"kind": "padded", "round": i, "step_s": p / 1000}]
    rows += [{"kind": "sliding", "round": i, "step_s": s} for i, s in enumerate((0.02, 0.021))]
    spans = padmod.mask_step_intervals(rows)
    assert spans["causal"] == ((0.011, 0.017), None)  # is_causal against itself: no slowdown to estimate
    step, slower = spans["padded"]
    assert step == (0.022, 0.033)
    # the kinds' rounds resampled apart, as mask_cost does: ends are ratios of two rounds' times, less one
    assert slower == pytest.approx((0.025 / 0.016 - 1.0, 0.031 / 0.012 - 1.0), rel=1e-12, abs=0.0)
    assert padmod.slowdown(padmod.mask_step_medians(rows)["padded"], 0.014) == pytest.approx(1.0)
    assert spans["sliding"] == (None, None)  # two rounds: too few
