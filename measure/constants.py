"""The timing rules' numbers, in one torch-free module that render may import (ARCHITECTURE.md §Invariants, §Timing).

The probes time with them (``measure.timing``), render's derivations judge stability with them
(``render.derive.lossmem``), and the methodology page prints them through the ``constant()`` page
function, so the page and the code cannot disagree. A rule that judges a measured interval against one of them
(``overhead_verdict``) lives beside its number, so the probe that records the verdict and the page that shows it
apply the same rule.
"""

from measure.errors import ProbebookError

CV_THRESHOLD = 0.05
"""A point whose windows' coefficient of variation is above this gets extra windows once, then is flagged
unstable (issue 4: "A CV above 5% adds five more windows")."""
EXTRA_WINDOWS = 5
"""Windows (or interleaved rounds) added once when the CV is above ``CV_THRESHOLD``."""
WARMUP = 2
"""Untimed calls before timing each point or arm, by default, in every session (issue 38: two, down from three;
the first call compiles and autotunes, the second settles the allocator and an optimizer's lazily made state)."""
WINDOWS = 9
"""Timed windows (or interleaved rounds) per point and session, by default; the point's value is their median.

Odd, so the median is one window's time, and nine, the fewest whose exact order-statistic interval for the median
leaves out the extremes: [x(2), x(8)] covers 96.1% (5 windows give only [min, max] at 93.8%; issue 38)."""
ITERS = 1
"""Calls per timed window, by default; a window's time is their mean.

One (down from three, issue 38): the spread that matters lies between sessions, not between calls, so the
GPU time goes to more windows and more sessions instead of longer windows. A probe whose one call is too short
to time alone sizes its windows by time instead (``--window-s`` of gemm and copy,
``measure.timing.calls_per_window``). A point then costs ``WARMUP + WINDOWS`` = 11 calls per session, 33 in
``SESSIONS`` sessions, against 12 to 18 in one process before (2 + 5 x 2 for the 250m records' runs, 3 + 5 x 3 by
default): 1.8 to 2.75 times the timed calls. The sessions after the first pay neither their interpreter's start
(started ahead, ``measure.run.sessions``) nor a cold compile (torch's cache on disk), so the target of issue 38, a
record's runs at most twice their one-process cost, is met or missed by the fixed costs: ``bench/h200_sessions.sh``
measures the ratio on the GPU."""
SESSIONS = 3
"""Fresh processes a GPU run measures its windows in, by default (``--sessions``; issue 38): the fewest that give a
between-session spread, each with its own warm-up, allocator and compile state."""
SESSIONS_CPU = 1
"""Sessions of a CPU run by default: the CPU runs are tests and smoke runs, whose times no page publishes."""
MAX_SESSIONS = 20
"""The most sessions one run may ask for (pyperf's default is 20 worker processes)."""
THROTTLE_FRACTION = 0.75
"""A window whose SM clock (``sm_clock_mhz``, read right after it) is below this fraction of the card's top SM
clock (``machine.sm_clock_max_mhz``) ran throttled (nvbench's rule, issue 38); render marks its numbers."""
OVERHEAD_LIMIT = 0.05
"""An instrumented step whose hooks cost more than this fraction of the uninstrumented step is not trusted as a
measure of the optimizer's share (the original research protocol's rule: instrumentation that slows the step by more
than 5% has changed the step it times). The optimizer probe measures that cost as ``instrumentation_overhead``."""
OVERHEAD_VERDICTS = ("above", "below", "not resolved")
"""What ``overhead_verdict`` says: resolved above the limit, resolved below it, or not resolved (its interval
reaches the limit)."""


def overhead_verdict(low: float, high: float, limit: float = OVERHEAD_LIMIT) -> str:
    """The three-way verdict of a measured overhead whose 95% interval is ``low``..``high`` (fractions) against
    ``limit``: ``above`` when the whole interval is above it (the timing is flagged), ``below`` when the whole
    interval is below it, else ``not resolved``. A figure with no interval is judged as a line: ``low == high``."""
    if low > high:
        raise ProbebookError(f"an overhead interval's low end ({low}) is above its high end ({high})")
    if low > limit:
        return "above"
    if high < limit:
        return "below"
    return "not resolved"
