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
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from measure.errors import ProbebookError
from measure.evidence import contracts
from measure.evidence.envelope import canonical_bytes, digest
from render.derive import lossmem
from render.derive.basis import EXACT, OBSERVED, RECORDED
from render.derive.reading import significant
from render.numbers.links import short_id
from render.numbers.units import percent
from render.tables.cells import Layout

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
    layout: Layout | None = None
    """The shown cells as data, for a page to link its numbers and write their ledger rows (``render.tables.cells``)."""


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
    abbreviate: bool = False
    """Long names (kernels): shown as their shortest distinct abbreviation (``distinct_abbreviations``) among
    the column's names, the full name in the cell's ``title``."""
    unit: str = ""
    """The unit the cell shows its number in (``ms``, ``GiB``); its ledger row's unit. "" for a count or a fraction."""
    scale: float = 1.0
    """Shown value per raw value (1e3 for seconds shown in ms): a cell's ledger value is the number as shown."""
    counts: bool = False
    """A text column whose cells list numbers (``16 32``): each cell is a ledger row too, with its text only."""
    source: str = ""
    """The ``data.samples`` field the column's number is read or derived from (``step_s`` for a median step in ms):
    its links name that column, so the landing on the rows scrolls it into view (``render.numbers.links.with_column``);
    "" for a number read from no one field (a count of rows)."""
    basis: str = ""
    """Why the column's numbers show no interval when a record gives none (``_ci``): one of
    ``render.derive.basis.BASES`` (``exact`` for a batch or a count, ``observed`` for the fastest window)."""


# --- pure helpers (units in the names) --------------------------------------------------


def bytes_to_gib(n_bytes: float) -> float:
    """Bytes -> GiB (2**30 bytes)."""
    return n_bytes / GIB


def seconds_to_ms(seconds: float) -> float:
    """Seconds -> milliseconds."""
    return seconds * 1e3


@dataclass(frozen=True)
class Unit:
    """The unit a raw evidence field is shown in: its label and the factor from the field's own unit."""

    label: str
    """What headers and axis titles print: ``GiB``, ``ms``, ``tokens/s``."""
    per_raw: float
    """Shown value per raw value: ``1 / 2**30`` for bytes shown in GiB."""

    def of(self, raw: float) -> float:
        """``raw`` (in the field's own unit) in this unit."""
        return raw * self.per_raw


def unit_of(field: str) -> Unit:
    """The unit tables and charts show evidence field ``field`` in, read from its suffix (ARCHITECTURE.md §Evidence):
    ``tok_s`` tokens/s as stored, ``*_bytes`` GiB (a card's memory is tens of GiB), ``*_s`` ms (a step or kernel is
    milliseconds). One place decides it, so a chart's axis and a table's header say the same unit (issue 28)."""
    if field == "tok_s" or field.endswith("_tok_s"):
        return Unit("tokens/s", 1.0)
    if field.endswith("_bytes"):
        return Unit("GiB", 1 / GIB)
    if field.endswith("_s"):
        return Unit("ms", 1e3)
    raise ProbebookError(f"no display unit for field {field!r}: its name must end in _bytes, _s or tok_s")


_PRESET = re.compile(r"(\d+(?:\.\d+)?)([kmbt]?)", re.IGNORECASE)
_SCALE = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}


def preset_key(name: str) -> tuple[int, float, str]:
    """Sort key of a model preset by the size its name says: ``20m`` < ``90m`` < ``250m`` < ``1.3b`` (a name's
    first number and its k/m/b/t suffix); a name without a number sorts after every sized one, by its text."""
    found = _PRESET.search(str(name))
    if found is None:
        return (1, 0.0, str(name))
    return (0, float(found.group(1)) * _SCALE[found.group(2).lower()], str(name))


def preset_order(names: Any) -> list[str]:
    """The distinct preset names of ``names`` in the order of their size (``preset_key``): the one order of
    presets in a chart's legend, its small multiples and a table's rows."""
    return sorted({str(n) for n in names}, key=preset_key)


ELLIPSIS = "…"


