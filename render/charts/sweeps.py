"""Chart kinds over a sweep of batch sizes: ``batch-sweep`` (throughput or peak memory against batch, one line
per context, the first out-of-memory batch marked) and ``loss-memory`` (peak memory against microbatch, one
line per loss arm). Registered in ``render.charts.draw.KINDS``; each builder checks its input and writes its alt
text, then returns a ``draw`` closure that alone imports altair
(ARCHITECTURE.md §Charts and tables, §A chart or a table).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from measure.errors import ProbebookError
from measure.evidence import contracts
from render.charts.marks import NUM, OOM, UNSTABLE, Draw, plain_number, points, sample_rows, timing, timing_marks
from render.charts.theme import LIGHT, PLOT_WIDTH_PX, TEXT_PX, ChartTheme, wrap_title
from render.derive import batchsweep, lossmem
from render.tables.columns import doc_label, preset_order, unit_of

if TYPE_CHECKING:
    import altair as alt

SWEEP_HEIGHT = 240
"""Height of a batch-sweep plot of one model in px; the OOM crosses sit just inside its top."""
PANEL_HEIGHT = 150
"""Height of each small multiple when a batch-sweep chart draws several models, px."""
OOM_ROW_PX = 12
"""How far apart, px, the crosses of two contexts that ran out of memory at the same batch are stacked."""

BATCH_SWEEP_Y = {"tok_s": ("throughput", "tokens/s"), "peak_bytes": ("peak memory", "peak")}
"""``y`` -> (what the axis shows, its tooltip); the unit is ``unit_of``'s, as the tables show it."""

CONTEXT_DASHES = ([1, 0], [7, 3], [2, 2], [10, 3, 2, 3], [4, 4], [1, 4])
"""Line styles of the contexts, in order: solid, dashed, dotted, dash-dot, then two more; each unlike the others
at a glance (no two dotted patterns), so a line is told by its style as well as by its colour."""


def oom_rows(bounds: list[tuple[str, int, int]]) -> list[dict[str, Any]]:
    """One cross per (model, context, first OOM batch); crosses of one model at one batch stacked ``OOM_ROW_PX``
    apart from the top of the plot, so two contexts out of memory at the same batch show two crosses."""
    seen: dict[tuple[str, int], int] = {}
    out = []
    for model, context, batch in bounds:
        k = seen.get((model, batch), 0)
        seen[(model, batch)] = k + 1
        out.append({"model": model, "context": context, "batch": batch, "timing": OOM, "row_px": 10 + k * OOM_ROW_PX})
    return out


