"""A real headless Chromium tours every current record of the repository's own site (issue 28) and lists what fails.

The tour opens each record's current version (its highest ``vN.html``) at 1440 and 390 px, light and dark, in one
Chromium, and checks what a reader meets there:

- ``number-link``: the number links (``NUMBER_LINK``) on a fixed set of evidence pages are followed
  (``representative_links``: every kind of evidence page, by probe, at every kind of target the records link it at,
  and links from every record; ``PROBEBOOK_TOUR_EVERY_LINK=1`` follows all); after the jump the element it lands on
  holds the linked text (spaces, thin spaces and thousands commas aside) and that text is inside the viewport, below
  the sticky header and not clipped by a scrolling table. An empty anchor (``<span id=row-3></span>``) counts as the
  row, list item or paragraph it marks. Each distinct target is jumped to once per width, in the page, by JavaScript
  (``LINK_JS``): one round trip per evidence page, not one per link;
- ``chart-text``: every chart's text is at least ``MIN_TEXT_PX`` as drawn at 390 px (font size times the text's
  screen transform);
- ``table-key-column`` / ``table-hidden-columns``: at 1440 px no table's first column is out of sight, and no
  table is wider than its box (which columns it hides is listed);
- ``answer``: the record's Answer (``ANSWER``) starts on the first screen;
- ``console`` / ``offsite``: no console error, nothing requested from outside the site.

Every current record is viewed at both widths in both schemes (every page kind a reader opens first); every
link's target on every evidence page is checked without a browser (tests/test_link_targets.py). Every failure is
collected, written to ``test-artifacts/tour/failures.txt`` and reported in one assertion, per
page and per check, with counts; each failing record view is screenshotted under ``test-artifacts/tour/``
(the whole page when a table or chart failed, else the first screen), and for failing links the screen they
landed on. The site is the session's one build of the repository (``conftest.repository_build``), or
``PROBEBOOK_TOUR_SITE=site`` reuses a build made with ``probebook build``. The checks (their JavaScript, the
selectors ``NUMBER_LINK`` and ``ANSWER``, the limits) are in tests/tour_checks.py; bench/screenshots.py serves
the site and opens Chromium for both.
"""

from __future__ import annotations

import collections
import functools
import os
import re
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import axe_checks
import pytest
from conftest import repository_site_build
from tour_checks import (
    LINK_SCHEMES,
    SCHEMES,
    SHOWN_PER_GROUP,
    WIDTHS,
    Failure,
    coverage,
    follow_links,
    listen,
    record_view,
    report,
    representative_links,
    shots,
    slug,
)

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO / "test-artifacts" / "tour"
SITE_ENV = "PROBEBOOK_TOUR_SITE"
"""A folder already built from this repository (``probebook build`` writes ``site/``): the tour reads it as is."""
EVERY_LINK_ENV = "PROBEBOOK_TOUR_EVERY_LINK"
"""Set to 1: follow the number links on every linked evidence page, not the representative set (minutes more)."""

pytestmark = pytest.mark.browser


def test_report_counts_and_groups_failures_per_page_and_check() -> None:
    failures = [Failure("a.html", "1440 light", "answer", "no Answer")]
    failures += [Failure("b.html", "390 dark", "chart-text", f"chart {i}") for i in range(SHOWN_PER_GROUP + 2)]
    text = report(failures, pages=2, views=4)
    assert text.splitlines()[:3] == [
        f"the tour of 2 current records (4 views each) found {SHOWN_PER_GROUP + 3} failures",
        f"per check: answer 1, chart-text {SHOWN_PER_GROUP + 2}",
        f"per page: a.html 1, b.html {SHOWN_PER_GROUP + 2}",
    ]
    assert "a.html [answer] 1:\n    1440 light: no Answer" in text
    assert f"    390 dark: chart {SHOWN_PER_GROUP - 1}\n    ... and 2 more" in text
    assert f"chart {SHOWN_PER_GROUP}" not in text


def test_representative_links_cover_every_page_kind_target_kind_and_record_page() -> None:
    def link(page: str, fragment: str) -> dict[str, str]:
        return {"href": f"http://127.0.0.1:1/evidence/{page}.html?rows=1-2#{fragment}", "text": "1.5 ms"}

    kinds = {f"/evidence/{p}.html": "gemm" for p in "abc"} | {"/evidence/d.html": "hvp"}
    links = {
        "records/r1/v1.html": [link("a", "row-1"), link("b", "n-mean")],
        "records/r2/v1.html": [link("b", "n-fit"), link("c", "row-9"), link("c", "machine-gpu")],
        "records/r3/v2.html": [link("d", "params-lr")],
    }
    # b and c cover three each (b first by path), then c and d two of what is left (c first), then d; a adds
    # nothing: its (gemm, row) is c's and its record's links are b's too
    assert representative_links(links, kinds.__getitem__) == {
        "records/r1/v1.html": [link("b", "n-mean")],
        "records/r2/v1.html": links["records/r2/v1.html"],
        "records/r3/v2.html": links["records/r3/v2.html"],
    }
    assert representative_links({}, kinds.__getitem__) == {}


