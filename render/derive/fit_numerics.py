"""The step-scaling fit's numerics: NNLS, the choice of terms, residual trends, outliers, bootstrap.

Everything here works on *normalised* samples (``S / max S``, ``step / max step``, both at most
1), so the products the fit forms (``S²``, sums of squares) stay inside double precision for any
input that is itself a finite number; ``render.derive.fit`` scales the results back and refuses
what does not fit in a double. Library routines do the numerical work: ``scipy.optimize.nnls``
(the Lawson–Hanson active-set method, Lawson & Hanson, *Solving Least Squares Problems*, 1974,
ch. 23), ``scipy.stats.f`` for the F distribution's tail, ``scipy.stats.bootstrap`` for the
resampling.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

TERMS = ("c", "a", "b")
"""Every term, in canonical order: fixed (s), per token (s/token), per token² (s/token²)."""
ALPHA = 0.05
"""Level of the partial F-test that adds a term (see ``select_terms``)."""
TREND_SHARE = 0.01
"""Without repeated samples, a residual trend counts once a residual reaches this share of its step."""
TREND_POINTS = 4
"""Fewest points whose residuals can show a trend: 3 residuals of a 2-term fit are fixed by the fit."""
OUTLIER_FACTOR = 10.0
"""A sample is an outlier when it lies this many robust spreads from the fit of the others ..."""
OUTLIER_SHARE = 0.5
"""... and at least this share of the step those others predict (a 1.5× or 0.5× step, not noise)."""
OUTLIER_MOST = 0.25
"""Largest share of the samples that may be set aside as outliers; beyond it the data are not a fit's."""
ROUNDING_SPREAD = 1e-12
"""A spread of residuals below this share of the largest of the samples it is taken over is the arithmetic's
rounding, not the samples': samples on an exact line left 0 on one x86-64 CPU and about 1e-29 on an AMD EPYC
(issue 29), while a timer's resolution (1e-9 s) against a step of milliseconds is still 1e-7. Such samples "fit
exactly"."""


def columns(s: np.ndarray, terms: Sequence[str]) -> np.ndarray:
    """The design matrix of ``terms``: 1 for c, S for a, S² for b."""
    cols = {"c": np.ones_like(s), "a": s, "b": s * s}
    return np.column_stack([cols[t] for t in terms])


def load_scipy() -> None:
    """Import the scipy routines this module uses; each routine imports its own where it runs, so that loading
    this module (the CLI does, for its help) costs no scipy, and ``render.functions.derivations.load_libraries``
    calls this before a page's time limit starts."""
    import scipy.optimize
    import scipy.stats  # noqa: F401


def fit_nnls(s: np.ndarray, y: np.ndarray, terms: Sequence[str]) -> tuple[dict[str, float], float]:
    """Non-negative least squares over ``terms`` -> (coefficients of every term, residual sum of squares)."""
    from scipy.optimize import nnls  # in each routine, not at the top: see load_scipy

    coef = dict.fromkeys(TERMS, 0.0)
    if not terms:
        return coef, float(y @ y)
    design = columns(s, terms)
    scale = np.linalg.norm(design, axis=0)  # equilibrate: S² spans decades more than 1
    scale[scale == 0] = 1.0
    x, _ = nnls(design / scale, y)
    x = x / scale
    coef.update({t: float(v) for t, v in zip(terms, x, strict=True)})
    resid = y - design @ x
    return coef, float(resid @ resid)


def predict(coef: dict[str, float], s: np.ndarray) -> np.ndarray:
    """The model ``c + a·S + b·S²`` at ``s``."""
    out: np.ndarray = coef["c"] + coef["a"] * s + coef["b"] * s * s
    return out


def support(coef: dict[str, float], allowed: Sequence[str]) -> tuple[str, ...]:
    """The terms of ``allowed`` with a positive coefficient, canonical order."""
    return tuple(t for t in TERMS if t in allowed and coef[t] > 0)


def f_pvalue(f_stat: float, d1: int, d2: int) -> float:
    """P(F > f) for F(d1, d2): the p-value of an F statistic (``scipy.stats.f.sf``)."""
    from scipy.stats import f as f_distribution

    return float(f_distribution.sf(f_stat, d1, d2))


