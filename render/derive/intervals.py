"""95% bootstrap intervals of the statistics a page shows from raw windows: a median, a ratio of two medians,
a saving, a ratio of two rates (issue 23, "Uncertainty that reaches the conclusion").

A median of timed windows is a claim about the step's time, and its interval says how far another session's
windows could put it: ``scipy.stats.bootstrap`` of the statistic over the windows (percentile method,
``RESAMPLES`` resamples, fixed ``SEED``, so two builds of the same evidence show the same interval; the counts
and the argument for them are ``render.derive.paired``'s). Two arms of one document that were *not* timed in
interleaved rounds are resampled independently (``paired=False``): their windows are two samples. Arms timed
in rounds are ``render.derive.paired``'s job, which keeps the pairing.

Fewer than ``MIN_SAMPLES`` windows give no interval (None): the bootstrap of two values says nothing about a
third. Windows that are all equal give the degenerate interval ``(v, v)``, which is what they show.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats

from render.derive.paired import LEVEL, RESAMPLES, SEED

__all__ = [
    "LEVEL",
    "MIN_SAMPLES",
    "RESAMPLES",
    "SEED",
    "median_interval",
    "ratio_interval",
    "reciprocal",
    "saving_interval",
    "scaled",
]

MIN_SAMPLES = 3
"""Fewest windows per sample that get an interval."""


def _bootstrap(
    samples: tuple[np.ndarray, ...], statistic: Callable[..., np.ndarray], resamples: int
) -> tuple[float, float] | None:
    if any(len(s) < MIN_SAMPLES for s in samples):
        return None
    if all(np.all(s == s[0]) for s in samples):
        value = float(statistic(*(s[np.newaxis, :] for s in samples))[0])
        return value, value
    with np.errstate(divide="ignore", invalid="ignore"):
        res = stats.bootstrap(
            samples,
            statistic,
            n_resamples=resamples,
            confidence_level=LEVEL,
            method="percentile",
            paired=False,
            vectorized=True,
            axis=-1,
            random_state=np.random.default_rng(SEED),
        )
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if not (np.isfinite(low) and np.isfinite(high)):
        return None  # a resample with a zero divisor: the ratio has no interval to state
    return low, high


def _array(values: Sequence[float]) -> np.ndarray:
    return np.asarray([float(v) for v in values], dtype=float)


def median_interval(values: Sequence[float], resamples: int = RESAMPLES) -> tuple[float, float] | None:
    """95% interval of the median of ``values`` (same unit); None with fewer than ``MIN_SAMPLES``."""

    def med(x: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.asarray(np.median(x, axis=axis))

    return _bootstrap((_array(values),), med, resamples)


def ratio_interval(
    numerator: Sequence[float], denominator: Sequence[float], resamples: int = RESAMPLES
) -> tuple[float, float] | None:
    """95% interval of ``median(numerator) / median(denominator)``, the two resampled independently."""

    def ratio(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.asarray(np.median(a, axis=axis) / np.median(b, axis=axis))

    return _bootstrap((_array(numerator), _array(denominator)), ratio, resamples)


def saving_interval(
    arm: Sequence[float], baseline: Sequence[float], resamples: int = RESAMPLES
) -> tuple[float, float] | None:
    """95% interval of ``1 − median(arm) / median(baseline)`` (fraction), the arms resampled independently."""
    ci = ratio_interval(arm, baseline, resamples)
    return None if ci is None else (1.0 - ci[1], 1.0 - ci[0])


def scaled(interval: tuple[float, float] | None, factor: float) -> tuple[float, float] | None:
    """An interval multiplied by an exact ``factor`` (ordered again when the factor is negative)."""
    if interval is None:
        return None
    low, high = interval[0] * factor, interval[1] * factor
    return (low, high) if low <= high else (high, low)


def reciprocal(interval: tuple[float, float] | None, factor: float) -> tuple[float, float] | None:
    """``factor / x`` over an interval of a positive ``x`` (a time from a rate, say); None if it reaches zero."""
    if interval is None or interval[0] <= 0:
        return None
    return factor / interval[1], factor / interval[0]
