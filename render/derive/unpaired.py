"""Two independent sample sets compared: the ratio of their medians, its bootstrap interval, a rank test.

Two runs of different processes (say the looped and the grouped experts of one preset, run one after the
other) are not interleaved round by round, so ``render.derive.paired`` does not apply: no window of one
belongs with a window of the other. What can be said is what asv and criterion.rs say of two independent
benchmarks (``/work/shared/STYLE-EXAMPLES.md``, statistics):

- the ratio is ``median(numerator) / median(denominator)`` (unitless; both sets in one unit);
- its 95% interval is ``render.derive.intervals.ratio_interval``: ``scipy.stats.bootstrap`` of that ratio
  with each set resampled on its own (``paired=False``: the sets' sizes may differ), percentile method, fixed
  seed, so a build is reproducible; the bootstrap lives there once, for every ratio of two medians;
- the test is ``scipy.stats.mannwhitneyu``, two-sided: whether one set tends to lie above the other;
- with fewer than ``MIN_SAMPLES`` samples on either side there is neither interval nor test.

The interval speaks only of the windows' spread within each run; a difference between the two runs'
sessions or processes that moves every window of one run alike is not in it.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from measure.errors import ProbebookError
from render.derive import intervals

MIN_SAMPLES = intervals.MIN_SAMPLES
"""Fewest samples per side for an interval and a test (``render.derive.intervals``'): with two, the two-sided
U test cannot fall below p = 1/3."""
RESAMPLES = intervals.RESAMPLES
"""Bootstrap resamples of the ratio's interval (``render.derive.intervals.RESAMPLES``, argued there)."""


@dataclass(frozen=True)
class UnpairedRatio:
    """``median(numerator) / median(denominator)`` of two independent sample sets, with its interval and test."""

    n_numerator: int
    """Samples in the numerator's set."""
    n_denominator: int
    """Samples in the denominator's set."""
    ratio: float
    """``median(numerator) / median(denominator)`` (unitless)."""
    ratio_ci: tuple[float, float] | None
    """95% percentile bootstrap interval of ``ratio``, each set resampled independently; None with fewer than
    ``MIN_SAMPLES`` on a side."""
    p_value: float | None
    """Two-sided Mann-Whitney U p of the two sets; None with fewer than ``MIN_SAMPLES`` on a side."""


def ratio_of_medians(numerator: Sequence[float], denominator: Sequence[float]) -> UnpairedRatio:
    """The ratio of the medians of two independent sample sets (same unit), its 95% interval and U test p."""
    num = np.asarray([float(v) for v in numerator], dtype=float)
    den = np.asarray([float(v) for v in denominator], dtype=float)
    if num.size == 0 or den.size == 0:
        raise ProbebookError(f"ratio of medians: a sample set is empty ({num.size} samples over {den.size})")
    if not (np.all(np.isfinite(num)) and np.all(np.isfinite(den))):
        raise ProbebookError("ratio of medians: a sample is not a finite number")
    if statistics.median(den.tolist()) <= 0:
        raise ProbebookError("ratio of medians: the denominator's median is not positive")
    ratio = statistics.median(num.tolist()) / statistics.median(den.tolist())
    if num.size < MIN_SAMPLES or den.size < MIN_SAMPLES:
        return UnpairedRatio(int(num.size), int(den.size), ratio, None, None)
    if np.any(den <= 0):
        raise ProbebookError("ratio of medians: a denominator sample is not positive (a resampled median could be)")
    interval = intervals.ratio_interval(num.tolist(), den.tolist())
    from scipy import stats  # here, not at the top: as in render.derive.paired, scipy loads only where a test runs

    p = float(stats.mannwhitneyu(num, den, alternative="two-sided").pvalue)
    return UnpairedRatio(int(num.size), int(den.size), ratio, interval, p)
