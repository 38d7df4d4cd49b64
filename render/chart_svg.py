"""A Vega-Lite spec -> deterministic, offline SVG through vl-convert (ARCHITECTURE.md §6.5).

vl-convert embeds Vega and draws without a browser or network. It numbers clip paths and
gradients with a process-wide counter (``clip1``, ``clip2`` ... on successive calls), so every
``id`` is renamed to a prefix taken from the spec's hash, which also keeps ids apart when several
charts sit in one page. Text from evidence (arm names, models) is escaped by vl-convert's SVG
writer; an SVG that still holds a script is refused.
"""

from __future__ import annotations

import functools
import hashlib
import re
from typing import Any

import vl_convert as vlc

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
def svg_from_spec(spec_text: str) -> str:
    """Vega-Lite JSON -> deterministic SVG (cached: the same chart on two pages is drawn once)."""
    # allowed_base_urls=[]: never fetch data from anywhere, even if a spec named a URL (offline build)
    svg = vlc.vegalite_to_svg(spec_text, allowed_base_urls=[])
    svg = namespace_ids(svg, "pb" + hashlib.sha256(spec_text.encode("utf-8")).hexdigest()[:12])
    if re.search(r"<script|\son[a-z]+\s*=|javascript:", svg, re.IGNORECASE):
        raise ProbebookError("a chart's SVG holds script content; refusing to publish it")
    return svg


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
    """Draw one trivial chart, once per process: vl-convert starts its JavaScript runtime on the first drawing
    (about 1.6 s), which must not count against a page's time limit (``render.functions.load_libraries``)."""
    spec = {"data": {"values": [{"x": 1}]}, "mark": "point", "encoding": {"x": {"field": "x", "type": "quantitative"}}}
    vlc.vegalite_to_svg(spec, allowed_base_urls=[])
