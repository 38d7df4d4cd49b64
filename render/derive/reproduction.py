"""A ``reproduction`` document read as data, and the numbers the site derives from it (issue 24).

``probebook reproduce`` archives one document per reproduction (probe ``reproduction``): the record and
version it re-measured, both evidence id sets, and per ledger number and claim the old and new value and a
verdict. ``parse`` checks that layout field by field (the document is untrusted: any field may be missing,
of the wrong type or hostile text) and refuses it in one line naming the evidence and the field. The counts
and changes the site shows are derived here from the per-number rows, never copied from the document's
``summary`` (which ``summary_mismatch`` checks against them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from measure.errors import ProbebookError

PROBE = "reproduction"
"""The probe name ``probebook reproduce`` archives its result under."""
MODES = ("reproduction", "cross-machine")
NUMBER_VERDICTS = ("within", "outside", "not comparable", "missing")
CLAIM_VERDICTS = ("held", "flipped", "not resolved", "not comparable")
OUTCOMES = ("resolved", "equivalent", "not resolved")
"""A number's three-way outcome (``render.derive.replication.VERDICTS``); a document older than it has none."""
JUDGED = ("across sessions", "this run's windows", "exact")
"""Which interval a number's outcome was judged by (``probebook.reproduce.verdict.judged_by``)."""
NUMBER_BASES = ("measured", "recorded")
"""What a number is: measured, or recorded (a param, a constant, a reading of the machine), counted apart."""


@dataclass(frozen=True)
class NumberRow:
    """One ledger number of the record, before and after (values in the number's base unit)."""

    index: int
    """Its position in ``data.numbers`` (what its anchor on the evidence page names)."""
    key: str
    label: str
    old: float | None
    new: float | None
    old_interval: tuple[float, float] | None
    new_interval: tuple[float, float] | None
    unit: str
    shown_old: str
    shown_new: str
    verdict: str
    basis: str = "measured"
    """``measured`` or ``recorded`` (``NUMBER_BASES``); a document older than the field counts every number measured."""
    outcome: str | None = None
    """The three-way outcome (``OUTCOMES``); None for a missing number or a document older than the field."""
    judged_by: str | None = None
    """The interval the outcome was judged by (``JUDGED``)."""
    effect: float | None = None
    """new / old − 1 (or new − old for a signed number) as the outcome judged it."""
    effect_interval: tuple[float, float] | None = None
    delta: float | None = None
    """The practical band it was judged against."""


@dataclass(frozen=True)
class ClaimRow:
    index: int
    key: str
    text: str
    old: bool
    new: bool | None
    verdict: str


@dataclass(frozen=True)
class Reproduction:
    """A reproduction document's data, checked."""

    ident: str
    record: str
    version: int
    title: str
    mode: str
    created_at: str
    original: dict[str, str]
    new: dict[str, str]
    rule: str
    numbers: tuple[NumberRow, ...]
    claims: tuple[ClaimRow, ...]
    summary: dict[str, int]
    commands: tuple[str, ...]

    @property
    def date(self) -> str:
        return self.created_at[:10]


def _fail(ident: str, field: str, what: str) -> ProbebookError:
    return ProbebookError(f"evidence {ident}: reproduction field {field} {what}")


def _text(ident: str, field: str, value: Any) -> str:
    if not isinstance(value, str):
        raise _fail(ident, field, f"must be text, got {type(value).__name__}")
    return value


