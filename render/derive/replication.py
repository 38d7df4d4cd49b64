"""Where the next session lands: the across-sessions interval, the practical band and the three-way verdict (issue 38).

A run's windows share one process, one lease, one card's state: their spread says how well *this run* knows its
median, not where a re-measurement lands. Across the archive's H200 sessions an eager 250m step moved by about
20% (SD) against a within-session standard error of about 3%. So, as Kalibera & Jones treat benchmarking
(``softdevteam/libkalibera``: sessions and windows are two levels of variance, and the interval's degrees of
freedom come from the top level), the replicate here is the session:

- ``prediction``: a new session's figure, from ``k`` sessions' figures, is predicted on the log scale (times and
  rates vary by a factor, not by an amount) as ``mean ± t(df) · s · sqrt(1 + 1/k)``, the normal prediction
  interval. ``s`` is the configuration's own between-session SD where it has ``OWN_SESSIONS`` or more sessions,
  else the SD pooled over the archive's repeated configurations of the same probe class (``pooled_log_sd``),
  stated as such, with that pool's degrees of freedom.
- ``verdict``: one rule for claims, Answers and reproductions, Chromium Pinpoint's DIFFERENT / SAME / UNKNOWN
  and criterion.rs's noise threshold: *resolved* when the interval of the relative difference excludes zero and
  the difference exceeds the class's practical band ``DELTA``; *equivalent* when the interval lies inside
  ``±DELTA``; otherwise *not resolved* (never "no difference").
- ``throttled``: nvbench flags windows below 75% of the card's default clock; a window below ``THROTTLE`` of the
  card's top SM clock marks the number. ``sagged``: a point whose windows' clock fell below ``SAG`` of their own
  median ran at two speeds within the run. ``host_bound``: a step whose GPU was busy less than ``HOST_BOUND`` of
  it waited on the host. ``in_cycles``: a difference between runs is also judged on time × SM clock.

Pure functions of numbers; ``render.evidence.series`` reads the archive for them.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from measure.errors import ProbebookError

LEVEL = 0.95
"""Level of every interval here (``render.derive.intervals.LEVEL``'s; that module loads numpy and scipy, which this
one leaves to the functions that need them)."""
OWN_SESSIONS = 5
"""Sessions of its own a configuration needs before its own between-session SD is used: with fewer, the
t quantile (12.7 at two sessions, 4.3 at three) makes its interval wider than the class's pooled estimate says,
and an SD from two or three values is itself off by a factor of two half the time."""
LEASE_S = 30 * 60
"""The longest a device lease holds a machine: two runs of one host written within this of each other ran in one
lease, on one card and host state, and are compared by their own windows (the session moved both alike)."""
THROTTLE = 0.75
"""A window whose SM clock is below this fraction of the card's top clock ran throttled (nvbench's rule:
``--throttle-threshold``, "percentage of the device's default clock rate", default 75; NVIDIA/nvbench
docs/cli_help.md)."""
SAG = 0.90
"""A point whose lowest window clock is below this fraction of its windows' median clock sagged within the run.
nvbench drops a sample taken while the clock is below its threshold and waits for the clock to recover
(``--throttle-recovery-delay``): a clock that moves during a run moves the samples with it. The reference here is
the point's own median, not the card's top clock, because a card under a power cap (an H100 running large GEMMs
at 1.4–1.7 GHz of 1.98) holds a steady clock below its top that is the card's real speed for that work; a drop of
10% below that steady clock changes a device-bound window's time by up to 10%, twice the step class's practical
band (``DELTA``), so the run's spread holds a clock's change and not only the work's."""
HOST_BOUND = 0.80
"""A step during which the GPU was busy (one or more kernels running) less than this share of the time waited on
the host: Python, the launches, the data or a synchronisation held the GPU idle for a fifth of the step or more.
A device-bound 250m step reads 87–98% on the utilisation sampler (NVML's ``utilization.gpu``: the share of the
sample period with a kernel running) across this archive's H200 windows; a kernels profile's summed kernel time
covers the event-timed step to within its consistency bounds when the device is the bottleneck. Below 80%, a
faster GPU or a faster kernel moves the step by less than it moves the kernel, and a reader should know."""

