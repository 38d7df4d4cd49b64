"""Chart kind ``kernel-shares``: the share of device kernel time per category, one bar per run in each
category, from a kernels run's rows or its ``data.shares``. Registered in ``render.charts.draw.KINDS``; the builder
checks its input and writes its alt text, then returns a ``draw`` closure that alone imports altair
(ARCHITECTURE.md §Charts and tables, §A chart or a table).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from measure.errors import ProbebookError
from render.charts.marks import NUM, Draw, sample_rows
from render.charts.theme import LIGHT, PLOT_WIDTH_PX, ChartTheme, wrap_title
from render.derive.kernels import category_shares
from render.tables.columns import doc_label

if TYPE_CHECKING:
    import altair as alt


def run_name(doc: dict[str, Any], index: int) -> str:
    """What a kernels run was, from its params: ``250m, compiled``; ``run N`` when they do not say."""
    params = doc.get("params") if isinstance(doc, dict) else None
    params = params if isinstance(params, dict) else {}
    preset, compiled = params.get("preset"), params.get("compile")
    parts = [str(preset)] if isinstance(preset, str) else []
    if isinstance(compiled, bool):
        parts.append("compiled" if compiled else "eager")
    return ", ".join(parts) or f"run {index + 1}"


def kernel_shares(
    docs: list[dict[str, Any]], *, theme: ChartTheme = LIGHT, labels: list[str] | None = None, title: str | None = None
) -> tuple[str, Draw]:
    """Share of device kernel time per category, one bar per run in each category."""
    if labels is not None and len(labels) != len(docs):
        raise ProbebookError(f"chart 'kernel-shares': {len(labels)} labels for {len(docs)} evidence documents")
    names = labels or [run_name(d, i) for i, d in enumerate(docs)]
    if len(set(names)) != len(names):
        names = [f"{n} ({i + 1})" for i, n in enumerate(names)]
    records: list[dict[str, Any]] = []
    for name, doc in zip(names, docs, strict=True):
        data = doc.get("data") if isinstance(doc, dict) else None
        if isinstance(data, dict) and data.get("samples"):
            shares = category_shares(
                sample_rows("kernel-shares", doc, {"kernel": (str,), "category": (str,), "device_time_s": NUM}, None)
            )
        elif isinstance(data, dict) and isinstance(data.get("shares"), dict) and data["shares"]:
            shares = data["shares"]
            bad = [k for k, v in shares.items() if isinstance(v, bool) or not isinstance(v, NUM) or not 0 <= v <= 1]
            if bad:
                raise ProbebookError(
                    f"chart 'kernel-shares': {doc_label(doc)} data.shares.{bad[0]} must be a fraction 0..1"
                )
        else:
            raise ProbebookError(
                f"chart 'kernel-shares': {doc_label(doc) if isinstance(doc, dict) else 'input'} has "
                "neither data.samples kernel rows nor data.shares"
            )
        records += [{"run": name, "category": cat, "share": share} for cat, share in shares.items()]
    # largest share first (summed over the runs): the order follows the evidence, so no list of
    # categories is kept here beside the probe's own
    summed: dict[str, float] = {}
    for rec in records:
        summed[rec["category"]] = summed.get(rec["category"], 0.0) + rec["share"]
    order = sorted(summed, key=lambda c: (-summed[c], c))
    heading = title or f"Share of kernel time by category: {' against '.join(names)}"
    text = (
        f"{heading}: the share of summed device kernel time in each category "
        f"({', '.join(order)}), for {len(docs)} run{'s' if len(docs) > 1 else ''} ({', '.join(names)})."
    )

    def draw() -> alt.TopLevelMixin:
        import altair as alt
        import pandas as pd

        frame = pd.DataFrame(records, columns=["run", "category", "share"])
        # the default title names the runs on a line of its own, so a break never splits a run's name
        shown = (
            alt.TitleParams(
                wrap_title("Share of kernel time by category"), subtitle=wrap_title(" against ".join(names))
            )
            if title is None
            else wrap_title(title)
        )
        enc: dict[str, Any] = {
            "y": alt.Y("category:N", title=None, sort=order),
            "x": alt.X("share:Q", title="share of device kernel time", axis=alt.Axis(format="%", tickCount=4)),
            "color": alt.Color("run:N", title=None, sort=names),
            "tooltip": [alt.Tooltip("run:N"), alt.Tooltip("category:N"), alt.Tooltip("share:Q", format=".1%")],
        }
        if len(docs) > 1:
            enc["yOffset"] = alt.YOffset("run:N", sort=names)
        return (
            alt.Chart(frame)
            .mark_bar()
            .encode(**enc)
            .properties(width=PLOT_WIDTH_PX - 100, height=max(120, 24 * len(order) * len(docs)), title=shown)
        )

    return text, draw