def _number(ident: str, field: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _fail(ident, field, f"must be a finite number or null, got {str(value)[:40]!r}")
    return float(value)


def _interval(ident: str, field: str, row: dict[str, Any], side: str) -> tuple[float, float] | None:
    low = _number(ident, f"{field}.{side}_low", row.get(f"{side}_low"))
    high = _number(ident, f"{field}.{side}_high", row.get(f"{side}_high"))
    return (low, high) if low is not None and high is not None else None


def _ids(ident: str, field: str, value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise _fail(ident, field, "must map names to evidence ids")
    out = {}
    for name, other in value.items():
        text = _text(ident, f"{field}.{name}", other)
        hexpart = text.removeprefix("sha256:")
        if not (text.startswith("sha256:") and len(hexpart) == 64 and all(c in "0123456789abcdef" for c in hexpart)):
            raise _fail(ident, f"{field}.{name}", "must be a full evidence id (sha256:<64 hex>)")
        out[_text(ident, field, name)] = text
    return out


def _choice(ident: str, field: str, value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise _fail(ident, field, f"must be one of {', '.join(allowed)}, got {str(value)[:40]!r}")
    return str(value)


def _optional(ident: str, field: str, value: Any, allowed: tuple[str, ...]) -> str | None:
    return None if value is None else _choice(ident, field, value, allowed)


def _rows(ident: str, field: str, value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(r, dict) for r in value):
        raise _fail(ident, field, "must be a list of objects")
    return value


def parse(ident: str, doc: dict[str, Any]) -> Reproduction:
    """The checked data of the reproduction document ``ident``; one line naming the field when it is malformed."""
    data = doc.get("data")
    if not isinstance(data, dict):
        raise _fail(ident, "data", "must be an object")
    version = data.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise _fail(ident, "data.version", "must be a whole number from 1")
    numbers = []
    for i, row in enumerate(_rows(ident, "data.numbers", data.get("numbers"))):
        where = f"data.numbers[{i}]"
        numbers.append(
            NumberRow(
                index=i,
                key=_text(ident, f"{where}.key", row.get("key")),
                label=_text(ident, f"{where}.label", row.get("label", "")),
                old=_number(ident, f"{where}.old", row.get("old")),
                new=_number(ident, f"{where}.new", row.get("new")),
                old_interval=_interval(ident, where, row, "old"),
                new_interval=_interval(ident, where, row, "new"),
                unit=_text(ident, f"{where}.unit", row.get("unit", "")),
                shown_old=_text(ident, f"{where}.shown_old", row.get("shown_old", "")),
                shown_new=_text(ident, f"{where}.shown_new", row.get("shown_new", "")),
                verdict=_choice(ident, f"{where}.verdict", row.get("verdict"), NUMBER_VERDICTS),
                basis=_choice(ident, f"{where}.basis", row.get("basis", "measured"), NUMBER_BASES),
                outcome=_optional(ident, f"{where}.outcome", row.get("outcome"), OUTCOMES),
                judged_by=_optional(ident, f"{where}.judged_by", row.get("judged_by"), JUDGED),
                effect=_number(ident, f"{where}.effect", row.get("effect")),
                effect_interval=_interval(ident, where, row, "effect"),
                delta=_number(ident, f"{where}.delta", row.get("delta")),
            )
        )
    claims = []
    for i, row in enumerate(_rows(ident, "data.claims", data.get("claims", []))):
        where = f"data.claims[{i}]"
        new = row.get("new")
        if not isinstance(row.get("old"), bool) or not (new is None or isinstance(new, bool)):
            raise _fail(ident, where, "must hold old: true|false and new: true|false|null")
        claims.append(
            ClaimRow(
                index=i,
                key=_text(ident, f"{where}.key", row.get("key")),
                text=_text(ident, f"{where}.text", row.get("text")),
                old=row["old"],
                new=new,
                verdict=_choice(ident, f"{where}.verdict", row.get("verdict"), CLAIM_VERDICTS),
            )
        )
    stated = data.get("summary")
    summary: dict[str, Any] = stated if isinstance(stated, dict) else {}
    commands = data.get("commands", [])
    if not isinstance(commands, list):
        raise _fail(ident, "data.commands", "must be a list of command lines")
    return Reproduction(
        ident=ident,
        record=_text(ident, "data.record", data.get("record")),
        version=version,
        title=_text(ident, "data.title", data.get("title", "")),
        mode=_choice(ident, "data.mode", data.get("mode"), MODES),
        created_at=_text(ident, "created_at", doc.get("created_at", "")),
        original=_ids(ident, "data.original", data.get("original")),
        new=_ids(ident, "data.new", data.get("new")),
        rule=_text(ident, "data.rule", data.get("rule", "")),
        numbers=tuple(numbers),
        claims=tuple(claims),
        summary={k: v for k, v in summary.items() if isinstance(v, int) and not isinstance(v, bool)},
        commands=tuple(_text(ident, f"data.commands[{i}]", c) for i, c in enumerate(commands)),
    )


def relative_change(old: float | None, new: float | None) -> float | None:
    """``(new − old) / |old|``, a ratio (unitless); None when either is missing or ``old`` is zero."""
    if old is None or new is None or old == 0:
        return None
    return (new - old) / abs(old)


COUNTED = ("within", "outside", "not_comparable", "missing", "held", "flipped")
"""The counts a reproduction is summarised by, as ``verdict_counts`` names them."""
THREE_WAY = {"resolved": "different", "equivalent": "equivalent", "not resolved": "not_resolved"}
"""Each three-way outcome of a measured number and the count it adds to (``different``: resolved different); a
claim not resolved counts in ``claims_not_resolved``."""
APART = ("measured", "recorded", "recorded_same")
"""The measured numbers (whose verdicts ``COUNTED`` counts), and the recorded ones, counted apart with how many of
them the new evidence states the same: a recorded param that agrees is not a measurement that reproduced."""


def verdict_counts(numbers: tuple[NumberRow, ...], claims: tuple[ClaimRow, ...]) -> dict[str, int]:
    """How many numbers and claims got each verdict, and how many of each there are (plain counts)."""
    counts = {"numbers": len(numbers), "claims": len(claims)}
    for name in COUNTED + APART + (*THREE_WAY.values(), "claims_not_resolved"):
        counts[name] = 0
    for n in numbers:
        if n.basis == "recorded":
            counts["recorded"] += 1
            counts["recorded_same"] += n.verdict == "within"
            continue
        counts["measured"] += 1
        counts[n.verdict.replace(" ", "_")] += 1
        if n.outcome is not None:
            counts[THREE_WAY[n.outcome]] += 1
    for c in claims:
        if c.verdict != "not comparable":
            counts["claims_not_resolved" if c.verdict == "not resolved" else c.verdict] += 1
    return counts


def summary_mismatch(repro: Reproduction) -> list[str]:
    """The ``summary`` fields the document states that disagree with the counts of its own rows."""
    counts = verdict_counts(repro.numbers, repro.claims)
    return sorted(k for k, v in repro.summary.items() if k in counts and counts[k] != v)


UNRANKED = ("not comparable", "missing")
"""Verdicts whose change says nothing about a move within the rule: listed after every number that has one."""


def moved_order(numbers: tuple[NumberRow, ...]) -> list[NumberRow]:
    """The numbers by how far they moved, |change| largest first; then those not comparable or missing (or with
    no change to show: a zero or absent value), by |change| where they have one, each tie in the document's order."""
    changes = [relative_change(n.old, n.new) for n in numbers]

    def rank(i: int) -> tuple[bool, bool, float, int]:
        change = changes[i]
        last = numbers[i].verdict in UNRANKED or change is None
        return last, change is None, -abs(change or 0.0), i

    ranked = sorted(range(len(numbers)), key=rank)
    return [numbers[i] for i in ranked]


def found(docs: dict[str, dict[str, Any]]) -> dict[tuple[str, int], list[Reproduction]]:
    """Every reproduction document of the archive by the (record slug, version) it names, oldest first."""
    out: dict[tuple[str, int], list[Reproduction]] = {}
    for ident, doc in docs.items():  # every record page asks: one pass, no sort of the whole archive
        if doc.get("probe") == PROBE:
            repro = parse(ident, doc)
            out.setdefault((repro.record, repro.version), []).append(repro)
    for items in out.values():
        items.sort(key=lambda r: (r.created_at, r.ident))
    return out
