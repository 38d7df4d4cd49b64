"""What a chart is once drawn: its SVGs and specs as text (``render.charts.draw.render`` returns it).

Its own module, without altair or vl-convert, because a build keeps drawn charts between runs
(``render.assemble.incremental.DerivedCache``) and reading one back must not import the libraries that drew it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


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


PENDING = "probebook: made while the site engine runs: "
"""How every placeholder begins (``render.assemble.deferred``); no file the build writes for good begins so."""


@dataclass(frozen=True)
class PendingChart:
    """A chart described but not yet drawn (``render.assemble.deferred``): its alt text now, its files once drawn.

    Its four texts are placeholders, one per file, named after the chart's derivation key, so the build
    finds and replaces them wherever a page wrote them; ``kind``, ``ids`` and ``options`` are the call that
    draws it (``render.charts.draw.render``).
    """

    token: str
    """SHA-256 (hex) of the chart's derivation key (``render.functions.derivations.Library``)."""
    alt: str
    """The alt text (``render.charts.draw.describe``): what the chart will show, known before it is drawn."""
    kind: str
    """The chart kind."""
    ids: tuple[str, ...]
    """The evidence ids it draws, in order."""
    options: dict[str, Any]
    """The chart's options, plain JSON data."""

    def placeholder(self, suffix: str) -> str:
        """What stands in for the chart's file ``suffix`` (``FILES``) until it is drawn."""
        return f"{PENDING}chart {self.token} {suffix}\n"

    def files(self, drawn: ChartOutput) -> dict[bytes, bytes]:
        """Placeholder -> the bytes ``drawn`` puts in its place, for each of the chart's files."""
        return dict(zip(chart_files(self).values(), chart_files(drawn).values(), strict=True))


FILES = {"svg": "svg", "dark.svg": "dark_svg", "vl.json": "spec_json", "dark.vl.json": "dark_spec_json"}
"""A chart's files beside its page: suffix -> the field that holds it."""


def chart_files(chart: ChartOutput | PendingChart) -> dict[str, bytes]:
    """Suffix -> bytes of each of a chart's files (placeholders, for a chart not yet drawn)."""
    if isinstance(chart, PendingChart):
        return {suffix: chart.placeholder(suffix).encode("utf-8") for suffix in FILES}
    return {suffix: getattr(chart, name).encode("utf-8") for suffix, name in FILES.items()}
