"""The timing core: statistics on literal inputs, windows on real sleeps, CV-triggered extra windows, interleaving."""

from __future__ import annotations

import sys
import time

import pytest

from measure.errors import ProbebookError
from measure.timing import (
    HostClock,
    WindowPlan,
    calls_per_window,
    cv,
    iqr,
    median,
    relative_change,
    time_interleaved,
    time_windows,
)


def test_statistics_on_literal_values():
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert median([4.0, 1.0, 2.0, 3.0]) == 2.5
    assert cv([2.0, 2.0, 2.0]) == 0.0
    assert cv([1.0]) == 0.0
    assert cv([1.0, 3.0]) == pytest.approx(2**0.5 / 2)  # stdev sqrt(2) over mean 2
    assert iqr([1.0, 2.0, 3.0, 4.0, 5.0]) == 2.0  # Q1 2, Q3 4 (linear interpolation)
    assert iqr([1.0, 2.0, 3.0, 4.0]) == pytest.approx(1.5)  # numpy.percentile default: 1.75 .. 3.25
    assert relative_change(0.9, 1.0) == pytest.approx(-0.1)


def test_calls_per_window_fill_the_window_by_time():
    assert calls_per_window(0.2, 0.002, 1) == 100  # a 2 ms step: a hundred calls
    assert calls_per_window(0.2, 0.4, 1) == 1  # a 400 ms step: one
    assert calls_per_window(0.2, 0.03, 1) == 7  # 6.67 rounds up: never shorter than asked
    assert calls_per_window(0.2, 0.4, 3) == 3  # --iters stays the least
    assert calls_per_window(0.2, 0.0, 2) == 2  # no usable estimate: the least


class Scripted:
    """A callable whose k-th call sleeps durations[k] seconds (the last repeats): a duration we control."""

    def __init__(self, durations):
        self.durations, self.calls = list(durations), 0

    def __call__(self):
        d = self.durations[min(self.calls, len(self.durations) - 1)]
        self.calls += 1
        time.sleep(d)


def test_warmup_is_excluded_and_every_window_is_kept():
    # 2 slow warm-up calls (300 ms) then steady 10 ms calls; a huge CV threshold keeps the window count fixed
    fn = Scripted([0.3, 0.3] + [0.01] * 20)
    result = time_windows(fn, HostClock(), WindowPlan(warmup=2, windows=4, iters=2, cv_threshold=100.0))
    assert fn.calls == 2 + 4 * 2
    assert len(result.times_s) == 4 and not result.extended
    assert all(0.01 <= t < 0.2 for t in result.times_s)  # no 300 ms warm-up call leaked in
    assert 0.01 <= result.median_s < 0.2


def test_high_cv_adds_five_windows_and_flags_a_still_unstable_point():
    # windows alternate 5 ms / 40 ms: CV far above 5% however many windows run
    fn = Scripted([0.005, 0.04] * 20)
    result = time_windows(fn, HostClock(), WindowPlan(warmup=0, windows=4, iters=1))
    assert result.extended
    assert len(result.times_s) == 4 + 5
    assert fn.calls == 9
    assert result.unstable
    assert result.cv > 0.05


def test_steady_point_gets_no_extra_windows():
    fn = Scripted([0.02])
    result = time_windows(fn, HostClock(), WindowPlan(warmup=1, windows=3, iters=1, cv_threshold=100.0))
    assert not result.extended and not result.unstable
    assert len(result.times_s) == 3 and fn.calls == 4
    assert 0.02 <= result.median_s < 0.2


def test_interleaved_arms_run_a_b_c_in_every_round():
    log = []

    def arm(name, seconds):
        def fn():
            log.append(name)
            time.sleep(seconds)

        return fn

    arms = {"A": arm("A", 0.005), "B": arm("B", 0.08), "C": arm("C", 0.03)}
    result = time_interleaved(arms, HostClock(), WindowPlan(warmup=1, windows=3, iters=2, cv_threshold=100.0))
    assert result.order == [(r, a) for r in range(3) for a in "ABC"]
    assert log == ["A", "B", "C"] + ["A", "A", "B", "B", "C", "C"] * 3  # warm-up once each, then rounds
    assert result.arms["A"].median_s < result.arms["C"].median_s < result.arms["B"].median_s
    assert all(len(a.times_s) == 3 for a in result.arms.values())


def test_interleaved_adds_rounds_for_all_arms_when_one_is_noisy():
    noisy = Scripted([0.002, 0.03] * 20)
    arms = {"steady": Scripted([0.005]), "noisy": noisy}
    result = time_interleaved(arms, HostClock(), WindowPlan(warmup=0, windows=3, iters=1))
    assert result.extended
    assert [len(a.times_s) for a in result.arms.values()] == [8, 8]
    assert result.arms["noisy"].unstable
    assert result.arms["noisy"].iqr_s > 0


def test_importing_timing_does_not_import_torch():
    import subprocess

    out = subprocess.run(
        [sys.executable, "-c", "import measure.timing, sys; print('torch' in sys.modules)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "False"


def test_bad_plan_is_refused():
    with pytest.raises(ProbebookError, match="--windows must be >= 1, got 0"):
        WindowPlan(windows=0)
