"""``Quantity``: every number a page shows (``render.numbers.number.Number``: its unit, format, uncertainty,
provenance and how it reads), with the arithmetic and comparisons a claim or a combined number is written in.

``a / b``, ``a - b``, ``2 * a`` build a new Quantity whose expression over its leaves (the page-function numbers it
is made of) is kept, with the interval its operands give (propagated, or resampled jointly); ``a < b`` builds a
``Comparison``, which ``claim()`` checks (``check``). The units decide what is allowed.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from measure.errors import ProbebookError
from render.derive import basis as bases
from render.numbers import leases
from render.numbers.number import Number
from render.numbers.propagation import propagated
from render.numbers.units import UnitError, conversion_factor


@dataclass(frozen=True)
class Quantity(Number):
    """A published number with its provenance (``Number``), which templates may combine and compare."""

    # -- arithmetic and comparisons for claims (render.numbers.claims decides what the units allow) --
    def _combine(self, op: str, a: Any, b: Any) -> Quantity:
        return combine(op, a, b)

    def __mul__(self, other: Any) -> Quantity:
        return self._combine("*", self, other)

    def __rmul__(self, other: Any) -> Quantity:
        return self._combine("*", other, self)

    def __truediv__(self, other: Any) -> Quantity:
        return self._combine("/", self, other)

    def __add__(self, other: Any) -> Quantity:
        return self._combine("+", self, other)

    def __sub__(self, other: Any) -> Quantity:
        return self._combine("-", self, other)

    def _compare(self, op: str, other: Any) -> Any:
        return Comparison.of(op, self, other)

    def __lt__(self, other: Any) -> Any:
        return self._compare("<", other)

    def __gt__(self, other: Any) -> Any:
        return self._compare(">", other)

    def __le__(self, other: Any) -> Any:
        return self._compare("<=", other)

    def __ge__(self, other: Any) -> Any:
        return self._compare(">=", other)


# -- the algebra the operators above need: what units allow, and the expression a composite keeps --

_ARITH: dict[str, Callable[[float, float], float]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
}


COMPARE: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    ">": operator.gt,
    "<=": operator.le,
    ">=": operator.ge,
}


class ClaimError(ProbebookError):
    """A claim that is false, or a comparison or combination the units do not allow."""


def tree(q: Quantity) -> tuple[Any, tuple[dict[str, Any], ...]]:
    """A quantity's expression and its leaves: ``("leaf", 0)`` and itself for a page-function number."""
    if q.expr is not None:
        return q.expr, q.leaves
    leaf = {"key": q.key, "evidence": list(q.evidence), "value": q.value, "unit": q.unit}
    return ("leaf", 0), (leaf,)


def shift_leaves(expr: Any, by: int) -> Any:
    """The same expression with its leaf indices moved by ``by`` (to sit after another's leaves)."""
    if expr[0] == "leaf":
        return ("leaf", expr[1] + by)
    if expr[0] == "num":
        return expr
    return (expr[0], shift_leaves(expr[1], by), shift_leaves(expr[2], by), expr[3])


def evaluate(expr: Any, values: list[float | None]) -> float | None:
    """The value of an expression given each leaf's value (None when a leaf or a divisor is missing)."""
    kind = expr[0]
    if kind == "leaf":
        index: int = expr[1]
        return values[index]
    if kind == "num":
        number: float | None = expr[1]
        return number
    left, right = evaluate(expr[1], values), evaluate(expr[2], values)
    if left is None or right is None or (kind == "/" and right == 0):
        return None
    return _ARITH[kind](left, right * expr[3])