@pytest.fixture(scope="module")
def repo_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository's own site: ``$PROBEBOOK_TOUR_SITE`` when set, else built once per session from docs/ and
    archive/ (the published ledger read for the Changes page, nothing in the repository written)."""
    given = os.environ.get(SITE_ENV)
    if given:
        site = Path(given).resolve()
        if not (site / "records").is_dir():
            pytest.fail(f"{SITE_ENV}={given}: no records/ folder there (build it with probebook build)")
        return site
    return repository_site_build(tmp_path_factory)


@dataclass
class Tour:
    """What the tour saw: the pages, the failures, and counts that show it looked."""

    pages: list[str]
    failures: list[Failure]
    seen: collections.Counter[str]
    links: dict[str, list[dict[str, str]]]
    """Every current record's number links (record page -> links)."""
    followed: dict[str, list[dict[str, str]]]
    """The links followed (``representative_links``, or all of them with ``PROBEBOOK_TOUR_EVERY_LINK=1``)."""


def evidence_kind(site: Path, path: str) -> str:
    """An evidence page's kind, from its URL path: ``reproduction`` under evidence/comparison/, else its probe (the
    first part of its title, ``gemm · 250m · …``)."""
    rel = urllib.parse.unquote(path).lstrip("/")
    if rel.startswith("evidence/comparison/"):
        return "reproduction"
    title = re.search(r"<title>([^<]*)</title>", (site / rel).read_text(encoding="utf-8"))
    return title.group(1).split(" · ")[0] if title else rel


@pytest.fixture(scope="module")
def tour(repo_site: Path, browser: Any) -> Tour:
    """Every current record at each width and scheme, then the number links of the representative evidence pages
    (``representative_links``) at each width (``LINK_SCHEMES``)."""
    pages = sorted(shots.current_records(repo_site).values())
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for old in ARTIFACTS.glob("*.png"):
        old.unlink()
    failures: list[Failure] = []
    seen: collections.Counter[str] = collections.Counter()
    heard: dict[str, list[str]] = {"console": [], "offsite": []}
    links: dict[str, list[dict[str, str]]] = {}  # the same at every width and scheme: the page's HTML is one
    every = os.environ.get(EVERY_LINK_ENV) == "1"
    with shots.serve(repo_site) as base:
        for width in WIDTHS:
            for scheme in SCHEMES:
                context = shots.open_context(browser, width, scheme, heard["offsite"].append)
                try:
                    tab = context.new_page()
                    listen(tab, heard)
                    for page in pages:
                        found, links[page] = record_view(tab, base, page, width, scheme, heard, seen)
                        if found:  # the whole page where the failure may be below the first screen
                            below = any(f.check.startswith(("table", "chart")) for f in found)
                            shot = ARTIFACTS / f"{slug(page)}-{width}-{scheme}.png"
                            tab.screenshot(path=str(shot), full_page=below)
                        failures += found
                finally:
                    context.close()
        for scheme in LINK_SCHEMES:
            context = shots.open_context(browser, WIDTHS[0], scheme, heard["offsite"].append)
            try:
                tab = context.new_page()
                listen(tab, heard)
                followed = links if every else representative_links(links, functools.partial(evidence_kind, repo_site))
                seen["links"] += sum(len(v) for v in followed.values()) * len(WIDTHS)
                failures += follow_links(tab, scheme, followed, heard, ARTIFACTS)
            finally:
                context.close()
    return Tour(pages, failures, seen, links, followed)


@pytest.mark.slow  # the repository's site: 15 records, 4 views each, about 30 evidence pages (minutes)
def test_the_tour_sees_every_current_record_its_links_charts_and_tables(tour: Tour, repo_site: Path) -> None:
    records = [p for p in (repo_site / "records").iterdir() if p.is_dir() and any(p.glob("v*.html"))]
    assert len(tour.pages) == len(records) > 0
    assert tour.seen["views"] == len(tour.pages) * len(WIDTHS) * len(SCHEMES)
    assert tour.seen["links"] > 0 and tour.seen["charts"] > 0 and tour.seen["tables"] > 0, tour.seen
    # the links followed cover every kind of evidence page and target, and every record page, that the records link
    kind = functools.partial(evidence_kind, repo_site)
    wanted, got = coverage(tour.links, kind), coverage(tour.followed, kind)
    assert set().union(*got.values()) == set().union(*wanted.values()) and len(got) > 1, sorted(got)


