"""Tables: evidence documents -> rows of derived numbers -> Markdown, CSV and JSON.

``render(kind, docs, **options)`` returns one ``TableOutput``: the Markdown a page shows
(numbers formatted with units in the headers, cell text HTML-escaped), and the same rows
unformatted as CSV and JSON downloads. ``samples_frame``/``samples_csv`` give an evidence
document's raw ``data.samples`` rows for its evidence page. Every derived number comes from
``render.derive``; the unit conversions here only change how a number is shown.
"""

from __future__ import annotations

import csv
import html
import io
import json
import math
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping

from measure.errors import ProbebookError
from measure.evidence import contracts
from measure.evidence.envelope import canonical_bytes, digest
from render.derive import batchsweep, kernels, lossmem
from render.derive.gemm import gemm_shapes
from render.derive.throughput import tokens_per_second
from render.numbers import reading as numbers
from render.numbers.quantity import percent, short_id

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


def significant(x: float, digits: int = 4) -> str:
    """``x`` to ``digits`` significant figures in fixed notation (no exponent); large values as grouped integers."""
    return numbers.significant(x, digits) if math.isfinite(x) else str(x)


# --- evidence access with one-line errors ---------------------------------------------

_NUM = (int, float)


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
    writer.writerow(columns)
    writer.writerows(cells)
    return out.getvalue()


def _cell(value: Any) -> Any:
    """A sample value for a CSV cell: JSON spelling for booleans and nested values, numbers and text as is."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return value


# --- the kinds -------------------------------------------------------------------------


def _int(x: Any) -> str:
    return f"{int(x):,}"


def _text(x: Any) -> str:
    return str(x)


def _flag(x: Any) -> str:
    """An unstable point's mark in a table (a stable one shows nothing)."""
    return "unstable" if x else ""


def _ms(x: float) -> str:
    return significant(seconds_to_ms(x))


def _gib(x: float) -> str:
    return f"{bytes_to_gib(x):.2f}"


COLUMNS: dict[str, Column] = {
    # text and counts shown under their own key
    **{
        k: Column(k, k, _text, False)
        for k in ("mode", "model", "status", "arm", "shape", "kernel", "category", "batching")
    },
    **{k: Column(k, k, _int) for k in ("batch", "tokens", "context", "microbatch", "windows", "m", "n", "k", "calls")},
    **{k: Column(k, k, _int) for k in ("rows", "documents")},
    "tokens_per_step": Column("tokens_per_step", "tokens/step", _int),
    "tok_s": Column("tok_s", "tokens/s", lambda x: significant(x, 3)),  # throughput to three figures, never six
    "peak_bytes": Column("peak_bytes", "peak (GiB)", _gib),
    "device_time_s": Column("device_time_s", "device time (ms)", _ms),
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


def _step_scaling(docs: list[dict[str, Any]]) -> tuple[list[Column], list[dict[str, Any]]]:
    """Step-time windows grouped by mode, batch and sequence length: median, fastest, slowest, tokens/s."""
    groups: dict[tuple[Any, ...], list[float]] = {}
    shaky: dict[tuple[Any, ...], bool] = {}  # the probe's per-point flag: windows' CV over 5%
    for doc in docs:
        for point in (doc.get("data") or {}).get("points") or []:
            if isinstance(point, dict) and "tokens" in point:
                key = (str(point.get("mode") or ""), point.get("batch"), point["tokens"])
                shaky[key] = shaky.get(key, False) or lossmem.unstable(point)
        for r in evidence_rows(
            "table 'step-scaling'",
            doc,
            {"tokens": _NUM, "step_s": _NUM, "batch": _NUM},
            "step-scaling",
            nullable=("batch", "step_s"),
        ):
            if r.get("step_s") is None:
                continue  # a failed window: counted nowhere, shown on the evidence page's raw table
            key = (str(r.get("mode") or ""), r.get("batch"), r["tokens"])
            groups.setdefault(key, []).append(r["step_s"])
    records = []
    for (mode, batch, tokens), times in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0, kv[0][2])):
        median = statistics.median(times)
        per_step = tokens * (batch if batch is not None else 1)
        records.append(
            {
                "mode": mode or None,
                "batch": batch,
                "tokens": tokens,
                "windows": len(times),
                "median_step_s": median,
                "min_step_s": min(times),
                "max_step_s": max(times),
                "tokens_per_step": per_step,
                "tok_s": tokens_per_second(per_step, median),
                "unstable": shaky.get((mode, batch, tokens), False),
            }
        )
    cols = columns(  # results right after the columns that name the point, so a narrow screen shows them
        "mode batch tokens tok_s",
        Column("median_step_s", "median step (ms)", _ms),
        Column("min_step_s", "fastest (ms)", _ms),
        Column("max_step_s", "slowest (ms)", _ms),
        "tokens_per_step windows unstable",
    )
    return cols, records


