"""Files render adds to every site: stylesheets and scripts under ``assets/probebook/``
(ARCHITECTURE.md §Charts and tables).

Each is a file in ``render/assets/`` (or, for vega-embed, made at build time), copied into the tree
and named in the engine config's ``extra_css`` or ``extra_javascript``, so every page loads it from
the site itself; nothing is ever fetched from a CDN. Add a stylesheet or script by adding its name
to ``STYLESHEETS`` or ``SCRIPTS``.

Interactive charts: ``charts.js`` replaces each chart's static SVGs (``render.charts.theme.markdown``)
with a vega-embed view of its Vega-Lite spec in the page's colour scheme. vega-embed, Vega-Lite and
Vega come from vl-convert's own offline bundle (``vl_convert.javascript_bundle``), so the build needs
no network, and the bundle's bytes depend only on the vl-convert version, so the site stays
byte-identical for the same inputs.

``charts.js`` draws only the specs the build itself wrote: ``CHARTS`` lists them (``chart_manifest``), so a link in
prose to a spec elsewhere, or to a ``.json`` file copied from the sources, is never drawn, whatever its shape.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

FOLDER = "assets/probebook"
"""Where the assets sit in the site (reserved: ``render.pages.sources.RESERVED``)."""
HERE = Path(__file__).resolve().parent.parent / "assets"
"""Where the hand-written ones are kept in the package."""
STYLESHEETS = ("charts.css", "tables.css", "numbers.css")
"""Stylesheets in ``render/assets/``, added to ``extra_css`` in this order."""
SCRIPTS = ("charts.js", "numbers.js")
"""Scripts added to ``extra_javascript`` in this order, on every page."""
LAZY = ("vega-embed.js",)
"""Scripts in the site that no page names: ``charts.js`` loads the chart bundle (about 0.9 MB) itself, on a page
with a chart only and once a chart nears the screen, so a page without one stays light (issue 42)."""
POLYFILLS = ("iframe-worker-shim.js",)
"""Scripts the theme loads in the page head before its own (``extra.polyfills``): the iframe-worker shim that
mkdocs-material's offline plugin needs for search on file:// pages (the plugin would fetch it from a CDN when
none is named; one named here is used instead)."""


CHARTS = f"{FOLDER}/charts.json"
"""The manifest of chart specs the build wrote (``chart_manifest``), beside ``charts.js``, which reads it."""
SPEC_SUFFIX = ".vl.json"
"""A chart spec's file suffix (``render.charts.output.FILES``); the dark theme's is ``.dark.vl.json``."""


def chart_manifest(made: Iterable[str], copied: Iterable[str]) -> bytes:
    """The manifest ``charts.js`` reads: every chart spec among the tree paths ``made`` by the build, sorted, and
    none of the files ``copied`` from the sources (a copied ``.json`` may be named like a spec; it is prose's).

    A chart is drawn only when both its light and its dark spec are listed."""
    kept = set(copied)
    specs = sorted(p for p in set(made) if p.endswith(SPEC_SUFFIX) and p not in kept)
    return json.dumps({"specs": specs}, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


_BUNDLE_EXPORT = "window.vegaEmbed = vegaEmbed;"


@functools.lru_cache(maxsize=1)
def vega_embed_bundle() -> bytes:
    """vega-embed with Vega-Lite and Vega as one script that sets ``window.vegaEmbed`` (about 0.9 MB; made once
    per process, 1.4 s on an idle core)."""
    import vl_convert as vlc  # here, not at the top: a build imports this module before it needs the bundle

    return vlc.javascript_bundle(_BUNDLE_EXPORT).encode("utf-8")


def bundle_name() -> str:
    """The cached bundle's file name: the bundle is a function of vl-convert's version and the export line alone."""
    version = metadata.version("vl-convert-python")
    return f"vega-embed-{version}-{hashlib.sha256(_BUNDLE_EXPORT.encode()).hexdigest()[:12]}.js"


MADE: dict[str, Callable[[], bytes]] = {"vega-embed.js": vega_embed_bundle}
"""Assets made at build time rather than kept in ``render/assets/``; the build keeps them between builds
(``render.assemble.kept.asset_files``)."""


def site_files(made: dict[str, Callable[[], bytes]] | None = None) -> dict[str, bytes]:
    """Site path -> bytes of every asset; ``made``: how an asset of ``MADE`` is got instead of making it afresh (the
    build's, which keeps it between builds)."""
    makers = {**MADE, **(made or {})}
    return {
        f"{FOLDER}/{name}": makers[name]() if name in MADE else (HERE / name).read_bytes()
        for name in STYLESHEETS + SCRIPTS + LAZY + POLYFILLS
    }


def add_to_config(config: dict[str, Any]) -> None:
    """Append the stylesheets, scripts and polyfills to an engine config's ``extra_css``, ``extra_javascript`` and
    ``extra.polyfills``."""
    for key, names in (("extra_css", STYLESHEETS), ("extra_javascript", SCRIPTS)):
        given = config.get(key)
        listed = list(given) if isinstance(given, list) else []
        config[key] = listed + [f"{FOLDER}/{n}" for n in names if f"{FOLDER}/{n}" not in listed]
    given_extra = config.get("extra")
    extra: dict[str, Any] = given_extra if isinstance(given_extra, dict) else {}
    given = extra.get("polyfills")
    listed = list(given) if isinstance(given, list) else []
    extra["polyfills"] = listed + [f"{FOLDER}/{n}" for n in POLYFILLS if f"{FOLDER}/{n}" not in listed]
    config["extra"] = extra