def batch_sweep(
    docs: list[dict[str, Any]],
    *,
    theme: ChartTheme = LIGHT,
    model: str | None = None,
    title: str | None = None,
    y: str = "tok_s",
) -> tuple[str, Draw]:
    """Tokens/s (or, with ``y="peak_bytes"``, peak memory in GiB) against batch, one line per context, each
    first OOM batch a cross at that batch; several models are small multiples, one panel per model.

    Why small multiples and not one log axis: the presets' throughputs differ twentyfold (20m near 900k
    tokens/s, 500m near 80k), so on one linear axis the large models lie flat at zero, and a log axis would
    show the rise to saturation, the thing a batch sweep is read for, as a few pixels. Each throughput panel
    has its own scale; the memory panels share one in GiB, because every preset is read against the same card.
    """
    if y not in BATCH_SWEEP_Y:
        raise ProbebookError(f"chart 'batch-sweep': y must be one of {', '.join(BATCH_SWEEP_Y)}, got {y!r}")
    y_field = y
    rows: list[dict[str, Any]] = []
    for doc in docs:
        for r in sample_rows(
            "batch-sweep",
            doc,
            {"model": (str,), "params": NUM, "context": NUM, "batch": NUM, "status": (str,), "tok_s": NUM},
            "batch-sweep",
            nullable=("tok_s",),
        ):
            why = contracts.status_problem(r)
            if why is not None:
                raise ProbebookError(f"chart 'batch-sweep': {doc_label(doc)} {why}")
            rows.append(r)
    if model is not None:
        rows = [r for r in rows if r["model"] == model]
        if not rows:
            raise ProbebookError(f"chart 'batch-sweep': no rows for model {model!r}")
    unit = unit_of(y_field)
    # columns as lists: the text needs no DataFrame, so describing the chart does not import pandas
    columns: dict[str, list[Any]] = {
        "model": [r["model"] for r in rows],
        "context": [int(r["context"]) for r in rows],
        "batch": [int(r["batch"]) for r in rows],
        "status": [r["status"] for r in rows],
        "tok_s": [r["tok_s"] if r["status"] == "ok" else None for r in rows],
        "timing": timing([lossmem.unstable(r) for r in rows]),
        "peak_gib": [
            unit_of("peak_bytes").of(r["peak_bytes"])
            if r["status"] == "ok" and isinstance(r.get("peak_bytes"), NUM)
            else None
            for r in rows
        ],
    }
    value = "tok_s" if y_field == "tok_s" else "peak_gib"
    models = preset_order(columns["model"])
    contexts = sorted(set(columns["context"]))
    # the OOM boundary is derive's (the same first_oom_batch the tables and prose quote)
    bounds = oom_rows(
        [(g.model, g.context, g.first_oom_batch) for g in batchsweep.summarize(rows) if g.first_oom_batch is not None]
    )
    shaky = sum(1 for st, t in zip(columns["status"], columns["timing"], strict=True) if st == "ok" and t == UNSTABLE)
    heading = title or ("Throughput against batch" if y_field == "tok_s" else "Peak memory against batch")
    context_text = ", ".join(plain_number(c) for c in contexts)
    oom_text = (
        "; the first out-of-memory batch of each context is a cross at that batch, at the top of the plot"
        if bounds
        else "; no batch ran out of memory"
    )
    unstable_text = f"; {shaky} unstable points (CV over 5%) are hollow triangles" if shaky else ""
    scale_text = (
        "each with its own throughput scale" if y_field == "tok_s" else f"all on one memory scale in {unit.label}"
    )
    panels = f", one panel per model ({', '.join(models)}) {scale_text}," if len(models) > 1 else ""
    text = (
        f"{heading} for {', '.join(models)}: "
        f"{'tokens per second' if y_field == 'tok_s' else f'peak device memory in {unit.label}'} "
        f"against batch size (log scale){panels} "
        f"one line per context length ({context_text} tokens){oom_text}{unstable_text}."
    )

    def draw() -> alt.TopLevelMixin:
        import altair as alt
        import pandas as pd

        frame = pd.DataFrame(columns)
        oom = pd.DataFrame(bounds, columns=["model", "context", "batch", "timing", "row_px"])
        what, y_tip = BATCH_SWEEP_Y[y_field]
        dash = alt.StrokeDash(
            "context:O",
            title="context (tokens)",
            scale=alt.Scale(
                domain=contexts, range=[CONTEXT_DASHES[i % len(CONTEXT_DASHES)] for i in range(len(contexts))]
            ),
        )
        # the lines draw the contexts' legend: each entry a stroke in its colour and its line style
        color = alt.Color(
            "context:O",
            title="context (tokens)",
            scale=alt.Scale(domain=contexts),
            legend=alt.Legend(symbolType="stroke", symbolStrokeWidth=2, symbolSize=400),
        )
        tip = [
            alt.Tooltip("model:N"),
            alt.Tooltip("context:O"),
            alt.Tooltip("batch:Q"),
            alt.Tooltip(f"{value}:Q", format=",.0f" if value == "tok_s" else ".3g", title=f"{y_tip} ({unit.label})"),
            alt.Tooltip("timing:N", title="timing"),
        ]
        height = SWEEP_HEIGHT if len(models) == 1 else PANEL_HEIGHT

        def panel(name: str, last: bool) -> alt.LayerChart:
            ok = frame[(frame.status == "ok") & (frame.model == name)]
            here = oom[oom.model == name]
            x = alt.X(
                "batch:Q",
                title="batch (sequences)" if last else None,
                scale=alt.Scale(type="log", base=2, domain=[min(columns["batch"]), max(columns["batch"])]),
            )
            y_axis = alt.Y(
                f"{value}:Q",
                title=f"{what} ({unit.label})",
                axis=alt.Axis(format="~s" if value == "tok_s" else "~r", tickCount=4),
            )
            lines = alt.Chart(ok).mark_line(strokeWidth=2).encode(x=x, y=y_axis, color=color, strokeDash=dash)
            layers = [
                lines,
                points(
                    ok, x, y_axis, ("context:O", "context (tokens)", None), theme, tip, oom=bool(bounds), legend=False
                ),
            ]
            if len(here):
                shape, _ = timing_marks(theme, oom=True, unstable=bool(shaky))
                layers.append(
                    alt.Chart(here)
                    .mark_point(size=110, filled=True, opacity=1)
                    .encode(
                        x=x,
                        # scale=None: row_px is pixels from the top of the plot, not a data value
                        y=alt.Y("row_px:Q", scale=None, axis=None),
                        color=color,
                        shape=shape,
                        tooltip=[
                            alt.Tooltip("model:N"),
                            alt.Tooltip("context:O"),
                            alt.Tooltip("batch:Q", title="first OOM batch"),
                        ],
                    )
                )
            sub = alt.layer(*layers).properties(width=PLOT_WIDTH_PX, height=height)
            return (
                sub.properties(title=alt.TitleParams(name, fontSize=TEXT_PX, anchor="start"))
                if len(models) > 1
                else sub
            )

        if len(models) == 1:
            return panel(models[0], True).properties(title=wrap_title(heading))
        multiples = alt.vconcat(*[panel(m, i == len(models) - 1) for i, m in enumerate(models)], spacing=14)
        multiples = multiples.resolve_scale(y="independent" if value == "tok_s" else "shared", x="shared")
        return multiples.properties(title=wrap_title(heading))

    return text, draw


