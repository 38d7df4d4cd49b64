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

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

from render.numbers.quantity import COMPARE, ClaimError, Comparison, check, evaluate, shift_leaves, tree

KIND = "claim"
"""The ``unit`` of a claim's ledger row."""

_UNCHECKED: contextvars.ContextVar[bool] = contextvars.ContextVar("probebook_claims_unchecked", default=False)


@contextlib.contextmanager
def unchecked() -> Iterator[None]:
    """Inside it a false claim (or a label stating a direction its number lacks) is recorded, not refused.

    Only ``probebook reproduce`` renders this way, aside from the site, to learn which claims of a record
    the new evidence flips (their ledger rows say ``false``); a build never does, so a published page
    shows only sentences that hold.
    """
    token = _UNCHECKED.set(True)
    try:
        yield
    finally:
        _UNCHECKED.reset(token)


_SUPERSEDED: contextvars.ContextVar[bool] = contextvars.ContextVar("probebook_claims_superseded", default=False)


@contextlib.contextmanager
def superseded_page() -> Iterator[None]:
    """Inside it a claim whose comparison no longer holds is kept, not refused: a superseded version keeps the
    words it was published with, and the page marks each claim today's intervals do not resolve (a comparison
    that is now false among them: its interval moved, issue 38's exact median intervals)."""
    token = _SUPERSEDED.set(True)
    try:
        yield
    finally:
        _SUPERSEDED.reset(token)


def on_superseded_page() -> bool:
    """Whether a superseded version is rendering (``superseded_page``): it keeps what it published, marked."""
    return _SUPERSEDED.get()


def checking() -> bool:
    """Whether claims are refused when false (always, outside ``unchecked``)."""
    return not _UNCHECKED.get()


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
    """A checked claim: every condition true, else a ``ClaimError`` naming the sentence and both values.

    Inside ``unchecked`` the conditions need only be comparisons; whether they hold goes in the ledger row."""
    if not checking() or _SUPERSEDED.get():
        if not isinstance(sentence, str) or not conditions or not all(isinstance(c, Comparison) for c in conditions):
            raise ClaimError(f"claim({sentence!r}): each condition must compare quantities, like a < b")
        return Claim(tuple(conditions), sentence)
    return Claim(tuple(check(conditions, sentence)), sentence)


def ledger_row(page: str, comparisons: list[Comparison], sentence: str) -> dict[str, Any]:
    """The claim as a ledger row (``unit`` ``claim``, value 1: true), with what re-evaluating it needs.

    Only rows made inside ``unchecked`` can say value 0 (``false``) or None (``unknown``: a side had no value)."""
    parts: list[dict[str, Any]] = []
    leaves: list[dict[str, Any]] = []
    for c in comparisons:
        tl, ll = tree(c.left)
        tr, lr = tree(c.right)
        base = len(leaves)
        leaves += list(ll) + list(lr)
        parts.append(
            {"op": c.op, "left": shift_leaves(tl, base), "right": shift_leaves(tr, base + len(ll)), "factor": c.factor}
        )
    evidence = list(dict.fromkeys(e for leaf in leaves for e in leaf["evidence"]))
    holds = [c.holds for c in comparisons]
    truth = None if None in holds else int(all(holds))
    return {
        "page": page,
        "key": f"claim: {sentence}",
        "value": truth,
        "unit": KIND,
        "text": {1: "true", 0: "false", None: "unknown"}[truth],
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
            truths.append(None if left is None or right is None else COMPARE[c["op"]](left, right * c["factor"]))
        was = None if None in truths else all(truths)
        if was is not True:
            out.append(TruthChange(row, was, old))
    return out
