"""Every number link of a built site lands on an element that exists; a field link on a row showing its value.

Over the fixture site (built once per session) and, marked slow, over the repository's own site: each number
link (an ``<a>`` with a title to an evidence page) names an evidence page that exists and an element id on it;
a link to rows (``?rows=95-99&col=time_s#row-95``) names rows that all exist and a column the table has; a link
to a machine or params row lands on a row whose text holds the linked number's digits (a number's further links,
``[2]``, the number they follow); a derived number's link to its own entry (``#n-…``, "Numbers taken from this
evidence") lands on a row whose first cell holds the linked text as the page shows it.
"""

from __future__ import annotations

import html
import re
import urllib.parse
from pathlib import Path

import pytest

from render.assemble.stages import BuildPaths

REPO = Path(__file__).resolve().parent.parent
_LINK = re.compile(r'<a href="([^"]*evidence/[0-9a-f]{64}\.html(?:[?#][^"]*)?)" title="[^"]*">(.*?)</a>', re.S)
_ROW = re.compile(r"<tr>(.*?)</tr>", re.S)
_FURTHER = re.compile(r"\[[0-9]+\]")
"""A number's link to a further evidence document (``render.numbers.links.number_links``)."""


def _text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


_NUMBER = re.compile(r"[0-9][0-9,]*(?:\.[0-9]+)?")
_SCALES = [1.0] + [b**k for b in (1000.0, 1024.0) for k in (1, 2, 3, 4)]


def _numbers(text: str) -> list[float]:
    return [float(n.replace(",", "")) for n in _NUMBER.findall(text)]


def _shows(row: str, shown: str) -> bool:
    """Whether a row's text holds the linked number, to the figures shown, in any decimal or binary prefix, either
    way (``42.2 MiB`` is in ``42.19 MiB (44,244,480 B)``, ``1980 MHz`` in ``1,980 MHz``, ``188,928`` in
    ``64: 188.9 kFLOP``, ``300 ppm`` in ``"lr": 0.0003``)."""
    wanted = _numbers(shown)[:1]
    if not wanted:
        return True  # "n/a" links to where the value would be
    w = wanted[0]
    near = [v / f for v in _numbers(row) for f in _SCALES] + [v * f for v in _numbers(row) for f in _SCALES]
    return any(abs(x - w) <= 0.006 * max(abs(w), 1e-12) for x in near)


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def check_site(site: Path) -> dict[str, int]:
    """Problems found (a list that must stay empty) and counts of the links checked, by kind."""
    pages: dict[Path, str] = {}
    counts = {"rows": 0, "field": 0, "entry": 0, "other": 0}
    problems: list[str] = []
    for page in sorted(site.rglob("*.html")):
        if page.relative_to(site).parts[0] == "archive":
            continue
        source = page.read_text(encoding="utf-8")
        number, end = "", -1
        for m in _LINK.finditer(source):
            href, shown = m.groups()
            # a number's further links ("[2]") hold that number, the link just before them
            if _FURTHER.fullmatch(_text(shown)) and source[end : m.start()].strip() == "":
                shown = number
            else:
                number = shown
            end = m.end()
            url = urllib.parse.urlsplit(html.unescape(href))
            target = (page.parent / url.path).resolve()
            if target not in pages:
                pages[target] = target.read_text(encoding="utf-8") if target.is_file() else ""
            body = pages[target]
            where = f"{page.relative_to(site)} -> {href}"
            if not body:
                problems.append(f"{where}: no such page")
                continue
            if not url.fragment:  # an evidence id itself (a table's id cell): the page is the target
                counts["other"] += 1
                continue
            if f'id="{url.fragment}"' not in body:
                problems.append(f"{where}: no element with id {url.fragment!r}")
                continue
            query = urllib.parse.parse_qs(url.query)
            if url.fragment.startswith("n-"):
                counts["entry"] += 1
                row = next((r for r in _ROW.findall(body) if f'id="{url.fragment}"' in r), "")
                first_cell = _text(re.split(r"</td>", row, maxsplit=1)[0])
                if _squash(_text(shown)) not in _squash(first_cell):
                    problems.append(f"{where}: its entry does not show {_text(shown)!r}: {first_cell[:120]!r}")
            if "rows" in query:
                counts["rows"] += 1
                first = int(re.match(r"[0-9]+", query["rows"][0]).group(0))  # type: ignore[union-attr]
                if url.fragment != f"row-{first}" and not url.fragment.startswith("n-"):
                    problems.append(f"{where}: lands on {url.fragment}, not on its first row")
                for run in query["rows"][0].split("_"):
                    a, _, b = run.partition("-")
                    missing = [i for i in range(int(a), int(b or a) + 1) if f'id="row-{i}"' not in body]
                    if missing:
                        problems.append(f"{where}: rows {missing} are not on the page")
                if "col" in query and f">{query['col'][0]}</th>" not in body:
                    problems.append(f"{where}: no column {query['col'][0]!r}")
            elif url.fragment.startswith(("machine-", "params-")):
                counts["field"] += 1
                row = next((r for r in _ROW.findall(body) if f'id="{url.fragment}"' in r), "")
                if not _shows(_text(row), _text(shown)):
                    problems.append(f"{where}: its row does not show {_text(shown)!r}: {_text(row)[:120]!r}")
            elif not url.fragment.startswith("n-"):
                counts["other"] += 1
    assert problems == [], "\n".join(problems[:20])
    return counts


def test_fixture_site_links_land_on_rows_that_hold_their_value(fixture_site: BuildPaths) -> None:
    counts = check_site(fixture_site.site)
    assert counts["rows"] > 0 and counts["field"] > 0  # the fixture records link both kinds
    assert counts["entry"] > 0  # and derived numbers (a median, a fit's coefficient) to their own entries


@pytest.mark.slow
def test_repository_site_links_land_on_rows_that_hold_their_value(repository_site: Path) -> None:
    # the session's one build of the repository (conftest.repository_site_build), shared with the browser tests
    counts = check_site(repository_site)
    assert counts["rows"] >= 100 and counts["field"] >= 300  # GEMM rows 95-99, batch-sweep curves, clocks, power
