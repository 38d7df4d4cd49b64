"""Step-time scaling fit: ``step(S) = c + a·S + b·S²`` over any subset of the three terms.

``S`` is the sequence length in tokens, ``step`` the time of one training step in seconds:
``c`` is a fixed cost per step (s), ``a`` a cost per token (s/token), ``b`` a cost per token
squared (s/token², attention's quadratic part). Coefficients are non-negative: the fit is a
non-negative least-squares (NNLS) problem over all samples (repeated windows at one ``S``
each count), solved by ``scipy.optimize.nnls`` on samples scaled to at most 1, so any finite
input stays inside double precision (``render.derive.fit_numerics``).

**Automatic choice of terms**: forward selection, adding a term when its partial F-test is
significant at 5% or when the smaller model's residuals trend steadily across the range; why
that level and that rule is in ``fit_numerics.select_terms``. A term is only considered while
the model keeps fewer terms than distinct ``S`` values, so three points on ``a·S + b·S²`` give
``a+b``, never ``c+a+b``.

**Warnings**: residuals that trend across the range always warn, with or without repeated
samples (``fit_numerics.trending``). With repeated samples, the classical lack-of-fit test
(Draper & Smith, *Applied Regression Analysis*, 3rd ed., §2.1) compares the scatter of the
point means around the model with the pure-error variance; at ``ALPHA_LACK_OF_FIT`` the fit
warns that residuals sit well above the sample noise (e.g. a straight line through a
fixed-cost plateau).

**Outliers**: a sample far from what the other samples predict (``fit_numerics.find_outliers``)
is left out of the fit and named in the warnings, never silently averaged in.

**Refusals**: too few distinct ``S`` for the terms, non-positive or non-finite samples, and
coefficients that do not fit in a double are one-line ``ProbebookError``s; numpy's floating
point warnings are turned into that refusal, never printed.

**Confidence intervals**: percentile bootstrap (``scipy.stats.bootstrap``); each replicate
resamples the samples within each ``S`` (with replacement) and refits the chosen terms; fixed
seed, so deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from measure.errors import ProbebookError
from render.derive import fit_numerics as num
from render.derive import reading
from render.derive.fit_inputs import (
    parse_terms,
    parse_token_range,
    step_batch,
    step_samples,
    unstable_tokens,
    width_key,
)
from render.derive.fit_numerics import TERMS

ALPHA_LACK_OF_FIT = 0.01
"""Level of the lack-of-fit test that warns of residuals above the sample noise; strict on purpose."""
CI_LEVEL = 0.95
"""Coverage of the bootstrap percentile intervals."""
BOOTSTRAP = 4000
"""Bootstrap replicates behind each interval, by default. The percentile endpoints' Monte-Carlo error falls
as 1/√R: on the step-anatomy sweep the upper end of the per-token term's interval moved by 0.4 µs/token
between seeds at 200 replicates and by about 0.1 at 2000, against a shown digit of 0.1 µs/token; at 4000
it moves by about 0.05, half the shown digit, for about a second of one core per fit (issue 23)."""


@dataclass(frozen=True)
class StepFit:
    """A fitted ``step(S) = c + a·S + b·S²`` with its diagnostics."""

    terms: tuple[str, ...]
    """Terms in the model, canonical order (a term outside it has coefficient 0)."""
    c_s: float
    """Fixed cost per step, seconds."""
    a_s_per_token: float
    """Cost per token of sequence length, seconds/token."""
    b_s_per_token2: float
    """Cost per token squared, seconds/token²."""
    tokens: tuple[float, ...]
    """The distinct sequence lengths fitted, ascending."""
    residuals_s: tuple[float, ...]
    """Mean measured step minus the model at each of ``tokens``, seconds."""
    max_abs_residual_s: float
    """Largest absolute value in ``residuals_s``, seconds."""
    asymptote_tok_s: float | None
    """``batch / a``, tokens/s as ``S`` grows, where ``b = 0``; else None."""
    quadratic_share: dict[str, float | None]
    """``b·W / (a + b·W)`` at each requested width W (key: W as text); None where a = b = 0."""
    n_points: int
    """Number of distinct sequence lengths."""
    n_samples: int
    """Number of samples (windows) fitted."""
    batch: float
    """Sequences per step; scales the asymptote."""
    noise_floor_s: float | None
    """Pooled within-``S`` standard deviation of the samples, seconds; None without repeats."""
    ci: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Bootstrap percentile intervals by output name; empty without repeated samples."""
    warnings: tuple[str, ...] = ()
    """Things a reader must know: residuals above noise, clamped terms, no noise estimate."""

    outliers: tuple[tuple[float, float], ...] = ()
    """``(S, step_s)`` of samples left out of the fit as outliers."""
    misfit: bool = False
    """True when the model fails its own test (lack of fit against the replicate noise, or residuals that trend):
    every number taken from it carries that mark wherever it appears (``render.functions.step_scaling.FitView``)."""

    def predict(self, s: Any) -> Any:
        """The model's step time in seconds at sequence length ``s`` (number or array)."""
        return num.predict({"c": self.c_s, "a": self.a_s_per_token, "b": self.b_s_per_token2}, s)

    def to_json(self) -> dict[str, Any]:
        """The object ``probebook fit step-scaling --json`` prints: ``{"terms": [...], "c_s", "a_s_per_token",
        "b_s_per_token2", "residuals_s": [...], "max_abs_residual_s", "asymptote_tok_s" (or null),
        "quadratic_share": {"W": x}, "n_points", ...}``, absent terms 0."""
        out = {
            "terms": list(self.terms),
            "c_s": self.c_s,
            "a_s_per_token": self.a_s_per_token,
            "b_s_per_token2": self.b_s_per_token2,
            "residuals_s": list(self.residuals_s),
            "max_abs_residual_s": self.max_abs_residual_s,
            "asymptote_tok_s": self.asymptote_tok_s,
            "quadratic_share": dict(self.quadratic_share),
            "n_points": self.n_points,
            # by output name (c_s, asymptote_tok_s, quadratic_share:W ...), named fields: no positional pairs
            "ci": {
                "level": CI_LEVEL,
                "intervals": {name: {"low": lo, "high": hi} for name, (lo, hi) in self.ci.items()},
            },
        }
        return out