def distinct_abbreviations(names: Any, width: int = 40) -> dict[str, str]:
    """Each distinct name of ``names`` -> a short form that no other name shares, for a table cell.

    A name splits into ``_``-separated tokens; its short form is the shortest run of its tokens that is a run
    of no other name's tokens (the earliest of the shortest), widened one token at a time, right then left,
    while it stays within ``width`` characters, with ``…`` where tokens were left out. A name within
    ``width`` is kept whole, and so is a name whose every run another name also holds (a name that is the
    start of a longer one); a single token over ``width`` is cut to it. If two short forms still came out
    alike, every name is kept whole.
    """
    distinct = sorted({str(n) for n in names})
    tokens = {n: n.split("_") for n in distinct}

    def runs(t: list[str]) -> set[tuple[str, ...]]:
        return {tuple(t[i:j]) for i in range(len(t)) for j in range(i + 1, len(t) + 1)}

    out: dict[str, str] = {}
    for name in distinct:
        t = tokens[name]
        if len(name) <= width:
            out[name] = name
            continue
        others: set[tuple[str, ...]] = set().union(*(runs(tokens[o]) for o in distinct if o != name))
        spans = sorted(
            ((j - i, i, j) for i in range(len(t)) for j in range(i + 1, len(t) + 1) if tuple(t[i:j]) not in others),
            key=lambda s: (s[0], s[1]),
        )
        if not spans:
            out[name] = name
            continue
        _, lo, hi = spans[0]

        def text(lo: int, hi: int, t: list[str] = t) -> str:
            return (ELLIPSIS if lo > 0 else "") + "_".join(t[lo:hi]) + (ELLIPSIS if hi < len(t) else "")

        while True:
            if hi < len(t) and len(text(lo, hi + 1)) <= width:
                hi += 1
            elif lo > 0 and len(text(lo - 1, hi)) <= width:
                lo -= 1
            else:
                break
        short = text(lo, hi)
        # a single token longer than ``width`` (a name with no ``_``) is cut, as a cell is
        out[name] = short if len(short) <= width or hi - lo > 1 else short[: max(1, width - 1)] + ELLIPSIS
    if len(set(out.values())) < len(out):
        return {n: n for n in distinct}
    return out


def constant_columns(cols: list[Column], records: list[dict[str, Any]]) -> list[tuple[Column, str]]:
    """The columns whose cell reads the same in every row, each with that text (``none`` for an empty cell or a
    missing value), in column order; a table of fewer than two rows has none. A page drops them from the table
    and says each once above it (issue 28: a constant column takes a narrow screen's room and says nothing)."""
    if len(records) < 2:
        return []
    out = []
    for c in cols:
        # an abbreviated name is said whole: above the table there is room for it
        texts = {
            c.fmt(r[c.key]) if c.abbreviate and r.get(c.key) is not None else cell_text(c, r.get(c.key))
            for r in records
        }
        if len(texts) == 1:
            text = texts.pop()
            out.append((c, text if text.strip() and text != MISSING else "none"))
    return out


MISSING = "—"
"""A missing value's cell."""


def cell_text(column: Column, value: Any) -> str:
    """A cell's text before escaping: the formatted value, ``MISSING`` for None, cut to ``NAME_WIDTH``."""
    text = MISSING if value is None else column.fmt(value)
    return text[: NAME_WIDTH - 1] + ELLIPSIS if len(text) > NAME_WIDTH else text


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
    """Seconds shown as milliseconds (``unit_of``: a ``_s`` field) to four significant figures."""
    return significant(unit_of("step_s").of(x), 4)


def fmt_gib(x: float) -> str:
    """Bytes shown as GiB (``unit_of``: a ``_bytes`` field) with two decimals."""
    return f"{unit_of('peak_bytes').of(x):.2f}"


def shown_in(field: str) -> dict[str, Any]:
    """A ``Column``'s ``unit``, ``scale`` and ``source`` for evidence field ``field`` (``unit_of``):
    ``**shown_in(f)``."""
    unit = unit_of(field)
    return {"unit": unit.label, "scale": unit.per_raw, "source": field}


