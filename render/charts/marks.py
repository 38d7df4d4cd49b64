"""Marks and legends every chart shares: timed points (stable filled, unstable a hollow triangle), out-of-memory
crosses, a fit's stroke, one legend per meaning, and the axis formats (ARCHITECTURE.md §Charts and tables); and
what every kind's builder shares (``Draw``, ``sample_rows``, ``plain_number``), wherever the builder lives.

An unstable point (its windows' CV over 5%, ``render.derive.lossmem.unstable``) is drawn the same way in
every chart that plots timed points, with its own legend entry, as the tables mark it (issue 7).

altair is imported inside the functions that make channels and marks: the labels, ``Series`` and the axis
helpers are also what a chart's alt text is made from (``render.charts.draw.describe``), which must not load it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from render.charts.theme import ChartTheme
from render.tables.columns import evidence_rows

if TYPE_CHECKING:
    import altair as alt
    import pandas as pd

UNSTABLE = "unstable (CV over 5%)"
"""Legend label of a point whose windows' CV was over 5% (``render.derive.lossmem.unstable``)."""
STABLE = "measured"
"""Legend label of a timed point that is not unstable."""
OOM = "first OOM batch"
"""Legend label of the first batch that ran out of memory (``render.derive.batchsweep``)."""
OUTSIDE = "outside the fitted range"
"""Legend label of a sample the fit was told to leave out."""
CURVE_POINTS = 96
"""Points on a fitted curve: enough that the quadratic looks smooth at chart width."""

Draw = Callable[[], "alt.TopLevelMixin"]
"""What a builder returns beside its alt text: makes the altair chart (altair is imported only there)."""

NUM = (int, float)
"""The types a numeric evidence field may have (``bool`` is refused by ``render.tables.columns.evidence_rows``)."""


def sample_rows(
    kind: str, doc: Any, need: dict[str, tuple[type, ...]], probe: str | None, nullable: tuple[str, ...] = ()
) -> list[dict[str, Any]]:
    """``data.samples`` of ``doc``, each row checked for the fields ``need`` (name -> types)."""
    return evidence_rows(f"chart {kind!r}", doc, need, probe, nullable)


def plain_number(value: float) -> str:
    """An integer-valued float as a plain integer string, for alt text."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def curve_tokens(lo: float, hi: float, n: int = CURVE_POINTS) -> list[float]:
    """``n`` evenly spaced sequence lengths from ``lo`` to ``hi`` inclusive, for drawing a fit."""
    if n < 2 or hi <= lo:
        return [float(lo)]
    step = (hi - lo) / (n - 1)
    return [lo + i * step for i in range(n - 1)] + [float(hi)]


def axis_format(max_abs: float) -> str:
    """A d3 fixed-point format for axis values up to ``max_abs`` in size: three significant figures at the
    largest, at most six decimals, trailing zeros trimmed; never an exponent (ISSUE 14: no scientific notation)."""
    decimals = 0 if max_abs <= 0 or not math.isfinite(max_abs) else 2 - math.floor(math.log10(max_abs))
    return f".{min(6, max(0, decimals))}~f"


@dataclass(frozen=True)
class Series:
    """One legend entry of a chart's own marks: its label, colour, symbol and whether it is filled."""

    label: str
    colour: str
    shape: str
    """A Vega symbol: ``circle``, ``triangle-up``, ``cross``, or ``stroke`` (a line, for a fit)."""
    filled: bool = True


def series_channels(entries: list[Series], field: str = "series") -> dict[str, Any]:
    """Colour, fill and shape of ``field`` over one domain, so Vega-Lite merges them into one legend."""
    import altair as alt

    domain = [e.label for e in entries]

    def scale(values: list[str]) -> alt.Scale:
        return alt.Scale(domain=domain, range=values)

    return {
        "color": alt.Color(f"{field}:N", title=None, scale=scale([e.colour for e in entries])),
        "fill": alt.Fill(
            f"{field}:N", title=None, scale=scale([e.colour if e.filled else "transparent" for e in entries])
        ),
        "shape": alt.Shape(f"{field}:N", title=None, scale=scale([e.shape for e in entries])),
    }


def timing_marks(theme: ChartTheme, oom: bool = False, unstable: bool = True) -> tuple[alt.Shape, alt.Legend]:
    """The shape channel of a chart whose colour is its series: a filled circle per stable point, a hollow
    triangle per unstable one, a cross per first OOM batch; its legend draws the symbols in the text colour
    and names only the marks the chart holds (``oom``, ``unstable``)."""
    import altair as alt

    marks = [(STABLE, "circle")] + ([(UNSTABLE, "triangle-up")] if unstable else []) + ([(OOM, "cross")] if oom else [])
    legend = alt.Legend(title=None, symbolStrokeColor=theme.text, symbolFillColor="transparent", symbolStrokeWidth=1.5)
    scale = alt.Scale(domain=[m[0] for m in marks], range=[m[1] for m in marks])
    return alt.Shape("timing:N", title=None, scale=scale, legend=legend), legend


def timing(flags: list[bool]) -> list[str]:
    return [UNSTABLE if f else STABLE for f in flags]


def points(
    frame: pd.DataFrame,
    x: Any,
    y: Any,
    color: tuple[str, str, list[Any] | None],
    theme: ChartTheme,
    tooltip: list[Any],
    oom: bool = False,
    legend: bool = True,
) -> Any:
    """Timed points coloured by ``color`` (field, legend title, order): stable filled, unstable hollow triangles;
    ``legend=False`` when the chart's lines draw the colour's legend (with their line styles)."""
    import altair as alt

    shape, _ = timing_marks(theme, oom, unstable=bool((frame.timing == UNSTABLE).any()))
    field, title, order = color
    sort: Any = order if order is not None else "ascending"
    fill = alt.Fill(field, sort=sort, legend=None)  # the colour's legend already names the series
    return (
        alt.Chart(frame)
        .mark_point(size=60, opacity=1, strokeWidth=1.5)
        .encode(
            x=x,
            y=y,
            color=alt.Color(field, title=title, sort=sort) if legend else alt.Color(field, sort=sort, legend=None),
            shape=shape,
            fill=alt.condition(alt.datum.timing == STABLE, fill, alt.value("transparent")),
            tooltip=tooltip,
        )
    )
