"""The spread between sessions that measured the same configuration (issue 23).

A run's own interval is its window noise inside one session; a second session on the same kind of
card also moves the clocks, the host and the state the card was left in, so its figure can differ by
more than either run's interval says. Where two or more sessions measured one configuration, a page
shows each figure and this spread beside them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from measure.errors import ProbebookError


def relative_range(values: Sequence[float]) -> float:
    """``(max − min) / min`` of one configuration's figures from different sessions (a fraction, unitless):
    how far above the lowest session the highest one lies. Needs two or more positive values."""
    if len(values) < 2:
        raise ProbebookError("the spread between sessions needs two or more sessions' figures")
    if min(values) <= 0:
        raise ProbebookError("the spread between sessions needs positive figures (times, rates)")
    return (max(values) - min(values)) / min(values)


def relative_range_interval(replicates: Sequence[Any]) -> tuple[float, float] | None:
    """95% percentile interval of ``relative_range`` over bootstrap replicates of each session's figure (one array
    per session, in one unit, ``render.derive.intervals.draws``): the range computed replicate by replicate. The
    sessions are independent samples, so their replicates are drawn apart and combined position by position.
    None with fewer than two sessions, or where a replicate is not positive."""
    from render.derive import intervals  # numpy loads only where a figure needs it

    if len(replicates) < 2:
        return None
    stacked = np.vstack([np.asarray(r, dtype=float) for r in replicates])
    low = stacked.min(axis=0)
    if not np.all(np.isfinite(stacked)) or np.any(low <= 0):
        return None
    spread = (stacked.max(axis=0) - low) / low
    lo, hi = np.percentile(spread, [100 * (1 - intervals.LEVEL) / 2, 100 * (1 + intervals.LEVEL) / 2])
    return float(lo), float(hi)