CLASSES: dict[str, tuple[str, ...]] = {
    "kernel": ("gemm", "copy"),
    "step": (
        "step-scaling", "ablate", "optimizer", "mask", "stream", "hvp", "eval-boundary", "ddp", "kernels", "agreement",
        "batch-sweep", "loss-memory", "campaign",
    ),
}  # fmt: skip
"""Probe classes: the runs whose between-session spread is pooled, and whose practical band is one. A batch
sweep's point times the same training step a step probe does (and repeats no point of its own across sessions)."""
DELTA: dict[str, float] = {"kernel": 0.02, "step": 0.05}
"""The practical band per class (a fraction of the slower side): a difference smaller than this is not one a
reader acts on. A device-bound kernel (a GEMM, a copy) repeats to about 1% between sessions, so 2% is a real
change; an end-to-end step moves by more with the host, the clocks and the allocator, and the playbook's advice
turns on differences of 5% and more."""
DEFAULT_CLASS = "step"

RESOLVED, EQUIVALENT, NOT_RESOLVED = "resolved", "equivalent", "not resolved"
VERDICTS = (RESOLVED, EQUIVALENT, NOT_RESOLVED)


def probe_class(probe: str) -> str:
    """The class of ``probe`` (``CLASSES``); an unknown probe is a ``step`` (the wider band)."""
    for name, probes in CLASSES.items():
        if probe in probes:
            return name
    return DEFAULT_CLASS


def t_quantile(df: float) -> float:
    """The two-sided ``LEVEL`` quantile of Student's t with ``df`` degrees of freedom."""
    from scipy.stats import t  # scipy loads only where an interval is drawn

    if not df > 0:
        raise ProbebookError("a t quantile needs one or more degrees of freedom")
    return float(t.ppf((1 + LEVEL) / 2, df))


@dataclass(frozen=True)
class Spread:
    """A between-session SD on the log scale (a relative SD, about) and where it came from."""

    sd_log: float
    df: int
    """Degrees of freedom: sessions less one per configuration, summed."""
    configurations: int
    """Configurations (points) the SD was pooled over; 1 for a configuration's own."""
    source: str
    """``own``: the configuration's sessions; ``class``: pooled over the class's repeated configurations."""


def own_log_sd(figures: Sequence[float]) -> Spread | None:
    """The between-session SD of one configuration's session ``figures`` (positive), on the log scale; None with
    fewer than two."""
    logs = _logs(figures)
    if len(logs) < 2:
        return None
    return Spread(statistics.stdev(logs), len(logs) - 1, 1, "own")


def pooled_log_sd(groups: Sequence[Sequence[float]]) -> Spread | None:
    """The between-session SD pooled over configurations, each a group of session figures (positive): the sum of
    squared log deviations from each group's own mean over the sum of (sessions − 1). Groups of one add nothing.
    None when no group has two sessions."""
    squares, df, used = 0.0, 0, 0
    for group in groups:
        logs = _logs(group)
        if len(logs) < 2:
            continue
        mean = statistics.fmean(logs)
        squares += sum((x - mean) ** 2 for x in logs)
        df += len(logs) - 1
        used += 1
    if df == 0:
        return None
    return Spread(math.sqrt(squares / df), df, used, "class")


def sd_interval(spread: Spread) -> tuple[float, float]:
    """The ``LEVEL`` interval of a pooled SD from its degrees of freedom (chi-square: ``df·s²/σ²`` ~ χ²(df))."""
    from scipy.stats import chi2

    tail = (1 - LEVEL) / 2
    low = spread.sd_log * math.sqrt(spread.df / float(chi2.ppf(1 - tail, spread.df)))
    high = spread.sd_log * math.sqrt(spread.df / float(chi2.ppf(tail, spread.df)))
    return low, high


