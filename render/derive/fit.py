"""Step-time scaling fit: ``step(S) = c + a·S + b·S²`` over any subset of the three terms.

``S`` is the sequence length in tokens, ``step`` the time of one training step in seconds:
``c`` is a fixed cost per step (s), ``a`` a cost per token (s/token), ``b`` a cost per token
squared (s/token², attention's quadratic part). Coefficients are non-negative: the fit is a
non-negative least-squares (NNLS) problem over all samples (repeated windows at one ``S``
each count). With at most three terms NNLS is solved exactly by enumeration: the NNLS optimum
is the unconstrained least-squares solution on its own support (Lawson & Hanson, *Solving
Least Squares Problems*, 1974, ch. 23), so the feasible subset solution with the least
residual sum of squares is the optimum.

**Automatic choice of terms** (forward selection with partial F-tests): start from the best
single term, then add the term that lowers the residual sum of squares most, only while the
drop is significant at ``ALPHA``: ``F = ΔRSS / s²`` against F(1, ν). ``s²`` is the pure-error
variance (within-``S`` variance of repeated samples, ν = samples − points) when samples are
repeated, else the larger model's residual variance (ν = samples − terms). A term is only
considered while the model keeps fewer terms than distinct ``S`` values, so three points on
``a·S + b·S²`` give ``a+b``, never ``c+a+b``.

**Lack of fit**: with repeated samples, the classical lack-of-fit test (Draper & Smith,
*Applied Regression Analysis*, 3rd ed., §2.1) compares the scatter of the point means around
the model with the pure-error variance; when it is significant the fit warns that residuals
sit well above the sample noise (e.g. a straight line through a fixed-cost plateau).

**Confidence intervals**: percentile bootstrap; each replicate resamples the samples within
each ``S`` (with replacement) and refits the chosen terms; fixed seed, so deterministic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Sequence

import numpy as np

from measure.errors import ProbebookError
from render.derive.stats import f_sf

TERMS = ("c", "a", "b")
"""Every term, in canonical order: fixed (s), per token (s/token), per token² (s/token²)."""
ALPHA = 0.01
"""Significance level for adding a term and for the lack-of-fit warning; strict on purpose."""
CI_LEVEL = 0.95
"""Coverage of the bootstrap percentile intervals."""
MODES = ("fixed_batch", "fixed_tokens")


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

    def predict(self, s: Any) -> Any:
        """The model's step time in seconds at sequence length ``s`` (number or array)."""
        return self.c_s + self.a_s_per_token * s + self.b_s_per_token2 * s * s

    def to_json(self) -> dict[str, Any]:
        """Exactly ARCHITECTURE.md §6.2's object for ``probebook fit step-scaling --json``."""
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
        }
        return out


# -- parsing -------------------------------------------------------------------------


def parse_terms(text: str) -> str | tuple[str, ...]:
    """``"auto"`` or terms joined by ``+`` (``"a+b"``) -> ``"auto"`` or a canonical tuple."""
    raw = text.strip().lower()
    if raw == "auto":
        return "auto"
    parts = [p.strip() for p in raw.split("+")]
    bad = [p for p in parts if p not in TERMS]
    if bad or not parts:
        raise ProbebookError(
            f"--terms {text!r}: unknown term {bad[0] if bad else text!r}; give auto or "
            "terms from c, a, b joined by + (e.g. c+a, a+b, c+a+b)"
        )
    if len(set(parts)) != len(parts):
        raise ProbebookError(f"--terms {text!r}: a term is repeated")
    return tuple(t for t in TERMS if t in parts)


def parse_token_range(text: str) -> tuple[float | None, float | None]:
    """``"LO:HI"``, ``"LO:"`` or ``":HI"`` (tokens, inclusive) -> ``(lo, hi)`` with None for open."""
    if text.count(":") != 1:
        raise ProbebookError(f"--tokens {text!r}: give a range LO:HI, LO: or :HI (e.g. 512:4096)")
    bounds = []
    for part in text.split(":"):
        part = part.strip()
        if not part:
            bounds.append(None)
            continue
        try:
            value = float(part)
        except ValueError:
            raise ProbebookError(f"--tokens {text!r}: {part!r} is not a number") from None
        if not math.isfinite(value) or value < 0:
            raise ProbebookError(f"--tokens {text!r}: bounds must be non-negative numbers")
        bounds.append(value)
    lo, hi = bounds
    if lo is not None and hi is not None and lo > hi:
        raise ProbebookError(f"--tokens {text!r}: the lower bound is above the upper bound")
    return lo, hi


def width_key(width: float) -> str:
    """The text key for a width in ``quadratic_share``: ``4096`` not ``4096.0``."""
    w = float(width)
    return str(int(w)) if w.is_integer() else repr(w)


# -- evidence ------------------------------------------------------------------------