def _plain(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return float(x)


def combine(op: str, a: Any, b: Any) -> Quantity:
    """``a op b`` where at least one side is a Quantity; the units decide what is allowed."""
    qa, qb = (a if isinstance(a, Quantity) else None), (b if isinstance(b, Quantity) else None)
    na, nb = _plain(a), _plain(b)
    if (qa is None and na is None) or (qb is None and nb is None):
        raise ClaimError(
            f"cannot combine {type(a).__name__} {op} {type(b).__name__}: quantities and plain numbers only"
        )
    if qa is None:  # a plain number on the left: only 2 * q makes sense
        if op != "*":
            raise ClaimError(f"a plain number {op} a quantity is not defined; write the quantity first")
        return combine("*", b, a)
    ta, la = tree(qa)
    lb: tuple[dict[str, Any], ...]
    unit, factor, fmt, display = qa.unit, 1.0, qa.fmt, qa.display
    if qb is None:
        if op not in ("*", "/"):
            raise ClaimError(f"{qa.key} {op} a plain number: add or subtract quantities of one unit, not numbers")
        tb, lb, b_text = ("num", nb), (), f"{nb:g}"
    else:
        tb, lb = tree(qb)
        tb, b_text = shift_leaves(tb, len(la)), qb.key
        if op in ("+", "-"):
            factor = _factor(qb.unit, qa.unit, f"{qa.key} {op} {qb.key}")
        elif op == "/" and not qb.unit:  # divided by a count: the unit stays
            pass
        elif op == "/":
            try:
                factor, unit, fmt, display = conversion_factor(qb.unit, qa.unit), "", ".3g", None
            except UnitError:
                unit, display = f"{qa.unit}/{qb.unit}" if qa.unit else f"1/{qb.unit}", None
        elif qa.unit and qb.unit:
            raise ClaimError(f"{qa.key} * {qb.key}: multiplying {qa.unit} by {qb.unit} gives no unit probebook shows")
        else:
            unit, display = qa.unit or qb.unit, qa.display or qb.display
            fmt = product_format(qa, qb)
    if unit and fmt.endswith("%"):
        fmt = ".3g"  # a dimensioned result never takes an operand's percent format (qa / qb in 1/s, say)
    expr = (op, ta, tb, factor)
    leaves = la + lb
    value = evaluate(expr, [leaf["value"] for leaf in leaves])
    evidence = tuple(dict.fromkeys(qa.evidence + (qb.evidence if qb is not None else ())))
    landing: dict[str, str] = {}  # each document's rows, as the operand that first cites it links them
    for q in (qa, qb) if qb is not None else (qa,):
        for e, a in zip(q.evidence, (q.anchor, *q.more_anchors, *[""] * len(q.evidence)), strict=False):
            landing.setdefault(e, a)
    key = f"({qa.key} {op} {b_text})"
    # operands of one lease combine by their windows' intervals: the session moved them alike (render.numbers.leases)
    one = leases.shared((qa, qb) if qb is not None else (qa,))
    va, vb = (leases.within_view(qa), leases.within_view(qb)) if one is not None else (qa, qb)
    interval = propagated(op, va, vb if vb is not None else nb, factor, value)
    recipes = recipes_of(qa) + (recipes_of(qb) if qb is not None else ())
    how = "; 95% interval propagated to first order (GUM §5.1.2)" if interval else ""
    exact = bool(recipes) and all(r is not None and r[0] == "exact" for r in recipes)  # params only: no interval
    if interval is None and not exact and value is not None and recipes and all(r is not None for r in recipes):
        from render.derive.intervals import JOINT, joint_interval  # numpy loads only where a number needs it

        interval = joint_interval(expr, recipes)  # windows resampled: this run's interval by nature
        how = JOINT if interval else ""
    within = None
    if one is not None:
        interval, within, how = leases.carried(one, unit, value, interval, how)
    return Quantity(
        value=value,
        unit=unit,
        fmt=fmt,
        display=display,
        uncertainty=interval,
        evidence=evidence,
        anchor=landing.get(evidence[0], "") if evidence else "",
        more_anchors=tuple(landing.get(e, "") for e in evidence[1:]),
        derivation=key[1:-1] + how,
        key=key[1:-1],
        note=None if value is not None else "a missing operand or a zero divisor",
        expr=expr,
        leaves=leaves,
        leaf_resamples=recipes,
        exact=exact,
        basis="" if interval is not None or exact else bases.combined([x.stated_basis for x in (qa, qb) if x]),
        within=within,
        lease=one.lease if one is not None else None,
        pool=one.pool if one is not None else None,
    )


def recipes_of(q: Quantity) -> tuple[Any, ...]:
    """Each leaf's resampling recipe, aligned with ``tree(q)``'s leaves (an exact number's: itself)."""
    if q.expr is not None:
        return q.leaf_resamples
    return (("exact", q.value),) if q.exact and q.value is not None else (q.resample,)


def product_format(qa: Quantity, qb: Quantity) -> str:
    """The format of ``qa * qb`` when at most one side has a unit: the format of the side that has one.

    A format follows its unit: a saving (``.1%``) times a time is a time, and a percent format on it would
    show 1.03 ms as ``102.9%`` (issue 23, item 1). Two unitless sides keep the left one's format."""
    if qa.unit or not qb.unit:
        return qa.fmt
    return qb.fmt


def _factor(from_unit: str, to_unit: str, what: str) -> float:
    try:
        return conversion_factor(from_unit, to_unit)
    except UnitError:
        raise ClaimError(f"{what}: units {from_unit or 'none'!r} and {to_unit or 'none'!r} do not agree") from None


@dataclass(frozen=True)
class Comparison:
    """``left op right``, both Quantities of one unit family; true or false once built."""

    op: str
    left: Quantity
    right: Quantity
    factor: float
    """Multiplies the right value into the left's unit."""

    @classmethod
    def of(cls, op: str, a: Quantity, b: Any) -> Comparison:
        if not isinstance(b, Quantity):
            number = _plain(b)
            if number is None:
                raise ClaimError(f"{a.key} {op} {b!r}: compare a quantity with a quantity or a plain number")
            if a.unit:
                raise ClaimError(f"{a.key} {op} {number:g}: a number in {a.unit} must come from evidence, not the page")
            b = Quantity(
                value=number,
                unit="",
                fmt="g",
                key=f"{number:g}",
                derivation="a number in the page",
                expr=("num", number),
            )
        return cls(op, a, b, _factor(b.unit, a.unit, f"{a.key} {op} {b.key}"))

    @property
    def holds(self) -> bool | None:
        """Whether the comparison is true; None when a side has no value."""
        if self.left.value is None or self.right.value is None:
            return None
        return COMPARE[self.op](self.left.value, self.right.value * self.factor)

    @property
    def text(self) -> str:
        """``key (value) op key (value)``, for messages."""
        return f"{self.left.key} = {self.left.text} {self.op} {self.right.key} = {self.right.text}"

    def __bool__(self) -> bool:
        raise ClaimError(
            f"{self.left.key} {self.op} {self.right.key} is checked by claim(CONDITION, 'sentence'), not used as a test"
        )


def check(conditions: tuple[Any, ...], sentence: Any) -> list[Comparison]:
    """The comparisons of a claim, every one of them true; otherwise one line saying which is false and why."""
    if not isinstance(sentence, str) or not sentence.strip():
        raise ClaimError('claim() takes one or more comparisons and then the sentence, e.g. claim(a < b, "a is less")')
    if not conditions or not all(isinstance(c, Comparison) for c in conditions):
        raise ClaimError(f"claim({sentence!r}): each condition must compare quantities, like a < b")
    for c in conditions:
        if c.holds is None:
            raise ClaimError(f"claim {sentence!r} cannot be checked: {c.text} has a side with no value")
        if not c.holds:
            raise ClaimError(f"claim {sentence!r} is false: {c.text}")
    return list(conditions)
