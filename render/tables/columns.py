"""Table columns and formatters: a ``Column`` says a header, a unit and how a cell reads; Markdown and CSV writers.

The kinds that build rows from evidence are in ``render.tables.kinds``. ``samples_frame``/``samples_csv``
give an evidence document's raw ``data.samples`` rows for its evidence page. Every derived number comes
from ``render.derive``; the unit conversions here only change how a number is shown.
"""

from __future__ import annotations

import csv
import html
import io
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from measure.errors import ProbebookError
from measure.evidence import contracts
from measure.evidence.envelope import canonical_bytes, digest
from render.derive import lossmem
from render.numbers.links import short_id
from render.numbers.quantity import percent
from render.numbers.reading import significant

if TYPE_CHECKING:
    import pandas as pd

GIB = 2**30
"""Bytes in a GiB (IEC binary unit), the unit memory peaks are shown in."""
NAME_WIDTH = 90
"""Longest cell text shown in Markdown (kernel names run to hundreds of characters); CSV/JSON keep it whole."""


@dataclass(frozen=True)
class TableOutput:
    """One rendered table."""

    markdown: str
    """A Markdown pipe table, numbers formatted, units in the headers, cell text HTML-escaped."""
    csv: str
    """The same rows, unformatted, as CSV with a header line."""
    json: str
    """The same rows, unformatted, as a JSON list of flat objects."""


@dataclass(frozen=True)
class Column:
    """One column of a derived table."""

    key: str
    """Field name in the CSV header and JSON objects (raw value, units in the name)."""
    header: str
    """Markdown header, with the displayed unit."""
    fmt: Callable[[Any], str]
    """Formats the raw value for Markdown (``None`` is handled before: shown as an em dash)."""
    numeric: bool = True
    """Right-aligned when numeric."""


# --- pure helpers (units in the names) --------------------------------------------------


def bytes_to_gib(n_bytes: float) -> float:
    """Bytes -> GiB (2**30 bytes)."""
    return n_bytes / GIB


def seconds_to_ms(seconds: float) -> float:
    """Seconds -> milliseconds."""
    return seconds * 1e3


# --- evidence access with one-line errors ---------------------------------------------

NUMBER = (int, float)
"""The types a numeric cell may hold (``isinstance`` checks of the table builders)."""


def doc_label(doc: dict[str, Any]) -> str:
    """A document's short id (``sha256:`` and 12 hex), for messages."""
    try:
        return short_id(digest(canonical_bytes(doc)))
    except ProbebookError:
        return "evidence"


def probe_of(doc: dict[str, Any]) -> Any:
    """The probe whose rows a document holds: a collected campaign (``campaign``) holds its points' probe's rows."""
    if doc.get("probe") == "campaign" and isinstance(doc.get("params"), dict):
        return doc["params"].get("probe")
    return doc.get("probe")


def evidence_rows(
    what: str, doc: Any, need: Mapping[str, tuple[type, ...]], probe: str | None = None, nullable: tuple[str, ...] = ()
) -> list[dict[str, Any]]:
    """``data.samples`` of ``doc`` with each row checked for the fields in ``need`` (name -> types).

    ``what`` names the caller in messages (``chart 'batch-sweep'``); ``probe``, when given, must match.
    """
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), dict):
        raise ProbebookError(f"{what}: expected evidence documents (dicts with 'data'), got {type(doc).__name__}")
    if probe is not None and probe_of(doc) != probe:
        raise ProbebookError(f"{what} needs {probe} evidence; {doc_label(doc)} is {doc.get('probe')!r} evidence")
    rows = doc["data"].get("samples")
    if not isinstance(rows, list) or not rows:
        raise ProbebookError(f"{what}: {doc_label(doc)} has no data.samples rows")
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise ProbebookError(f"{what}: {doc_label(doc)} data.samples[{i}] is not an object")
        for name, types in need.items():
            value = row.get(name)
            if value is None and name in nullable:
                continue
            if value is None or isinstance(value, bool) or not isinstance(value, types):
                raise ProbebookError(
                    f"{what}: {doc_label(doc)} data.samples[{i}].{name} "
                    f"must be {' or '.join(t.__name__ for t in types)}, got {value!r}"
                )
    return rows


# --- raw samples for evidence pages ---------------------------------------------------