def fit_evidence(
    doc: dict[str, Any],
    *,
    terms: str | Sequence[str] = "auto",
    tokens: str | tuple[float | None, float | None] | None = None,
    at: Sequence[float] = (),
    mode: str | None = None,
    bootstrap: int = BOOTSTRAP,
    seed: int = 0,
    source: str | None = None,
    include_unstable: bool = False,
) -> StepFit:
    """Fit a step-scaling evidence document (terms and tokens may be given as CLI-style text).

    Points the evidence flags unstable (their windows' CV over 5%) are left out by default and named in the
    warnings (``include_unstable`` keeps them): a point the probe itself does not trust would otherwise set
    the terms, and the step-anatomy sweep's two unstable points had moved its per-token term outside the
    interval a re-measurement found (issue 23). They are kept, with a warning, when leaving them out would
    leave fewer than three token counts to fit."""
    if isinstance(tokens, str):
        tokens = parse_token_range(tokens)
    if isinstance(terms, str):
        terms = parse_terms(terms)
    samples = step_samples(doc, mode)
    note = None
    shaky = unstable_tokens(doc, mode)
    if shaky and not include_unstable:
        kept = [p for p in samples if p[0] not in shaky]
        listed = ", ".join(width_key(w) for w in sorted(shaky))
        if len({p[0] for p in kept}) >= 3:
            samples = kept
            note = f"points flagged unstable in the evidence (CV over 5%) are left out of the fit: {listed} tokens"
        else:
            note = (
                "points flagged unstable in the evidence are fitted, as fewer than three stable ones remain: "
                f"{listed} tokens"
            )
    fitted = fit_step_scaling(
        samples,
        terms=terms,
        tokens=tokens,
        at=at,
        batch=step_batch(doc, mode),
        bootstrap=bootstrap,
        seed=seed,
        source=source,
    )
    return replace(fitted, warnings=(note, *fitted.warnings)) if note else fitted


# -- fitting -------------------------------------------------------------------------


def _group(s: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray]]:
    points, inverse, counts = np.unique(s, return_inverse=True, return_counts=True)
    means = np.bincount(inverse, weights=y) / counts
    members = [np.flatnonzero(inverse == i) for i in range(len(points))]
    return points, means, counts, members


