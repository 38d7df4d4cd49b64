"""Both site engines (mkdocs-material and Zensical) on the fixture site: the same pages and downloads, the same
linked numbers on every page (parsed with html.parser), the engine in the build stamp, a Zensical build from its
cache byte-identical to a cold one, an engine's refusal in one line, the engine names the CLI offers, and mkdocs'
process started ahead of its work: ended when the build stops first, never shadowed by the caller's folder."""

from __future__ import annotations

import dataclasses
import html.parser
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from measure.cli import declarations
from measure.errors import ProbebookError
from probebook.cli import site as site_cli
from render.assemble.stages import BuildPaths, build
from render.errors import BuildError
from render.site import engines, sanitize

REPO = Path(__file__).resolve().parent.parent
SITE_FIXTURE = REPO / "tests" / "fixtures" / "site"
# Each engine's own files: its theme's assets, its search index and sitemap (named differently by each).
ENGINE_OWN = ("assets/", "search/", "search.json", "search.js", "sitemap.xml", "sitemap.xml.gz")


class NumberLinks(html.parser.HTMLParser):
    """The links of a page's content area (the theme's ``<article>``): (text, href, title) in page order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[tuple[str, str, str]] = []
        self._depth = 0
        self._open: list[tuple[str, str, list[str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        if tag == "article":
            self._depth += 1
        elif tag == "a" and self._depth and named.get("href"):
            self._open.append((named["href"] or "", named.get("title") or "", []))

    def handle_endtag(self, tag: str) -> None:
        if tag == "article":
            self._depth -= 1
        elif tag == "a" and self._open:
            href, title, text = self._open.pop()
            self.links.append(("".join(text).strip(), href, title))

    def handle_data(self, data: str) -> None:
        for _href, _title, text in self._open:
            text.append(data)


def number_links(page: Path) -> list[tuple[str, str, str]]:
    """The links to evidence pages in a page's content area: every published number is one."""
    parser = NumberLinks()
    parser.feed(page.read_text(encoding="utf-8"))
    parser.close()
    return [link for link in parser.links if "evidence/" in link[1] and not link[1].endswith((".json", ".csv"))]


def content_files(site: Path) -> set[str]:
    """Every file of a site but the engine's own (theme assets, search index, sitemap)."""
    return {
        p.relative_to(site).as_posix()
        for p in site.rglob("*")
        if p.is_file() and not p.relative_to(site).as_posix().startswith(ENGINE_OWN)
    }


@pytest.fixture(scope="module")
def sites(fixture_site: BuildPaths, fixture_site_zensical: BuildPaths) -> dict[str, BuildPaths]:
    return {"mkdocs": fixture_site, "zensical": fixture_site_zensical}


def test_both_engines_build_the_same_pages_and_downloads(sites: dict[str, BuildPaths]) -> None:
    mk, zen = (content_files(sites[name].site) for name in ("mkdocs", "zensical"))
    assert mk == zen
    assert {"index.html", "changes.html", "ledger.json", "404.html"} <= mk
    assert any(p.startswith("records/") for p in mk) and any(p.startswith("evidence/") for p in mk)
    assert any(p.endswith(".svg") for p in mk) and any(p.endswith(".csv") for p in mk)
    for name in ("ledger.json", *tuple(p for p in mk if p.endswith((".svg", ".csv", ".json")))):
        if name != "ledger.json":  # the downloads are render's bytes, copied by each engine as they are
            assert (sites["mkdocs"].site / name).read_bytes() == (sites["zensical"].site / name).read_bytes(), name
    mk_ledger, zen_ledger = (json.loads((sites[n].site / "ledger.json").read_bytes()) for n in ("mkdocs", "zensical"))
    assert mk_ledger["rows"] == zen_ledger["rows"]


def test_every_page_carries_the_same_linked_numbers(sites: dict[str, BuildPaths]) -> None:
    pages = sorted(p for p in content_files(sites["mkdocs"].site) if p.endswith(".html"))
    links = {}
    for page in pages:
        links[page] = number_links(sites["mkdocs"].site / page)
        assert links[page] == number_links(sites["zensical"].site / page), page
    # and they are the ledger's numbers: each row with evidence is a link with its text on its page, in both
    ledger = json.loads((sites["mkdocs"].site / "ledger.json").read_bytes())["rows"]
    # a chart's alt-text numbers are ledger rows in an image's alt, which cannot link (test_site_build reads them)
    linked_rows = [r for r in ledger if r["evidence"] and r["unit"] != "claim" and ".alt[" not in r["key"]]
    assert len(linked_rows) > 10
    for row in linked_rows:
        page_links = links[row["page"][: -len(".md")] + ".html"]
        texts = {text.replace("\xa0", " ").replace("\u202f", " ") for text, _href, _title in page_links}
        assert any(t.startswith(row["text"]) for t in texts), (row["page"], row["key"], row["text"])


