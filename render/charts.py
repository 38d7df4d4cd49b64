"""Charts: evidence documents -> an altair (Vega-Lite) spec per theme -> static SVG through vl-convert.

Each chart is drawn in a light and a dark theme (``render.chart_theme``), sized so that its text
stays at 12 px or more on a phone, with a legend that tells samples, fits, out-of-memory batches
and unstable points (CV over 5%, always a hollow triangle) apart. The SVGs are made at build
time so pages work offline (``render.chart_svg``); the specs, with their tooltips, are what the
site's interactive charts draw (``render.chart_assets``).

``render(kind, docs, **options)`` draws a chart; ``describe(kind, docs, **options)`` gives only its alt text
(the same text, refusing the same inputs with the same messages) without building an altair chart or
importing altair or vl-convert, so a build can write a page's Markdown before the page's charts are
drawn (1-2% of the time drawing takes, ``bench/chart_describe.py``). ``KINDS`` lists the kinds.

Speed (measured in ``bench/render.py``): every encoding is an explicit channel object
(``alt.X("a:Q")``, ``alt.Tooltip(...)``), because altair resolves a bare shorthand string
(``"a:Q"``) through its JSON schema at about 30 ms a chart, more than drawing it; altair's own
validation is skipped at build time (the tests validate every kind); the static SVG is drawn
without tooltips, which it cannot show and which double vl-convert's time.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Callable

import pandas as pd

from measure import contracts
from measure.errors import ProbebookError
from render.chart_marks import (
    CURVE_POINTS,
    OOM,
    OUTSIDE,
    STABLE,
    UNSTABLE,
    Series,
    axis_format,
    curve_tokens,
    points,
    series_channels,
    timing,
    timing_marks,
)
from render.chart_output import ChartOutput
from render.chart_svg import (
    finish,
    namespace_ids,
    raw_svg,
    recolour_spec,
    recolour_svg,
    script_safe,
    svg_from_spec,
    without_tooltips,
)
from render.chart_theme import LIGHT, PLOT_WIDTH_PX, TEXT_PX, THEMES, Theme, colour_map, config, wrap_title
from render.derive import batchsweep, lossmem
from render.derive import fit as fitmod
from render.derive.kernels import category_shares
from render.tables import bytes_to_gib, doc_label, evidence_rows, seconds_to_ms

if TYPE_CHECKING:
    import altair as alt

__all__ = [  # the marks' names are re-exported: pages and tests read them here
    "CURVE_POINTS",
    "KINDS",
    "OOM",
    "STABLE",
    "UNSTABLE",
    "ChartOutput",
    "axis_format",
    "curve_tokens",
    "describe",
    "namespace_ids",
    "render",
    "svg_from_spec",
    "without_tooltips",
]

SWEEP_HEIGHT = 240

Draw = Callable[[], "alt.TopLevelMixin"]
"""What a builder returns beside its alt text: makes the altair chart (altair is imported only there)."""


# --- pure helpers (units in the names) --------------------------------------------------


_NUM = (int, float)


def _samples(
    kind: str, doc: Any, need: dict[str, tuple[type, ...]], probe: str | None, nullable: tuple[str, ...] = ()
) -> list[dict[str, Any]]:
    """``data.samples`` of ``doc``, each row checked for the fields ``need`` (name -> types)."""
    return evidence_rows(f"chart {kind!r}", doc, need, probe, nullable)


def _step_scaling(
    docs: list[dict[str, Any]],
    *,
    theme: Theme = LIGHT,
    tokens: str | None = None,
    terms: str = "auto",
    mode: str | None = None,
    fit: bool = True,
    title: str | None = None,
) -> tuple[str, Draw]:
    """Step time against sequence length: the samples, the fitted curve over its range, residuals below.

    The fit is ``render.derive.fit`` (the one every published coefficient comes from), so the
    curve drawn is the curve quoted; ``tokens``, ``terms`` and ``mode`` mean what they mean there.
    A sample whose point was flagged unstable is a hollow triangle.
    """
    if len(docs) != 1:
        raise ProbebookError(f"chart 'step-scaling' draws one evidence document with its fit, got {len(docs)}")
    doc = docs[0]
    _samples("step-scaling", doc, {"tokens": _NUM, "step_s": _NUM}, "step-scaling", nullable=("step_s",))
    timed = fitmod.step_samples(doc, mode)
    if not timed:
        raise ProbebookError(f"chart 'step-scaling': {doc_label(doc)} has no timed samples (every step_s is null)")
    shaky = fitmod.unstable_tokens(doc, mode)
    frame = pd.DataFrame({"tokens": [p[0] for p in timed], "step_ms": [seconds_to_ms(p[1]) for p in timed]})
    heading = title or "Step time against sequence length"
    seen = f"{len(frame)} measured step times from {_n(frame.tokens.min())} to {_n(frame.tokens.max())} tokens"
    result = None
    lo, hi = frame.tokens.min(), frame.tokens.max()
    if fit:
        # bootstrap=0: the chart needs the coefficients and residuals, not their intervals
        result = fitmod.fit_evidence(
            doc, terms=terms, tokens=tokens, mode=mode, bootstrap=0, source=f"evidence {doc_label(doc)}"
        )
        lo, hi = min(result.tokens), max(result.tokens)
    frame["series"] = [
        OUTSIDE if not lo <= t <= hi else UNSTABLE if t in shaky else "measured sample" for t in frame.tokens
    ]
    fitted_terms = "+".join(result.terms) if result else ""
    flagged = len(shaky & set(frame.tokens))
    unstable_text = f"; {flagged} sequence lengths flagged unstable (CV over 5%) are hollow triangles"
    unstable_text = unstable_text if flagged else ""
    if result is None:
        text = f"{heading}: {seen}{unstable_text}; no fit drawn."
    else:
        outside = int((frame.series == OUTSIDE).sum())
        text = (
            f"{heading}: {seen}, the fitted curve ({fitted_terms}) over {_n(lo)} to {_n(hi)} tokens"
            + (f" ({outside} samples outside it drawn in grey)" if outside else "")
            + unstable_text
            + ", and below it each sequence length's mean residual (measured minus fitted)."
        )

    def draw() -> alt.TopLevelMixin:
        import altair as alt

        present = set(frame.series)
        fit_label = f"fit ({fitted_terms})"
        entries = [
            e
            for e in (
                Series("measured sample", theme.series[0], "circle"),
                Series(UNSTABLE, theme.series[0], "triangle-up", filled=False),
                Series(OUTSIDE, theme.excluded, "circle"),
            )
            if e.label in present
        ] + ([Series(fit_label, theme.fit, "stroke")] if result else [])
        channels = series_channels(entries)
        scale_x = alt.X("tokens:Q", title="sequence length (tokens)", scale=alt.Scale(zero=False))
        y = alt.Y("step_ms:Q", title="step time (ms)")
        tip = [
            alt.Tooltip("tokens:Q"),
            alt.Tooltip("step_ms:Q", format=".4g", title="step (ms)"),
            alt.Tooltip("series:N", title="sample"),
        ]
        dots = (
            alt.Chart(frame)
            .mark_point(size=60, opacity=1, strokeWidth=1.5)
            .encode(x=scale_x, y=y, tooltip=tip, **channels)
        )
        if result is None:
            return dots.properties(width=PLOT_WIDTH_PX, height=220, title=wrap_title(heading))
        curve = pd.DataFrame({"tokens": curve_tokens(lo, hi)})
        curve["fit_ms"] = [seconds_to_ms(result.predict(s)) for s in curve.tokens]
        curve["series"] = fit_label
        resid = pd.DataFrame(
            {"tokens": list(result.tokens), "residual_ms": [seconds_to_ms(r) for r in result.residuals_s]}
        )
        resid_format = axis_format(float(resid.residual_ms.abs().max()))
        line = alt.Chart(curve).mark_line(strokeWidth=2).encode(x=scale_x, y=alt.Y("fit_ms:Q"), color=channels["color"])
        # one shared x scale, labelled once under the residual panel (each text label costs vl-convert ~1 ms)
        top = (
            alt.layer(dots, line)
            .properties(width=PLOT_WIDTH_PX, height=200, title=wrap_title(heading))
            .encode(x=alt.X("tokens:Q", scale=alt.Scale(zero=False), axis=alt.Axis(labels=False, title=None)))
        )
        zero = (
            alt.Chart(pd.DataFrame({"zero": [0.0]}))
            .mark_rule(color=theme.muted, strokeDash=[4, 3])
            .encode(y=alt.Y("zero:Q"))
        )
        bottom = alt.layer(
            zero,
            alt.Chart(resid)
            .mark_point(filled=True, size=40, color=theme.fit)
            .encode(
                x=scale_x,
                y=alt.Y("residual_ms:Q", title="residual (ms)", axis=alt.Axis(format=resid_format, tickCount=3)),
                tooltip=[alt.Tooltip("tokens:Q"), alt.Tooltip("residual_ms:Q", format=".3g", title="residual (ms)")],
            ),
        ).properties(width=PLOT_WIDTH_PX, height=80)
        return alt.vconcat(top, bottom, spacing=8).resolve_scale(x="shared")

    return text, draw


BATCH_SWEEP_Y = {"tok_s": ("throughput (tokens/s)", "tokens/s"), "peak_bytes": ("peak memory (bytes)", "peak bytes")}


def _batch_sweep(
    docs: list[dict[str, Any]],
    *,
    theme: Theme = LIGHT,
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
        for r in _samples(
            "batch-sweep",
            doc,
            {"model": (str,), "params": _NUM, "context": _NUM, "batch": _NUM, "status": (str,), "tok_s": _NUM},
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
    frame = pd.DataFrame(
        {
            "model": [r["model"] for r in rows],
            "context": [int(r["context"]) for r in rows],
            "batch": [int(r["batch"]) for r in rows],
            "status": [r["status"] for r in rows],
            "tok_s": [r["tok_s"] if r["status"] == "ok" else None for r in rows],
            "timing": timing([lossmem.unstable(r) for r in rows]),
            "peak_bytes": [r.get("peak_bytes") if r["status"] == "ok" else None for r in rows],
        }
    )
    # the OOM boundary is derive's (the same first_oom_batch the tables and prose quote)
    models = sorted(frame.model.unique())
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
    oom = pd.DataFrame(bounds, columns=["model", "context", "batch", "label", "timing"])
    ok = frame[frame.status == "ok"]
    shaky = int((ok.timing == UNSTABLE).sum())
    heading = title or ("Throughput against batch" if y_field == "tok_s" else "Peak memory against batch")
    contexts = ", ".join(_n(c) for c in sorted(frame.context.unique()))
    oom_text = (
        "; the first out-of-memory batch of each context is marked with a dashed line and a cross"
        if len(oom)
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


def _loss_memory(docs: list[dict[str, Any]], *, theme: Theme = LIGHT, title: str | None = None) -> tuple[str, Draw]:
    """Peak memory (GiB) against microbatch, one line per arm; an unstable point (CV over 5%) a hollow triangle."""
    rows = []
    for doc in docs:
        rows += _samples("loss-memory", doc, {"arm": (str,), "microbatch": _NUM, "peak_bytes": _NUM}, "loss-memory")
    frame = pd.DataFrame(
        {
            "arm": [r["arm"] for r in rows],
            "microbatch": [r["microbatch"] for r in rows],
            "peak_gib": [bytes_to_gib(r["peak_bytes"]) for r in rows],
            "timing": timing([lossmem.unstable(r) for r in rows]),
        }
    )
    arms = list(dict.fromkeys(frame.arm))
    heading = title or "Peak memory against microbatch, per loss arm"
    shaky = int((frame.timing == UNSTABLE).sum())
    text = (
        f"{heading}: peak device memory in GiB against microbatch size, one line per arm "
        f"({len(arms)} arms: {', '.join(arms)})"
        + (f"; {shaky} unstable points (CV over 5%) are hollow triangles" if shaky else "")
        + "."
    )

    def draw() -> alt.TopLevelMixin:
        import altair as alt

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


def run_name(doc: dict[str, Any], index: int) -> str:
    """What a kernels run was, from its params: ``250m, compiled``; ``run N`` when they do not say."""
    params = doc.get("params") if isinstance(doc, dict) else None
    params = params if isinstance(params, dict) else {}
    preset, compiled = params.get("preset"), params.get("compile")
    parts = [str(preset)] if isinstance(preset, str) else []
    if isinstance(compiled, bool):
        parts.append("compiled" if compiled else "eager")
    return ", ".join(parts) or f"run {index + 1}"


def _kernel_shares(
    docs: list[dict[str, Any]], *, theme: Theme = LIGHT, labels: list[str] | None = None, title: str | None = None
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
                _samples("kernel-shares", doc, {"kernel": (str,), "category": (str,), "device_time_s": _NUM}, None)
            )
        elif isinstance(data, dict) and isinstance(data.get("shares"), dict) and data["shares"]:
            shares = data["shares"]
            bad = [k for k, v in shares.items() if isinstance(v, bool) or not isinstance(v, _NUM) or not 0 <= v <= 1]
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


Builder = Callable[..., "tuple[str, Draw]"]
KINDS: dict[str, tuple[Builder, tuple[str, ...]]] = {
    "step-scaling": (_step_scaling, ("tokens", "terms", "fit", "title")),
    "batch-sweep": (_batch_sweep, ("model", "title", "y")),
    "loss-memory": (_loss_memory, ("title",)),
    "kernel-shares": (_kernel_shares, ("labels", "title")),
}
"""Chart kind -> (builder, the options it accepts). A builder checks its input, prepares the data and
writes the alt text, and returns ``(text, draw)``: ``draw()`` makes the altair chart from the same prepared data."""


def _prepared(kind: str, docs: list[dict[str, Any]], options: dict[str, Any]) -> tuple[str, Draw]:
    """Chart ``kind``'s alt text and its drawing, once ``kind``, ``options`` and ``docs`` are checked, in that order."""
    if kind not in KINDS:
        raise ProbebookError(f"unknown chart kind {kind!r}; the kinds are {', '.join(sorted(KINDS))}")
    builder, accepted = KINDS[kind]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise ProbebookError(f"chart {kind!r} has no option {unknown[0]!r}; it accepts {', '.join(accepted)}")
    if isinstance(docs, dict) or not isinstance(docs, (list, tuple)) or not docs:
        raise ProbebookError(f"chart {kind!r} needs a non-empty list of evidence documents")
    # drawn once, in the first theme; every other theme is the same chart recoloured (chart_theme.colour_map)
    text, draw = builder(list(docs), theme=THEMES[0], **options)
    return text, draw