def lack_of_fit_warning(
    residuals_s: list[float],
    counts: list[int],
    tokens: list[float],
    noise_s: float,
    stat: float,
    p_value: float,
    model: tuple[str, ...],
) -> str:
    """The lack-of-fit warning, in words that agree with the test that raised it and that a reader can use.

    The F-test compares the point means' residuals with the noise *of a mean*, ``noise / √n`` for a point
    of n samples, not with the per-sample noise floor; so the warning names the point whose residual is the
    most standard errors away and compares it with that point's standard error (with F above 1, as a
    significant test has, that residual is the larger of the two). It then says what the warning means for
    the numbers taken from the fit, not what an author could rerun (issue 23, item 7: the old text set the
    largest residual against the per-sample floor, 0.194 s "well above" 0.276 s, and ended in a command
    option no reader of the page has). ``residuals_s`` and ``noise_s`` in seconds, ``tokens`` per point.
    """
    z = [abs(r) * math.sqrt(n) / noise_s if noise_s > 0 else math.inf for r, n in zip(residuals_s, counts, strict=True)]
    i = max(range(len(z)), key=lambda k: z[k])
    se = noise_s / math.sqrt(counts[i])
    name = "+".join(model) or "empty"
    return (
        f"the point means lie further from the {name} model than their own noise allows: at "
        f"{reading.general(tokens[i], 4)} tokens the mean misses it by {reading.general(abs(residuals_s[i]), 3)} s, "
        f"against a standard error of {reading.general(se, 3)} s for a mean of {counts[i]} samples "
        f"(lack-of-fit F={reading.general(stat, 3)}, p={reading.general(p_value, 2)}); "  # no exponent
        "the model misses structure in these points (a fixed-cost plateau at short sequences, say), so the "
        "terms taken from it, and their intervals, are less certain than the intervals show"
    )


def fit_step_scaling(
    samples: Sequence[tuple[float, float]],
    *,
    terms: str | Sequence[str] = "auto",
    tokens: tuple[float | None, float | None] | None = None,
    at: Sequence[float] = (),
    batch: float = 1,
    bootstrap: int = BOOTSTRAP,
    seed: int = 0,
    source: str | None = None,
) -> StepFit:
    """Fit ``step(S) = c + a·S + b·S²`` to ``(S tokens, step seconds)`` samples.

    ``terms``: ``"auto"`` or a subset of ``c``, ``a``, ``b``; ``tokens``: inclusive ``(lo, hi)``
    range of S to keep (None = open); ``at``: widths W for the quadratic share; ``batch``:
    sequences per step; ``bootstrap``: replicates for the intervals (0 = none); ``source``
    names the data in errors (e.g. ``"evidence sha256:..."``).
    """
    where = source or "the input"
    chosen = parse_terms(terms) if isinstance(terms, str) else parse_terms("+".join(terms))
    if not (math.isfinite(batch) and batch > 0):
        raise ProbebookError(f"batch must be a positive number, got {batch!r}")
    if bootstrap < 0:
        raise ProbebookError(f"bootstrap must be 0 or more replicates, got {bootstrap}")
    widths = [float(w) for w in at]
    if any(not (math.isfinite(w) and w > 0) for w in widths):
        raise ProbebookError(f"--at widths must be positive numbers, got {', '.join(map(str, at))}")
    data = np.asarray([(float(p[0]), float(p[1])) for p in samples], dtype=float).reshape(-1, 2)
    for i, (s_i, y_i) in enumerate(data):
        if not (math.isfinite(s_i) and s_i > 0 and math.isfinite(y_i) and y_i > 0):
            raise ProbebookError(
                f"{where}: sample {i} has tokens={float(s_i):g}, step_s={float(y_i):g}; both must be positive"
            )
    span = ""
    if tokens is not None:
        if not (isinstance(tokens, (list, tuple)) and len(tokens) == 2) or not all(
            t is None or (isinstance(t, (int, float)) and not isinstance(t, bool)) for t in tokens
        ):  # fit(ev, tokens=[1]) raised ValueError from the unpacking (issue 25, item 12)
            raise ProbebookError(f"tokens must be a range (lo, hi) of two numbers or None, got {tokens!r:.60}")
        lo, hi = tokens
        if lo is not None and hi is not None and lo > hi:
            raise ProbebookError(f"token range {lo:g}:{hi:g} is empty: the lower bound is above the upper")
        keep = np.ones(len(data), dtype=bool)
        if lo is not None:
            keep &= data[:, 0] >= lo
        if hi is not None:
            keep &= data[:, 0] <= hi
        data = data[keep]
        span = f" in {'' if lo is None else width_key(lo)}:{'' if hi is None else width_key(hi)}"
    need = 2 if chosen == "auto" else len(chosen) + 1
    name = chosen if chosen == "auto" else "+".join(chosen)
    n_distinct = len(np.unique(data[:, 0]))
    if n_distinct < need:
        raise ProbebookError(f"fit {name} needs at least {need} distinct token counts; {where} has {n_distinct}{span}")
    # fit in units of the largest S and the largest step (both then at most 1): S² and sums of
    # squares stay inside double precision for any finite input (fit_numerics)
    s_unit, y_unit = float(data[:, 0].max()), float(data[:, 1].max())
    try:
        with np.errstate(over="raise", invalid="raise", divide="raise", under="ignore"):
            return _fit_scaled(
                data[:, 0] / s_unit,
                data[:, 1] / y_unit,
                s_unit,
                y_unit,
                chosen,
                need,
                widths,
                batch,
                bootstrap,
                seed,
                where,
            )
    except FloatingPointError as exc:
        raise ProbebookError(f"{where}: the samples cannot be fitted in double precision ({exc})") from None


