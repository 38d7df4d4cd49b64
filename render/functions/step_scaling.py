"""Page function of the step-scaling records: ``fit(sweep)``, the fit of ``step(S) = c + a·S + b·S²``, its view,
and the fit computed once per build (``step_fit``, which ``padding()`` reads too).

The derivation is ``render.derive.fit``'s; here a page's alias becomes its evidence, the fit is kept in the build's
``Library`` under what it is computed from, and ``FitView`` shows each coefficient as a Quantity.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ClassVar

from render.derive import basis
from render.derive import fit as fitmod
from render.derive.fit_inputs import width_key
from render.derive.fit_numerics import TERMS
from render.functions.derivations import Library
from render.functions.page import Page
from render.functions.registry import page_function
from render.functions.views import EvidenceRef, number, quantity
from render.numbers import said
from render.numbers.links import escape_text
from render.numbers.quantity import Quantity
from render.pages.sandbox import Block


@page_function
def fit(
    page: Page,
    ref: Any,
    tokens: str | None = None,
    terms: str = "auto",
    at: Any = (),
    mode: str | None = None,
    unstable: bool = False,
) -> FitView:
    """Fit ``step(S) = c + a·S + b·S²`` to step-scaling evidence (``unstable=True``: keep points flagged unstable)."""
    ref = page.ref(ref, "step-scaling", "fit()")
    options: dict[str, Any] = {k: v for k, v in (("tokens", tokens), ("terms", terms), ("mode", mode)) if v is not None}
    if unstable:
        options["unstable"] = True
    view = FitView(functools.partial(step_fit, page.library), ref, options)
    for w in at if isinstance(at, (list, tuple)) else [at]:
        view.share(w)  # validates the widths early, with the page's line
    return view


def step_fit(library: Library, ref: EvidenceRef, options: dict[str, Any], at: tuple[float, ...]) -> fitmod.StepFit:
    """The step-scaling fit of ``ref`` under ``options``, computed once per build (``fit()``, ``padding()``)."""
    key = ("fit", ref.id, tuple(sorted((k, str(v)) for k, v in options.items())), at)
    doc = library.docs[ref.id]
    return library.memo(
        key,
        lambda: fitmod.fit_evidence(
            doc,
            terms=options.get("terms", "auto"),
            tokens=options.get("tokens"),
            at=at,
            mode=options.get("mode"),
            source=f"evidence {ref.alias} ({ref.short})",
            include_unstable=bool(options.get("unstable", False)),
        ),
    )


MISFIT = "lack of fit"
"""The mark on a number taken from a fit whose model fails its own lack-of-fit or trend test."""
MISFIT_MARKED = frozenset({"c", "a", "b", "asymptote"})
"""The fit's numbers that come from its model (its residual and noise describe the misfit itself)."""


