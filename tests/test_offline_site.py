"""The site opened from disk: 404.html's links relative to the site root, search's index inlined for file:// pages
from the sanitized one, and the iframe-worker shim served from the site (a real fixture build, and literal HTML)."""

from __future__ import annotations

import json
from pathlib import Path

from render.assemble.stages import BuildPaths
from render.site import assets as site_assets
from render.site import folder as sitedir


def test_relative_404_rewrites_root_absolute_links_only(tmp_path: Path) -> None:
    page = tmp_path / "404.html"
    page.write_bytes(
        b'<link href="/assets/main.css"><a href="/index.html">home</a><a href="//example.org/x">x</a>'
        b'<a href="records/a.html">a</a><script src="/assets/b.js"></script>{"base": "/"}'
    )
    assert sitedir.relative_404(tmp_path) is True
    assert page.read_bytes() == (
        b'<link href="./assets/main.css"><a href="./index.html">home</a><a href="//example.org/x">x</a>'
        b'<a href="records/a.html">a</a><script src="./assets/b.js"></script>{"base": "."}'
    )
    assert sitedir.relative_404(tmp_path) is False  # already relative: unchanged
    assert sitedir.relative_404(tmp_path / "missing") is False


def test_polyfill_is_named_in_the_config_and_served_from_the_site() -> None:
    config: dict = {"extra": {"polyfills": ["mine.js"]}}
    site_assets.add_to_config(config)
    assert config["extra"]["polyfills"] == ["mine.js", "assets/probebook/iframe-worker-shim.js"]
    shim = site_assets.site_files()["assets/probebook/iframe-worker-shim.js"]
    assert shim.startswith(b"/*! iframe-worker 1.0.4 (shim) | MIT License") and b"window.IFrameWorker" in shim


def test_built_site_works_from_disk(fixture_site: BuildPaths) -> None:
    site = fixture_site.site
    page404 = (site / "404.html").read_text(encoding="utf-8")
    assert 'href="/' not in page404 and 'src="/' not in page404 and 'href="./index.html"' in page404
    index = site / "search" / "search_index.json"
    inline = (site / "search" / "search_index.js").read_text(encoding="utf-8")
    assert inline == "var __index = " + index.read_text(encoding="utf-8")  # the sanitized index, not the engine's
    assert json.loads(inline[len("var __index = ") :])["docs"]
    home = (site / "index.html").read_text(encoding="utf-8")
    assert 'src="assets/probebook/iframe-worker-shim.js"' in home and "unpkg.com" not in home
    assert (site / "assets" / "probebook" / "iframe-worker-shim.js").is_file()