def trending(residuals: np.ndarray, means: np.ndarray, counts: np.ndarray, noise: float | None) -> bool:
    """Whether point residuals, in order of S, rise or fall steadily and stand clear of the noise.

    Steadily: every step between neighbouring points has the same sign, over at least
    ``TREND_POINTS`` points. Clear of the noise: the largest residual exceeds two standard errors
    of its point mean (``2·noise/√n``) when repeated samples give a noise floor, else
    ``TREND_SHARE`` of its step. A least-squares fit that includes both ``c`` and ``a`` leaves
    residuals orthogonal to 1 and S, so they cannot trend; a trend means the model lacks the
    term that would remove it (a fixed cost, a per-token cost).
    """
    if len(residuals) < TREND_POINTS:
        return False
    steps = np.diff(residuals)
    if not (np.all(steps > 0) or np.all(steps < 0)):
        return False
    worst = int(np.argmax(np.abs(residuals)))
    floor = 2 * noise / np.sqrt(counts[worst]) if noise is not None else TREND_SHARE * means[worst]
    return bool(abs(residuals[worst]) > floor)


def select_terms(
    s: np.ndarray,
    y: np.ndarray,
    points: np.ndarray,
    means: np.ndarray,
    counts: np.ndarray,
    pure: tuple[float, int] | None,
) -> tuple[str, ...]:
    """Forward selection: the best single term, then the best next term while the data ask for it.

    A term is added when either
      * the partial F-test ``F = ΔRSS / s²`` against F(1, ν) is significant at ``ALPHA`` = 5%,
        with ``s²`` the pure-error variance (within-S scatter of repeated samples, ν = samples −
        points) when there is one, else the larger model's residual variance (ν = samples −
        terms); or
      * the current model's residuals trend across the range (``trending``).

    Why 5% and not 1%: with four to six points the test has two to four residual degrees of
    freedom, and at 1% the critical F(1, 2) is 98.5: a new term would have to remove 98% of the
    squared residual left, which a real fixed cost of a quarter of the step, measured with 2%
    noise, does not reach. At 5% F(1, 2) is 18.5 (the term removes 90%). AICc is no help here:
    its penalty for a second parameter at n = 4 asks for a 20-fold drop in the residual sum of
    squares, stricter than the 5% test. The trend rule is what a person reading the residuals
    applies whatever the count: a one-term fit whose residuals fall steadily from the shortest
    to the longest sequence has the wrong shape. A term is only considered while the model keeps
    fewer terms than distinct S values, so three points on ``a·S + b·S²`` give ``a+b``.

    Without replicate noise (one sample per S) a term is added only while the larger model leaves at
    least two residual degrees of freedom, or fits the points exactly (noise-free points, which leave
    no noise to fit: three exact points on ``a·S + b·S²`` give ``a+b``). With one left, the test's
    variance is a single squared
    residual, the F(1, 1) critical value of 161 is reached by any wiggle of the points, and the term
    fits their noise: four single-sample points on ``c + a·S`` over 128–512 tokens (a published
    layer-streaming fit) came out ``c+a+b``, a curvature no repeat would reproduce. With repeated
    samples the pure error tests the term instead, on its own degrees of freedom, so the one-left limit
    does not apply and three repeated points on ``a·S + b·S²`` still give ``a+b`` (issue 23).
    """
    singles = [((t,), *fit_nnls(s, y, (t,))) for t in TERMS]
    model: tuple[str, ...]
    model, coef, rss = min(singles, key=lambda m: m[2])
    exact = 1e-20 * float(y @ y)
    noise = None if pure is None else float(np.sqrt(pure[0]))
    while len(model) < len(TERMS) and len(model) + 1 < len(points) and rss > exact:
        options = [tuple(u for u in TERMS if u in model or u == t) for t in TERMS if t not in model]
        fits = [(m, *fit_nnls(s, y, m)) for m in options]
        bigger, new_coef, new_rss = min(fits, key=lambda f: f[2])
        if set(support(new_coef, bigger)) <= set(model):
            break  # the constraint zeroed the new term: nothing to add
        if pure is None and len(points) - len(bigger) < 2 and new_rss > exact:
            break  # one residual degree of freedom and no replicate noise: the term would fit the noise (above)
        if pure is not None:
            variance, dof = pure
        else:
            dof = len(y) - len(bigger)
            variance = new_rss / dof
        f_stat = np.inf if variance <= 0 else (rss - new_rss) / variance
        if f_pvalue(f_stat, 1, dof) >= ALPHA and not trending(means - predict(coef, points), means, counts, noise):
            break
        model, coef, rss = support(new_coef, bigger), new_coef, new_rss
    return model