@pytest.mark.slow
def test_every_current_record_reads_as_issue_28_asks(tour: Tour) -> None:
    listing = report(tour.failures, len(tour.pages), len(WIDTHS) * len(SCHEMES))
    (ARTIFACTS / "failures.txt").write_text(
        listing.split("\n", 2)[0]
        + "\n"
        + "\n".join(f"{f.page} [{f.check}] {f.view}: {f.detail}" for f in tour.failures)
        + "\n",
        encoding="utf-8",
    )
    # Issue 28 asks for no failure at all, number links included (each lands on its value: a raw row or field that
    # shows it, or its own entry among the evidence page's "Numbers taken from this evidence").
    assert not tour.failures, listing


@pytest.mark.slow
def test_axe_core_finds_no_serious_violation_on_the_records_home_playbook_and_changes(
    browser: Any, repo_site: Path
) -> None:
    """Issue 42: axe-core (from the ``axe-playwright-python`` package) over every current record, the home page, the
    playbook, the Records index and Changes, light and dark: no serious or critical violation; the counts by rule
    go to test-artifacts/tour/axe.txt."""
    pages = sorted(shots.current_records(repo_site).values())
    pages += ["index.html", "playbook/index.html", "records/index.html", "changes.html"]
    script = axe_checks.axe_script()
    found: dict[str, list[dict[str, Any]]] = {}
    with shots.serve(repo_site) as base:
        for scheme in SCHEMES:
            context = shots.open_context(browser, WIDTHS[0], scheme)
            try:
                tab = context.new_page()
                for page in pages:
                    tab.goto(base + page, wait_until="load")
                    found[f"{page} {scheme}"] = axe_checks.run(tab, script)
            finally:
                context.close()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "axe.txt").write_text(
        "\n".join(f"{view}: {axe_checks.by_rule(v)}" for view, v in found.items()) + "\n", encoding="utf-8"
    )
    bad = {view: axe_checks.by_rule(axe_checks.serious(v)) for view, v in found.items() if axe_checks.serious(v)}
    assert len(found) == len(pages) * len(SCHEMES)
    assert not bad, bad


# A made-up record and evidence page with one case of each failure and one of each success: the tour's own
# checks, run in the same Chromium on literal HTML, must find exactly these.
_HEAD = "<!doctype html><html><head><meta charset=utf-8><style>body{margin:0} .md-header{position:sticky;top:0;"
_HEAD += "height:48px;background:#335} [id]{scroll-margin-top:60px} td,th{padding:4px 12px;white-space:nowrap}"
_HEAD += "</style></head><body>"
_HEAD += "<header class=md-header></header>"
_WIDE = "".join(f"<th>column{i}</th>" for i in range(30))
_WIDE_ROW = "".join(f"<td>{i}</td>" for i in range(29))
_RECORD = (
    _HEAD
    + "<article><h1>Record</h1><div style='height:1200px'></div><div class='admonition answer'>It holds.</div>"
    + "<p><a href='evidence/e.html#row-1'>1.5 ms</a> <a href='evidence/e.html#row-2'>[2]</a> "
    + "<a href='evidence/e.html#row-1'>[3]</a> <a href='evidence/e.html#row-2'>9.9 ms</a> "
    + "<a href='evidence/e.html#far'>777</a> <a href='evidence/e.html#gone'>3</a> "
    + "<a href='evidence/e.html'>sha256:ab</a>"
    + " <a href='evidence/e.html#row-1'>sha256:abcdef</a></p>"
    + "<h2>Wide</h2><div style='overflow-x:auto;width:300px'><table><tr>"
    + _WIDE
    + "</tr></table></div>"
    + "<h2>Shifted</h2><div style='overflow:hidden;width:600px'><table style='margin-left:-60px'>"
    + "<tr><th>key column</th><th>b</th></tr><tr><td>k</td><td>v</td></tr></table></div>"
    + "<h2>Fits</h2><table><tr><th>x</th><th>y</th></tr><tr><td>1</td><td>2</td></tr></table>"
    + "<div class=pb-chart aria-label=tiny><svg viewBox='0 0 1000 100' style='width:300px'>"
    + "<text x=10 y=50 font-size=20>small</text></svg></div>"
    + "<div class=pb-chart aria-label=big><svg viewBox='0 0 100 100' style='width:300px'>"
    + "<text x=10 y=50 font-size=10>large</text></svg></div></article>"
    + "<script>console.error('planted')</script><img src='https://example.invalid/x.png'></body></html>"
)
_EVIDENCE = (
    _HEAD
    + "<article><div style='height:2000px'></div><table>"
    + "<tr><td><span id=row-1></span>1</td><td>1.5&thinsp;ms</td></tr>"
    + "<tr><td><span id=row-2></span>2</td><td>1.0 ms</td></tr></table>"
    + "<div style='height:2000px'></div><div style='overflow-x:auto;width:300px'><table>"
    + "<tr><td><span id=far></span>far</td>"
    + _WIDE_ROW
    + "<td>777</td></tr></table></div>"
    + "<div style='height:2000px'></div></article></body></html>"
)


