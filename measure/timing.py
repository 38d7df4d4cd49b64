"""The timing core shared by every probe (ARCHITECTURE.md §Timing): clocks, windows, medians, CV, interleaved arms.

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
* On CUDA the SM clock (NVML) is read right after every window's end event (``CudaEventClock``) and kept
  with the window (``sm_clock_mhz``), so a window that ran throttled can be told from one that did not
  (issue 38: below ``THROTTLE_FRACTION`` of the card's top clock, ``machine.sm_clock_max_mhz``).
* On CUDA the card's energy is read right before each window starts and right after its end event
  (``measure.utilisation.EnergyMeter``: NVML's total-energy counter, else the power trapezoid) and kept with the
  window as joules per call (``energy_j``, the window's energy over its calls, on the basis of its seconds per
  call); absent on CPU and wherever NVML cannot say (issue 43). What it was read from: ``machine.energy``.
* A run's windows are measured in ``sessions`` fresh processes (``SessionFields``, ``measure.run.sessions``):
  the session, not the window, is the unit a re-measurement replicates.

Importing this module does not import torch.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from measure.constants import (  # shared with render
    CV_THRESHOLD,
    EXTRA_WINDOWS,
    ITERS,
    MAX_SESSIONS,
    SESSIONS,
    SESSIONS_CPU,
    WARMUP,
    WINDOWS,
)
from measure.errors import ProbebookError

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
    """CUDA events recorded on the current stream around the loop; the host waits on the end event.

    Right after the end event, the SM clock is read through NVML into ``last_sm_clock_mhz`` (None where
    NVML cannot say): the clock the window ended at, read once per window (tens of microseconds, outside
    the events), as nvbench reads it to flag throttled samples. The window's energy goes to ``last_energy_j``
    (joules for the whole window, None where NVML cannot say): the meter reads before the start event, when
    the queue is empty (every window ends synchronised), and after the end event's synchronise.
    """

    def __init__(self) -> None:
        import torch

        from measure.utilisation import energy_meter, sm_clock_reader

        self.torch = torch
        self.read_sm_clock = sm_clock_reader()
        self.meter = energy_meter()
        self.last_sm_clock_mhz: int | None = None
        self.last_energy_j: float | None = None

    def time(self, fn: Callable[[], Any], iters: int) -> float:
        torch = self.torch
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        before = self.meter.mark()
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        self.last_sm_clock_mhz = self.read_sm_clock() if self.read_sm_clock is not None else None
        seconds = start.elapsed_time(end) / 1000.0  # elapsed_time is in milliseconds
        self.last_energy_j = self.meter.joules(before, seconds)
        return seconds


def window_clock(clock: Clock) -> int | None:
    """The SM clock (MHz) the clock's last window ended at; None for a host clock or where NVML cannot say."""
    value = getattr(clock, "last_sm_clock_mhz", None)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def window_energy(clock: Clock, iters: int) -> float | None:
    """Joules per call of the clock's last window (its energy over its ``iters`` calls); None for a host clock or
    where NVML cannot say."""
    value = getattr(clock, "last_energy_j", None)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or iters < 1:
        return None
    return float(value) / iters


def energy_field(joules: float | None) -> dict[str, float]:
    """A row's ``energy_j`` column: ``{"energy_j": joules per call}``, or nothing where there is no energy (CPU, no
    NVML), so a CPU row has no energy column rather than a null one."""
    return {} if joules is None else {"energy_j": joules}


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
class TimingFields:
    """How a point is timed: the fields every probe's config and ``WindowPlan`` share (declared here only)."""

    warmup: int = WARMUP
    """Untimed calls before timing each point or arm (compilation, allocator and autotuning settle here)."""
    windows: int = WINDOWS
    """Timed windows (or interleaved rounds) per point; the point's value is their median."""
    iters: int = ITERS
    """Calls per window; a window's time is their mean."""

    def __post_init__(self) -> None:
        for name, low in (("warmup", 0), ("windows", 1), ("iters", 1)):
            if getattr(self, name) < low:
                raise ProbebookError(f"--{name} must be >= {low}, got {getattr(self, name)}")


def session_count(requested: int | None, device: str) -> int:
    """The sessions a run measures in: as requested, else ``SESSIONS`` on CUDA and ``SESSIONS_CPU`` elsewhere."""
    if requested is not None:
        return requested
    return SESSIONS if device == "cuda" else SESSIONS_CPU