class FitView:
    """A step-scaling fit; each attribute is a Quantity."""

    TEMPLATE_ATTRS: ClassVar[frozenset[str]] = frozenset(
        {"c", "a", "b", "asymptote", "max_residual", "noise", "n_points", "share", "warnings"}
    )

    def __init__(
        self,
        fitter: Callable[[EvidenceRef, dict[str, Any], tuple[float, ...]], fitmod.StepFit],
        ref: EvidenceRef,
        options: dict[str, Any],
    ):
        self._fitter, self._ref, self._options = fitter, ref, options
        self._fit = fitter(ref, options, ())
        f = self._fit
        tokens = options.get("tokens")
        self._what = (
            f"step-scaling fit step(S) = c + a·S + b·S² with terms {'+'.join(f.terms) or 'none'} "
            f"(asked {options.get('terms', 'auto')}), tokens {tokens or 'all'}, "
            f"{f.n_points} token counts, {f.n_samples} samples"
        )
        self._key = f"fit({ref.alias})"

    def _make(self, name: str, value: float | None, unit: str, ci_name: str | None, **kw: Any) -> Quantity:
        ci = self._fit.ci.get(ci_name) if ci_name else None
        if name in TERMS and name not in self._fit.terms:
            kw["exact"] = True  # a term the chosen model leaves out is zero by construction
        elif ci is None and "exact" not in kw:
            # the fit's residual and noise are readings of its points; a coefficient without an interval had no
            # repeated windows at a point to resample (render.derive.fit)
            kw.setdefault("basis", basis.FEW)
        if self._fit.misfit and name in MISFIT_MARKED:
            kw["mark"] = MISFIT  # the model failed its own test: every number taken from it says so (issue 23)
        return quantity(value, unit, self._ref, f"{self._what}; {name}", f"{self._key}.{name}", uncertainty=ci, **kw)

    @property
    def c(self) -> Quantity:
        """Fixed cost per step."""
        return self._make("c", self._fit.c_s, "s", "c_s", display="ms")

    @property
    def a(self) -> Quantity:
        """Cost per token."""
        return self._make("a", self._fit.a_s_per_token, "s/token", "a_s_per_token", display="µs/token")

    @property
    def b(self) -> Quantity:
        """Cost per token squared."""
        return self._make("b", self._fit.b_s_per_token2, "s/token²", "b_s_per_token2", display="ns/token²")

    @property
    def asymptote(self) -> Quantity:
        """Tokens/s as S grows (only without a quadratic term)."""
        note = None if self._fit.asymptote_tok_s is not None else "no asymptote: the fit has a quadratic term"
        return self._make("asymptote", self._fit.asymptote_tok_s, "tok/s", "asymptote_tok_s", fmt=".3g", note=note)

    @property
    def max_residual(self) -> Quantity:
        """Largest distance of a point mean from the model."""
        return self._make("max_residual", self._fit.max_abs_residual_s, "s", None, display="ms", basis=basis.OBSERVED)

    @property
    def noise(self) -> Quantity:
        """Pooled within-S standard deviation of the samples."""
        note = None if self._fit.noise_floor_s is not None else "no repeated samples: no noise floor"
        return self._make("noise", self._fit.noise_floor_s, "s", None, display="ms", note=note, basis=basis.OBSERVED)

    @property
    def n_points(self) -> Quantity:
        """Distinct token counts fitted."""
        return self._make("n_points", self._fit.n_points, "", None, fmt="d", exact=True)

    def share(self, width: Any) -> Quantity:
        """Quadratic share ``b·W / (a + b·W)`` of the per-token cost at width W tokens."""
        w = number(width, "share() width")
        f = self._fitter(self._ref, self._options, (w,))
        k = width_key(w)
        value = f.quadratic_share.get(k)
        note = None if value is not None else "a = b = 0: no per-token cost"
        return quantity(
            value,
            "",
            self._ref,
            f"{self._what}; quadratic share b·W/(a+b·W) at W={k}",
            f"{self._key}.share({k})",
            mark=MISFIT if f.misfit else None,
            fmt=".1%",
            bounded=True,
            uncertainty=f.ci.get(f"quadratic_share:{k}"),
            basis=basis.FEW,  # stated only where the fit's replicates gave no interval
            note=note,
        )

    @property
    def warnings(self) -> Block:
        """The fit's warnings as an admonition (nothing when there are none)."""
        if not self._fit.warnings:
            return Block("")
        sentences = tuple(
            said.Said(f"{self._key}.warnings[{i}]", w, self._ref.evidence, f"{self._what}; warning {i + 1}")
            for i, w in enumerate(self._fit.warnings)
        )

        def shown(page: str) -> str:
            body = "\n".join(
                f"    - {said.linked(page, escape_text(s.text), s) if page else escape_text(s.text)}" for s in sentences
            )
            return f'!!! warning "Fit warnings"\n\n{body}\n'

        return Block(shown(""), self._fit.warnings, sentences, shown)
