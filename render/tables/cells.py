"""Table cells that show numbers, as ledger rows and as linked Markdown (issue 23: every shown number in the ledger).

A table builder (``render.tables.kinds``) may give each record ``_from``, the positions in the table's documents
of the evidence the record is derived from, and ``_rows``, for each of those positions the ``data.samples`` rows
it read; a record without ``_from`` is derived from every document (a share of the whole, say), so its cells link
to all of them. A cell lands on its record's rows with the samples field its column reads (``Column.source``) named,
so the landing scrolls that column into view; ``_at`` (column key -> anchor) names, for a column read from elsewhere
on the evidence page (a ``data`` field such as the length histogram), where that is. A number the constants note
says once for every row lands on the rows of every record. ``Layout`` keeps the shown grid as plain data (tables
are kept between builds in a pickle, so nothing callable); a page turns it into linked Markdown and ledger rows with
its own path and the evidence ids its aliases name, as ``Quantity.markdown`` and ``Quantity.ledger_row`` do for a
page function's number.

A cell's row holds the number as the cell shows it: ``value`` in the column's shown unit (ms, GiB, tokens/s; a
percent column's value is the fraction), ``unit`` that unit, ``text`` the cell's text, and ``label`` the header.
Its key is the table's key, the row's key (the columns that name the row, ``ROW_KEYS``) and the column's key.

A record's ``_ci`` (column key -> (low, high) in the column's raw unit) gives a cell its 95% interval, drawn by the
derivation the builder called; a cell without one states why in its ``basis``: the record's ``_basis`` entry for the
column where this row's reason differs from its column's (too few windows, a rate no kept windows back), else the
column's ``Column.basis`` (issue 23).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from render.derive import basis
from render.derive.reading import significant
from render.numbers.links import landing_fields, number_links, rows_anchor, short_id, title_text, with_column
from render.numbers.units import is_timed_unit

ROW_KEYS: dict[str, tuple[str, ...]] = {
    "step-scaling": ("mode", "batch", "tokens"),
    "batch-sweep": ("model", "context", "batch"),
    "loss-memory": ("arm", "microbatch"),
    "gemm": ("shape",),
    "kernels": ("kernel",),
    "kernel-shares": ("category",),
    "padding": ("batching", "bucket_size"),
    "padding-lengths": ("from_tokens",),
    "mask": ("preset", "kind"),
}
"""Per table kind, the record fields that name a row (those a record has, in order); a kind not named here keys
its rows by position (``row 3``)."""

EVERY_ROW = "every row"
"""The row key of a number the constants note above a table says once for every row."""


@dataclass(frozen=True)
class Cell:
    """One shown number of a table."""

    row: int
    """The record's position; -1 for a number of the constants note above the table."""
    col: int
    """The cell's column in the shown grid (for the note: its position among the note's parts)."""
    column: str
    """The column's key (``median_step_s``)."""
    label: str
    """The column's header, as the reader sees it (``median step (ms)``)."""
    row_key: str
    """What names the row: ``mode=eager, batch=8, tokens=512``."""
    value: float | None
    """The number in ``unit``, as shown; None for a cell of several numbers (``unstable batches: 16 32``)."""
    unit: str
    text: str
    sources: tuple[int, ...]
    """Positions, in the table's documents, of the evidence the number is derived from."""
    anchors: tuple[str, ...]
    """Per source, where its rows are on its evidence page (``render.numbers.links.rows_anchor``)."""
    uncertainty: tuple[float, float] | None = None
    """The number's 95% interval in ``unit``, as shown (the record's ``_ci`` for the column, scaled)."""
    basis: str = ""
    """What its ledger row says of its uncertainty (``render.derive.basis``): ``interval`` with one, else the
    column's ``basis``."""


@dataclass(frozen=True)
class Layout:
    """A rendered table as plain data: what a page needs to link its numbers and write their ledger rows."""

    kind: str
    note: tuple[tuple[str, str], ...]
    """(header, text) of each column the note above the table says once."""
    head: str
    """The header and rule lines of the pipe table."""
    grid: tuple[tuple[str, ...], ...]
    """Each row's cells, escaped Markdown."""
    cells: tuple[Cell, ...]


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def row_key(kind: str, record: dict[str, Any], position: int) -> str:
    """``mode=eager, batch=8, tokens=512`` from the record's naming fields; ``row N`` when it has none."""
    named = [(k, record[k]) for k in ROW_KEYS.get(kind, ()) if record.get(k) is not None]
    return ", ".join(f"{k}={v}" for k, v in named) if named else f"row {position + 1}"