@dataclass(frozen=True)
class SessionFields:
    """How many fresh processes measure a run: the field every timing probe's config shares (declared here only).

    Why sessions: a re-measurement in another process lands outside one process's window interval far more
    often than 5% (issue 38: end-to-end step times vary about 20% between sessions against a 3% standard
    error within one), so the variance a reader cares about is between processes. Each session is a fresh
    process with its own warm-up, allocator and compile state (``measure.run.sessions``); the run is one
    evidence document whose every row carries its ``session``. The default, ``SESSIONS`` (3) on CUDA, is the
    fewest that give a between-session spread; the CPU (tests, smoke runs) defaults to ``SESSIONS_CPU`` (1).
    """

    SESSIONED: ClassVar[bool] = True
    """False for a probe whose stored rows a reader sums or keys by point (kernels' profile rows, a sweep's one
    row per point, which already runs in a fresh process per point): it measures in one session only."""

    sessions: int | None = None
    """Fresh processes that each measure every window of the run, stored as one document whose rows carry
    ``session`` (default 3 on CUDA, 1 on CPU)."""

    def check_sessions(self) -> None:
        """Refuse a session count below 1 or above ``MAX_SESSIONS``, or above 1 for a one-session probe, in one line."""
        if self.sessions is not None and not 1 <= self.sessions <= MAX_SESSIONS:
            raise ProbebookError(f"--sessions must be between 1 and {MAX_SESSIONS}, got {self.sessions}")
        if not self.SESSIONED and self.sessions not in (None, 1):
            raise ProbebookError(
                f"--sessions {self.sessions}: this probe measures in one session (its rows are summed or keyed by "
                "point, so repeated sessions would be misread); drop it"
            )

    def session_count(self, device: str) -> int:
        """How many sessions this run measures in on ``device`` (1 for a one-session probe)."""
        return session_count(self.sessions, device) if self.SESSIONED else 1


