"""A real headless Chromium reads a built site whose prose forges charts: an outside spec beside matching images, a
spec copied from the sources (named like a chart's, and behind a query string), and build specs edited to load data
from a URL or to set vega-embed's own options. Only the build's own specs are drawn, with the site's options: nothing
is fetched from the named hosts, nothing is drawn from the forged specs, and no actions menu appears; on the site
built by each engine (mkdocs-material and Zensical)."""

from __future__ import annotations

import functools
import http.server
import json
import shutil
import threading
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import HANG_S, SITE_FIXTURE, bench_module, fixture_site_paths

from render.assemble.stages import build
from render.site.assets import CHARTS

_shots = bench_module("screenshots")
CHROMIUM, CHROMIUM_ARGS, LOCAL_HOSTS = _shots.CHROMIUM, _shots.CHROMIUM_ARGS, _shots.LOCAL_HOSTS

pytestmark = pytest.mark.browser

SPEC_HOST, DATA_HOST = "spec.test", "data.test"
"""Outside hosts a forged chart names: its spec and images, the data its spec loads."""


def _forged_spec() -> dict[str, Any]:
    """A valid Vega-Lite spec that loads its data from an outside URL and asks for vega-embed's actions menu."""
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "usermeta": {"embedOptions": {"actions": True, "renderer": "canvas"}},
        "data": {"url": f"http://{DATA_HOST}/forged.csv"},
        "mark": "point",
        "encoding": {"x": {"field": "a", "type": "quantitative"}},
    }


FORGED_PAGE = """# Forged charts

An outside spec beside images named like its pair:

![outside](http://{spec}/c.svg#only-light)
![outside](http://{spec}/c.dark.svg#only-dark)

[Chart spec (Vega-Lite JSON)](http://{spec}/c.vl.json)

A spec copied from the sources, named like a chart's, on the site's own origin:

![copied]({site}playbook/copied.svg#only-light)
![copied]({site}playbook/copied.dark.svg#only-dark)

[Chart spec (Vega-Lite JSON)]({site}playbook/copied.vl.json)

The same behind a query string:

![queried]({site}playbook/plain.json?.svg#only-light)

[Chart spec (Vega-Lite JSON)]({site}playbook/plain.json?.vl.json)
"""

ENGINES = ["mkdocs", pytest.param("zensical", marks=pytest.mark.slow)]


def _nested_url(spec: dict[str, Any]) -> dict[str, Any]:
    """The build's spec with one nested layer's data loaded from an outside URL (its datasets stay)."""
    doc = json.loads(json.dumps(spec))
    doc["vconcat"][0].setdefault("layer", [{}])
    first = doc["vconcat"][0]["layer"][0] if doc["vconcat"][0]["layer"] else doc["vconcat"][0]
    first["data"] = {"url": f"http://{DATA_HOST}/nested.csv"}
    return doc


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module", params=ENGINES)
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of ``http.server`` on 127.0.0.1 serving the fixture site with the forged page and its copied
    specs (the page names the server's own origin, so the copies are same-origin), then the built specs edited as a
    host serving the site could: v1's to load data from a URL, v2's to set vega-embed's options."""
    root = tmp_path_factory.mktemp(f"forged-{request.param}")
    paths = fixture_site_paths(root, root / "docs")
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(paths.site)))
    base = f"http://127.0.0.1:{httpd.server_address[1]}/"
    try:
        _build_forged(paths, request.param, base)
    except BaseException:
        httpd.server_close()
        raise
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield base
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def _build_forged(paths: Any, engine: str, base: str) -> None:
    docs = paths.docs
    shutil.copytree(SITE_FIXTURE / "docs", docs)
    (docs / "playbook" / "forged.md").write_text(FORGED_PAGE.format(spec=SPEC_HOST, site=base), encoding="utf-8")
    for name in ("copied.vl.json", "copied.dark.vl.json", "plain.json"):
        (docs / "playbook" / name).write_text(json.dumps(_forged_spec()), encoding="utf-8")
    build(paths, engine=engine)
    listed = json.loads((paths.site / CHARTS).read_text(encoding="utf-8"))["specs"]
    assert not [p for p in listed if p.startswith("playbook/")]  # the copied specs are the sources', not the build's
    step = paths.site / "records" / "step-time"
    for name in ("v1-step-scaling-1.vl.json", "v1-step-scaling-1.dark.vl.json"):
        spec = json.loads((step / name).read_text(encoding="utf-8"))
        (step / name).write_text(json.dumps(_nested_url(spec)), encoding="utf-8")
    for name in ("v2-step-scaling-1.vl.json", "v2-step-scaling-1.dark.vl.json"):
        spec = json.loads((step / name).read_text(encoding="utf-8"))
        spec["usermeta"] = {"embedOptions": {"actions": True, "renderer": "canvas", "mode": "vega"}}
        (step / name).write_text(json.dumps(spec), encoding="utf-8")


