"""Incremental builds: cached pages, a tree written file by file, dirty site builds, byte-identical to a full build."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import fixture_site_paths

from measure.errors import ProbebookError
from render import dirty, incremental
from render.build import BuildPaths, build

SITE = Path(__file__).resolve().parent / "fixtures" / "site"


def _paths(root: Path, docs: Path) -> BuildPaths:
    paths: BuildPaths = fixture_site_paths(root, docs)
    return paths


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _mtimes(folder: Path) -> dict[str, int]:
    return {p.relative_to(folder).as_posix(): p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


def test_an_edit_rebuilds_only_its_page_and_matches_a_full_build(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(SITE / "docs", docs)
    inc = _paths(tmp_path / "inc", docs)
    build(inc)
    tree_before, site_before = _mtimes(inc.tree), _mtimes(inc.site)
    page = next(docs.glob("records/*/v*.md"))
    rel = page.relative_to(docs).as_posix()
    page.write_text(page.read_text(encoding="utf-8") + "\nA sentence added to the prose.\n", encoding="utf-8")
    build(inc)

    # only the edited page's Markdown was rewritten in the tree; the site rewrote only its HTML and the shared files
    tree_after = _mtimes(inc.tree)
    assert [p for p in tree_after if tree_after[p] != tree_before.get(p)] == [rel]
    site_after = _mtimes(inc.site)
    rewritten = sorted(p for p in site_after if site_after[p] != site_before.get(p))
    html = rel[:-3] + ".html"
    assert html in rewritten
    assert set(rewritten) <= {
        html,
        "404.html",
        "sitemap.xml",
        "sitemap.xml.gz",
        "search/search_index.json",
        "search/search_index.js",
        "ledger.json",
        ".probebook-site",
    }
    assert "A sentence added to the prose." in (inc.site / html).read_text(encoding="utf-8")

    # a full build of the same inputs, in its own folders, is the same site byte for byte (search index included)
    full = _paths(tmp_path / "full", docs)
    build(full, full=True)
    assert _files(inc.site) == _files(full.site)
    assert _files(inc.tree) == _files(full.tree)


def test_the_page_cache_keys_on_inputs_and_prunes_what_no_build_used(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(SITE / "docs", docs)
    paths = _paths(tmp_path, docs)
    build(paths, site=False)
    cache = paths.build / incremental.CACHE_FOLDER
    first = sorted(p.name for p in cache.iterdir())
    assert len(first) == sum(1 for _ in docs.rglob("*.md"))
    build(paths, site=False)
    assert sorted(p.name for p in cache.iterdir()) == first
    page = next(docs.glob("records/*/v*.md"))
    page.write_text(page.read_text(encoding="utf-8") + "\nMore prose.\n", encoding="utf-8")
    build(paths, site=False)
    after = sorted(p.name for p in cache.iterdir())
    assert len(after) == len(first) and len(set(after) - set(first)) == 1  # one new entry, the old one pruned


def test_tree_writes_only_changed_files_and_removes_dropped_ones(tmp_path: Path) -> None:
    out, manifest = tmp_path / "docs", tmp_path / "tree.json"
    assert incremental.write_tree({"a.md": b"a", "sub/b.md": b"b"}, out, manifest, ".mark") == ["a.md", "sub/b.md"]
    os.utime(out / "a.md", ns=(1, 1))
    assert incremental.write_tree({"a.md": b"a", "c.md": b"c"}, out, manifest, ".mark") == ["c.md"]
    assert (out / "a.md").stat().st_mtime_ns == 1  # untouched
    assert not (out / "sub").exists()  # its only file was dropped, and the empty folder with it
    assert incremental.write_tree({"a.md": b"A", "c.md": b"c"}, out, manifest, ".mark") == ["a.md"]
    assert (out / "a.md").read_bytes() == b"A"


def test_a_failed_incremental_build_leaves_the_site_as_it_was(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(SITE / "docs", docs)
    paths = _paths(tmp_path, docs)
    build(paths)
    before = _files(paths.site)
    page = next(docs.glob("records/*/v*.md"))
    page.write_text(page.read_text(encoding="utf-8") + "\nSee [a page](no-such-page.md).\n", encoding="utf-8")
    with pytest.raises(ProbebookError, match="no-such-page.md"):
        build(paths)  # the engine refuses the link in the dirty build, after the site was linked aside
    assert _files(paths.site) == before


def test_a_tree_only_build_makes_the_next_site_build_a_full_one(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(SITE / "docs", docs)
    paths = _paths(tmp_path, docs)
    build(paths)
    page = next(docs.glob("records/*/v*.md"))
    page.write_text(page.read_text(encoding="utf-8") + "\nEdited before a tree-only build.\n", encoding="utf-8")
    build(paths, site=False)  # the tree changes, the site does not: no state may vouch for the site now
    assert not (paths.build / dirty.STATE).exists()
    page.write_text(page.read_text(encoding="utf-8") + "\nEdited again.\n", encoding="utf-8")
    build(paths)
    full = _paths(tmp_path / "full", docs)
    build(full, full=True)
    assert _files(paths.site) == _files(full.site)
