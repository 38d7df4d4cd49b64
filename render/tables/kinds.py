"""Table kinds: a builder per kind turns evidence documents into columns and rows; ``render`` dispatches.

``render(kind, docs, **options)`` returns one ``TableOutput``: the Markdown a page shows and the same
rows unformatted as CSV and JSON downloads. The columns, formatters and writers are in
``render.tables.columns``; the pipeline study's kinds in ``render.tables.pipeline``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

from measure.errors import ProbebookError
from measure.evidence import contracts
from measure.evidence.contracts import tokens_per_second
from render.derive import basis, batchsweep, kernels, lossmem, reading, windows
from render.derive.gemm import gemm_shape_intervals, gemm_shapes
from render.derive.reading import significant
from render.tables import cells
from render.tables.cells import origin
from render.tables.columns import (
    COLUMNS,
    NUMBER,
    Column,
    TableOutput,
    columns,
    constant_columns,
    constants_note,
    doc_label,
    evidence_rows,
    fmt_count,
    fmt_gib,
    fmt_ms,
    fmt_text,
    markdown_grid,
    markdown_table,
    picked_rows,
    preset_key,
    shown_in,
    table_csv,
    unit_of,
)
from render.tables.pipeline import PIPELINE_TABLES


def _step_scaling(docs: list[dict[str, Any]]) -> tuple[list[Column], list[dict[str, Any]]]:
    """Step-time windows grouped by mode, batch and sequence length: median, fastest, slowest, tokens/s."""
    groups: dict[tuple[Any, ...], list[float]] = {}
    shaky: dict[tuple[Any, ...], bool] = {}  # the probe's per-point flag: windows' CV over 5%
    spread: dict[tuple[Any, ...], float] = {}
    read: dict[tuple[Any, ...], list[tuple[int, int]]] = {}  # (document, samples row) pairs of each point
    for d, doc in enumerate(docs):
        for point in (doc.get("data") or {}).get("points") or []:
            if isinstance(point, dict) and "tokens" in point:
                key = (str(point.get("mode") or ""), point.get("batch"), point["tokens"])
                shaky[key] = shaky.get(key, False) or lossmem.unstable(point)
                if isinstance(point.get("cv"), (int, float)) and not isinstance(point.get("cv"), bool):
                    spread[key] = point["cv"]  # the probe's CV of the point's windows
        for i, r in enumerate(
            evidence_rows(
                "table 'step-scaling'",
                doc,
                {"tokens": NUMBER, "step_s": NUMBER, "batch": NUMBER},
                "step-scaling",
                nullable=("batch", "step_s"),
            )
        ):
            if r.get("step_s") is None:
                continue  # a failed window: counted nowhere, shown on the evidence page's raw table
            key = (str(r.get("mode") or ""), r.get("batch"), r["tokens"])
            groups.setdefault(key, []).append(r["step_s"])
            read.setdefault(key, []).append((d, i))
    records = []
    for (mode, batch, tokens), times in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0, kv[0][2])):
        w = windows.timed_windows(times)
        per_step = tokens * (batch if batch is not None else 1)
        records.append(
            {
                "mode": mode or None,
                "batch": batch,
                "tokens": tokens,
                "windows": w.count,
                "median_step_s": w.median_s,
                "min_step_s": w.fastest_s,
                "max_step_s": w.slowest_s,
                "tokens_per_step": per_step,
                "tok_s": tokens_per_second(per_step, w.median_s),
                "unstable": shaky.get((mode, batch, tokens), False),
                "cv": spread.get((mode, batch, tokens)),
                **origin(read[(mode, batch, tokens)]),
                # the median and the rate at it carry the interval of the windows (fewer than 3: the columns say)
                "_ci": {"median_step_s": w.median_ci_s, "tok_s": windows.rate_interval(per_step, w.median_ci_s)},
            }
        )
    if not spread:  # no probe points (imported rows): no CV column, in the page or the downloads
        for record in records:
            del record["cv"]
    # tokens/s and tokens/step are derived from the step times and the tokens the rows name: their links say so
    # (the rate is read from these windows, always kept: with none to resample there are fewer than 3)
    tok_s = dataclasses.replace(COLUMNS["tok_s"], source="step_s", basis=basis.FEW)
    per_step = dataclasses.replace(COLUMNS["tokens_per_step"], source="tokens")
    cols = columns(  # results right after the columns that name the point, so a narrow screen shows them
        "mode batch tokens",
        tok_s,
        Column("median_step_s", "median step (ms)", fmt_ms, **shown_in("step_s"), basis=basis.FEW),
        Column("min_step_s", "fastest (ms)", fmt_ms, **shown_in("step_s"), basis=basis.OBSERVED),
        Column("max_step_s", "slowest (ms)", fmt_ms, **shown_in("step_s"), basis=basis.OBSERVED),
        per_step,
        "windows",
        *(["cv"] if spread else []),  # the probe's per-point CV, where its evidence has points
        "unstable",
    )
    return cols, records


def _batch_sweep(docs: list[dict[str, Any]], view: str = "summary") -> tuple[list[Column], list[dict[str, Any]]]:
    """Per model and context: batches tried, the best throughput and its batch, the largest fit, the first OOM."""
    rows: list[dict[str, Any]] = []
    where: list[tuple[int, int]] = []  # each row's (document, samples row)
    timed = [(doc.get("data") or {}).get("windows") or [] for doc in docs]  # each document's timed windows
    for d, doc in enumerate(docs):
        need = {
            "model": (str,),
            "params": NUMBER,
            "context": NUMBER,
            "batch": NUMBER,
            "status": (str,),
            "tok_s": NUMBER,
            "peak_bytes": NUMBER,
        }
        checked = evidence_rows("table 'batch-sweep'", doc, need, "batch-sweep", nullable=("tok_s", "peak_bytes"))
        for i, r in enumerate(checked):
            why = contracts.status_problem(r)
            if why is not None:
                raise ProbebookError(f"table 'batch-sweep': {doc_label(doc)} data.samples[{i}]: {why}")
            rows.append(r)
            where.append((d, i))
    if view == "rows":
        cols = columns("model context batch status tok_s peak_bytes unstable")
        order = sorted(
            range(len(rows)), key=lambda n: (preset_key(rows[n]["model"]), rows[n]["context"], rows[n]["batch"])
        )
        picked = picked_rows(cols, [rows[n] for n in order])
        return cols, [
            {**p, **origin([where[n]]), **_rate_uncertainty(rows[n], timed[where[n][0]], batchsweep.tok_s_interval)}
            for p, n in zip(picked, order, strict=True)
        ]
    if view != "summary":
        raise ProbebookError(f"table 'batch-sweep': view must be summary or rows, got {view!r}")
    # the summary is derive's: "fits" means ran, below the first OOM, and no throughput collapse
    # (ARCHITECTURE.md §Lessons)
    peaks = {(r["model"], int(r["context"]), int(r["batch"])): r.get("peak_bytes") for r in rows}
    records = []
    for g in batchsweep.summarize(rows, device_bytes=lossmem.machine_bytes(docs)):
        members = [n for n, r in enumerate(rows) if r["model"] == g.model and int(r["context"]) == g.context]
        group = [rows[n] for n in members]
        # the rate at the fastest batch is its row's (one ok row there): that row's windows give its interval
        at = [n for n in members if rows[n]["status"] == "ok" and rows[n]["batch"] == g.fastest_stable_batch]
        rate: dict[str, Any] = {}
        if len(at) == 1 and rows[at[0]]["tok_s"] == g.fastest_tok_s:
            rate = _rate_uncertainty(rows[at[0]], timed[where[at[0]][0]], batchsweep.tok_s_interval)
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
                **origin(where[n] for n in members),
                **{k: {f"fastest_{c}": v for c, v in d.items()} for k, d in rate.items()},  # under this column
            }
        )
    cols = columns(
        "model",
        "context",
        # a rate several rows at one batch share (their median) is shown as they recorded it
        Column(
            "fastest_tok_s",
            "tokens/s at fastest",
            lambda x: significant(x, 3),
            **shown_in("tok_s"),
            basis=basis.RECORDED,
        ),
        # batches are params the sweep set; which one is fastest or fits is a verdict on them, not an estimate
        Column("fastest_stable_batch", "fastest batch", fmt_count, source="batch", basis=basis.EXACT),
        Column(
            "peak_bytes_at_fastest",
            f"peak at fastest ({unit_of('peak_bytes').label})",
            fmt_gib,
            **shown_in("peak_bytes"),
            basis=basis.OBSERVED,
        ),
        Column("largest_fitting_batch", "largest fitting batch", fmt_count, source="batch", basis=basis.EXACT),
        Column("first_oom_batch", "first OOM batch", fmt_count, source="batch", basis=basis.EXACT),
        Column("batches_tried", "batches tried", fmt_count, basis=basis.EXACT),
        Column("params", "parameters", lambda x: reading.general(x, 3), source="params", basis=basis.EXACT),
        Column(
            "unstable_batches",
            "unstable batches (CV over 5%)",
            fmt_text,
            False,
            counts=True,
            source="batch",
            basis=basis.EXACT,
        ),
        Column("spilled_batches", "spilled batches", fmt_text, False, counts=True, source="batch", basis=basis.EXACT),
    )
    return cols, records


def _rate_uncertainty(
    row: dict[str, Any], timed: list[Any], interval: Callable[[dict[str, Any], list[Any]], Any]
) -> dict[str, Any]:
    """A record's ``_ci`` or ``_basis`` for the ``tok_s`` of one probe row: ``interval`` (the probe's derivation)
    of the row and its document's timed windows; without one, fewer than 3 windows where the row counts so few,
    else the rate as the row recorded it (its document keeps no windows of it)."""
    ci = interval(row, timed)
    if ci is not None:
        return {"_ci": {"tok_s": ci}}
    count = row.get("windows")
    few = isinstance(count, int) and not isinstance(count, bool) and windows.too_few(count)
    return {"_basis": {"tok_s": basis.FEW if few else basis.RECORDED}}


def _loss_memory(docs: list[dict[str, Any]]) -> tuple[list[Column], list[dict[str, Any]]]:
    """Peak memory and throughput per arm and microbatch."""
    rows = []
    for d, doc in enumerate(docs):
        checked = evidence_rows(
            "table 'loss-memory'",
            doc,
            {"arm": (str,), "microbatch": NUMBER, "tokens_per_step": NUMBER, "peak_bytes": NUMBER, "tok_s": NUMBER},
            "loss-memory",
            nullable=("tok_s",),
        )
        timed = doc["data"].get("windows") or []
        rows += [
            (r, {**origin([(d, i)]), **_rate_uncertainty(r, timed, lossmem.tok_s_interval)})
            for i, r in enumerate(checked)
        ]
    arms = list(dict.fromkeys(r["arm"] for r, _ in rows))
    ordered = sorted(rows, key=lambda ro: (arms.index(ro[0]["arm"]), ro[0]["microbatch"]))
    shown = [
        {**r, "tokens_per_step": lossmem.step_tokens(int(r["microbatch"]), int(r["tokens_per_step"]))}
        for r, _ in ordered
    ]
    cols = columns("arm microbatch peak_bytes tok_s tokens_per_step unstable")
    return cols, [{**p, **o} for p, (_, o) in zip(picked_rows(cols, shown), ordered, strict=True)]


def _gemm(docs: list[dict[str, Any]]) -> tuple[list[Column], list[dict[str, Any]]]:
    """Per GEMM shape: windows, median time, TFLOP/s at the median and at the fastest window."""
    rows, where = [], []
    for d, doc in enumerate(docs):
        need = {"shape": (str,), "m": (int,), "n": (int,), "k": (int,), "time_s": NUMBER}
        for i, r in enumerate(evidence_rows("table 'gemm'", doc, need, "gemm")):
            rows.append(r)
            where.append((d, i))
    spans = gemm_shape_intervals(rows)
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
            **origin(
                where[n] for n, r in enumerate(rows) if (r["shape"], r["m"], r["n"], r["k"]) == (g.shape, g.m, g.n, g.k)
            ),
            "_ci": dict(zip(("median_time_s", "median_tflop_s"), spans[(g.shape, g.m, g.n, g.k)], strict=True)),
        }
        for g in gemm_shapes(rows)
    ]
    tf = lambda x: significant(x, 3)  # noqa: E731 - a one-line formatter
    cols = columns(
        "shape",
        # TFLOP/s are 2·m·n·k over the window times: their links name the times' column; the median's interval is
        # its windows' (fewer than 3: none), the best window is a reading
        Column("median_tflop_s", "TFLOP/s at median", tf, unit="TFLOP/s", source="time_s", basis=basis.FEW),
        Column("best_tflop_s", "best TFLOP/s", tf, unit="TFLOP/s", source="time_s", basis=basis.OBSERVED),
        Column("median_time_s", "median time (ms)", fmt_ms, **shown_in("time_s"), basis=basis.FEW),
        "m n k windows",
    )
    return cols, records


def _kernel_rows(what: str, doc: dict[str, Any]) -> list[dict[str, Any]]:
    return evidence_rows(what, doc, {"kernel": (str,), "category": (str,), "calls": (int,), "device_time_s": NUMBER})


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
        # summed device time over calls, both read off one profiled run
        Column(
            "per_call_s", "per call (µs)", lambda x: significant(x * 1e6, 4), unit="µs", scale=1e6, basis=basis.OBSERVED
        ),
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


def _trace_diff(docs: list[dict[str, Any]], top: int = 10) -> tuple[list[Column], list[dict[str, Any]]]:
    """Two kernels profiles, ``a`` then ``b``: per category and for the ``top`` kernels that moved most, each side's
    device time per profiled step and the change (``render.derive.kernels.trace_diff``)."""
    if len(docs) != 2:
        raise ProbebookError(f"table 'trace-diff' compares two kernels profiles, got {len(docs)}")
    a, b = docs
    steps: list[Any] = [(doc.get("params") or {}).get("steps") for doc in docs]  # checked by the derivation
    records = kernels.trace_diff(
        _kernel_rows("table 'trace-diff'", a), steps[0], _kernel_rows("table 'trace-diff'", b), steps[1], top=top
    )
    ms: dict[str, Any] = {"unit": "ms", "scale": 1e3, "basis": basis.OBSERVED}
    cols = [
        COLUMNS["category"],
        COLUMNS["kernel"],
        Column("a_s", "a (ms/step)", fmt_ms, **ms),
        Column("b_s", "b (ms/step)", fmt_ms, **ms),
        Column("change_s", "change (ms/step)", fmt_ms, **ms),
        Column("change", "change", lambda x: f"{x:+.1%}".replace("-", "−"), basis=basis.OBSERVED),
    ]
    return cols, records


KINDS: dict[str, tuple[Callable[..., tuple[list[Column], list[dict[str, Any]]]], tuple[str, ...]]] = {
    "step-scaling": (_step_scaling, ()),
    "batch-sweep": (_batch_sweep, ("view",)),
    "loss-memory": (_loss_memory, ()),
    "gemm": (_gemm, ()),
    "kernels": (_kernels, ("top",)),
    "kernel-shares": (_kernel_shares, ()),
    "trace-diff": (_trace_diff, ("top",)),
}
"""Table kind -> (builder, the options it accepts)."""

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
    records, layout_of = [cells.public(r) for r in records], records
    # a column that reads the same in every row is said once above the table, not repeated down it;
    # the downloads keep every column
    constant = constant_columns(columns, records)
    shown = [c for c in columns if all(c is not k for k, _ in constant)]
    if not shown:  # rows alike in every column: the table itself says so
        constant, shown = [], columns
    head, grid, texts = markdown_grid(shown, records)
    return TableOutput(
        markdown=constants_note(constant) + markdown_table(shown, records),
        csv=table_csv(columns, records),
        json=json.dumps(records, indent=2, ensure_ascii=False, allow_nan=False) + "\n",
        layout=cells.layout(kind, shown, constant, layout_of, head, grid, texts, len(docs)),
    )
