"""The timed windows of one measured point: their median, fastest and slowest, and the 95% interval of the median
and of a rate read at it (issue 23: every number that depends on timings carries an interval).

A table row of a point shows the median of its windows (a step, a GEMM), the rate at that median (tokens/s,
TFLOP/s) and its fastest and slowest windows. The median's interval is ``render.derive.intervals.median_interval``
of the windows; a rate is ``amount / median``, a decreasing map of the median, and an order-statistic interval
goes through a monotone map, so the rate's interval is the median's mapped (``reciprocal``). The fastest and
slowest windows are readings, not estimates from repeated windows: they get none. Fewer than ``MIN_SAMPLES``
windows give none either (None).

Some probes keep a point's windows apart from its row (``data.windows`` of ``batch-sweep`` and ``loss-memory``:
the row records the median ``step_s`` and the count ``windows``); ``recorded_windows`` finds them and checks that
they are the ones the row's median was taken over before an interval is drawn from them.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from render.derive.intervals import MIN_SAMPLES, median_interval, reciprocal

Interval = tuple[float, float]


@dataclass(frozen=True)
class Windows:
    """What a table shows of one point's timed windows (seconds)."""

    count: int
    """Timed windows."""
    median_s: float
    """Median window time."""
    fastest_s: float
    """The fastest window: a reading, no interval."""
    slowest_s: float
    """The slowest window: a reading, no interval."""
    median_ci_s: Interval | None
    """95% bootstrap interval of ``median_s``; None with fewer than ``MIN_SAMPLES`` windows."""


def median_ci(times: Sequence[float]) -> Interval | None:
    """95% bootstrap interval of the median of ``times`` (same unit); None with fewer than ``MIN_SAMPLES``.
    ``median_interval`` draws identical windows once per build process (its cache), however many tables show them."""
    return median_interval(times)


def timed_windows(times: Sequence[float]) -> Windows:
    """The median, fastest, slowest and the median's interval of one point's window ``times`` (seconds)."""
    if not times:
        raise ValueError("a point needs at least one timed window")
    return Windows(len(times), statistics.median(times), min(times), max(times), median_ci(times))


def rate_interval(amount: float, median_ci_s: Interval | None) -> Interval | None:
    """95% interval of the rate ``amount / median`` (tokens/s from tokens per step, say) from the median's
    interval in seconds; None without one."""
    return reciprocal(median_ci_s, amount)


def too_few(count: int) -> bool:
    """Whether ``count`` windows are too few for an interval (below ``MIN_SAMPLES``)."""
    return count < MIN_SAMPLES


def recorded_windows(
    windows: Sequence[Any], row: dict[str, Any], keys: Sequence[str], field: str = "step_s"
) -> list[float] | None:
    """The ``field`` values of the ``windows`` entries that share ``row``'s values of ``keys`` (and its ``point``,
    where both name one), when they are the windows the row's median was taken over: as many as its ``windows``
    count and their median its ``field``. None when the row or the entries do not show that (no windows kept,
    another count, another median): an interval drawn from other windows would describe another number."""
    median, count = row.get(field), row.get("windows")
    if not _number(median) or isinstance(count, bool) or not isinstance(count, int) or count < 1:
        return None
    found = [
        float(w[field])
        for w in windows
        if isinstance(w, dict)
        and _number(w.get(field))
        and all(w.get(k) == row.get(k) for k in keys)
        and (w.get("point") is None or row.get("point") is None or w["point"] == row["point"])
    ]
    if len(found) != count or not math.isclose(statistics.median(found), float(row[field]), rel_tol=1e-12, abs_tol=0.0):
        return None
    return found


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