def _fit_scaled(
    s: np.ndarray,
    y: np.ndarray,
    s_unit: float,
    y_unit: float,
    chosen: str | tuple[str, ...],
    need: int,
    widths: list[float],
    batch: float,
    bootstrap: int,
    seed: int,
    where: str,
) -> StepFit:
    """The fit on samples in units of ``s_unit`` tokens and ``y_unit`` seconds; results in tokens and seconds."""
    warns: list[str] = []
    outliers = num.find_outliers(s, y, need)
    if outliers:
        out = sorted(i for i, _, _ in outliers)
        for i, expected, ratio in outliers:
            spread = "the others fit exactly" if not math.isfinite(ratio) else f"{ratio:.3g} times their spread"
            warns.append(
                f"outlier left out of the fit: the sample at S={width_key(s[i] * s_unit)} took "
                f"{y[i] * y_unit:.4g} s where the other samples predict {expected * y_unit:.4g} s ({spread})"
            )
        kept = np.setdiff1d(np.arange(len(y)), out)
        outlier_samples = tuple((float(s[i] * s_unit), float(y[i] * y_unit)) for i in out)
        s, y = s[kept], y[kept]
    else:
        outlier_samples = ()
    points, means, counts, members = _group(s, y)
    n_points, n_samples = len(points), len(y)

    pure_ss = float(sum(((y[m] - means[i]) ** 2).sum() for i, m in enumerate(members)))
    pure_dof = n_samples - n_points
    pure = (pure_ss / pure_dof, pure_dof) if pure_dof > 0 else None
    noise = math.sqrt(pure[0]) if pure is not None else None

    if chosen == "auto":
        model = num.select_terms(s, y, points, means, counts, pure)
        coef, _ = num.fit_nnls(s, y, model)
    else:
        model = tuple(chosen)
        coef, _ = num.fit_nnls(s, y, model)
        for t in model:
            if coef[t] == 0:
                warns.append(f"term {t} fitted as 0 under the non-negative constraint; the data do not support it")

    residuals = means - num.predict(coef, points)
    if pure is None:
        warns.append(
            "each token count has a single sample: no noise floor, no confidence intervals "
            "(repeat windows per token count to get them)"
        )
    misfit = False
    if num.trending(residuals, means, counts, noise):
        misfit = True
        warns.append(
            f"the residuals {'rise' if residuals[-1] > residuals[0] else 'fall'} steadily from the shortest to the "
            f"longest sequence (largest {reading.general(np.max(np.abs(residuals)) * y_unit, 3)} s): the "
            f"{'+'.join(model) or 'empty'} model has the wrong shape"
            + ("; fit more terms" if len(model) < len(TERMS) else "")
        )
    elif pure is not None and noise is not None and n_points > len(model):  # noise is set whenever pure is
        lack_ss = float(counts @ residuals**2)
        lof_dof = n_points - len(model)
        stat = math.inf if pure[0] <= 0 else (lack_ss / lof_dof) / pure[0]
        p_value = 1.0 if lack_ss <= 1e-20 * float(y @ y) else num.f_pvalue(stat, lof_dof, pure_dof)
        if p_value < ALPHA_LACK_OF_FIT:
            misfit = True
            warns.append(
                lack_of_fit_warning(
                    [float(r) * y_unit for r in residuals],
                    [int(c) for c in counts],
                    [float(x) * s_unit for x in points],
                    noise * y_unit,
                    stat,
                    p_value,
                    model,
                )
            )

    # back to seconds and tokens: c in s, a in s/token, b in s/token²
    y64, s64 = np.float64(y_unit), np.float64(s_unit)
    units = {"c": float(y64), "a": float(y64 / s64), "b": float(y64 / s64 / s64)}
    real = {t: coef[t] * units[t] for t in TERMS}
    for t in TERMS:
        if coef[t] > 0 and not (math.isfinite(real[t]) and real[t] > 0):
            raise ProbebookError(
                f"{where}: term {t} of the fit is beyond double precision in seconds and tokens "
                f"(the samples reach {s_unit:.3g} tokens and {y_unit:.3g} s)"
            )
    ci: dict[str, tuple[float, float]] = {}
    if pure is not None and bootstrap > 0:
        ci = _intervals(s, y, members, model, widths, batch, units, real["b"] == 0, bootstrap, seed)

    max_abs = float(np.max(np.abs(residuals))) * y_unit
    return StepFit(
        terms=model,
        c_s=_clean(real["c"]),
        a_s_per_token=_clean(real["a"]),
        b_s_per_token2=_clean(real["b"]),
        tokens=tuple(float(p * s_unit) for p in points),
        residuals_s=tuple(_clean(float(r) * y_unit) for r in residuals),
        max_abs_residual_s=max_abs,
        asymptote_tok_s=_asymptote(real, batch),
        quadratic_share={width_key(w): quadratic_share(real["a"], real["b"], w) for w in widths},
        n_points=n_points,
        n_samples=n_samples,
        batch=float(batch),
        noise_floor_s=None if noise is None else noise * y_unit,
        ci=ci,
        warnings=tuple(warns),
        outliers=outlier_samples,
        misfit=misfit,
    )


