"""A real headless Chromium reads the reproduction fixture site's new pages (a record's Reproductions section, a
comparison page, the Records index, a reproduction's evidence page) at 1440 and 390 px: no console error, no
dialog from the hostile text, no request off localhost, no table clipped without a scroll cue; screenshots go to
``test-artifacts/browser/reproduction/``."""

from __future__ import annotations

import functools
import http.server
import threading
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
from conftest import HANG_S
from test_browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, LOCAL_HOSTS, TABLES_JS, WIDTHS, _QuietHandler
from test_reproduction_site import CROSS, RECORD, REPRO, built_site

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # end to end: a built site read in Chromium at two widths
PAGES = (
    f"{RECORD}.html",
    f"evidence/comparison/{REPRO[7:]}.html",
    f"evidence/comparison/{CROSS[7:]}.html",
    "records/index.html",
    f"evidence/{REPRO[7:]}.html",
)


def test_the_reproduction_pages_read_cleanly_at_desktop_and_phone_widths(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install -y chromium; .ci/run does it)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    folder: Path = built_site(tmp_path_factory).site
    handler = functools.partial(_QuietHandler, directory=str(folder))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}/"
    problems: list[str] = []
    try:
        with sync_api.sync_playwright() as pw:
            chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                for width in WIDTHS:
                    context = chromium.new_context(viewport={"width": width, "height": 900})
                    page = context.new_page()
                    page.set_default_timeout(HANG_S * 1000)
                    seen: list[str] = []

                    def route(r: Any, seen: list[str] = seen) -> None:
                        if urllib.parse.urlsplit(r.request.url).hostname in LOCAL_HOSTS:
                            r.continue_()
                        else:
                            seen.append(f"off localhost: {r.request.url}")
                            r.abort()

                    context.route("**/*", route)
                    page.on("console", lambda m, seen=seen: seen.append(m.text) if m.type == "error" else None)
                    page.on("pageerror", lambda e, seen=seen: seen.append(str(e)))
                    page.on("dialog", lambda d, seen=seen: (seen.append(f"dialog: {d.message}"), d.dismiss()))
                    for rel in PAGES:
                        page.goto(base + rel, wait_until="networkidle")
                        for table in page.evaluate(TABLES_JS):
                            if table["clipped"] and not (table["scrolls"] and table["cue"]):
                                seen.append(f"table {table['head'][:60]!r} clipped without a scroll cue")
                        shot = ARTIFACTS / "reproduction" / f"{rel[:-5].replace('/', '-')[:60]}-{width}.png"
                        shot.parent.mkdir(parents=True, exist_ok=True)
                        page.screenshot(path=str(shot), full_page=True)
                        problems += [f"{rel} at {width} px: {s}" for s in seen]
                        seen.clear()
                    assert page.goto(base + PAGES[0]) is not None
                    assert page.locator("h2#reproductions").is_visible()
                    context.close()
            finally:
                chromium.close()
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)
    assert not problems, problems
    assert len(list((ARTIFACTS / "reproduction").glob("*.png"))) >= len(PAGES) * len(WIDTHS)