@dataclass(frozen=True)
class WindowPlan(TimingFields):
    """How one point is timed."""

    cv_threshold: float = CV_THRESHOLD
    """A CV of the windows above this adds ``extra`` windows once; still above: flagged unstable."""
    extra: int = EXTRA_WINDOWS
    """Windows added when the CV is above the threshold."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.cv_threshold <= 0 or self.extra < 0:
            raise ProbebookError("cv_threshold must be > 0 and extra >= 0")


def calls_per_window(window_s: float, step_s: float, least: int) -> int:
    """Calls that make a window last about ``window_s`` seconds when one call takes ``step_s`` seconds.

    At least ``least`` calls; sized by time the way ``timeit.Timer.autorange`` sizes its loops (it, and
    ``torch.utils.benchmark``'s ``blocked_autorange``, aim at 0.2 s), so a
    2 ms step gets a hundred calls and a 400 ms step one, instead of the same count for both.
    """
    if not step_s > 0:
        return least
    return max(least, math.ceil(window_s / step_s))


class WindowsFailed(RuntimeError):
    """Every window of an arm failed its checks: there is no timing to report."""


class Watch(Protocol):
    """What a window checks and samples besides its time (``measure.integrity.WindowWatch``)."""

    def begin(self) -> None:
        """Called right before a window's clock starts."""

    def end(self, calls: int) -> dict[str, Any]:
        """Called after the window's clock stopped: ``{"failure": reason or None, ...}``."""


def watched(
    fn: Callable[[], Any], clock: Clock, iters: int, watch: Watch | None
) -> tuple[float, dict[str, Any] | None]:
    """Seconds per call of one window of ``iters`` calls, and what the watch saw (None without a watch)."""
    if watch is None:
        return clock.time(fn, iters) / iters, None
    watch.begin()
    seconds = clock.time(fn, iters) / iters
    return seconds, watch.end(iters)


@dataclass
class WindowResult:
    """Every window of one point, and its summary."""

    times_s: list[float]
    """Seconds per call, one entry per window that passed its checks, in the order run."""
    median_s: float | None
    """Median of ``times_s``; None when every window failed."""
    cv: float
    unstable: bool
    """True when the CV stayed above the threshold after the extra windows."""
    extended: bool
    """True when extra windows were added."""
    checks: list[dict[str, Any] | None] = field(default_factory=list)
    """What the watch saw in each timed window (aligned with ``times_s``); None entries without a watch."""
    failures: list[dict[str, Any]] = field(default_factory=list)
    """Windows that failed their checks (a non-finite loss, a wrong update count): never timings."""
    sm_clock_mhz: list[int | None] = field(default_factory=list)
    """The SM clock each timed window ended at (aligned with ``times_s``); None entries on CPU or without NVML."""
    energy_j: list[float | None] = field(default_factory=list)
    """Joules per call of each timed window (aligned with ``times_s``); None entries on CPU or without NVML."""

    @property
    def checked_median_s(self) -> float:
        """``median_s``; ``WindowsFailed`` when every window failed its checks (there is no timing)."""
        if self.median_s is None:
            raise WindowsFailed(f"every window failed its checks, first: {self.failures[0].get('failure')}")
        return self.median_s


def time_windows(
    fn: Callable[[], Any],
    clock: Clock,
    plan: WindowPlan,
    sync: Callable[[], None] | None = None,
    watch: Watch | None = None,
) -> WindowResult:
    """Warm up, then time ``plan.windows`` windows of ``plan.iters`` calls (more if the CV is high).

    With a ``watch``, a window whose check fails goes to ``failures`` with its reason and is never a timing.
    """
    for _ in range(plan.warmup):
        fn()
    if sync is not None:
        sync()
    times: list[float] = []
    checks: list[dict[str, Any] | None] = []
    failures: list[dict[str, Any]] = []
    clocks: list[int | None] = []
    energy: list[float | None] = []

    def run(count: int) -> None:
        for _ in range(count):
            index = len(times) + len(failures)
            seconds, seen = watched(fn, clock, plan.iters, watch)
            mhz, joules = window_clock(clock), window_energy(clock, plan.iters)
            if seen is not None and seen.get("failure"):
                failures.append(
                    {"window": index, "seconds_per_call": seconds, "sm_clock_mhz": mhz, **energy_field(joules), **seen}
                )
            else:
                times.append(seconds)
                checks.append(seen)
                clocks.append(mhz)
                energy.append(joules)

    run(plan.windows)
    extended = False
    if times and cv(times) > plan.cv_threshold and plan.extra:
        extended = True
        run(plan.extra)
    spread = cv(times)
    return WindowResult(
        times_s=times,
        median_s=median(times) if times else None,
        cv=spread,
        unstable=spread > plan.cv_threshold,
        extended=extended,
        checks=checks,
        failures=failures,
        sm_clock_mhz=clocks,
        energy_j=energy,
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
    checks: list[dict[str, Any] | None] = field(default_factory=list)
    """What the watch saw in each timed round of this arm (aligned with ``times_s``)."""
    failures: list[dict[str, Any]] = field(default_factory=list)
    """Rounds of this arm that failed their checks: never timings."""
    sm_clock_mhz: list[int | None] = field(default_factory=list)
    """The SM clock each timed round of this arm ended at (aligned with ``times_s``); None without NVML."""
    energy_j: list[float | None] = field(default_factory=list)
    """Joules per call of each timed round of this arm (aligned with ``times_s``); None on CPU or without NVML."""


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
    on_round: Callable[[int, dict[str, float], dict[str, int | None], dict[str, float | None]], None] | None = None,
    watch: Watch | dict[str, Watch] | None = None,
) -> InterleavedResult:
    """Warm up each arm, then run rounds of A, B, C, ... (``plan.windows`` rounds, ``plan.iters`` calls each).

    If any arm's CV is above the threshold, ``plan.extra`` more rounds are run once for all arms.
    ``on_round(round, {arm: seconds per call}, {arm: SM clock in MHz or None}, {arm: joules per call or None})`` is
    called after every round (to persist it, each arm's window with the clock it ended at and its energy); with a
    ``watch`` (one for every arm, or one per arm name), an arm whose window failed its checks is left out
    of that round's dict and of its timings.
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
            this_round: dict[str, float] = {}
            round_clocks: dict[str, int | None] = {}
            round_energy: dict[str, float | None] = {}
            for name, fn in arms.items():
                seconds, seen = watched(fn, clock, plan.iters, watch.get(name) if isinstance(watch, dict) else watch)
                mhz, joules = window_clock(clock), window_energy(clock, plan.iters)
                order.append((r, name))
                if seen is not None and seen.get("failure"):
                    results[name].failures.append(
                        {"round": r, "seconds_per_call": seconds, "sm_clock_mhz": mhz, **energy_field(joules), **seen}
                    )
                    continue
                this_round[name] = seconds
                round_clocks[name] = mhz
                round_energy[name] = joules
                results[name].times_s.append(seconds)
                results[name].checks.append(seen)
                results[name].sm_clock_mhz.append(mhz)
                results[name].energy_j.append(joules)
            if on_round is not None:
                on_round(r, this_round, round_clocks, round_energy)

    rounds(0, plan.windows)
    extended = False
    if plan.extra and any(cv(a.times_s) > plan.cv_threshold for a in results.values()):
        extended = True
        rounds(plan.windows, plan.extra)
    for name, arm in results.items():
        if not arm.times_s:
            raise WindowsFailed(f"arm {name}: every round failed its checks, first: {arm.failures[0]['failure']}")
        arm.median_s, arm.iqr_s, arm.cv = median(arm.times_s), iqr(arm.times_s), cv(arm.times_s)
        arm.unstable = arm.cv > plan.cv_threshold
    return InterleavedResult(arms=results, order=order, extended=extended)