def quadratic_share(a_s_per_token: float, b_s_per_token2: float, width: float) -> float | None:
    """Share of the per-token cost that is quadratic at width W: ``b·W / (a + b·W)`` (fraction)."""
    denominator = a_s_per_token + b_s_per_token2 * width
    return None if denominator <= 0 else _clean(b_s_per_token2 * width / denominator)


def _asymptote(coef: dict[str, float], batch: float) -> float | None:
    """Tokens/s as S grows: the step processes batch·S tokens in c + a·S s -> batch / a (b = 0 only)."""
    if coef["b"] != 0 or coef["a"] <= 0:
        return None
    return float(batch / coef["a"])


def _clean(value: float) -> float:
    return 0.0 if value == 0 else float(value)  # no -0.0 in JSON


def _intervals(
    s: np.ndarray,
    y: np.ndarray,
    members: list[np.ndarray],
    model: tuple[str, ...],
    widths: list[float],
    batch: float,
    units: dict[str, float],
    linear: bool,
    reps: int,
    seed: int,
) -> dict[str, tuple[float, float]]:
    """Bootstrap percentile intervals of the coefficients (scipy), and of the asymptote and quadratic
    shares from the same replicates (their percentiles, over the replicates where they exist)."""
    by_term, draws = num.bootstrap_coefficients(s, y, members, model, reps, seed, CI_LEVEL)
    names = {"c": "c_s", "a": "a_s_per_token", "b": "b_s_per_token2"}
    out = {names[t]: (lo * units[t], hi * units[t]) for t, (lo, hi) in by_term.items()}
    a_draws, b_draws = draws[1] * units["a"], draws[2] * units["b"]
    derived: dict[str, list[float]] = {}
    if linear:
        derived["asymptote_tok_s"] = [batch / a for a in a_draws if a > 0]
    for w in widths if "b" in model else ():
        shares = (quadratic_share(a, b, w) for a, b in zip(a_draws, b_draws, strict=True))
        derived[f"quadratic_share:{width_key(w)}"] = [v for v in shares if v is not None]
    for w in widths:  # the step's time at W, c + a·W + b·W², from the same replicates (padding's epoch time)
        derived[f"step_s:{width_key(w)}"] = list(draws[0] * units["c"] + a_draws * w + b_draws * w * w)
    tail = 100 * (1 - CI_LEVEL) / 2
    for key, values in derived.items():
        if values:
            out[key] = (float(np.percentile(values, tail)), float(np.percentile(values, 100 - tail)))
    return out
