"""The whole page is the boundary: evidence parameters in page titles, page meta from prose (MultiMarkdown lines
and a YAML block), and link or image titles (which the theme's tooltips turn back into HTML) put no markup into
any part of any built page, head and navigation included, compared with a clean build of the same sources."""

from __future__ import annotations

import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, SITE_FIXTURE, run_cli

from measure.evidence.envelope import Evidence
from measure.evidence.store import Store

HOSTILE = "</title><script>alert(1)</script><img src=x onerror=alert(2)>"
ABLATE = "sha256:f581ac542e3b3"  # the fixture's ablate run: its preset and shape reach the page's title


class _Page(HTMLParser):
    """Every element of one page: (tag, attributes), the title's text, and each script's source or text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.titles: list[str] = []
        self.scripts: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {k: v or "" for k, v in attrs}
        self.elements.append((tag, attributes))
        if tag == "script":
            self.scripts.append("src:" + attributes["src"] if "src" in attributes else "")
        self._in = tag

    def handle_data(self, data: str) -> None:
        if self._in == "title":
            self.titles.append(data)
        elif self._in == "script" and self.scripts and not self.scripts[-1].startswith("src:"):
            self.scripts[-1] += data

    def handle_endtag(self, tag: str) -> None:
        self._in = None


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def _build(root: Path, docs: Path, archive: Path) -> Path:
    site = root / "site"
    proc = run_cli(
        "--archive", str(archive), "build", "--docs", str(docs), "--out", str(site),
        "--build-dir", str(root / "build"), "--config", str(REPO / "mkdocs.yml"),
        "--published", str(root / "no-published-ledger.json"), "--full",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return site


@pytest.fixture(scope="module")
def sites(tmp_path_factory: pytest.TempPathFactory, fixture_site: Any) -> dict[str, Any]:
    """A clean build of the fixture sources (the session's, ``conftest.fixture_site``: one build fewer) and a
    build of the same with one input of each class planted."""
    root = tmp_path_factory.mktemp("hostile")
    clean = fixture_site.site
    archive, docs = root / "archive", root / "docs"
    shutil.copytree(SITE_FIXTURE / "archive", archive)
    shutil.copytree(SITE_FIXTURE / "docs", docs)
    store = Store(archive)
    doc = store.get(ABLATE)
    doc.pop("schema")
    doc["params"] = {**doc["params"], "preset": HOSTILE}
    planted = store.put(Evidence(**doc))
    (docs / "playbook" / "meta.md").write_text(
        f"title: {HOSTILE}\n"
        "description: <meta http-equiv=refresh content=0;url=http://a.test>\n"
        "author: <img src=x onerror=alert(3)>\n"
        "subtitle: <img src=x onerror=alert(4)>\n"
        '\n# Meta\n\nA [link](http://a.test "<img src=x onerror=alert(5)>") and an '
        '![image](https://a.test/i.png "<img src=x onerror=alert(6)>").\n'
    )
    (docs / "playbook" / "yaml.md").write_text(
        "\n---\ntitle: <b tabindex=0 onfocus=alert(7)>\nstatus: <img src=x onerror=alert(8)>\n---\n# Yaml\n\nBody.\n"
    )
    return {"clean": clean, "hostile": _build(root, docs, archive), "planted": planted}


def _pages(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


def test_no_handler_script_or_refresh_reaches_any_page(sites: dict[str, Any]) -> None:
    theme_scripts = {s for p in _pages(sites["clean"]) for s in _parse(p).scripts}
    for path in _pages(sites["hostile"]):
        page = _parse(path)
        for tag, attributes in page.elements:
            assert not [a for a in attributes if a.startswith("on")], (path, tag, attributes)
            assert not (tag == "meta" and "http-equiv" in attributes), (path, attributes)
            if tag == "img":
                assert attributes.get("src") != "x", (path, attributes)
        assert set(page.scripts) <= theme_scripts, (path, set(page.scripts) - theme_scripts)


def test_titles_and_tooltips_are_plain_text(sites: dict[str, Any]) -> None:
    for path in _pages(sites["hostile"]):
        page = _parse(path)
        assert all("<" not in t and ">" not in t for t in page.titles), (path, page.titles)
        for _tag, attributes in page.elements:
            assert "<" not in attributes.get("title", ""), (path, attributes)
            assert "<" not in attributes.get("content", ""), (path, attributes)


def test_the_planted_evidence_page_still_names_its_preset(sites: dict[str, Any]) -> None:
    """The hostile preset is shown, as text, so a reader sees what the evidence says."""
    page = sites["hostile"] / "evidence" / f"{sites['planted'][7:]}.html"
    text = page.read_text(encoding="utf-8")
    assert "&lt;/title&gt;&lt;script&gt;" in text


def test_every_page_of_the_hostile_site_is_framed_as_a_clean_build(sites: dict[str, Any]) -> None:
    """The whole-page allowlist (``render.site.frame``): each hostile page's head, header, navigation and footer
    hold nothing the clean build of the same sources did not, and nothing the kept frame lacks."""
    from render.site import frame, sanitize

    clean = frame.learn("clean", [sanitize.frame_parts(p.read_bytes(), str(p)) for p in _pages(sites["clean"])])
    kept = frame.frame_of("mkdocs-material")
    for path in _pages(sites["hostile"]):
        parts = list(sanitize.frame_parts(path.read_bytes(), str(path)))
        frame.check(parts, str(path), kept)
        one = frame.outline(parts)
        assert one.tags <= clean.tags and one.attributes <= clean.attributes, path
        assert one.scripts <= clean.scripts and one.sources <= clean.sources, path
