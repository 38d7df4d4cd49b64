"""Checked claims: a sentence a page shows only while the comparison behind it holds.

``{{ claim(fit(sweep_compiled).c < fit(sweep).c, "the compiled step has the smaller fixed part") }}``
renders the sentence when the condition is true and fails the build otherwise, naming the page's
file and line, the sentence and both values.

Quantities combine where their units allow: ``q * 2``, ``q / 2``, ``q + r`` and ``q - r`` (units
equal up to a prefix), ``q / r`` (a ratio when the units agree up to a prefix, else the quotient
unit), ``q * r`` when one side has no unit. ``<``, ``>``, ``<=`` and ``>=`` compare two
quantities whose units agree up to a prefix, or a quantity without a unit with a plain number.

Each composite keeps an expression over its *leaves*, the page-function numbers it is made of
(ledger key, evidence, value, unit), so a claim can be re-evaluated with another ledger's values
of the same leaves: the Changes page lists each claim whose truth differs under the published
numbers (``truth_changes``).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Callable, ClassVar

from measure.errors import ProbebookError
from render.numbers.quantity import Quantity, UnitError, conversion_factor

_ARITH: dict[str, Callable[[float, float], float]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
}
_COMPARE: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    ">": operator.gt,
    "<=": operator.le,
    ">=": operator.ge,
}
KIND = "claim"
"""The ``unit`` of a claim's ledger row."""


class ClaimError(ProbebookError):
    """A claim that is false, or a comparison or combination the units do not allow."""


def tree(q: Quantity) -> tuple[Any, tuple[dict[str, Any], ...]]:
    """A quantity's expression and its leaves: ``("leaf", 0)`` and itself for a page-function number."""
    if q.expr is not None:
        return q.expr, q.leaves
    leaf = {"key": q.key, "evidence": list(q.evidence), "value": q.value, "unit": q.unit}
    return ("leaf", 0), (leaf,)


def _shift(expr: Any, by: int) -> Any:
    """The same expression with its leaf indices moved by ``by`` (to sit after another's leaves)."""
    if expr[0] == "leaf":
        return ("leaf", expr[1] + by)
    if expr[0] == "num":
        return expr
    return (expr[0], _shift(expr[1], by), _shift(expr[2], by), expr[3])


def evaluate(expr: Any, values: list[float | None]) -> float | None:
    """The value of an expression given each leaf's value (None when a leaf or a divisor is missing)."""
    kind = expr[0]
    if kind == "leaf":
        return values[expr[1]]
    if kind == "num":
        return expr[1]
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
        tb, b_text = _shift(tb, len(la)), qb.key
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
    expr = (op, ta, tb, factor)
    leaves = la + lb
    value = evaluate(expr, [leaf["value"] for leaf in leaves])
    evidence = tuple(dict.fromkeys(qa.evidence + (qb.evidence if qb is not None else ())))
    key = f"({qa.key} {op} {b_text})"
    return Quantity(
        value=value,
        unit=unit,
        fmt=fmt,
        display=display,
        evidence=evidence,
        derivation=key[1:-1],
        key=key[1:-1],
        note=None if value is not None else "a missing operand or a zero divisor",
        expr=expr,
        leaves=leaves,
    )


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
        return _COMPARE[self.op](self.left.value, self.right.value * self.factor)

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


@dataclass(frozen=True)
class Claim:
    """What ``claim()`` returns: true comparisons and the sentence they allow the page to show."""

    TEMPLATE_ATTRS: ClassVar[frozenset[str]] = frozenset()
    comparisons: tuple[Comparison, ...]
    sentence: str

    @property
    def evidence(self) -> tuple[str, ...]:
        ids = [e for c in self.comparisons for q in (c.left, c.right) for e in q.evidence]
        return tuple(dict.fromkeys(ids))


def make(conditions: tuple[Any, ...], sentence: Any) -> Claim:
    """A checked claim: every condition true, else a ``ClaimError`` naming the sentence and both values."""
    return Claim(tuple(check(conditions, sentence)), sentence)


def ledger_row(page: str, comparisons: list[Comparison], sentence: str) -> dict[str, Any]:
    """The claim as a ledger row (``unit`` ``claim``, value 1: true), with what re-evaluating it needs."""
    parts: list[dict[str, Any]] = []
    leaves: list[dict[str, Any]] = []
    for c in comparisons:
        tl, ll = tree(c.left)
        tr, lr = tree(c.right)
        base = len(leaves)
        leaves += list(ll) + list(lr)
        parts.append({"op": c.op, "left": _shift(tl, base), "right": _shift(tr, base + len(ll)), "factor": c.factor})
    evidence = list(dict.fromkeys(e for leaf in leaves for e in leaf["evidence"]))
    return {
        "page": page,
        "key": f"claim: {sentence}",
        "value": 1,
        "unit": KIND,
        "text": "true",
        "uncertainty": None,
        "evidence": evidence,
        "derivation": " and ".join(f"{c.left.key} {c.op} {c.right.key}" for c in comparisons),
        "claim": {"sentence": sentence, "comparisons": parts, "leaves": leaves},
    }


@dataclass(frozen=True)
class TruthChange:
    """A claim of this build that the published numbers would have made false (or unknown)."""

    row: dict[str, Any]
    """The claim's row in this build's ledger."""
    was: bool | None
    """Its truth under the published values of its leaves (None: a leaf was not published)."""
    old_values: list[float | None]
    """The published value of each leaf, in leaf order."""


def _published_value(leaf: dict[str, Any], page: str, rows: list[dict[str, Any]]) -> float | None:
    """A leaf's value in the published ledger: the same key and evidence, on the same page first."""
    matches = [r for r in rows if r["key"] == leaf["key"] and list(r["evidence"]) == list(leaf["evidence"])]
    matches.sort(key=lambda r: r["page"] != page)
    return matches[0]["value"] if matches else None


def truth_changes(published: list[dict[str, Any]], rows: list[dict[str, Any]]) -> list[TruthChange]:
    """Claims of ``rows`` whose truth differs under the published values of their leaves, in ledger order.

    A claim whose leaves were all published is re-evaluated with those values; one whose leaves
    were not (a new comparison of new numbers) is listed when it is not itself in the published ledger.
    """
    out = []
    before = {(r["page"], r["key"]) for r in published}
    for row in sorted(rows, key=lambda r: (r["page"], r["key"])):
        spec = row.get("claim")
        if row.get("unit") != KIND or not isinstance(spec, dict):
            continue
        old = [_published_value(leaf, row["page"], published) for leaf in spec["leaves"]]
        if any(v is None for v in old):
            if (row["page"], row["key"]) not in before:
                out.append(TruthChange(row, None, old))
            continue
        truths = []
        for c in spec["comparisons"]:
            left, right = evaluate(c["left"], old), evaluate(c["right"], old)
            truths.append(None if left is None or right is None else _COMPARE[c["op"]](left, right * c["factor"]))
        was = None if None in truths else all(truths)
        if was is not True:
            out.append(TruthChange(row, was, old))
    return out
