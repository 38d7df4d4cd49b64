"""Charts: evidence documents -> an altair (Vega-Lite) spec per theme -> static SVG through vl-convert.

Each chart is drawn in a light and a dark theme (``render.charts.theme``), sized so that its text
stays at 12 px or more on a phone, with a legend that tells samples, fits, out-of-memory batches
and unstable points (CV over 5%, always a hollow triangle) apart. The SVGs are made at build
time so pages work offline (``render.charts.svg``); the specs, with their tooltips, are what the
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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from measure.errors import ProbebookError
from render.charts.history import history
from render.charts.kernels import kernel_shares
from render.charts.marks import (
    CURVE_POINTS,
    NUM,
    OOM,
    OUTSIDE,
    STABLE,
    UNSTABLE,
    Draw,
    Series,
    axis_format,
    curve_tokens,
    plain_number,
    sample_rows,
    series_channels,
)
from render.charts.output import ChartOutput
from render.charts.svg import (
    finish,
    namespace_ids,
    raw_svg,
    recolour_spec,
    recolour_svg,
    script_safe,
    svg_from_spec,
    without_tooltips,
)
from render.charts.sweeps import batch_sweep, loss_memory
from render.charts.theme import LIGHT, PLOT_WIDTH_PX, THEMES, ChartTheme, colour_map, config, wrap_title
from render.derive import fit as fitmod
from render.derive import fit_inputs
from render.tables.columns import doc_label, seconds_to_ms

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

# The step-scaling builder is here; the other kinds' builders are in render/charts/sweeps.py
# (batch-sweep, loss-memory) and render/charts/kernels.py (kernel-shares).


def _step_scaling(
    docs: list[dict[str, Any]],
    *,
    theme: ChartTheme = LIGHT,
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
    sample_rows("step-scaling", doc, {"tokens": NUM, "step_s": NUM}, "step-scaling", nullable=("step_s",))
    timed = fit_inputs.step_samples(doc, mode)
    if not timed:
        raise ProbebookError(f"chart 'step-scaling': {doc_label(doc)} has no timed samples (every step_s is null)")
    shaky = fit_inputs.unstable_tokens(doc, mode)
    # columns as lists: the text needs no DataFrame, so describing the chart does not import pandas
    columns: dict[str, list[Any]] = {
        "tokens": [p[0] for p in timed],
        "step_ms": [seconds_to_ms(p[1]) for p in timed],
    }
    heading = title or "Step time against sequence length"
    first, last = plain_number(min(columns["tokens"])), plain_number(max(columns["tokens"]))
    seen = f"{len(timed)} measured step times from {first} to {last} tokens"
    result = None
    lo, hi = min(columns["tokens"]), max(columns["tokens"])
    if fit:
        # bootstrap=0: the chart needs the coefficients and residuals, not their intervals
        result = fitmod.fit_evidence(
            doc, terms=terms, tokens=tokens, mode=mode, bootstrap=0, source=f"evidence {doc_label(doc)}"
        )
        lo, hi = min(result.tokens), max(result.tokens)
    columns["series"] = [
        OUTSIDE if not lo <= t <= hi else UNSTABLE if t in shaky else "measured sample" for t in columns["tokens"]
    ]
    fitted_terms = "+".join(result.terms) if result else ""
    flagged = len(shaky & set(columns["tokens"]))
    unstable_text = f"; {flagged} sequence lengths flagged unstable (CV over 5%) are hollow triangles"
    unstable_text = unstable_text if flagged else ""
    if result is None:
        text = f"{heading}: {seen}{unstable_text}; no fit drawn."
    else:
        outside = sum(1 for series in columns["series"] if series == OUTSIDE)
        text = (
            f"{heading}: {seen}, the fitted curve ({fitted_terms}) over {plain_number(lo)} to {plain_number(hi)} tokens"
            + (f" ({outside} samples outside it drawn in grey)" if outside else "")
            + unstable_text
            + ", and below it each sequence length's mean residual (measured minus fitted)."
        )

    def draw() -> alt.TopLevelMixin:
        import altair as alt
        import pandas as pd

        frame = pd.DataFrame(columns)
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


Builder = Callable[..., "tuple[str, Draw]"]
KINDS: dict[str, tuple[Builder, tuple[str, ...]]] = {
    "step-scaling": (_step_scaling, ("tokens", "terms", "fit", "title")),
    "batch-sweep": (batch_sweep, ("model", "title", "y")),
    "loss-memory": (loss_memory, ("title",)),
    "kernel-shares": (kernel_shares, ("labels", "title")),
    "history": (history, ("rows", "changes", "title")),
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