def provenance(record: dict[str, Any], n_docs: int, column: Any = None) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """(source positions, their anchors) of one record's cell in ``column``: its ``_from``, or every document; each
    source's anchor the column's ``_at`` entry, else its ``_rows`` with the column's samples field, else "" (the
    whole samples table)."""
    sources = tuple(sorted(set(record.get("_from", range(n_docs)))))
    key, field = (column.key, column.source) if column is not None else ("", "")
    at = (record.get("_at") or {}).get(key)
    if at:
        return sources, (at,) * len(sources)
    rows = record.get("_rows") or {}
    return sources, tuple(with_column(rows_anchor(rows[s]), field) if s in rows else "" for s in sources)


def merged(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The provenance of a number every record shares (the constants note's): every record's documents, and of
    each document the rows of every record that read it; a document some record reads whole (no rows) is whole
    here too, and an ``_at`` stays where every record names the same place. No ``_from`` on a record is every
    document, so the merge is too."""
    if not records or any("_from" not in r for r in records):
        return {}
    sources = sorted({s for r in records for s in r["_from"]})
    rows: dict[int, list[int]] = {}
    for s in sources:
        reading = [r for r in records if s in r["_from"]]
        if all(s in (r.get("_rows") or {}) for r in reading):
            rows[s] = sorted({i for r in reading for i in r["_rows"][s]})
    first = records[0].get("_at") or {}
    at = {k: a for k, a in first.items() if all((r.get("_at") or {}).get(k) == a for r in records)}
    return {"_from": tuple(sources), "_rows": rows, **({"_at": at} if at else {})}


def origin(pairs: Any) -> dict[str, Any]:
    """A record's provenance fields from the (document position, samples row) pairs it read; a row of None
    names the document alone (its number is not read from its samples rows)."""
    rows: dict[int, list[int]] = {}
    for doc, row in pairs:
        rows.setdefault(doc, [])
        if row is not None:
            rows[doc].append(row)
    return {"_from": tuple(sorted(rows)), "_rows": {d: r for d, r in rows.items() if r}}


def public(record: dict[str, Any]) -> dict[str, Any]:
    """The record without its provenance and uncertainty fields (``_from``, ``_rows``, ``_at``, ``_ci``,
    ``_basis``): what the JSON download holds."""
    return {k: v for k, v in record.items() if not k.startswith("_")}


def uncertainty_of(column: Any, record: dict[str, Any]) -> tuple[tuple[float, float] | None, str]:
    """(the cell's 95% interval in its shown unit, its basis) for ``column`` of ``record``: the record's ``_ci``
    entry for the column (raw unit, like the column's value), else no interval and the record's ``_basis`` entry
    for the column (why this row has none: too few windows, say), else the column's basis."""
    ci = (record.get("_ci") or {}).get(column.key)
    if ci is not None and all(is_number(v) for v in ci):
        low, high = sorted((ci[0] * column.scale, ci[1] * column.scale))
        return (low, high), basis.INTERVAL
    return None, basis.check((record.get("_basis") or {}).get(column.key, column.basis))


def cell_of(column: Any, value: Any, text: str) -> tuple[float | None, bool]:
    """(the shown value, whether the cell shows a number) for one cell of ``column``."""
    if value is None:
        return None, False
    if column.numeric and is_number(value):
        return value * column.scale, True
    if any(ch.isdigit() for ch in text) and column.counts:  # several numbers in one cell: "16 32"
        return None, True
    return None, False


def layout(
    kind: str,
    shown: list[Any],
    constant: list[tuple[Any, str]],
    records: list[dict[str, Any]],
    head: str,
    grid: list[list[str]],
    texts: list[list[str]],
    n_docs: int,
) -> Layout:
    """The table's ``Layout``: ``grid`` its escaped cells, ``texts`` the same cells' plain text, row by row."""
    cells: list[Cell] = []
    every = merged(records)
    for j, (column, text) in enumerate(constant):
        value = records[0].get(column.key) if records else None
        number, shows = cell_of(column, value, text)
        if shows:
            sources, anchors = provenance(every, n_docs, column)
            ci, said = uncertainty_of(column, records[0])
            cells.append(
                Cell(-1, j, column.key, column.header, EVERY_ROW, number, column.unit, text, sources, anchors, ci, said)
            )
    for i, record in enumerate(records):
        key = row_key(kind, record, i)
        for j, column in enumerate(shown):
            number, shows = cell_of(column, record.get(column.key), texts[i][j])
            if shows:
                sources, anchors = provenance(record, n_docs, column)
                ci, said = uncertainty_of(column, record)
                cells.append(
                    Cell(
                        i,
                        j,
                        column.key,
                        column.header,
                        key,
                        number,
                        column.unit,
                        texts[i][j],
                        sources,
                        anchors,
                        ci,
                        said,
                    )
                )
    return Layout(kind, tuple((c.header, t) for c, t in constant), head, tuple(map(tuple, grid)), tuple(cells))


def _derivation(table_key: str, cell: Cell) -> str:
    return f"{table_key}: {cell.label}, {cell.row_key}"


def _title(table_key: str, cell: Cell, ids: tuple[str, ...]) -> str:
    # a table cell's link title may not hold "|": it would end the cell
    parts = [_derivation(table_key, cell)]
    if cell.uncertainty is not None:
        # a table's cells show the interval of the run's own windows; the prose number of the same figure shows
        # where a new session lands (render.evidence.series.across): the title names which one this is
        named = "95% interval of the windows of this run" if is_timed_unit(cell.unit) else "95% interval"
        parts.append(f"{named} {_interval_text(cell, *cell.uncertainty)}")
    elif cell.basis and cell.basis != basis.EXACT:
        parts.append(f"no interval: {basis.BASES[cell.basis]}")
    if ids:
        more = f" (+{len(ids) - 1} more)" if len(ids) > 1 else ""
        parts.append(f"evidence {short_id(ids[0])}{more}")
    return title_text("; ".join(parts)).replace("|", "/")


def _interval_text(cell: Cell, low: float, high: float) -> str:
    """``low–high unit`` of a cell's interval; a fraction the cell shows as a percent (``+14.9%``) says its
    interval in percent too, not as the fraction its ledger row holds."""
    if not cell.unit and cell.text.endswith("%"):
        return f"{significant(low * 100)}%–{significant(high * 100)}%"
    return f"{significant(low)}–{significant(high)} {cell.unit}".rstrip()


def _ids(cell: Cell, ids: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(ids[s] for s in cell.sources if s < len(ids))


def page_markdown(lay: Layout, page: str, table_key: str, ids: tuple[str, ...], escape: Any) -> str:
    """The table's Markdown on ``page``: each number a link to the evidence it is derived from (all of it)."""
    linked = {(c.row, c.col): c for c in lay.cells}
    keys = {(c.row, c.col): key for c, key in zip(lay.cells, _keys(lay, table_key), strict=True)}

    def shown(cell: Cell, text: str) -> str:
        evidence = _ids(cell, ids)
        title = _title(table_key, cell, evidence)
        return number_links(page, text, title, evidence, cell.anchors, (page, keys[(cell.row, cell.col)]))

    out = ""
    if lay.note:
        parts = []
        for j, (header, text) in enumerate(lay.note):
            cell = linked.get((-1, j))
            parts.append(f"{escape(header)}: {shown(cell, escape(text)) if cell else escape(text)}")
        out = escape("In every row —") + " " + "; ".join(parts) + ".\n\n"
    lines = [lay.head]
    for i, row in enumerate(lay.grid):
        cells = [shown(linked[(i, j)], text) if (i, j) in linked else text for j, text in enumerate(row)]
        lines.append("| " + " | ".join(cells) + " |")
    return out + "\n".join(lines) + "\n"


def ledger_rows(lay: Layout, page: str, table_key: str, ids: tuple[str, ...]) -> list[dict[str, Any]]:
    """One ledger row per number the table shows on ``page``, keyed ``TABLE[ROW].COLUMN``."""
    rows = []
    for cell, key in zip(lay.cells, _keys(lay, table_key), strict=True):
        rows.append(
            {
                "page": page,
                "key": key,
                "label": cell.label,
                "value": cell.value,
                "unit": cell.unit,
                "text": cell.text,
                "uncertainty": None if cell.uncertainty is None or cell.value is None else list(cell.uncertainty),
                "evidence": list(_ids(cell, ids)),
                "derivation": _derivation(table_key, cell),
                **({"basis": cell.basis} if cell.basis else {}),
                **landing_fields(cell.text, cell.text, cell.anchors, _ids(cell, ids)),
            }
        )
    return rows


def _keys(lay: Layout, table_key: str) -> list[str]:
    """Each cell's ledger key, ``TABLE[ROW].COLUMN``, in the order of ``lay.cells``; the link of a number names it
    too (``render.numbers.links.entry_anchor``)."""
    out, seen = [], set()
    for cell in lay.cells:
        key, n = f"{table_key}[{cell.row_key}].{cell.column}", 1
        while key in seen:  # two rows named alike (a configuration measured twice): numbered, as a page's repeats
            n += 1
            key = f"{table_key}[{cell.row_key}].{cell.column}#{n}"
        seen.add(key)
        out.append(key)
    return out
