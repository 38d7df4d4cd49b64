"""95% bootstrap intervals of the statistics a page shows from raw windows: a median, a ratio of two medians,
a saving, a ratio of two rates (issue 23, "Uncertainty that reaches the conclusion").

A median of timed windows has an exact, distribution-free interval from its order statistics (``order_ranks``,
issue 38): the percentile bootstrap of a median only ever picks two order statistics, and at the five or seven
windows probes take it covers less than it says. A ratio or saving of two samples is ``scipy.stats.bootstrap``
of the statistic (percentile method, ``RESAMPLES`` resamples, fixed ``SEED``, so two builds of the same evidence
show the same interval). These intervals describe *this run's windows*: where another session lands is
``render.derive.replication``'s. Two arms
of one document that were *not* timed in interleaved rounds are resampled independently (``paired=False``):
their windows are two samples. Arms timed in rounds are ``render.derive.paired``'s job, which keeps the pairing
(and takes its median's interval from here).

Fewer than ``MIN_SAMPLES`` windows give no interval (None): the bootstrap of two values says nothing about a
third. Windows that are all equal give the degenerate interval ``(v, v)``, which is what they show.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = [
    "JOINT",
    "LEVEL",
    "MIN_SAMPLES",
    "RESAMPLES",
    "SEED",
    "Recipe",
    "draws",
    "joint_interval",
    "mean_interval",
    "mean_recipe",
    "median_coverage",
    "median_interval",
    "median_recipe",
    "order_ranks",
    "ratio_interval",
    "reciprocal",
    "saving_interval",
    "scaled",
]

RESAMPLES = 20_000
"""Bootstrap resamples. The Monte-Carlo error of a percentile endpoint is about
``sqrt(q(1−q)/R) / f(x_q)``; at R = 20,000 and q = 0.025 that is about 0.11% of the sampling distribution's
mass, a shift of roughly 1/50 of the interval's half-width for a near-normal median, below the last digit
the page shows (two figures of the smaller half-width, ``render.derive.reading``). 200 would move the
endpoints by a fifth of the half-width from seed to seed."""
SEED = 23
"""Fixed seed of the resampling, so that two builds of the same evidence show the same interval."""
MEDIAN_METHOD = "exact order-statistic interval of the median (distribution-free)"
"""What a derivation says of a median's interval (``median_interval``)."""
LEVEL = 0.95
"""Confidence level of every interval here."""
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
    from scipy import stats  # here, not at the top: `campaign status` reads batch rows and never resamples

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
    """The exact order-statistic interval of the median of ``values`` (same unit, ``order_ranks``: 95% or more
    from six values, ``[min, max]`` below); None with fewer than ``MIN_SAMPLES``."""
    return _median_interval(tuple(float(v) for v in values), resamples)


def mean_interval(values: Sequence[float], resamples: int = RESAMPLES) -> tuple[float, float] | None:
    """95% percentile-bootstrap interval of the mean of ``values`` (same unit); None with fewer than
    ``MIN_SAMPLES``. For readings whose median is biased, as a quantised counter's are (``render.derive.energy``)."""
    return _mean_interval(tuple(float(v) for v in values), resamples)


