"""The timing core shared by every probe (ARCHITECTURE.md §5.2): clocks, windows, medians, CV, interleaved arms.

* On CUDA the clock is a pair of CUDA events recorded on the current (compute) stream around a
  window of iterations; the host waits on the end event before reading the elapsed time.
* On CPU the clock is ``time.perf_counter``; a host clock on CUDA is read only after
  ``torch.cuda.synchronize`` (``HostClock(sync=...)``), never across queued work.
* Warm-up iterations run first and are never timed. Each window times ``iters`` calls and
  reports the mean per call; the point's value is the median of its windows and every window
  is kept. If the windows' coefficient of variation exceeds ``cv_threshold`` (5%), ``extra``
  (five) more windows are run once; a point still above the threshold is flagged ``unstable``.
* Interleaved arms run A, B, C, D in that order in every round, so slow drift (clock, thermals)
  lands on every arm alike instead of favouring whichever ran first.

Importing this module does not import torch.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

CV_THRESHOLD = 0.05  # issue 4: "A CV above 5% adds five more windows"
EXTRA_WINDOWS = 5


# --- pure statistics (seconds in, seconds or fractions out) ----------------------------


def median(values: list[float]) -> float:
    """Median of a non-empty list (same unit as the values)."""
    return float(statistics.median(values))


def cv(values: list[float]) -> float:
    """Coefficient of variation: sample standard deviation / mean (a fraction); 0.0 for fewer than 2 values."""
    if len(values) < 2:
        return 0.0
    mean = statistics.fmean(values)
    return float(statistics.stdev(values) / mean) if mean else 0.0


def iqr(values: list[float]) -> float:
    """Interquartile range Q3 - Q1 with linear interpolation (numpy's default), same unit as the values."""
    if len(values) < 2:
        return 0.0
    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return float(q3 - q1)


def relative_change(value: float, baseline: float) -> float:
    """(value - baseline) / baseline, a fraction (negative: faster than baseline)."""
    return (value - baseline) / baseline


# --- clocks ----------------------------------------------------------------------------


class Clock(Protocol):
    def time(self, fn: Callable[[], Any], iters: int) -> float:
        """Seconds taken by ``iters`` calls of ``fn``."""


class HostClock:
    """``perf_counter`` around a loop; ``sync`` (e.g. ``torch.cuda.synchronize``) runs before each read."""

    def __init__(self, sync: Callable[[], None] | None = None):
        self.sync = sync or (lambda: None)

    def time(self, fn: Callable[[], Any], iters: int) -> float:
        self.sync()
        start = time.perf_counter()
        for _ in range(iters):
            fn()
        self.sync()
        return time.perf_counter() - start


class CudaEventClock:
    """CUDA events recorded on the current stream around the loop; the host waits on the end event."""

    def __init__(self) -> None:
        import torch

        self.torch = torch

    def time(self, fn: Callable[[], Any], iters: int) -> float:
        torch = self.torch
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1000.0  # elapsed_time is in milliseconds


def clock_for(device: str) -> Clock:
    """CUDA events on ``cuda``; the host clock on ``cpu``."""
    return CudaEventClock() if device == "cuda" else HostClock()


def sync_for(device: str) -> Callable[[], None]:
    """A function that waits for the device's queued work (a no-op on CPU)."""
    if device == "cuda":
        import torch

        return torch.cuda.synchronize
    return lambda: None


def sm_clock(device: str) -> int | None:
    """The current SM clock in MHz on CUDA (NVML), None on CPU or where NVML cannot say."""
    if device != "cuda":
        return None
    from measure.machine import sm_clock_mhz

    return sm_clock_mhz()


# --- windows -------------------------------------------------------------------------


@dataclass(frozen=True)
class WindowPlan:
    """How one point is timed."""

    warmup: int = 3
    """Untimed calls before the first window (compilation, allocator, autotuning settle here)."""
    windows: int = 5
    """Timed windows; the point's value is their median."""
    iters: int = 3
    """Calls per window; a window's time is their mean."""
    cv_threshold: float = CV_THRESHOLD
    """A CV of the windows above this adds ``extra`` windows once; still above: flagged unstable."""
    extra: int = EXTRA_WINDOWS
    """Windows added when the CV is above the threshold."""

    def __post_init__(self) -> None:
        if self.warmup < 0:
            raise ValueError("warmup must be >= 0")
        if self.windows < 1 or self.iters < 1:
            raise ValueError("windows and iters must be >= 1")
        if self.cv_threshold <= 0 or self.extra < 0:
            raise ValueError("cv_threshold must be > 0 and extra >= 0")


@dataclass
class WindowResult:
    """Every window of one point, and its summary."""

    times_s: list[float]
    """Seconds per call, one entry per window, in the order run."""
    median_s: float
    cv: float
    unstable: bool
    """True when the CV stayed above the threshold after the extra windows."""
    extended: bool
    """True when extra windows were added."""


def time_windows(
    fn: Callable[[], Any], clock: Clock, plan: WindowPlan, sync: Callable[[], None] | None = None
) -> WindowResult:
    """Warm up, then time ``plan.windows`` windows of ``plan.iters`` calls (more if the CV is high)."""
    for _ in range(plan.warmup):
        fn()
    if sync is not None:
        sync()
    times = [clock.time(fn, plan.iters) / plan.iters for _ in range(plan.windows)]
    extended = False
    if cv(times) > plan.cv_threshold and plan.extra:
        extended = True
        times += [clock.time(fn, plan.iters) / plan.iters for _ in range(plan.extra)]
    spread = cv(times)
    return WindowResult(
        times_s=times, median_s=median(times), cv=spread, unstable=spread > plan.cv_threshold, extended=extended
    )


@dataclass
class ArmResult:
    """Every round of one interleaved arm, and its summary."""

    times_s: list[float] = field(default_factory=list)
    """Seconds per call, one entry per round."""
    median_s: float = 0.0
    iqr_s: float = 0.0
    cv: float = 0.0
    unstable: bool = False


@dataclass
class InterleavedResult:
    arms: dict[str, ArmResult]
    order: list[tuple[int, str]]
    """(round, arm) in the order they ran."""
    extended: bool


def time_interleaved(
    arms: dict[str, Callable[[], Any]],
    clock: Clock,
    plan: WindowPlan,
    sync: Callable[[], None] | None = None,
    on_round: Callable[[int, dict[str, float]], None] | None = None,
) -> InterleavedResult:
    """Warm up each arm, then run rounds of A, B, C, ... (``plan.windows`` rounds, ``plan.iters`` calls each).

    If any arm's CV is above the threshold, ``plan.extra`` more rounds are run once for all arms.
    ``on_round(round, {arm: seconds per call})`` is called after every round (to persist it).
    """
    if not arms:
        raise ValueError("time_interleaved needs at least one arm")
    for fn in arms.values():
        for _ in range(plan.warmup):
            fn()
    if sync is not None:
        sync()
    results = {name: ArmResult() for name in arms}
    order: list[tuple[int, str]] = []

    def rounds(first: int, count: int) -> None:
        for r in range(first, first + count):
            this_round = {}
            for name, fn in arms.items():
                this_round[name] = clock.time(fn, plan.iters) / plan.iters
                results[name].times_s.append(this_round[name])
                order.append((r, name))
            if on_round is not None:
                on_round(r, this_round)

    rounds(0, plan.windows)
    extended = False
    if plan.extra and any(cv(a.times_s) > plan.cv_threshold for a in results.values()):
        extended = True
        rounds(plan.windows, plan.extra)
    for arm in results.values():
        arm.median_s, arm.iqr_s, arm.cv = median(arm.times_s), iqr(arm.times_s), cv(arm.times_s)
        arm.unstable = arm.cv > plan.cv_threshold
    return InterleavedResult(arms=results, order=order, extended=extended)
