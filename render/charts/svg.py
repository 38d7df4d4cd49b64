"""A Vega-Lite spec -> deterministic, offline SVG through vl-convert (ARCHITECTURE.md §Charts and tables).

vl-convert embeds Vega and draws without a browser or network. It numbers clip paths and
gradients with a process-wide counter (``clip1``, ``clip2`` ... on successive calls), so every
``id`` is renamed to a prefix taken from the spec's hash, which also keeps ids apart when several
charts sit in one page. Text from evidence (arm names, models) is escaped by vl-convert's SVG
writer; an SVG that still holds a script is refused.

vl-convert is imported inside the two functions that call it (``raw_svg``, ``warm``), not at the top:
describing a chart (``render.charts.draw.describe``) imports this module and must not load it, and
``render.assemble.parallel.fork_is_safe`` reads "vl_convert is imported" as "its runtime has started".
"""

from __future__ import annotations

import functools
import hashlib
import re
from typing import Any

from measure.errors import ProbebookError


def without_tooltips(spec: Any) -> Any:
    """The spec less its ``tooltip`` encodings: a static SVG cannot show them, and vl-convert takes
    about twice as long to draw a chart whose every mark carries a formatted tooltip."""
    if isinstance(spec, dict):
        return {k: without_tooltips(v) for k, v in spec.items() if k != "tooltip"}
    if isinstance(spec, list):
        return [without_tooltips(v) for v in spec]
    return spec


@functools.lru_cache(maxsize=256)
def raw_svg(spec_text: str) -> str:
    """Vega-Lite JSON -> SVG as vl-convert draws it, ids not yet renamed (cached: a chart on two pages, or the
    same chart in a second theme, is drawn once)."""
    import vl_convert as vlc  # here, not at the top: see the module's docstring

    # allowed_base_urls=[]: never fetch data from anywhere, even if a spec named a URL (offline build)
    svg: str = vlc.vegalite_to_svg(spec_text, allowed_base_urls=[])
    return svg


def svg_from_spec(spec_text: str) -> str:
    """Vega-Lite JSON -> deterministic SVG."""
    return finish(raw_svg(spec_text), spec_text)


def finish(svg: str, spec_text: str) -> str:
    """An SVG drawn from ``spec_text`` with its ids renamed after the spec's hash, refused if it holds a script."""
    svg = namespace_ids(svg, "pb" + hashlib.sha256(spec_text.encode("utf-8")).hexdigest()[:12])
    if re.search(r"<script|\son[a-z]+\s*=|javascript:", svg, re.IGNORECASE):
        raise ProbebookError("a chart's SVG holds script content; refusing to publish it")
    return svg


def recolour_spec(spec: Any, colours: dict[str, str]) -> Any:
    """``spec`` with every string that is a key of ``colours`` replaced by its value (``chart_theme.colour_map``)."""
    if isinstance(spec, dict):
        return {k: recolour_spec(v, colours) for k, v in spec.items()}
    if isinstance(spec, list):
        return [recolour_spec(v, colours) for v in spec]
    if isinstance(spec, str):
        return colours.get(spec, spec)
    return spec


_PAINT = re.compile(r'((?:fill|stroke|stop-color)=")(#[0-9a-fA-F]{6})(")')


def recolour_svg(svg: str, colours: dict[str, str]) -> str:
    """What vl-convert draws for ``recolour_spec(spec, colours)``, made from what it drew for ``spec``.

    vl-convert writes a spec's colours through unchanged as ``fill``/``stroke`` attributes, and a
    background as a first ``<rect>`` the size of the chart, which it leaves out for ``transparent``;
    so a second theme needs no second drawing. ``tests/test_charts.py`` draws every kind in both themes
    and checks this gives the same bytes.
    """
    hexes = {k.lower(): v for k, v in colours.items() if k.startswith("#")}
    for old, new in colours.items():
        if new == "transparent":  # only a background may become transparent: its rect goes
            svg = re.sub(
                r'^(<svg[^>]*>)<rect width="[\d.]+" height="[\d.]+" fill="' + re.escape(old) + '"/>',
                r"\1",
                svg,
                count=1,
            )
        elif not new.startswith("#"):
            raise ValueError(f"cannot recolour {old} to {new!r}: only #rrggbb colours and a transparent background")
    return _PAINT.sub(lambda m: m.group(1) + hexes.get(m.group(2).lower(), m.group(2)) + m.group(3), svg)


_ID_REF = re.compile(r'(\bid=")([^"]+)(")|(url\(#)([^)]+)(\))|((?:xlink:)?href="#)([^"]+)(")')


def namespace_ids(svg: str, prefix: str) -> str:
    """Rename every ``id`` (and its ``url(#..)``/``href="#.."`` uses) to ``<prefix>-<n>`` in order of first use."""
    names: dict[str, str] = {}

    def sub(m: re.Match[str]) -> str:
        groups = m.groups()
        for i in (0, 3, 6):
            if groups[i] is not None:
                old = groups[i + 1]
                new = names.setdefault(old, f"{prefix}-{len(names) + 1}")
                return groups[i] + new + groups[i + 2]
        return m.group(0)  # pragma: no cover - the pattern has exactly three alternatives

    return _ID_REF.sub(sub, svg)


def script_safe(text: str) -> str:
    """JSON text with ``<``, ``>``, ``&`` as unicode escapes: still the same JSON, safe inside HTML."""
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


@functools.lru_cache(maxsize=1)
def warm() -> None:
    """Ready this process to draw charts, once: import altair (``render.charts.draw`` imports it only to draw) and
    draw one trivial chart, since vl-convert starts its JavaScript runtime on the first drawing (about 1.6 s);
    neither must count against a page's time limit (``render.functions.derivations.load_libraries``)."""
    import altair  # noqa: F401
    import vl_convert as vlc  # here, not at the top: see the module's docstring

    spec = {"data": {"values": [{"x": 1}]}, "mark": "point", "encoding": {"x": {"field": "x", "type": "quantitative"}}}
    vlc.vegalite_to_svg(spec, allowed_base_urls=[])