def _batch_sweep(docs: list[dict[str, Any]], view: str = "summary") -> tuple[list[Column], list[dict[str, Any]]]:
    """Per model and context: batches tried, the best throughput and its batch, the largest fit, the first OOM."""
    rows: list[dict[str, Any]] = []
    for doc in docs:
        need = {
            "model": (str,),
            "params": _NUM,
            "context": _NUM,
            "batch": _NUM,
            "status": (str,),
            "tok_s": _NUM,
            "peak_bytes": _NUM,
        }
        checked = evidence_rows("table 'batch-sweep'", doc, need, "batch-sweep", nullable=("tok_s", "peak_bytes"))
        for i, r in enumerate(checked):
            why = contracts.status_problem(r)
            if why is not None:
                raise ProbebookError(f"table 'batch-sweep': {doc_label(doc)} data.samples[{i}]: {why}")
            rows.append(r)
    if view == "rows":
        cols = columns("model context batch status tok_s peak_bytes unstable")
        return cols, picked_rows(cols, sorted(rows, key=lambda r: (r["model"], r["context"], r["batch"])))
    if view != "summary":
        raise ProbebookError(f"table 'batch-sweep': view must be summary or rows, got {view!r}")
    # the summary is derive's: "fits" means ran, below the first OOM, and no throughput collapse (ARCHITECTURE.md §8)
    peaks = {(r["model"], int(r["context"]), int(r["batch"])): r.get("peak_bytes") for r in rows}
    records = []
    for g in batchsweep.summarize(rows, device_bytes=lossmem.machine_bytes(docs)):
        group = [r for r in rows if r["model"] == g.model and int(r["context"]) == g.context]
        records.append(
            {
                "model": g.model,
                "params": g.params,
                "context": g.context,
                "batches_tried": len(group),
                "fastest_stable_batch": g.fastest_stable_batch,
                "fastest_tok_s": g.fastest_tok_s,
                "peak_bytes_at_fastest": (
                    peaks.get((g.model, g.context, g.fastest_stable_batch))
                    if g.fastest_stable_batch is not None
                    else None
                ),
                "largest_fitting_batch": g.largest_fitting_batch,
                "first_oom_batch": g.first_oom_batch,
                "unstable_batches": " ".join(str(b) for b in g.unstable_batches) or None,
                "spilled_batches": " ".join(str(b) for b in g.spilled_batches) or None,
            }
        )
    cols = columns(
        "model",
        "context",
        Column("fastest_tok_s", "tokens/s at fastest", lambda x: significant(x, 3)),
        Column("fastest_stable_batch", "fastest batch", _int),
        Column("peak_bytes_at_fastest", "peak at fastest (GiB)", _gib),
        Column("largest_fitting_batch", "largest fitting batch", _int),
        Column("first_oom_batch", "first OOM batch", _int),
        Column("batches_tried", "batches tried", _int),
        Column("params", "parameters", lambda x: numbers.general(x, 3)),
        Column("unstable_batches", "unstable batches (CV over 5%)", _text, False),
        Column("spilled_batches", "spilled batches", _text, False),
    )
    return cols, records


def _loss_memory(docs: list[dict[str, Any]]) -> tuple[list[Column], list[dict[str, Any]]]:
    """Peak memory and throughput per arm and microbatch."""
    rows = []
    for doc in docs:
        rows += evidence_rows(
            "table 'loss-memory'",
            doc,
            {"arm": (str,), "microbatch": _NUM, "tokens_per_step": _NUM, "peak_bytes": _NUM, "tok_s": _NUM},
            "loss-memory",
            nullable=("tok_s",),
        )
    arms = list(dict.fromkeys(r["arm"] for r in rows))
    ordered = sorted(rows, key=lambda r: (arms.index(r["arm"]), r["microbatch"]))
    cols = columns("arm microbatch peak_bytes tok_s tokens_per_step unstable")
    return cols, picked_rows(cols, ordered)