def loss_memory(docs: list[dict[str, Any]], *, theme: ChartTheme = LIGHT, title: str | None = None) -> tuple[str, Draw]:
    """Peak memory (GiB) against microbatch, one line per arm; an unstable point (CV over 5%) a hollow triangle."""
    rows = []
    for doc in docs:
        rows += sample_rows("loss-memory", doc, {"arm": (str,), "microbatch": NUM, "peak_bytes": NUM}, "loss-memory")
    columns: dict[str, list[Any]] = {  # lists: the text needs no DataFrame (see batch_sweep)
        "arm": [r["arm"] for r in rows],
        "microbatch": [r["microbatch"] for r in rows],
        "peak_gib": [unit_of("peak_bytes").of(r["peak_bytes"]) for r in rows],
        "timing": timing([lossmem.unstable(r) for r in rows]),
    }
    arms = list(dict.fromkeys(columns["arm"]))
    heading = title or "Peak memory against microbatch, per loss arm"
    shaky = sum(1 for t in columns["timing"] if t == UNSTABLE)
    text = (
        f"{heading}: peak device memory in GiB against microbatch size, one line per arm "
        f"({len(arms)} arms: {', '.join(arms)})"
        + (f"; {shaky} unstable points (CV over 5%) are hollow triangles" if shaky else "")
        + "."
    )

    def draw() -> alt.TopLevelMixin:
        import altair as alt
        import pandas as pd

        frame = pd.DataFrame(columns)
        x = alt.X("microbatch:Q", title="microbatch (sequences)", axis=alt.Axis(tickMinStep=1, format="d"))
        y = alt.Y("peak_gib:Q", title=f"peak memory ({unit_of('peak_bytes').label})")
        color = alt.Color("arm:N", title="arm", sort=arms)
        tip = [
            alt.Tooltip("arm:N"),
            alt.Tooltip("microbatch:Q"),
            alt.Tooltip("peak_gib:Q", format=".3g", title="peak (GiB)"),
            alt.Tooltip("timing:N", title="timing"),
        ]
        line = alt.Chart(frame).mark_line().encode(x=x, y=y, color=color)
        return alt.layer(line, points(frame, x, y, ("arm:N", "arm", arms), theme, tip)).properties(
            width=PLOT_WIDTH_PX, height=220, title=wrap_title(heading)
        )

    return text, draw