def test_the_build_stamp_names_the_engine(sites: dict[str, BuildPaths]) -> None:
    for name, paths in sites.items():
        stamp = json.loads((paths.site / "ledger.json").read_bytes())["build"]
        assert stamp["status"] == "complete" and stamp["engine"] == name


def test_the_sanitizer_left_each_theme_its_own_scripts(sites: dict[str, BuildPaths]) -> None:
    for name, paths in sites.items():
        theme = engines.get(name).theme
        page = (paths.site / "index.html").read_bytes()
        assert theme.opening.search(page) is not None
        assert b"<script" not in page[theme.opening.search(page).end() : page.rfind(b"</article>")]
        assert (paths.site / theme.search_index).is_file()


def test_a_zensical_build_from_its_cache_is_byte_identical_to_a_cold_one(
    fixture_site_zensical: BuildPaths, tmp_path: Path
) -> None:
    cold = fixture_site_zensical
    build_dir = tmp_path / "build"
    shutil.copytree(cold.build, build_dir, ignore=shutil.ignore_patterns(".probebook.lock"))
    assert (build_dir / ".cache").is_dir()  # Zensical's cache from the cold build
    warm = dataclasses.replace(cold, build=build_dir, site=tmp_path / "site")
    build(warm, engine="zensical")
    files = sorted(p.relative_to(cold.site) for p in cold.site.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(warm.site) for p in warm.site.rglob("*") if p.is_file())
    assert [f for f in files if (cold.site / f).read_bytes() != (warm.site / f).read_bytes()] == []


def test_a_page_zensical_refuses_is_one_line(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(SITE_FIXTURE / "docs", docs)
    with (docs / "index.md").open("a", encoding="utf-8") as fh:
        fh.write("\nSee [the missing part](#no-such-heading).\n")
    paths = BuildPaths(
        docs,
        SITE_FIXTURE / "archive",
        tmp_path / "build",
        tmp_path / "site",
        REPO / "mkdocs.yml",
        declarations=declarations(),
    )
    with pytest.raises(BuildError) as err:
        build(paths, engine="zensical")
    message = str(err.value)
    assert "\n" not in message and "\x1b" not in message
    assert message.startswith("zensical build --strict failed: Warning: anchor does not exist (index.md:")
    assert message.endswith(f"(full log: {tmp_path / 'build' / 'zensical.log'})")
    assert not paths.site.exists()  # nothing swapped in


def test_engine_names_are_refused_or_offered_alike() -> None:
    assert tuple(engines.ENGINES) == site_cli.ENGINES and site_cli.DEFAULT_ENGINE == engines.DEFAULT
    with pytest.raises(engines.EngineError, match="^" + re.escape("--engine 'hugo': not a site engine")):
        engines.get("hugo")
    assert engines.get("zensical").theme is sanitize.ZENSICAL


def _engine_processes() -> list[int]:
    """Children of this process running the mkdocs driver (``engines.start_mkdocs``), from /proc."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            command = (stat.parent / "cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            continue  # ended while read
        if parent == os.getpid() and b"from mkdocs.__main__ import cli" in command:
            found.append(int(stat.parent.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")
def test_an_engine_started_ahead_ends_when_the_build_stops_before_it(tmp_path: Path) -> None:
    started = engines.start_mkdocs()
    assert not started.ended and _engine_processes()
    started.close()
    assert started.ended and _engine_processes() == []

    docs = tmp_path / "docs"
    shutil.copytree(SITE_FIXTURE / "docs", docs)
    page = next(docs.glob("records/*/v*.md"))
    page.write_text(page.read_text(encoding="utf-8") + "\n{{ fit(no_such_alias) }}\n", encoding="utf-8")
    paths = BuildPaths(docs, SITE_FIXTURE / "archive", tmp_path / "build", tmp_path / "site", REPO / "mkdocs.yml")
    with pytest.raises(ProbebookError, match="unknown name 'no_such_alias'"):
        build(paths)  # refused while rendering, after the engine's process was started
    assert _engine_processes() == []


def test_the_engine_imports_nothing_from_the_folder_it_was_started_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "markdown.py").write_text("raise SystemExit('the caller folder shadowed a library')\n")
    monkeypatch.chdir(tmp_path)
    config, site = tmp_path / "build" / "mkdocs.yml", tmp_path / "site"
    (config.parent / "docs").mkdir(parents=True)
    (config.parent / "docs" / "index.md").write_text("# Home\n", encoding="utf-8")
    config.write_text("site_name: t\ndocs_dir: docs\ntheme:\n  name: material\n", encoding="utf-8")
    site.mkdir()
    engines.run_mkdocs(config, site, 0)
    assert (site / "index.html").is_file()