def _gemm(docs: list[dict[str, Any]]) -> tuple[list[Column], list[dict[str, Any]]]:
    """Per GEMM shape: windows, median time, TFLOP/s at the median and at the fastest window."""
    rows = [
        r
        for doc in docs
        for r in evidence_rows(
            "table 'gemm'", doc, {"shape": (str,), "m": (int,), "n": (int,), "k": (int,), "time_s": _NUM}, "gemm"
        )
    ]
    records = [
        {
            "shape": g.shape,
            "m": g.m,
            "n": g.n,
            "k": g.k,
            "windows": g.windows,
            "median_time_s": g.median_time_s,
            "median_tflop_s": g.median_tflop_s,
            "best_tflop_s": g.best_tflop_s,
        }
        for g in gemm_shapes(rows)
    ]
    tf = lambda x: significant(x, 3)  # noqa: E731 - a one-line formatter
    cols = columns(
        "shape",
        Column("median_tflop_s", "TFLOP/s at median", tf),
        Column("best_tflop_s", "best TFLOP/s", tf),
        Column("median_time_s", "median time (ms)", _ms),
        "m n k windows",
    )
    return cols, records


def _kernel_rows(what: str, doc: dict[str, Any]) -> list[dict[str, Any]]:
    return evidence_rows(what, doc, {"kernel": (str,), "category": (str,), "calls": (int,), "device_time_s": _NUM})


def _kernels(docs: list[dict[str, Any]], top: int = 10) -> tuple[list[Column], list[dict[str, Any]]]:
    """The ``top`` kernels by summed device time, with calls, time per call and share of all kernel time."""
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise ProbebookError(f"table 'kernels': top must be a whole number >= 1, got {top!r}")
    rows = kernels.counted_rows([r for doc in docs for r in _kernel_rows("table 'kernels'", doc)])
    shares = kernels.kernel_shares(rows)
    ranked = sorted(zip(rows, shares, strict=True), key=lambda rs: (-rs[0]["device_time_s"], rs[0]["kernel"]))[:top]
    records = [
        {
            "kernel": r["kernel"],
            "category": r["category"],
            "calls": r["calls"],
            "device_time_s": r["device_time_s"],
            "per_call_s": kernels.per_call_s(r["device_time_s"], r["calls"]),
            "share": share,
        }
        for r, share in ranked
    ]
    cols = columns(
        "kernel category share device_time_s calls",
        Column("per_call_s", "per call (µs)", lambda x: significant(x * 1e6)),
    )
    return cols, records


def _kernel_shares(docs: list[dict[str, Any]]) -> tuple[list[Column], list[dict[str, Any]]]:
    """Device kernel time and its share per category, summed over the documents' kernel rows."""
    rows = [r for doc in docs for r in _kernel_rows("table 'kernel-shares'", doc)]
    shares = kernels.category_shares(rows)
    times = kernels.category_time_s(rows)
    records = [
        {"category": cat, "device_time_s": times[cat], "share": shares.get(cat)}
        for cat in sorted(times, key=lambda c: (-times[c], c))
    ]
    cols = columns("category device_time_s share")
    return cols, records


KINDS: dict[str, tuple[Callable[..., tuple[list[Column], list[dict[str, Any]]]], tuple[str, ...]]] = {
    "step-scaling": (_step_scaling, ()),
    "batch-sweep": (_batch_sweep, ("view",)),
    "loss-memory": (_loss_memory, ()),
    "gemm": (_gemm, ()),
    "kernels": (_kernels, ("top",)),
    "kernel-shares": (_kernel_shares, ()),
}
"""Table kind -> (builder, the options it accepts)."""

from render.tables.pipeline import PIPELINE_TABLES  # noqa: E402  (its builders use Column, defined above)

KINDS.update(PIPELINE_TABLES)


def render(kind: str, docs: list[dict[str, Any]], **options: Any) -> TableOutput:
    """Build table ``kind`` from evidence documents ``docs``; every input error is a ProbebookError."""
    if kind not in KINDS:
        raise ProbebookError(f"unknown table kind {kind!r}; the kinds are {', '.join(sorted(KINDS))}")
    builder, accepted = KINDS[kind]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise ProbebookError(
            f"table {kind!r} has no option {unknown[0]!r}"
            + (f"; it accepts {', '.join(accepted)}" if accepted else "; it takes none")
        )
    if isinstance(docs, dict) or not isinstance(docs, (list, tuple)) or not docs:
        raise ProbebookError(f"table {kind!r} needs a non-empty list of evidence documents")
    columns, records = builder(list(docs), **options)
    return TableOutput(
        markdown=markdown_table(columns, records),
        csv=_csv(columns, records),
        json=json.dumps(records, indent=2, ensure_ascii=False, allow_nan=False) + "\n",
    )


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


def _csv(columns: list[Column], records: list[dict[str, Any]]) -> str:
    return _csv_text([c.key for c in columns], [[_cell(r.get(c.key)) for c in columns] for r in records])