def find_outliers(s: np.ndarray, y: np.ndarray, need: int) -> list[tuple[int, float, float]]:
    """Samples far from what the others predict: ``[(index, predicted step, times the robust spread)]``.

    For each sample, NNLS with every term the other samples support (``c+a+b`` from 4 distinct
    S, else fewer) predicts it from the others; its leave-one-out residual is compared with
    the spread of the others' residuals (1.4826 × their median absolute residual, the normal
    scale of a MAD). The sample with the largest ratio is an outlier when that ratio is over
    ``OUTLIER_FACTOR`` and its residual over ``OUTLIER_SHARE`` of the predicted step; it is set
    aside and the search repeats, at most for ``OUTLIER_MOST`` of the samples, and never below
    ``need`` distinct S. One wild window (a step of 10⁶ s among steps of tens of ms) would
    otherwise pull a least-squares fit wherever it lies.
    """
    keep = np.ones(len(y), dtype=bool)
    found: list[tuple[int, float, float]] = []
    while len(found) < int(OUTLIER_MOST * len(y)):
        best: tuple[float, int, float] | None = None
        for i in np.flatnonzero(keep):
            others = keep.copy()
            others[i] = False
            distinct = len(np.unique(s[others]))
            if distinct < max(need, 3):
                continue
            terms = TERMS if distinct >= 4 else ("c", "a")
            coef, _ = fit_nnls(s[others], y[others], terms)
            expected = float(predict(coef, s[i : i + 1])[0])
            spread = 1.4826 * float(np.median(np.abs(y[others] - predict(coef, s[others]))))
            miss = abs(float(y[i]) - expected)
            if expected <= 0 or miss <= OUTLIER_SHARE * expected:
                continue
            exact = spread <= ROUNDING_SPREAD * float(np.max(np.abs(y[others])))
            ratio = np.inf if exact else miss / spread
            if ratio > OUTLIER_FACTOR and (best is None or ratio > best[0]):
                best = (ratio, int(i), expected)
        if best is None:
            break
        keep[best[1]] = False
        found.append((best[1], best[2], best[0]))
    return found


def bootstrap_coefficients(
    s: np.ndarray,
    y: np.ndarray,
    members: list[np.ndarray],
    model: tuple[str, ...],
    reps: int,
    seed: int,
    level: float,
) -> tuple[dict[str, tuple[float, float]], np.ndarray]:
    """Percentile intervals of the chosen terms' coefficients, resampling the samples within each S.

    ``scipy.stats.bootstrap`` resamples each of several samples independently, which is the
    stratified resampling wanted here: each S keeps its own count of samples. A point with a
    single sample has nothing to resample and enters every replicate as it is. Returns the
    intervals by term and the replicates' coefficients (rows c, a, b) for derived intervals.
    """
    from scipy.stats import bootstrap

    groups = [m for m in members if len(m) >= 2]
    fixed = np.concatenate([m for m in members if len(m) < 2] or [np.array([], dtype=int)])

    def coefficients(*picked: np.ndarray) -> np.ndarray:
        rows = np.concatenate([*(np.asarray(p, dtype=int) for p in picked), fixed])
        coef, _ = fit_nnls(s[rows], y[rows], model)
        return np.array([coef[t] for t in TERMS])

    result = bootstrap(
        tuple(groups),
        coefficients,
        n_resamples=reps,
        vectorized=False,
        method="percentile",
        confidence_level=level,
        rng=np.random.default_rng(seed),
    )
    lows, highs = result.confidence_interval
    intervals = {t: (float(lows[i]), float(highs[i])) for i, t in enumerate(TERMS) if t in model}
    return intervals, np.asarray(result.bootstrap_distribution)