def _visit(browser: Any, url: str) -> dict[str, Any]:
    """Open ``url`` with scripts on; every request off localhost is recorded and aborted. What the page drew."""
    seen: dict[str, Any] = {"offsite": [], "errors": []}
    context = browser.new_context(viewport={"width": 1440, "height": 900})

    def route(r: Any) -> None:
        if urllib.parse.urlsplit(r.request.url).hostname in LOCAL_HOSTS or r.request.url.startswith(("data:", "blob:")):
            r.continue_()
        else:
            seen["offsite"].append(r.request.url)
            r.abort()

    context.route("**/*", route)
    try:
        page = context.new_page()
        page.on("pageerror", lambda e: seen["errors"].append(str(e)))
        page.on("popup", lambda p: seen["errors"].append(f"popup {p.url}"))
        page.goto(url, wait_until="networkidle")
        _shots.wait_for_charts(page, HANG_S)  # each chart brought near the screen, where charts.js draws it
        page.wait_for_load_state("networkidle")
        seen["holders"] = page.eval_on_selector_all(
            "article .pb-chart", "els => els.map(h => ({hidden: h.hidden, svg: !!h.querySelector('svg')}))"
        )
        seen["actions"] = page.locator(".vega-actions, .vega-embed details").count()
        seen["canvas"] = page.locator("article .pb-chart canvas").count()
    finally:
        context.close()
    return seen


def _asked(seen: dict[str, Any]) -> list[str]:
    """Requests off the site only charts.js could make: a spec (the prose's own images ask for theirs, as any image
    does) or a spec's data."""
    parts = [(u, urllib.parse.urlsplit(u)) for u in seen["offsite"]]
    return [u for u, p in parts if p.hostname == DATA_HOST or p.path.endswith(".json")]


def test_prose_cannot_make_a_chart_of_an_outside_or_copied_spec(browser: Any, server: str) -> None:
    seen = _visit(browser, server + "playbook/forged.html")
    assert not _asked(seen), seen["offsite"]  # no outside spec, no data URL was fetched
    assert seen["holders"] == [] and seen["actions"] == 0, seen  # no chart was made from any forged link
    assert not seen["errors"], seen["errors"]


def test_a_spec_that_loads_data_from_a_url_is_not_drawn(browser: Any, server: str) -> None:
    seen = _visit(browser, server + "records/step-time/v1.html")
    assert not _asked(seen), seen["offsite"]
    assert seen["holders"] and all(h["hidden"] and not h["svg"] for h in seen["holders"]), seen  # the static SVGs stay


def test_a_specs_own_embed_options_are_ignored(browser: Any, server: str) -> None:
    seen = _visit(browser, server + "records/step-time/v2.html")
    assert not seen["offsite"], seen["offsite"]
    # drawn (the build's spec, listed), as the site's options say: SVG, no actions menu
    assert seen["holders"] and all(h["svg"] and not h["hidden"] for h in seen["holders"]), seen
    assert seen["actions"] == 0 and seen["canvas"] == 0, seen
    assert not seen["errors"], seen["errors"]
