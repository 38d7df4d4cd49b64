"""The spread between sessions that measured the same configuration (issue 23).

A run's own interval is its window noise inside one session; a second session on the same kind of
card also moves the clocks, the host and the state the card was left in, so its figure can differ by
more than either run's interval says. Where two or more sessions measured one configuration, a page
shows each figure and this spread beside them.
"""

from __future__ import annotations

from collections.abc import Sequence

from measure.errors import ProbebookError


def relative_range(values: Sequence[float]) -> float:
    """``(max − min) / min`` of one configuration's figures from different sessions (a fraction, unitless):
    how far above the lowest session the highest one lies. Needs two or more positive values."""
    if len(values) < 2:
        raise ProbebookError("the spread between sessions needs two or more sessions' figures")
    if min(values) <= 0:
        raise ProbebookError("the spread between sessions needs positive figures (times, rates)")
    return (max(values) - min(values)) / min(values)