def _rows(doc: dict, mode: str | None) -> tuple[list[dict], float]:
    samples = (doc.get("data") or {}).get("samples")
    if not isinstance(samples, list) or not samples:
        raise ProbebookError(f"{doc.get('probe', 'evidence')} evidence has no data.samples to fit")
    modes = sorted({str(r["mode"]) for r in samples if r.get("mode") is not None})
    if mode is None and modes:
        mode = "fixed_batch"  # the S² fit needs the batch held fixed while S grows
    rows = [r for r in samples if mode is None or r.get("mode") == mode]
    if not rows:
        raise ProbebookError(f"no samples with mode {mode!r} (modes present: {', '.join(modes) or 'none'})")
    batches = sorted({float(r.get("batch") or 1) for r in rows})
    if len(batches) > 1:
        shown = ", ".join(width_key(b) for b in batches)
        raise ProbebookError(f"samples have batch {shown}; the fit needs a single batch value (choose a mode)")
    return rows, batches[0]


def step_samples(doc: dict, mode: str | None = None) -> list[tuple[float, float]]:
    """``(S, step_s)`` pairs of a step-scaling evidence document, one per sample.

    Where a ``mode`` column exists, rows of ``mode`` (default ``fixed_batch``) only; samples
    without a time (failed windows, ``step_s`` null) are skipped.
    """
    rows, _ = _rows(doc, mode)
    return [
        (float(r["tokens"]), float(r["step_s"]))
        for r in rows
        if r.get("tokens") is not None and r.get("step_s") is not None
    ]


def step_batch(doc: dict, mode: str | None = None) -> float:
    """The single batch (sequences per step) of the rows ``step_samples`` returns."""
    return _rows(doc, mode)[1]


def fit_evidence(
    doc: dict,
    *,
    terms: str | Sequence[str] = "auto",
    tokens: str | tuple[float | None, float | None] | None = None,
    at: Sequence[float] = (),
    mode: str | None = None,
    bootstrap: int = 200,
    seed: int = 0,
    source: str | None = None,
) -> StepFit:
    """Fit a step-scaling evidence document (terms and tokens may be given as CLI-style text)."""
    if isinstance(tokens, str):
        tokens = parse_token_range(tokens)
    if isinstance(terms, str):
        terms = parse_terms(terms)
    return fit_step_scaling(
        step_samples(doc, mode),
        terms=terms,
        tokens=tokens,
        at=at,
        batch=step_batch(doc, mode),
        bootstrap=bootstrap,
        seed=seed,
        source=source,
    )


# -- fitting -------------------------------------------------------------------------


def _columns(s: np.ndarray, terms: Sequence[str]) -> np.ndarray:
    cols = {"c": np.ones_like(s), "a": s, "b": s * s}
    return np.column_stack([cols[t] for t in terms])


def _nnls(s: np.ndarray, y: np.ndarray, terms: Sequence[str]) -> tuple[dict[str, float], float]:
    """Exact NNLS over ``terms`` by subset enumeration -> (coefficients, residual sum of squares)."""
    best: dict[str, float] = {t: 0.0 for t in TERMS}
    best_rss = float(y @ y)
    tolerance = 1e-12 * best_rss  # a larger support must beat a smaller one by more than rounding
    for size in range(1, len(terms) + 1):
        for subset in combinations(terms, size):
            design = _columns(s, subset)
            scale = np.linalg.norm(design, axis=0)  # S² reaches 1e10: equilibrate columns first
            coef, *_ = np.linalg.lstsq(design / scale, y, rcond=None)
            coef = coef / scale
            if np.any(coef < 0):
                continue
            resid = y - design @ coef
            rss = float(resid @ resid)
            if rss < best_rss - tolerance:
                best, best_rss = {t: 0.0 for t in TERMS}, rss
                best.update({t: float(v) for t, v in zip(subset, coef)})
    return best, best_rss


def _support(coef: dict[str, float], allowed: Sequence[str]) -> tuple[str, ...]:
    return tuple(t for t in TERMS if t in allowed and coef[t] > 0)


def _select(s: np.ndarray, y: np.ndarray, n_points: int, pure: tuple[float, int] | None) -> tuple[str, ...]:
    """Forward selection with partial F-tests (see the module docstring)."""
    singles = [((t,), *_nnls(s, y, (t,))) for t in TERMS]
    model, _, rss = min(singles, key=lambda m: m[2])
    exact = 1e-20 * float(y @ y)
    while len(model) < len(TERMS) and len(model) + 1 < n_points and rss > exact:
        options = [tuple(u for u in TERMS if u in model or u == t) for t in TERMS if t not in model]
        fits = [(m, *_nnls(s, y, m)) for m in options]
        bigger, coef, new_rss = min(fits, key=lambda f: f[2])
        if set(_support(coef, bigger)) <= set(model):
            break  # the constraint zeroed the new term: nothing to add
        if pure is not None:
            variance, dof = pure
        else:
            dof = len(y) - len(bigger)
            variance = new_rss / dof
        drop = rss - new_rss
        f_stat = math.inf if variance <= 0 else drop / variance
        if f_sf(f_stat, 1, dof) >= ALPHA:
            break
        model, rss = _support(coef, bigger), new_rss
    return model