def test_the_tours_checks_find_each_planted_failure_and_pass_the_rest(browser: Any, tmp_path: Path) -> None:
    (tmp_path / "evidence").mkdir()
    (tmp_path / "r.html").write_text(_RECORD, encoding="utf-8")
    (tmp_path / "evidence" / "e.html").write_text(_EVIDENCE, encoding="utf-8")
    heard: dict[str, list[str]] = {"console": [], "offsite": []}
    seen: collections.Counter[str] = collections.Counter()
    found: list[Failure] = []
    with shots.serve(tmp_path) as base:
        for width in WIDTHS:
            context = shots.open_context(browser, width, "light", heard["offsite"].append)
            try:
                tab = context.new_page()
                listen(tab, heard)
                failures, links = record_view(tab, base, "r.html", width, "light", heard, seen)
                found += failures
                if width == WIDTHS[0]:
                    found += follow_links(tab, "light", {"r.html": links}, heard, tmp_path)
            finally:
                context.close()
    got = sorted((f.view, f.check, f.detail) for f in found)
    # where the Answer and the wide table's cut fall depends on the fonts: only their shape is pinned
    answers = [
        (v, re.fullmatch(r"the Answer starts at (\d+) px; the screen is (\d+) px", d))
        for v, c, d in got
        if c == "answer"
    ]
    assert [(v, m is not None and int(m[1]) > 1200 and int(m[2])) for v, m in answers] == [
        ("1440 light", shots.HEIGHTS[1440]),
        ("390 light", shots.HEIGHTS[390]),
    ]
    wide = [d for v, c, d in got if c == "table-hidden-columns" and "'Wide'" in d]
    assert len(wide) == 1 and wide[0].startswith("table under 'Wide' [column0 | column1 | column2 |")
    cut = wide[0].split("] hides ")[1].split(", ")
    assert cut == [f"column{i}" for i in range(30 - len(cut), 30)] and 2 < len(cut) < 30
    # the aborted request also logs a console error of its own
    heard_once = [("console", "planted"), ("console", "Failed to load resource: net::ERR_FAILED")]
    heard_once.append(("offsite", "https://example.invalid/x.png"))
    assert [g for g in got if g[1] in ("console", "offsite")] == sorted(
        (f"{w} light", check, text) for w in WIDTHS for check, text in heard_once
    )
    missing = "no element has this id"
    far = "lands on <tr> around <span>; the value is out of sight"
    other = "lands on <tr> around <span> reading '21.0 ms'"  # row 2's text, the row number and its value
    # "[2]" and "[3]" are followed as the number before them: [3] lands on 1.5 ms, [2] on row 2's other value
    landings = [("'1.5 ms' -> e.html…#row-2", other), ("'3' -> e.html…#gone", missing)]
    landings += [("'777' -> e.html…#far", far), ("'9.9 ms' -> e.html…#row-2", other)]
    assert [g for g in got if g[1] not in ("answer", "console", "offsite") and "'Wide'" not in g[2]] == [
        *[("1440 light", "number-link", f"{link}: {why}") for link, why in landings],
        ("1440 light", "table-hidden-columns", "table under 'Shifted' [key column | b] hides key column"),
        ("1440 light", "table-key-column", "table under 'Shifted' [key column | b]: 2 of 2 key cells out of sight"),
        (
            "390 light",
            "chart-text",
            "chart 'tiny' draws 'small' at 6.0 px (< 12)",
        ),  # 20 px in a 1000-wide box drawn 300 px
        *[("390 light", "number-link", f"{link}: {why}") for link, why in landings],
    ]
    assert seen == {"views": 2, "tables": 3, "charts": 2}
