"""The ledger: one row per published number, and the diff between two ledgers (ARCHITECTURE.md §Numbers).

A ledger file is ``{"schema": "probebook.ledger/1", "rows": [...]}``; each row holds ``page``,
``key``, ``value`` (in ``unit``, the base unit), ``unit``, ``text`` (as shown), ``uncertainty``,
``evidence`` and ``derivation``. Rows are sorted by (page, key) and written with sorted keys, so
the same numbers always give the same bytes. A row is identified across builds by (page, key).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from measure.errors import ProbebookError
from measure.evidence.envelope import loads
from measure.evidence.files import write_regular
from measure.evidence.reading import read_regular
from render.numbers.links import landing_fields
from render.numbers.units import percent

if TYPE_CHECKING:
    from render.numbers.number import Number

SCHEMA = "probebook.ledger/1"
_ROW_FIELDS = ("page", "key", "value", "unit", "text", "uncertainty", "evidence", "derivation")


def number_row(number: Number, page: str, key: str) -> dict[str, Any]:
    """The ledger row of ``number`` as published on ``page`` under ``key``: the fields above, and beside them what
    the page shows (a number shown with its interval keeps that interval's text, ``interval``), this run's windows'
    interval where the published one is across sessions (``within``), a stated basis, and where it lands."""
    row: dict[str, Any] = {
        "page": page,
        "key": key,
        "value": number.value,
        "unit": number.unit,
        "text": number.text,
        "uncertainty": list(number.uncertainty) if number.uncertainty and number.value is not None else None,
        "evidence": list(number.evidence),
        "derivation": number.derivation,
    }
    if number.interval_text is not None:
        row["interval"] = number.interval_text
    if number.within is not None and number.within != number.uncertainty and number.value is not None:
        row["within"] = list(number.within)
    if number.stated_basis:
        row["basis"] = number.stated_basis
    return row | landing_fields(number.shown_text, number.text, (number.anchor, *number.more_anchors), number.evidence)


class LedgerError(ProbebookError):
    """A ledger file that is missing, malformed or of another schema."""


def to_bytes(rows: list[dict[str, Any]], build: dict[str, Any] | None = None) -> bytes:
    """Canonical ledger bytes: rows sorted by (page, key), keys sorted, one trailing newline.

    ``build`` is the site's build stamp (``render.site.folder``): whether the build completed and its inputs' digest.
    """
    ordered = sorted(rows, key=lambda r: (r["page"], r["key"]))
    doc: dict[str, Any] = {"schema": SCHEMA, "rows": ordered}
    if build is not None:
        doc["build"] = build
    return (json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


def rows_digest(rows: list[dict[str, Any]]) -> str:
    """``sha256:<hex>`` of the rows' canonical bytes (no build stamp): what a site's stamp says it published."""
    return "sha256:" + hashlib.sha256(to_bytes(rows)).hexdigest()


def write(path: Path, rows: list[dict[str, Any]]) -> None:
    """Write a ledger whole (a fresh temp file in the same folder, then a rename), never through a link."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_regular(path, to_bytes(rows))


def read(path: Path) -> list[dict[str, Any]]:
    """Read and check a ledger file; every problem is one line naming the file (and row)."""
    if not os.path.lexists(path):
        raise LedgerError(f"{path}: no such ledger file (`probebook build` writes site/ledger.json)")
    try:
        raw = read_regular(path)  # a FIFO or /dev/zero given as a ledger: refused, not waited on or read forever
    except ProbebookError as exc:
        raise LedgerError(str(exc)) from None
    try:
        doc = loads(raw.decode("utf-8"))  # strict: no NaN/Infinity, no key twice, at most MAX_DEPTH deep
    except (UnicodeDecodeError, ValueError) as exc:
        raise LedgerError(f"{path}: not a JSON ledger ({str(exc)[:120]})") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        got = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise LedgerError(f"{path}: field 'schema' must be {SCHEMA!r}, got {got!r}")
    rows = doc.get("rows")
    if not isinstance(rows, list):
        raise LedgerError(f"{path}: field 'rows' must be a list")
    seen: set[tuple[str, str]] = set()
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise LedgerError(f"{path}: rows[{i}] must be an object")
        missing = [f for f in _ROW_FIELDS if f not in row]
        if missing:
            raise LedgerError(f"{path}: rows[{i}] lacks field '{missing[0]}'")
        if not (isinstance(row["page"], str) and isinstance(row["key"], str)):
            raise LedgerError(f"{path}: rows[{i}] fields 'page' and 'key' must be text")
        value = row["value"]
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise LedgerError(f"{path}: rows[{i}].value must be a number or null, got {value!r}")
        ident = (row["page"], row["key"])
        if ident in seen:
            raise LedgerError(f"{path}: rows[{i}] repeats page {row['page']!r} key {row['key']!r}")
        seen.add(ident)
    return rows


def read_build(path: Path) -> dict[str, Any] | None:
    """The build stamp of a ledger file (after the checks ``read`` makes), or None when it has none."""
    read(path)
    doc = loads(read_regular(path).decode("utf-8"))
    build = doc.get("build")
    if build is not None and not isinstance(build, dict):
        raise LedgerError(f"{path}: field 'build' must be an object")
    return build


def relative_change(old: float | None, new: float | None) -> float | None:
    """(new - old) / |old|, dimensionless; None when either is missing, old is zero, or it is not a finite double."""
    if old is None or new is None or old == 0:
        return None
    try:
        rel = (new - old) / abs(old)  # integers past a double's range overflow here
    except OverflowError:
        return None
    return rel if math.isfinite(rel) else None


@dataclass(frozen=True)
class Change:
    """One number whose value, shown text or derivation differs between two ledgers."""

    old: dict[str, Any]
    """The row in the old ledger."""
    new: dict[str, Any]
    """The row in the new ledger."""

    @property
    def page(self) -> str:
        return str(self.new["page"])

    @property
    def key(self) -> str:
        return str(self.new["key"])

    @property
    def relative(self) -> float | None:
        """Relative change of the value, dimensionless (0.1 = 10% up)."""
        return relative_change(self.old["value"], self.new["value"])


def beyond_tolerance(change: Change, tolerance_pct: float) -> bool:
    """Whether a change counts against ``diff --fail-on-change --tolerance PCT``: its value moved by more than
    ``tolerance_pct`` percent of the old value, or it moved by an amount with no relative size (the old value
    zero or missing), or only its text or derivation changed while the tolerance is 0. asv and pytest-benchmark
    compare so, with a stated percentage (issue 29)."""
    rel = change.relative
    if rel is None:
        return change.old["value"] != change.new["value"] or tolerance_pct == 0
    if rel == 0:
        return tolerance_pct == 0  # the value held; the text or derivation changed, which only 0 tolerance counts
    return abs(rel) * 100 > tolerance_pct


@dataclass(frozen=True)
class Diff:
    """What moved between two ledgers."""

    added: list[dict[str, Any]]
    """Rows only in the new ledger, sorted by (page, key)."""
    removed: list[dict[str, Any]]
    """Rows only in the old ledger, sorted by (page, key)."""
    changed: list[Change]
    """Rows in both whose value, text or derivation differs, sorted by (page, key)."""
    unchanged: int
    """How many rows are the same in both."""
    versions: list[Change] = field(default_factory=list)
    """Added rows of a record's new version beside the same key on the version it follows (``v1 → v2``), sorted by
    (page, key): what a correction moved, number by number (issue 40). Those rows stay in ``added`` too."""

    @property
    def any(self) -> bool:
        return bool(self.added or self.removed or self.changed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "removed": self.removed,
            "changed": [
                {"page": c.page, "key": c.key, "old": c.old, "new": c.new, "relative_change": c.relative}
                for c in self.changed
            ],
            "unchanged": self.unchanged,
            "versions": [
                {"old_page": c.old["page"], "page": c.page, "key": c.key, "old": c.old, "new": c.new}
                | {"relative_change": c.relative}
                for c in self.versions
            ],
        }


_ALT = re.compile(r"\.alt\[\d+\]$")
_VERSION_PAGE = re.compile(r"^(records/[^/]+/)v([1-9]\d*)\.md$")


def is_alt_text(row: dict[str, Any]) -> bool:
    """A number read back out of a chart's alt text (``chart(...).alt[N]``): the chart's numbers in words, which a
    diff leaves out (they repeat the chart's inputs and pad every change; issue 40)."""
    return bool(_ALT.search(str(row.get("key", ""))))


def previous_version(page: str) -> str | None:
    """``records/x/v1.md`` for ``records/x/v2.md``: the record version a version follows; None for any other page."""
    m = _VERSION_PAGE.match(page)
    return f"{m.group(1)}v{int(m.group(2)) - 1}.md" if m and int(m.group(2)) > 1 else None


NOISE_REL = 1e-9
"""A relative change below this is floating-point noise, not a change: the same evidence summed in another order (a
fresh clone's first build against the published ledger) differs at about 1e-14, and a measured number never
resolves past about 1e-6 (issue 44). ``probebook diff`` and the build's "changes since published" say so."""

_FLOAT = re.compile(r"-?\d+\.\d+(?:[eE][-+]?\d+)?|-?\d+[eE][-+]?\d+")


def same_value(va: Any, vb: Any) -> bool:
    """Two ledger values are one value: both missing, equal, both NaN, or numbers whose relative difference is below
    ``NOISE_REL`` (dimensionless)."""
    if va is None or vb is None:
        return va is None and vb is None
    if isinstance(va, bool) or isinstance(vb, bool):  # True == 1 in Python; a flag is not a count
        return va is vb
    if va == vb:
        return True
    if not isinstance(va, (int, float)) or not isinstance(vb, (int, float)):
        return False
    if not all(math.isfinite(v) for v in (va, vb) if isinstance(v, float)):  # equal infinities returned above
        return all(isinstance(v, float) and math.isnan(v) for v in (va, vb))
    try:
        return math.isclose(va, vb, rel_tol=NOISE_REL, abs_tol=0.0)
    except OverflowError:  # an integer past a double's range (a hostile ledger): the same rule, in exact fractions
        a, b = Fraction(va), Fraction(vb)
        return abs(a - b) <= Fraction(NOISE_REL) * max(abs(a), abs(b))


def without_noise(text: str) -> str:
    """``text`` with every decimal number rounded to 9 significant figures: a derivation that spells a value out in
    full (``0.30000000000000004``) reads the same as one whose last digits moved by noise."""
    return _FLOAT.sub(lambda m: format(float(m.group(0)), ".9g"), text)


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Rows are the same number when value (to ``NOISE_REL``), text and derivation (to 9 significant figures)
    agree."""
    return (
        same_value(a["value"], b["value"])
        and a["text"] == b["text"]
        and without_noise(str(a["derivation"])) == without_noise(str(b["derivation"]))
    )


def diff(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> Diff:
    """Numbers added, removed and changed from ``old`` to ``new`` (rows matched by page and key), alt text left out;
    a new record version's rows also beside the version it follows (``Diff.versions``)."""
    before = {(r["page"], r["key"]): r for r in old if not is_alt_text(r)}
    after = {(r["page"], r["key"]): r for r in new if not is_alt_text(r)}
    added = [after[k] for k in sorted(after.keys() - before.keys())]
    removed = [before[k] for k in sorted(before.keys() - after.keys())]
    changed, unchanged = [], 0
    for k in sorted(before.keys() & after.keys()):
        if _same(before[k], after[k]):
            unchanged += 1
        else:
            changed.append(Change(before[k], after[k]))
    versions = []
    for row in added:  # the previous version as this build renders it, else as it was published
        prior = previous_version(str(row["page"]))
        match = None if prior is None else after.get((prior, row["key"])) or before.get((prior, row["key"]))
        if match is not None and not _same(match, row):
            versions.append(Change(match, row))
    return Diff(added, removed, changed, unchanged, versions)


def change_percent(rel: float | None) -> str:
    """A relative change as signed percent text with 3 significant figures, e.g. ``+4.2%``; ``n/a`` when undefined."""
    return percent(rel, "+.3g")


def format_diff(d: Diff) -> list[str]:
    """The diff as text lines, for ``probebook diff``."""
    lines = []
    for row in d.added:
        lines.append(f"added    {row['page']} {row['key']}: {row['text']}")
    for row in d.removed:
        lines.append(f"removed  {row['page']} {row['key']}: {row['text']}")
    for c in d.changed:
        what = f"{c.old['text']} -> {c.new['text']} ({change_percent(c.relative)})"
        if c.old["derivation"] != c.new["derivation"]:
            what += f"; derivation {c.old['derivation']!r} -> {c.new['derivation']!r}"
        lines.append(f"changed  {c.page} {c.key}: {what}")
    for c in d.versions:
        old_v, new_v = (str(p).rsplit("/", 1)[-1].removesuffix(".md") for p in (c.old["page"], c.page))
        what = f"{c.old['text']} -> {c.new['text']} ({change_percent(c.relative)})"
        lines.append(f"version  {c.page} {c.key}: {old_v} -> {new_v}: {what}")
    lines.append(f"{len(d.added)} added, {len(d.removed)} removed, {len(d.changed)} changed, {d.unchanged} unchanged")
    return lines