def _group(s: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray]]:
    points, inverse, counts = np.unique(s, return_inverse=True, return_counts=True)
    means = np.bincount(inverse, weights=y) / counts
    members = [np.flatnonzero(inverse == i) for i in range(len(points))]
    return points, means, counts, members


def fit_step_scaling(
    samples: Sequence[tuple[float, float]],
    *,
    terms: str | Sequence[str] = "auto",
    tokens: tuple[float | None, float | None] | None = None,
    at: Sequence[float] = (),
    batch: float = 1,
    bootstrap: int = 200,
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
    s, y = data[:, 0], data[:, 1]
    points, means, counts, members = _group(s, y)
    n_points, n_samples = len(points), len(y)
    need = 2 if chosen == "auto" else len(chosen) + 1
    if n_points < need:
        name = chosen if chosen == "auto" else "+".join(chosen)
        raise ProbebookError(f"fit {name} needs at least {need} distinct token counts; {where} has {n_points}{span}")

    pure_ss = float(sum(((y[m] - means[i]) ** 2).sum() for i, m in enumerate(members)))
    pure_dof = n_samples - n_points
    pure = (pure_ss / pure_dof, pure_dof) if pure_dof > 0 else None
    warns: list[str] = []

    if chosen == "auto":
        model = _select(s, y, n_points, pure)
        coef, _ = _nnls(s, y, model)
    else:
        model = chosen
        coef, _ = _nnls(s, y, model)
        for t in model:
            if coef[t] == 0:
                warns.append(f"term {t} fitted as 0 under the non-negative constraint; the data do not support it")

    residuals = means - (coef["c"] + coef["a"] * points + coef["b"] * points**2)
    max_abs = float(np.max(np.abs(residuals)))
    noise = math.sqrt(pure[0]) if pure is not None else None
    lack_ss = float(counts @ residuals**2)
    if pure is None:
        warns.append(
            "each token count has a single sample: no noise floor, no confidence intervals "
            "(repeat windows per token count to get them)"
        )
    elif n_points > len(model):
        lof_dof = n_points - len(model)
        stat = math.inf if pure[0] <= 0 else (lack_ss / lof_dof) / pure[0]
        p_value = 1.0 if lack_ss <= 1e-20 * float(y @ y) else f_sf(stat, lof_dof, pure_dof)
        if p_value < ALPHA:
            warns.append(
                f"residuals are well above the sample noise: the largest is {max_abs:.3g} s against a "
                f"noise floor of {noise:.3g} s (lack-of-fit F={stat:.3g}, p={p_value:.2g}); the "
                f"{'+'.join(model) or 'empty'} model misses structure, e.g. a fixed-cost plateau at "
                "short sequences: narrow --tokens" + (" or fit more terms" if len(model) < len(TERMS) else "")
            )

    ci: dict[str, tuple[float, float]] = {}
    if pure is not None and bootstrap > 0:
        ci = _bootstrap(s, y, members, model, widths, batch, coef["b"] == 0, bootstrap, seed)

    return StepFit(
        terms=model,
        c_s=_clean(coef["c"]),
        a_s_per_token=_clean(coef["a"]),
        b_s_per_token2=_clean(coef["b"]),
        tokens=tuple(float(p) for p in points),
        residuals_s=tuple(_clean(r) for r in residuals),
        max_abs_residual_s=max_abs,
        asymptote_tok_s=_asymptote(coef, batch),
        quadratic_share={width_key(w): quadratic_share(coef["a"], coef["b"], w) for w in widths},
        n_points=n_points,
        n_samples=n_samples,
        batch=float(batch),
        noise_floor_s=noise,
        ci=ci,
        warnings=tuple(warns),
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


def _bootstrap(
    s: np.ndarray,
    y: np.ndarray,
    members: list[np.ndarray],
    model: tuple[str, ...],
    widths: list[float],
    batch: float,
    linear: bool,
    reps: int,
    seed: int,
) -> dict[str, tuple[float, float]]:
    rng = np.random.default_rng(seed)
    draws: dict[str, list[float]] = {}
    names = {"c": "c_s", "a": "a_s_per_token", "b": "b_s_per_token2"}
    for _ in range(reps):
        pick = np.concatenate([rng.choice(m, size=len(m), replace=True) for m in members])
        coef, _ = _nnls(s[pick], y[pick], model)
        for t in model:
            draws.setdefault(names[t], []).append(coef[t])
        if linear and coef["a"] > 0:
            draws.setdefault("asymptote_tok_s", []).append(batch / coef["a"])
        for w in widths if "b" in model else ():
            share = quadratic_share(coef["a"], coef["b"], w)
            if share is not None:
                draws.setdefault(f"quadratic_share:{width_key(w)}", []).append(share)
    tail = 100 * (1 - CI_LEVEL) / 2
    return {k: (float(np.percentile(v, tail)), float(np.percentile(v, 100 - tail))) for k, v in draws.items()}