COLUMNS: dict[str, Column] = {
    # text and counts shown under their own key
    **{k: Column(k, k, fmt_text, False) for k in ("mode", "model", "status", "arm", "shape", "category", "batching")},
    "kernel": Column("kernel", "kernel", fmt_text, False, abbreviate=True),
    # a count read from the samples field of its name (its links name that column); windows and documents are
    # counted rows, read from no one field; each is exact: a param the probe set or a count of its rows
    **{
        k: Column(k, k, fmt_count, source=k, basis=EXACT)
        for k in ("batch", "tokens", "context", "microbatch", "m", "n", "k", "calls", "rows")
    },
    **{k: Column(k, k, fmt_count, basis=EXACT) for k in ("windows", "documents")},
    "tokens_per_step": Column("tokens_per_step", "tokens/step", fmt_count, source="tokens_per_step", basis=EXACT),
    # three figures, never six; a row whose document keeps its timed windows gets their interval (``_ci``), one
    # that keeps only the rate (an imported row) shows it as recorded
    "tok_s": Column("tok_s", "tokens/s", lambda x: significant(x, 3), unit="tokens/s", source="tok_s", basis=RECORDED),
    # a peak is the allocator's high-water mark of one run, a reading, not an estimate from repeated windows
    "peak_bytes": Column(
        "peak_bytes", f"peak ({unit_of('peak_bytes').label})", fmt_gib, **shown_in("peak_bytes"), basis=OBSERVED
    ),
    # the profiler's kernel times of one profiled run, and their shares: readings of that run
    "device_time_s": Column(
        "device_time_s",
        f"device time ({unit_of('device_time_s').label})",
        fmt_ms,
        **shown_in("device_time_s"),
        basis=OBSERVED,
    ),
    "share": Column("share", "share", percent, basis=OBSERVED),
    # the CV the probe computed over the point's windows and stored with it: a description of their spread
    "cv": Column("cv", "CV of windows", percent, basis=RECORDED),
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
    """A pipe table: formatted cells, HTML- and Markdown-escaped, missing values as an em dash; a column that
    abbreviates shows each name's ``distinct_abbreviations`` form with the whole name in an ``abbr`` title."""
    head, grid, _ = markdown_grid(columns, records)
    return "\n".join([head, *("| " + " | ".join(cells) + " |" for cells in grid)]) + "\n"


def markdown_grid(columns: list[Column], records: list[dict[str, Any]]) -> tuple[str, list[list[str]], list[list[str]]]:
    """(the header and rule lines, each row's escaped cells, each row's cell text before escaping)."""
    head = "| " + " | ".join(escape(c.header) for c in columns) + " |"
    rule = "|" + "|".join("---:" if c.numeric else ":---" for c in columns) + "|"
    grid: list[list[str]] = []
    texts: list[list[str]] = []
    short = {
        c.key: distinct_abbreviations(c.fmt(r[c.key]) for r in records if r.get(c.key) is not None)
        for c in columns
        if c.abbreviate
    }
    for rec in records:
        cells, plain = [], []
        for c in columns:
            value = rec.get(c.key)
            if c.key in short and value is not None and short[c.key][c.fmt(value)] != c.fmt(value):
                full = " ".join(c.fmt(value).split())
                title = html.escape(full, quote=True).replace("|", "&#124;")
                cells.append(f'<abbr title="{title}">{escape(short[c.key][c.fmt(value)])}</abbr>')
            else:
                cells.append(escape(cell_text(c, value)))
            plain.append(" ".join(cell_text(c, value).split()))
        grid.append(cells)
        texts.append(plain)
    return head + "\n" + rule, grid, texts


def constants_note(constant: list[tuple[Column, str]]) -> str:
    """The line above a table that says its dropped constant columns once: ``In every row: mode fixed_tokens.``"""
    if not constant:
        return ""
    said = "; ".join(f"{c.header}: {text}" for c, text in constant)
    return escape(f"In every row — {said}.") + "\n\n"


_MD_SPECIAL = str.maketrans({ch: "\\" + ch for ch in "\\`*_[]{}|"})


def escape(text: str) -> str:
    """Cell text that Markdown shows literally: HTML-escaped, Markdown specials backslashed, one line."""
    return html.escape(" ".join(text.split()), quote=True).translate(_MD_SPECIAL)


def table_csv(columns: list[Column], records: list[dict[str, Any]]) -> str:
    """The records as CSV text, one column per ``Column`` in order (the table's download)."""
    return _csv_text([c.key for c in columns], [[_cell(r.get(c.key)) for c in columns] for r in records])