def describe(kind: str, docs: list[dict[str, Any]], **options: Any) -> str:
    """The alt text ``render(kind, docs, **options)`` gives, and the same input errors, without drawing:
    no altair chart is built and neither altair nor vl-convert is imported, so a page's Markdown can be
    written before its charts are drawn."""
    text, _draw = _prepared(kind, docs, options)
    return text


def render(kind: str, docs: list[dict[str, Any]], **options: Any) -> ChartOutput:
    """Draw chart ``kind`` from evidence documents ``docs`` in every theme; every input error is a ProbebookError."""
    text, draw = _prepared(kind, docs, options)
    first = THEMES[0]
    # altair's JSON-schema validation costs more than drawing a simple chart; the specs these
    # builders make are validated in tests/test_charts.py instead
    spec = draw().to_dict(validate=False)
    spec.pop("$schema", None)  # a URL; the SVG is drawn offline and the spec needs no schema to render
    spec["config"] = {**spec.get("config", {}), **config(first)}
    raw = ""
    drawn: list[tuple[str, str]] = []
    for theme in THEMES:
        colours = colour_map(first, theme)
        themed = recolour_spec(spec, colours)
        static = _json(without_tooltips(themed))
        if not raw:
            raw = raw_svg(static)
        drawn.append((finish(recolour_svg(raw, colours), static), script_safe(_json(themed))))
    (svg, spec_json), (dark_svg, dark_spec) = drawn
    return ChartOutput(svg=svg, spec_json=spec_json, alt=text, dark_svg=dark_svg, dark_spec_json=dark_spec)


def _json(spec: dict[str, Any]) -> str:
    return json.dumps(spec, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _n(value: float) -> str:
    """An integer-valued float as a plain integer string, for alt text."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
