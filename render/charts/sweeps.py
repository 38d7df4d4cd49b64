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
from render.tables.columns import bytes_to_gib, doc_label

if TYPE_CHECKING:
    import altair as alt

SWEEP_HEIGHT = 240
"""Height of the batch-sweep plot in px; the OOM crosses and labels sit just inside its top."""

BATCH_SWEEP_Y = {"tok_s": ("throughput (tokens/s)", "tokens/s"), "peak_bytes": ("peak memory (bytes)", "peak bytes")}


def batch_sweep(
    docs: list[dict[str, Any]],
    *,
    theme: ChartTheme = LIGHT,
    model: str | None = None,
    title: str | None = None,
    y: str = "tok_s",
) -> tuple[str, Draw]:
    """Tokens/s (or, with ``y="peak_bytes"``, peak memory) against batch, one line per context, first OOM marked."""
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
    # columns as lists: the text needs no DataFrame, so describing the chart does not import pandas
    columns: dict[str, list[Any]] = {
        "model": [r["model"] for r in rows],
        "context": [int(r["context"]) for r in rows],
        "batch": [int(r["batch"]) for r in rows],
        "status": [r["status"] for r in rows],
        "tok_s": [r["tok_s"] if r["status"] == "ok" else None for r in rows],
        "timing": timing([lossmem.unstable(r) for r in rows]),
        "peak_bytes": [r.get("peak_bytes") if r["status"] == "ok" else None for r in rows],
    }
    # the OOM boundary is derive's (the same first_oom_batch the tables and prose quote)
    models = sorted(set(columns["model"]))
    bounds = [
        {
            "model": g.model,
            "context": g.context,
            "batch": g.first_oom_batch,
            "label": f"{g.model} OOM" if len(models) > 1 else "OOM",
            "timing": OOM,
        }
        for g in batchsweep.summarize(rows)
        if g.first_oom_batch is not None
    ]
    shaky = sum(1 for st, t in zip(columns["status"], columns["timing"], strict=True) if st == "ok" and t == UNSTABLE)
    heading = title or ("Throughput against batch" if y_field == "tok_s" else "Peak memory against batch")
    contexts = ", ".join(plain_number(c) for c in sorted(set(columns["context"])))
    oom_text = (
        "; the first out-of-memory batch of each context is marked with a dashed line and a cross"
        if bounds
        else "; no batch ran out of memory"
    )
    unstable_text = f"; {shaky} unstable points (CV over 5%) are hollow triangles" if shaky else ""
    text = (
        f"{heading} for {', '.join(models)}: {'tokens per second' if y_field == 'tok_s' else 'peak device memory'} "
        "against batch size (log scale), "
        f"one line per context length ({contexts} tokens){oom_text}{unstable_text}."
    )

    def draw() -> alt.TopLevelMixin:
        import altair as alt
        import pandas as pd

        frame = pd.DataFrame(columns)
        oom = pd.DataFrame(bounds, columns=["model", "context", "batch", "label", "timing"])
        ok = frame[frame.status == "ok"]
        x = alt.X("batch:Q", title="batch (sequences)", scale=alt.Scale(type="log", base=2))
        color = alt.Color("context:O", title="context (tokens)")
        # several models: one dash pattern each; the points are a layer of their own so the legend
        # draws each model as a dashed stroke (a line mark with points would show a dot)
        enc: dict[str, Any] = {"strokeDash": alt.StrokeDash("model:N", title="model")} if len(models) > 1 else {}
        y_title, y_tip = BATCH_SWEEP_Y[y_field]
        y_axis = alt.Y(f"{y_field}:Q", title=y_title, axis=alt.Axis(format="~s"))
        lines = alt.Chart(ok).mark_line().encode(x=x, y=y_axis, color=color, detail=alt.Detail("model:N"), **enc)
        # an unstable point (CV over 5%) is drawn as a hollow triangle: it never is the fastest stable batch
        tip = [
            alt.Tooltip("model:N"),
            alt.Tooltip("context:O"),
            alt.Tooltip("batch:Q"),
            alt.Tooltip(f"{y_field}:Q", format=",.0f", title=y_tip),
            alt.Tooltip("timing:N", title="timing"),
        ]
        layers = [lines, points(ok, x, y_axis, ("context:O", "context (tokens)", None), theme, tip, oom=len(oom) > 0)]
        if len(oom):
            shape, _ = timing_marks(theme, oom=True, unstable=bool(shaky))
            layers.append(
                alt.Chart(oom)
                .mark_rule(strokeDash=[5, 3], strokeWidth=1.5)
                .encode(
                    x=x,
                    color=color,
                    tooltip=[
                        alt.Tooltip("model:N"),
                        alt.Tooltip("context:O"),
                        alt.Tooltip("batch:Q", title="first OOM batch"),
                    ],
                )
            )
            layers.append(
                alt.Chart(oom)
                .mark_point(size=110, filled=True, opacity=1)
                .encode(x=x, y=alt.value(SWEEP_HEIGHT - 10), color=color, shape=shape)
            )
            layers.append(
                alt.Chart(oom)
                .mark_text(dy=-12, fontSize=TEXT_PX, fontWeight="bold")
                .encode(x=x, y=alt.value(SWEEP_HEIGHT - 10), text=alt.Text("label:N"), color=color)
            )
        return alt.layer(*layers).properties(width=PLOT_WIDTH_PX, height=SWEEP_HEIGHT, title=wrap_title(heading))

    return text, draw


def loss_memory(docs: list[dict[str, Any]], *, theme: ChartTheme = LIGHT, title: str | None = None) -> tuple[str, Draw]:
    """Peak memory (GiB) against microbatch, one line per arm; an unstable point (CV over 5%) a hollow triangle."""
    rows = []
    for doc in docs:
        rows += sample_rows("loss-memory", doc, {"arm": (str,), "microbatch": NUM, "peak_bytes": NUM}, "loss-memory")
    columns: dict[str, list[Any]] = {  # lists: the text needs no DataFrame (see batch_sweep)
        "arm": [r["arm"] for r in rows],
        "microbatch": [r["microbatch"] for r in rows],
        "peak_gib": [bytes_to_gib(r["peak_bytes"]) for r in rows],
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
        y = alt.Y("peak_gib:Q", title="peak memory (GiB)")
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