@functools.lru_cache(maxsize=1024)
def _mean_interval(values: tuple[float, ...], resamples: int) -> tuple[float, float] | None:
    def mean(a: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.asarray(np.mean(a, axis=axis))

    return _bootstrap((_array(values),), mean, resamples)


def order_ranks(n: int) -> tuple[int, int, float]:
    """The 1-based ranks ``(l, u)`` of the order statistics ``x(l) <= median <= x(u)`` that bound the median of
    ``n`` values with at least ``LEVEL`` coverage, narrowest first, and that coverage (a fraction).

    Distribution-free: the count of values below the population median is Binomial(n, 1/2), so
    ``P(x(l) <= m <= x(u)) = P(l <= B <= u - 1)`` exactly (asv's ``statistics.quantile_ci``; Conover 1999 §3.2).
    Below six values no pair reaches 95%, and ``[min, max]`` is the widest there is: its coverage (93.75% at
    five, 75% at three) is what the page states. The percentile bootstrap of a median is an order-statistic
    interval too, chosen by resampling: [x(2), x(6)] at seven windows, 87.5%, below the level it claimed."""

    # P(lo <= B <= hi) for B ~ Binomial(n, 1/2), in exact integers (C(n, i) / 2**n summed): no scipy, whose stats
    # module costs about 0.9 s of CPU to import, for a number the methodology page's table computes at import
    def mass(lo: int, hi: int) -> float:
        return sum(math.comb(n, i) for i in range(lo, hi + 1)) / (1 << n)

    best = (1, n, mass(1, n - 1))
    for low in range(2, (n + 1) // 2 + 1):
        high = n + 1 - low
        coverage = mass(low, high - 1)
        if coverage < LEVEL:
            break
        best = (low, high, coverage)
    return best


def median_coverage(n: int) -> float:
    """The coverage of ``median_interval`` over ``n`` values (a fraction): ``LEVEL`` or more from six values."""
    return order_ranks(n)[2]


# Pages cite one set of windows many times (a candidate's warm time on several pages and versions); the interval
# is a function of the windows alone, so identical windows are sorted once per build process.
@functools.lru_cache(maxsize=4096)
def _median_interval(values: tuple[float, ...], resamples: int) -> tuple[float, float] | None:
    del resamples  # exact: no resampling (the parameter stays for the callers that pass one)
    if len(values) < MIN_SAMPLES:
        return None
    ordered = sorted(values)
    low, high, _ = order_ranks(len(ordered))
    return ordered[low - 1], ordered[high - 1]


def ratio_interval(
    numerator: Sequence[float], denominator: Sequence[float], resamples: int = RESAMPLES
) -> tuple[float, float] | None:
    """95% interval of ``median(numerator) / median(denominator)``, the two resampled independently."""
    return _ratio_interval(tuple(float(v) for v in numerator), tuple(float(v) for v in denominator), resamples)


@functools.lru_cache(maxsize=4096)
def _ratio_interval(
    numerator: tuple[float, ...], denominator: tuple[float, ...], resamples: int
) -> tuple[float, float] | None:
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


# -- joint resampling: numbers that stand on one document's windows, combined (``Quantity`` arithmetic) --------

JOINT = f"; 95% interval: the operands' windows resampled jointly ({RESAMPLES:,} resamples)"
"""What a combined number's derivation says when its interval came from ``joint_interval``."""

Recipe = tuple[Any, ...]
"""How to redraw a page-function number from its windows: ``("median", values, key)`` or
``("mean", values, key)``,
``("saving", arm_recipe, baseline_recipe)``, ``("exact", value)`` (a recorded param),
``("reciprocal", k, recipe)``. ``key`` names the document and the rows (``sha256:…|rows``)."""


def median_recipe(values: Sequence[float], key: str) -> Recipe | None:
    """The recipe of a median of ``values`` (the rows ``key`` names); None below ``MIN_SAMPLES`` windows."""
    return _windows_recipe("median", values, key)


def mean_recipe(values: Sequence[float], key: str) -> Recipe | None:
    """The recipe of a mean of ``values`` (the rows ``key`` names); None below ``MIN_SAMPLES`` windows."""
    return _windows_recipe("mean", values, key)


def _windows_recipe(statistic: str, values: Sequence[float], key: str) -> Recipe | None:
    if len(values) < MIN_SAMPLES:
        return None
    return (statistic, tuple(float(v) for v in values), key)


@functools.lru_cache(maxsize=512)
def draws(recipe: Recipe, resamples: int = RESAMPLES) -> np.ndarray:
    """``resamples`` bootstrap replicates of a recipe's number, in its base unit.

    The resampling indices of a median come from a generator seeded by its ``key`` (the document and the rows it
    reads), so two numbers over the same windows are redrawn with the same indices, jointly, and numbers over
    different rows independently: combined replicate by replicate, their replicates are draws of the combination
    (Efron & Tibshirani 1993, §6.2, the bootstrap of a function of several statistics)."""
    if recipe[0] == "saving":
        return np.asarray(1.0 - draws(recipe[1], resamples) / draws(recipe[2], resamples))
    if recipe[0] == "exact":
        return np.full(resamples, float(recipe[1]))
    if recipe[0] == "reciprocal":  # ("reciprocal", k, inner): k / inner, a rate from a time, say
        return np.asarray(float(recipe[1]) / draws(recipe[2], resamples))
    values = np.asarray(recipe[1], dtype=float)
    seed = int.from_bytes(hashlib.sha256(str(recipe[2]).encode()).digest()[:8], "little")
    index = np.random.default_rng(seed).integers(0, len(values), size=(resamples, len(values)))
    statistic = np.mean if recipe[0] == "mean" else np.median
    return np.asarray(statistic(values[index], axis=1))


def _evaluate(expr: Any, leaves: list[np.ndarray]) -> np.ndarray:
    kind = expr[0]
    if kind == "leaf":
        return np.asarray(leaves[expr[1]])
    if kind == "num":
        return np.asarray(float(expr[1]))
    left, right = _evaluate(expr[1], leaves), _evaluate(expr[2], leaves) * expr[3]
    ops = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(ops[kind](left, right))


def joint_interval(expr: Any, recipes: Sequence[Recipe]) -> tuple[float, float] | None:
    """95% percentile interval of ``expr`` (``render.numbers.quantity``'s expression over leaves) with every leaf
    redrawn by its recipe, replicate by replicate; None when a replicate has no finite value (a zero divisor)."""
    values = _evaluate(expr, [draws(r) for r in recipes])
    if values.ndim == 0 or not np.all(np.isfinite(values)):
        return None
    low, high = np.percentile(values, [100 * (1 - LEVEL) / 2, 100 * (1 + LEVEL) / 2])
    return float(low), float(high)
