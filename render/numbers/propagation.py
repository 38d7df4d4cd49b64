"""The first-order propagation of a 95% interval through ``a op b`` (JCGM 100:2008, the GUM, §5.1.2)."""

from __future__ import annotations

import math
from typing import Protocol


class Operand(Protocol):
    """What the rule reads of a Quantity (``render.numbers.quantity``, which calls it)."""

    @property
    def value(self) -> float | None: ...
    @property
    def uncertainty(self) -> tuple[float, float] | None: ...
    @property
    def evidence(self) -> tuple[str, ...]: ...
    @property
    def exact(self) -> bool: ...


Z95 = 1.959963984540054
"""A 95% interval's half-width over its standard error: the normal quantile ``scipy.stats.norm.ppf(0.975)``."""


def propagated(
    op: str, qa: Operand, b: Operand | float | None, factor: float, value: float | None
) -> tuple[float, float] | None:
    """The 95% interval of ``qa op b`` from its operands' intervals, to first order; None where it cannot be stated.

        The rule is the law of propagation of uncertainty for uncorrelated inputs (JCGM 100:2008, the GUM, §5.1.2):
        ``u(f)² = Σ (∂f/∂xᵢ)² u(xᵢ)²``, each operand's standard error ``u`` read from its 95% interval as
        ``(high − low) / (2·Z95)``. So a sum or difference adds the standard errors in quadrature (``b`` converted
        by ``factor``), a product or quotient adds the relative ones, and a plain number is exact; the result is
        ``value ± Z95·u`` (symmetric, as the first-order rule is). Uncorrelated means from disjoint evidence: two
        operands that share an evidence document share its windows, and only resampling them jointly (as the
        derivation that made them does) gives their interval, so none is stated here. None as well when an operand
        has no interval (a number without one is not exact, unless it says so: ``exact``, a recorded param, counts as a
    plain number), or when a relative error needs a zero value.
    """
    if not isinstance(b, (int, float)) and b is not None and b.exact and b.value is not None:
        b = b.value  # a recorded param: a plain number here
    if qa.exact and qa.value is not None and not isinstance(b, (int, float)) and b is not None and op in ("*", "/"):
        if op == "*":
            return propagated("*", b, qa.value, factor, value)  # k·b: b's interval scaled
        if b.value in (None, 0) or b.uncertainty is None or value is None:
            return None
        rel = (b.uncertainty[1] - b.uncertainty[0]) / (2 * Z95) / abs(b.value)
        return value - Z95 * abs(value) * rel, value + Z95 * abs(value) * rel  # k / b: b's relative error
    if value is None or qa.value is None or qa.uncertainty is None:
        return None
    ua = (qa.uncertainty[1] - qa.uncertainty[0]) / (2 * Z95)
    if b is None or isinstance(b, (int, float)):
        if b is None or (op == "/" and b == 0):
            return None
        u = ua * abs(b if op == "*" else 1.0 / b)
    else:
        if b.value is None or b.uncertainty is None or set(qa.evidence) & set(b.evidence):
            return None
        ub = (b.uncertainty[1] - b.uncertainty[0]) / (2 * Z95)
        if op in ("+", "-"):
            u = math.hypot(ua, ub * factor)
        elif qa.value == 0 or b.value == 0:
            return None
        else:
            u = abs(value) * math.hypot(ua / qa.value, ub / b.value)
    return value - Z95 * u, value + Z95 * u