@dataclass(frozen=True)
class Prediction:
    """Where a new session's figure lands, with ``LEVEL`` probability (the figures' unit)."""

    center: float
    """The geometric mean of the sessions' figures."""
    low: float
    high: float
    sessions: int
    """Sessions the center stands on."""
    spread: Spread


def prediction(figures: Sequence[float], pool: Spread | None = None) -> Prediction | None:
    """The ``LEVEL`` prediction interval of a new session's figure from ``figures`` (one per session, positive):
    the configuration's own SD with ``OWN_SESSIONS`` or more sessions, else ``pool`` (a class's pooled SD);
    None when neither is at hand."""
    logs = _logs(figures)
    if not logs:
        return None
    own = own_log_sd(figures)
    spread = own if own is not None and len(logs) >= OWN_SESSIONS else pool
    if spread is None:
        return None
    mean = statistics.fmean(logs)
    half = t_quantile(spread.df) * spread.sd_log * math.sqrt(1 + 1 / len(logs))
    return Prediction(math.exp(mean), math.exp(mean - half), math.exp(mean + half), len(logs), spread)


def describe(pool: Spread, name: str, source: str = "this run") -> str:
    """What a number's derivation says of its across-sessions interval (``prediction`` from ``source``'s figure and
    class ``name``'s ``pool``)."""
    return (
        f"95% interval across sessions: where a new session on this card lands, from {source} and the "
        f"between-session SD of the archive's repeated {name} configurations ({pool.sd_log:.1%} on the log scale, "
        f"{pool.configurations} points, {pool.df} degrees of freedom; replication.prediction)"
    )


@dataclass(frozen=True)
class Verdict:
    """A comparison judged three ways."""

    outcome: str
    """``resolved``, ``equivalent`` or ``not resolved`` (``VERDICTS``)."""
    effect: float
    """The relative difference ``a / b − 1`` (or ``a − b`` for fractions compared as such)."""
    interval: tuple[float, float]
    delta: float
    """The practical band it was judged against."""

    def words(self) -> str:
        lo, hi = self.interval
        return (
            f"{self.outcome}: difference {self.effect:+.2%} (95% interval {lo:+.2%} to {hi:+.2%}), "
            f"band ±{self.delta:.0%}"
        )


def verdict(effect: float, interval: tuple[float, float], delta: float) -> Verdict:
    """The three-way verdict of a difference ``effect`` with its 95% ``interval`` (both fractions) against the
    practical band ``delta`` (a fraction): resolved, equivalent within the band, or not resolved."""
    if delta < 0:
        raise ProbebookError(f"a practical band is 0 or more, got {delta}")
    lo, hi = interval
    if lo > hi:
        raise ProbebookError(f"an interval's low end ({lo}) is above its high end ({hi})")
    if (lo > 0 or hi < 0) and abs(effect) > delta:
        return Verdict(RESOLVED, effect, interval, delta)
    if -delta < lo and hi < delta:
        return Verdict(EQUIVALENT, effect, interval, delta)
    return Verdict(NOT_RESOLVED, effect, interval, delta)


def relative_difference(
    a: float, a_interval: tuple[float, float] | None, b: float, b_interval: tuple[float, float] | None
) -> tuple[float, tuple[float, float]]:
    """``a / b − 1`` of two positive independent numbers and its 95% interval: each side's interval taken on the log
    scale as ``LEVEL`` normal bounds, the two half-widths combined in quadrature per side (first order, GUM §5.1.2);
    a side without an interval (an exact number) adds nothing."""
    if not (a > 0 and b > 0):
        raise ProbebookError("a relative difference of two numbers needs both positive")
    la, lb = math.log(a), math.log(b)
    below_a, above_a = _log_halves(a, a_interval)
    below_b, above_b = _log_halves(b, b_interval)
    low = la - lb - math.hypot(below_a, above_b)
    high = la - lb + math.hypot(above_a, below_b)
    return a / b - 1, (math.expm1(low), math.expm1(high))


