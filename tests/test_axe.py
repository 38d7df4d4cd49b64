"""axe-core, as the tour runs it, on literal pages: the site's stylesheet tells a number link from its text without
colour, and a planted colour-only link and low-contrast text are found (issue 42)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import axe_checks
import pytest
from conftest import bench_module

pytestmark = pytest.mark.browser
shots = bench_module("screenshots")
REPO = Path(__file__).resolve().parent.parent

_PAGE = """<!doctype html><html lang=en><head><meta charset=utf-8><title>t</title>{css}
<style>.md-typeset a {{ color: #4051b5; text-decoration: none }} body {{ color: #212121 }}</style></head>
<body><main><article class=md-typeset><h1>Record</h1>
<p>The step takes <a href="evidence/e.html#row-1">12.3 ms</a> at batch 8, and the rest of the sentence
goes on long enough that the link sits inside a block of running text.</p>{extra}</article></main></body></html>"""


def _violations(browser: Any, folder: Path, css: bool, extra: str = "") -> dict[str, int]:
    link = '<link rel="stylesheet" href="numbers.css">' if css else ""
    (folder / "numbers.css").write_bytes((REPO / "render" / "assets" / "numbers.css").read_bytes())
    (folder / "p.html").write_text(_PAGE.format(css=link, extra=extra), encoding="utf-8")
    with shots.serve(folder) as base:
        context = shots.open_context(browser, 1440, "light")
        try:
            tab = context.new_page()
            tab.goto(base + "p.html", wait_until="load")
            return axe_checks.by_rule(axe_checks.run(tab, axe_checks.axe_script()))
        finally:
            context.close()


def test_a_number_link_told_apart_by_colour_alone_is_found_and_the_sites_css_underlines_it(
    browser: Any, tmp_path: Path
) -> None:
    assert _violations(browser, tmp_path, css=False) == {"link-in-text-block (serious)": 1}
    assert _violations(browser, tmp_path, css=True) == {}


def test_low_contrast_text_is_found_serious(browser: Any, tmp_path: Path) -> None:
    found = _violations(browser, tmp_path, css=True, extra="<p style='color:#aaaaaa'>faint text</p>")
    assert found == {"color-contrast (serious)": 1}
    assert axe_checks.SERIOUS == ("serious", "critical")
