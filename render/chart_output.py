"""What a chart is once drawn: its SVGs and specs as text (``render.charts.render`` returns it).

Its own module, without altair or vl-convert, because a build keeps drawn charts between runs
(``render.incremental.DerivedCache``) and reading one back must not import the libraries that drew it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ChartOutput:
    """One rendered chart, in the light and the dark theme."""

    svg: str
    """Static SVG in the light theme, offline and deterministic, ids prefixed by the spec's hash."""
    spec_json: str
    """The light Vega-Lite spec as JSON, ``<``, ``>``, ``&`` written as ``\\u003c`` etc. (safe inside a <script>)."""
    alt: str
    """A plain-text description of what the chart shows, for the image's alt text."""
    dark_svg: str = ""
    """The same chart in the dark theme (transparent background, light text)."""
    dark_spec_json: str = ""
    """The dark theme's spec, escaped like ``spec_json``."""
