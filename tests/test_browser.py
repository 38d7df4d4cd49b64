"""A real headless Chromium loads the built fixture site from a local server: no console errors, no request
off localhost, the charts' SVG present and loaded, downloads served; screenshots kept in test-artifacts/browser/."""

from __future__ import annotations

import functools
import http.server
import threading
import urllib.parse
from pathlib import Path
from typing import Any, Iterator

import pytest

from render.build import BuildPaths

REPO = Path(__file__).resolve().parent.parent
SITE_FIXTURE = REPO / "tests" / "fixtures" / "site"
ARTIFACTS = REPO / "test-artifacts" / "browser"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LOCAL_HOSTS = {"127.0.0.1", "localhost"}
RECORD = "records/step-time/v2.html"

pytestmark = pytest.mark.browser


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the site folder; keeps the test output clean and records every path asked for."""

    requested: list[str]

    def log_message(self, format: str, *args: Any) -> None:
        self.requested.append(self.path)


@pytest.fixture(scope="module")
def site(fixture_site: BuildPaths) -> Path:
    """The fixture site, built once per test process (``conftest.fixture_site``); the browser only reads it."""
    return fixture_site.site


@pytest.fixture(scope="module")
def server(site: Path) -> Iterator[tuple[str, list[str]]]:
    """``http.server`` on 127.0.0.1 (a free port) in a thread; yields the base URL and the served paths."""
    requested: list[str] = []
    handler = type("Handler", (_QuietHandler,), {"requested": requested})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(site)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/", requested
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install -y chromium; .ci/run does it)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


class Visit:
    """One page load with everything the page did recorded."""

    def __init__(self, browser: Any, url: str, shot: str):
        self.requests: list[str] = []
        self.offsite: list[str] = []
        self.console_errors: list[str] = []
        self.failures: list[str] = []
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        # anything not on localhost is recorded and aborted, so a leak fails the test without reaching out
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("console", lambda m: self.console_errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.console_errors.append(str(e)))
        self.page.on("requestfailed", lambda r: self.failures.append(f"{r.url}: {r.failure}"))
        self.page.on(
            "response", lambda r: self.failures.append(f"{r.url}: HTTP {r.status}") if r.status >= 400 else None
        )
        self.page.goto(url, wait_until="networkidle")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(ARTIFACTS / shot), full_page=True)

    def _route(self, route: Any) -> None:
        url = route.request.url
        if urllib.parse.urlsplit(url).hostname in LOCAL_HOSTS or url.startswith(("data:", "blob:")):
            route.continue_()
        else:
            self.offsite.append(url)
            route.abort()

    def assert_clean(self) -> None:
        assert self.requests, "the page made no requests at all"
        hosts = {urllib.parse.urlsplit(u).hostname for u in self.requests if not u.startswith(("data:", "blob:"))}
        assert hosts <= LOCAL_HOSTS, f"requests left localhost: {sorted(hosts - LOCAL_HOSTS)}"
        assert not self.offsite, f"requests left localhost: {self.offsite}"
        assert not self.console_errors, f"console errors: {self.console_errors}"
        assert not self.failures, f"failed requests: {self.failures}"

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def visit(browser: Any) -> Iterator[Any]:
    opened: list[Visit] = []

    def open_page(url: str, shot: str) -> Visit:
        v = Visit(browser, url, shot)
        opened.append(v)
        return v

    yield open_page
    for v in opened:
        v.close()


def chart_images(page: Any) -> list[dict[str, Any]]:
    """Every chart image in the page's article: its src and whether the browser decoded it."""
    return page.eval_on_selector_all(
        'article img[src$=".svg"]',
        "els => els.map(e => ({src: e.getAttribute('src'), ok: e.complete && e.naturalWidth > 0, "
        "w: e.naturalWidth, alt: e.getAttribute('alt')}))",
    )


def test_home_page_loads_clean(server: tuple[str, list[str]], visit: Any) -> None:
    base, _ = server
    v = visit(base + "index.html", "home.png")
    v.assert_clean()
    assert v.page.locator("header").count() >= 1
    assert "probebook" in v.page.title()
    # the theme's own icons are inline SVG: present, so the page drew without any network font or icon
    assert v.page.locator("svg").count() > 0


def test_record_page_shows_its_chart_svg(server: tuple[str, list[str]], visit: Any) -> None:
    base, requested = server
    v = visit(base + RECORD, "record.png")
    v.assert_clean()
    images = chart_images(v.page)
    assert images, "the record shows no chart"
    for img in images:
        assert img["ok"], f"chart {img['src']} did not load"
        assert img["w"] >= 300 and img["alt"] and "Step time" in img["alt"]
        assert any(p.endswith(img["src"].rsplit("/", 1)[-1]) for p in requested), "the SVG was not fetched"
    svg = v.page.request.get(urllib.parse.urljoin(v.page.url, images[0]["src"]))
    assert svg.status == 200 and svg.headers["content-type"].startswith("image/svg+xml")
    assert svg.text().startswith("<svg") and "<script" not in svg.text()
    # the numbers in the prose link to evidence pages on this site
    assert v.page.locator('article a[href*="evidence/"]').count() > 0


def test_evidence_page_reached_from_the_record(server: tuple[str, list[str]], visit: Any) -> None:
    base, _ = server
    v = visit(base + RECORD, "record-before-click.png")
    link = v.page.locator('article a[href*="evidence/"]').first
    with v.page.expect_navigation(wait_until="networkidle"):
        link.click()
    assert "/evidence/" in v.page.url
    v.page.screenshot(path=str(ARTIFACTS / "evidence.png"), full_page=True)
    v.assert_clean()
    assert v.page.locator("article table").count() >= 1  # the raw samples table
    downloads = v.page.eval_on_selector_all(
        'article a[href$=".csv"], article a[href$=".json"]', "els => els.map(e => e.href)"
    )
    assert any(d.endswith(".csv") for d in downloads) and any(d.endswith(".json") for d in downloads)
    for href in downloads:
        assert urllib.parse.urlsplit(href).hostname in LOCAL_HOSTS
        got = v.page.request.get(href)
        assert got.status == 200 and got.body(), f"download {href} failed"