def samples_columns(doc: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    """Column names and cell rows of ``data.samples``: the probe's known fields first, then the rest sorted."""
    data = doc.get("data") if isinstance(doc, dict) else None
    rows = data.get("samples") if isinstance(data, dict) else None
    if not isinstance(rows, list) or not rows:
        return [], []
    if not all(isinstance(r, dict) for r in rows):
        raise ProbebookError(f"{doc_label(doc)}: data.samples must be a list of objects")
    present = {key for row in rows for key in row}
    known = [c for c in contracts.column_order(doc.get("probe", "")) if c in present]  # the contract's order first
    columns = known + sorted(present - set(known))
    return columns, [[_cell(row.get(c)) for c in columns] for row in rows]


def samples_frame(doc: dict[str, Any]) -> pd.DataFrame:
    """The raw ``data.samples`` rows as text-faithful (object) columns, in ``samples_columns`` order."""
    import pandas as pd  # here: the CLI loads this module, and pandas costs it most of a second

    columns, cells = samples_columns(doc)
    return pd.DataFrame(cells, columns=columns, dtype=object) if columns else pd.DataFrame()


def samples_csv(doc: dict[str, Any]) -> str:
    """The raw samples as CSV (empty text when there are none); missing values are empty cells."""
    columns, cells = samples_columns(doc)
    return _csv_text(columns, cells) if columns else ""


def _csv_text(columns: list[str], cells: list[list[Any]]) -> str:
    # the csv module, not DataFrame.to_csv: the same text (repr of floats, empty for None, minimal
    # quoting) at a tenth of the time, which counts over a thousand evidence pages (bench/render.py)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([inert_cell(c) for c in columns])
    writer.writerows([inert_cell(v) for v in row] for row in cells)
    return out.getvalue()


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""What a spreadsheet reads as the start of a formula in a cell (OWASP, "CSV Injection")."""


def inert_cell(value: Any) -> Any:
    """A text cell that a spreadsheet would run as a formula (``=HYPERLINK(...)``, ``@SUM(...)``), with a leading
    ``'`` so it shows as the text it is (issue 25); numbers, including negative ones, are left as numbers."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def _cell(value: Any) -> Any:
    """A sample value for a CSV cell: JSON spelling for booleans and nested values, numbers and text as is."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return value


# --- the kinds -------------------------------------------------------------------------


def fmt_count(x: Any) -> str:
    """A whole number with thousands separators: ``12,345``."""
    return f"{int(x):,}"


def fmt_text(x: Any) -> str:
    """Any value as its text, unformatted."""
    return str(x)


def _flag(x: Any) -> str:
    """An unstable point's mark in a table (a stable one shows nothing)."""
    return "unstable" if x else ""


def fmt_ms(x: float) -> str:
    """Seconds shown as milliseconds to four significant figures."""
    return significant(seconds_to_ms(x), 4)


def fmt_gib(x: float) -> str:
    """Bytes shown as GiB with two decimals."""
    return f"{bytes_to_gib(x):.2f}"


COLUMNS: dict[str, Column] = {
    # text and counts shown under their own key
    **{
        k: Column(k, k, fmt_text, False)
        for k in ("mode", "model", "status", "arm", "shape", "kernel", "category", "batching")
    },
    **{
        k: Column(k, k, fmt_count)
        for k in ("batch", "tokens", "context", "microbatch", "windows", "m", "n", "k", "calls")
    },
    **{k: Column(k, k, fmt_count) for k in ("rows", "documents")},
    "tokens_per_step": Column("tokens_per_step", "tokens/step", fmt_count),
    "tok_s": Column("tok_s", "tokens/s", lambda x: significant(x, 3)),  # throughput to three figures, never six
    "peak_bytes": Column("peak_bytes", "peak (GiB)", fmt_gib),
    "device_time_s": Column("device_time_s", "device time (ms)", fmt_ms),
    "share": Column("share", "share", percent),
    "unstable": Column("unstable", "CV over 5%", _flag, False),
}
"""Columns that several tables show alike, by key: one header and one format for each (a table's own stay in it)."""


def columns(*specs: str | Column) -> list[Column]:
    """A table's columns in order: text names shared columns of ``COLUMNS`` by key (several, space-separated);
    a ``Column`` is the table's own."""
    out: list[Column] = []
    for spec in specs:
        out += [COLUMNS[key] for key in spec.split()] if isinstance(spec, str) else [spec]
    return out


def picked_rows(cols: list[Column], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each evidence row cut to the table's column keys, with its point's CV-over-5% flag as ``unstable``."""
    return [{**{c.key: r.get(c.key) for c in cols}, "unstable": lossmem.unstable(r)} for r in rows]


def markdown_table(columns: list[Column], records: list[dict[str, Any]]) -> str:
    """A pipe table: formatted cells, HTML- and Markdown-escaped, missing values as an em dash."""
    head = "| " + " | ".join(_escape(c.header) for c in columns) + " |"
    rule = "|" + "|".join("---:" if c.numeric else ":---" for c in columns) + "|"
    lines = [head, rule]
    for rec in records:
        cells = []
        for c in columns:
            value = rec.get(c.key)
            text = "—" if value is None else c.fmt(value)
            if len(text) > NAME_WIDTH:
                text = text[: NAME_WIDTH - 1] + "…"
            cells.append(_escape(text))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


_MD_SPECIAL = str.maketrans({ch: "\\" + ch for ch in "\\`*_[]{}|"})


def _escape(text: str) -> str:
    """Cell text that Markdown shows literally: HTML-escaped, Markdown specials backslashed, one line."""
    return html.escape(" ".join(text.split()), quote=True).translate(_MD_SPECIAL)


def table_csv(columns: list[Column], records: list[dict[str, Any]]) -> str:
    """The records as CSV text, one column per ``Column`` in order (the table's download)."""
    return _csv_text([c.key for c in columns], [[_cell(r.get(c.key)) for c in columns] for r in records])
