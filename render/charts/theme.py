"""How charts look: a colour-blind-safe palette, a light and a dark theme, and text sizes that stay legible on a phone.

Every chart is drawn twice, once per theme (``THEMES``): the light SVG is shown under
mkdocs-material's default scheme and the dark one under ``slate`` (the theme hides an image
whose address ends ``#only-light`` or ``#only-dark`` in the other scheme), so a dark page never
shows a white box. Colours come from the Okabe–Ito palette (M. Okabe and K. Ito, *Color
Universal Design*, 2002, https://jfly.uni-koeln.de/color/), chosen to stay distinct under the
common colour-vision deficiencies; marks that mean something besides their series (a fit, an
out-of-memory batch, an unstable point) also differ in shape or dash, never in colour alone.

Legibility (ARCHITECTURE.md §Charts and tables): a page shows an SVG at its own width, shrunk to the column
when the column is narrower. On a 390-px-wide phone the column is about 358 px (mkdocs-material's
0.8 rem margins at 20 px), so a chart at most ``MAX_WIDTH_PX`` wide with text of at least
``TEXT_PX`` keeps every glyph at 12 px or more: ``TEXT_PX * 358 / MAX_WIDTH_PX >= 12``.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any

OKABE_ITO = {
    "orange": "#E69F00",
    "sky blue": "#56B4E9",
    "bluish green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "reddish purple": "#CC79A7",
}
"""The Okabe–Ito colours (their black left out: it is the text colour of the light theme)."""

TEXT_PX = 13
"""The smallest text in a chart (axis labels, legend entries, mark labels), px at the SVG's own size."""
TITLE_PX = 15
"""A chart's title, px."""
PHONE_COLUMN_PX = 358
"""The content column of a 390-px-wide screen under mkdocs-material (390 px less two 16-px margins)."""
MAX_WIDTH_PX = 384
"""The widest a chart's SVG may be: 13 px text shrunk to a 358-px column is still 12.1 px."""
PLOT_WIDTH_PX = 280
"""The plotting area of a chart with a y axis beside it (the axis' labels and title take the rest)."""
TITLE_CHARS = 40
"""A title wraps onto another line past this many characters (about ``MAX_WIDTH_PX`` at ``TITLE_PX``)."""


@dataclass(frozen=True)
class ChartTheme:
    """One colour scheme for charts."""

    name: str
    """``light`` or ``dark``."""
    suffix: str
    """What the theme's files add before their suffix (``""`` or ``.dark``): ``v2-step-scaling-1.dark.svg``."""
    fragment: str
    """The address fragment that makes mkdocs-material show the image only in this scheme."""
    background: str
    """The chart's background (the dark one is transparent over the page's own)."""
    text: str
    """Titles, labels and legends."""
    muted: str
    """Axis lines, ticks and reference rules."""
    grid: str
    """Grid lines."""
    series: tuple[str, ...]
    """Colours of a chart's series (contexts, arms, runs), in order."""
    fit: str
    """A fitted curve and its residuals."""
    excluded: str
    """Samples left out of a fit."""


LIGHT = ChartTheme(
    name="light",
    suffix="",
    fragment="#only-light",
    background="#ffffff",
    text="#1f1f1f",
    muted="#6b6b6b",
    grid="#e3e3e3",
    series=tuple(OKABE_ITO[c] for c in ("blue", "orange", "bluish green", "reddish purple", "sky blue", "yellow")),
    fit=OKABE_ITO["vermillion"],
    excluded="#9a9a9a",
)
DARK = ChartTheme(
    name="dark",
    suffix=".dark",
    fragment="#only-dark",
    background="transparent",
    text="#e2e4e9",
    muted="#9ba1ad",
    grid="#3b4050",
    # the Okabe–Ito blue is too dark on slate: sky blue leads instead
    series=tuple(OKABE_ITO[c] for c in ("sky blue", "orange", "bluish green", "reddish purple", "yellow", "blue")),
    fit=OKABE_ITO["vermillion"],
    excluded="#7d8290",
)
THEMES = (LIGHT, DARK)
"""Every chart is drawn in each, light first."""


def colour_map(source: ChartTheme, target: ChartTheme) -> dict[str, str]:
    """Each colour ``source`` uses -> the colour ``target`` uses in the same role (background, text, series i ...).

    The builders take colours only from their theme, so a chart in ``target`` is the chart in ``source``
    with every colour swapped by this map (``render.charts.svg.recolour``): a second theme costs a string
    pass, not a second drawing. A colour in two roles with two different targets cannot be swapped and is
    refused here, which a test of every theme pair checks.
    """
    roles = [
        (source.background, target.background),
        (source.text, target.text),
        (source.muted, target.muted),
        (source.grid, target.grid),
        (source.fit, target.fit),
        (source.excluded, target.excluded),
        *zip(source.series, target.series, strict=True),
    ]
    out: dict[str, str] = {}
    for old, new in roles:
        if out.setdefault(old, new) != new:
            raise ValueError(f"colour {old} has two roles in theme {source.name!r}; cannot recolour to {target.name!r}")
    return out


def config(theme: ChartTheme) -> dict[str, Any]:
    """The Vega-Lite ``config`` block of ``theme``: colours, and every text at ``TEXT_PX`` or more."""
    text = {"labelFontSize": TEXT_PX, "titleFontSize": TEXT_PX, "labelColor": theme.text, "titleColor": theme.text}
    return {
        "background": theme.background,
        "view": {"stroke": theme.grid},
        "axis": {
            **text,
            "titleFontWeight": "normal",
            "gridColor": theme.grid,
            "domainColor": theme.muted,
            "tickColor": theme.muted,
        },
        "legend": {
            **text,
            "titleFontWeight": "normal",
            "symbolSize": 90,
            "orient": "bottom",
            "columns": 2,
            # legends below the plot stack downwards, so a chart with three stays narrow
            "layout": {"bottom": {"anchor": "start", "direction": "vertical"}},
        },
        "header": text,
        "title": {
            "fontSize": TITLE_PX,
            "color": theme.text,
            "anchor": "start",
            "fontWeight": "bold",
            "subtitleFontSize": TEXT_PX,
            "subtitleColor": theme.text,
        },
        "text": {"fontSize": TEXT_PX, "color": theme.text},
        "range": {"category": list(theme.series), "ordinal": list(theme.series)},
    }


def wrap_title(text: str, chars: int = TITLE_CHARS) -> str | list[str]:
    """A title as one line, or as lines of at most ``chars`` characters (Vega draws a list as lines)."""
    lines = textwrap.wrap(text, chars, break_long_words=False)
    return lines[0] if len(lines) == 1 else lines or text


def markdown(name: str, alt: str) -> str:
    """The Markdown that shows chart ``name`` (a file stem): each theme's SVG, shown only in its own colour
    scheme, then a link to the light spec (``charts.js`` finds the chart by it and draws it interactively)."""
    images = "".join(f"![{alt}]({name}{t.suffix}.svg{t.fragment})\n" for t in THEMES)
    return f"{images}\n[Chart spec (Vega-Lite JSON)]({name}.vl.json)\n"