def absolute_difference(
    a: float, a_interval: tuple[float, float] | None, b: float, b_interval: tuple[float, float] | None
) -> tuple[float, tuple[float, float]]:
    """``a − b`` of two independent numbers (fractions: savings, shares) and its 95% interval, half-widths combined
    in quadrature per side (first order)."""
    a_lo, a_hi = a_interval or (a, a)
    b_lo, b_hi = b_interval or (b, b)
    return a - b, (a - b - math.hypot(a - a_lo, b_hi - b), a - b + math.hypot(a_hi - a, b - b_lo))


def throttled(clocks_mhz: Sequence[float | None], top_mhz: float | None) -> float | None:
    """The lowest SM clock of a run's windows as a fraction of the card's top clock when it is below ``THROTTLE``
    (the run ran throttled), else None; None too where the clocks or the top clock are unknown."""
    known = [c for c in clocks_mhz if isinstance(c, (int, float)) and not isinstance(c, bool) and c > 0]
    if not known or not top_mhz or top_mhz <= 0:
        return None
    lowest = min(known) / top_mhz
    return lowest if lowest < THROTTLE else None


def sagged(points: Sequence[Sequence[float | None]]) -> float | None:
    """The lowest ratio of a point's lowest window clock to its windows' median clock, over ``points`` (each the
    SM clocks, MHz, of one measured point's windows), when it is below ``SAG`` (the clock sagged within the run),
    else None; points with fewer than two known clocks say nothing."""
    worst = None
    for clocks in points:
        known = [c for c in clocks if isinstance(c, (int, float)) and not isinstance(c, bool) and c > 0]
        if len(known) < 2:
            continue
        ratio = min(known) / statistics.median(known)
        worst = ratio if worst is None else min(worst, ratio)
    return worst if worst is not None and worst < SAG else None


def host_bound(busy: float | None) -> float | None:
    """The GPU's busy share of a step (0–1) when it is below ``HOST_BOUND`` (the step waited on the host), else
    None; None too where it is unknown."""
    if not isinstance(busy, (int, float)) or isinstance(busy, bool) or not 0 <= busy <= 1.5:
        return None
    return float(busy) if busy < HOST_BOUND else None


def in_cycles(
    value: float, interval: tuple[float, float] | None, clock_mhz: float, rate: bool
) -> tuple[float, tuple[float, float] | None]:
    """A time (or a rate, ``rate``) and its interval in cycle space (nvbench_compare's check): a time times the SM
    clock, a rate divided by it, so two runs at different clocks compare the work per cycle. The clock is taken
    as exact (its reading's error is far below a window's)."""
    if not clock_mhz > 0:
        raise ProbebookError(f"a clock must be positive, got {clock_mhz}")
    scale = 1 / clock_mhz if rate else clock_mhz
    return value * scale, None if interval is None else (interval[0] * scale, interval[1] * scale)


def same_lease(a: tuple[str, float] | None, b: tuple[str, float] | None) -> bool:
    """Whether two runs' (host, unix time) put them in one lease: one host, written within ``LEASE_S``."""
    return a is not None and b is not None and bool(a[0]) and a[0] == b[0] and abs(a[1] - b[1]) <= LEASE_S


def _logs(figures: Sequence[float]) -> list[float]:
    out = []
    for f in figures:
        if not (isinstance(f, (int, float)) and math.isfinite(f) and f > 0):
            raise ProbebookError(f"a session's figure must be a positive number, got {f!r}")
        out.append(math.log(f))
    return out


def _log_halves(value: float, interval: tuple[float, float] | None) -> tuple[float, float]:
    if interval is None:
        return 0.0, 0.0
    lo, hi = interval
    if lo <= 0:
        raise ProbebookError("a relative difference needs positive interval ends")
    return max(0.0, math.log(value) - math.log(lo)), max(0.0, math.log(hi) - math.log(value))
