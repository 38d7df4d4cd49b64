"""Incremental builds: cached pages, a tree written file by file, dirty site builds, byte-identical to a full build."""

from __future__ import annotations

import json
import os
import pickle
import re
import shutil
import threading
from pathlib import Path

import pytest
from conftest import fixture_site_paths, shared_folder

from measure.errors import ProbebookError
from render.assemble import dirty, incremental, sealed
from render.assemble.stages import BuildPaths, build
from render.charts.output import PENDING
from render.pages import layout

SITE = Path(__file__).resolve().parent / "fixtures" / "site"


def _paths(root: Path, docs: Path) -> BuildPaths:
    paths: BuildPaths = fixture_site_paths(root, docs)
    return paths


def _built_copy(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> tuple[BuildPaths, Path]:
    """A copy, in ``tmp_path``, of the fixture's docs and of their first build (``build`` into ``tmp_path``'s build/
    and site/); the paths and the docs. The first build is made once per session (``shared_folder``) and copied
    with its files' times (the dirty build compares them), since each test that edits the docs then builds again
    built it itself, about 2 s of CPU each; the tests change only their copy."""

    def make(folder: Path) -> None:
        shutil.copytree(SITE / "docs", folder / "docs")
        build(_paths(folder, folder / "docs"))

    shutil.copytree(shared_folder(tmp_path_factory, "incremental-first-build", make), tmp_path, dirs_exist_ok=True)
    return _paths(tmp_path, tmp_path / "docs"), tmp_path / "docs"


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _mtimes(folder: Path) -> dict[str, int]:
    return {p.relative_to(folder).as_posix(): p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


def test_an_edit_rebuilds_only_its_page_and_matches_a_full_build(tmp_path_factory, tmp_path: Path) -> None:
    inc, docs = _built_copy(tmp_path_factory, tmp_path)
    tree_before, site_before = _mtimes(inc.tree), _mtimes(inc.site)
    derived = inc.build / incremental.DERIVED
    kept = incremental.DerivedCache(inc.build).load()
    assert {k[0] for k in kept} >= {"fit", "chart", "table"}
    derived_before = derived.stat().st_mtime_ns
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
    # the edited page was rendered from the fits, charts and tables the first build kept: none computed again,
    # so the file that keeps them was not rewritten
    assert derived.stat().st_mtime_ns == derived_before

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


def test_derivations_are_kept_under_the_code_digest_and_dropped_with_their_evidence(tmp_path: Path) -> None:
    a, b = "sha256:" + "a" * 64, "sha256:" + "b" * 64
    cache = incremental.DerivedCache(tmp_path)
    assert cache.load() == {}
    entries = {
        ("fit", a, (), ()): 1.5,
        ("chart", "k", (a, b), "{}"): "svg",
        ("lossmem", b, "arm"): 2,
        ("x", a): lambda: 0,
    }
    cache.save(entries, {a, b}, changed=True)
    # a lambda does not pickle: that entry alone is not kept
    assert cache.load() == {k: v for k, v in entries.items() if k[0] != "x"}
    cache.save(cache.load(), {a}, changed=False)  # b left the archive: every entry naming it goes
    assert cache.load() == {("fit", a, (), ()): 1.5}
    assert incremental.DerivedCache(tmp_path, read=False).load() == {}  # a full build computes everything
    stored = pickle.loads(sealed.unseal(cache.path.read_bytes()) or b"")
    stored["code"] = "other code"
    cache.path.write_bytes(sealed.seal(pickle.dumps(stored)))
    assert cache.load() == {}  # written by other code or other library versions: not read
    cache.path.write_bytes(pickle.dumps({**stored, "code": incremental.code_digest()}))
    assert cache.load() == {}  # a pickle with no seal: never unpickled (tests/test_hostile_tree.py)
    cache.path.write_bytes(sealed.seal(b"not a pickle"))
    assert cache.load() == {}


def test_tree_writes_only_changed_files_and_removes_dropped_ones(tmp_path: Path) -> None:
    out, manifest = tmp_path / "docs", tmp_path / "tree.json"
    assert incremental.write_tree({"a.md": b"a", "sub/b.md": b"b"}, out, manifest, ".mark") == ["a.md", "sub/b.md"]
    os.utime(out / "a.md", ns=(1, 1))
    assert incremental.write_tree({"a.md": b"a", "c.md": b"c"}, out, manifest, ".mark") == ["c.md"]
    assert (out / "a.md").stat().st_mtime_ns == 1  # untouched
    assert not (out / "sub").exists()  # its only file was dropped, and the empty folder with it
    assert incremental.write_tree({"a.md": b"A", "c.md": b"c"}, out, manifest, ".mark") == ["a.md"]
    assert (out / "a.md").read_bytes() == b"A"


@pytest.mark.parametrize("full", [False, True])
def test_a_failed_build_leaves_the_site_as_it_was(tmp_path_factory, tmp_path: Path, full: bool) -> None:
    paths, docs = _built_copy(tmp_path_factory, tmp_path)
    before = _files(paths.site)
    page = next(docs.glob("records/*/v*.md"))
    page.write_text(page.read_text(encoding="utf-8") + "\nSee [a page](no-such-page.md).\n", encoding="utf-8")
    # the engine refuses the link: in the dirty build, after the site was linked aside; in the full one, while
    # the build's thread draws the charts (render.assemble.deferred), which the failure stops
    with pytest.raises(ProbebookError, match=re.escape("no-such-page.md")):
        build(paths, full=full)
    assert _files(paths.site) == before
    assert not any(t.name == "probebook-later" for t in threading.enumerate())
    pending = PENDING.encode()
    assert not any(pending in data for data in _files(paths.build / incremental.CACHE_FOLDER).values())


def test_a_tree_only_build_makes_the_next_site_build_a_full_one(tmp_path_factory, tmp_path: Path) -> None:
    paths, docs = _built_copy(tmp_path_factory, tmp_path)
    page = next(docs.glob("records/*/v*.md"))
    page.write_text(page.read_text(encoding="utf-8") + "\nEdited before a tree-only build.\n", encoding="utf-8")
    build(paths, site=False)  # the tree changes, the site does not: no state may vouch for the site now
    assert not (paths.build / dirty.STATE).exists()
    page.write_text(page.read_text(encoding="utf-8") + "\nEdited again.\n", encoding="utf-8")
    build(paths)
    full = _paths(tmp_path / "full", docs)
    build(full, full=True)
    assert _files(paths.site) == _files(full.site)


def _index(path: Path, *pages: str) -> None:
    docs = [{"location": f"{p}#{n}" if n else p, "title": p, "text": str(n)} for p in pages for n in ("", "s")]
    path.write_text(json.dumps({"config": {}, "docs": docs}), encoding="utf-8")


def test_a_rebuilt_page_with_no_search_entries_loses_its_old_ones(tmp_path: Path) -> None:
    previous, partial = tmp_path / "previous.json", tmp_path / "partial.json"
    _index(previous, "a.html", "b.html", "c.html")
    _index(partial, "b.html")
    # a.html was rendered again and has no entries now (a version superseded since: search exclude); c.html was not
    assert dirty.merge_search_index(previous, partial, {"a.html", "b.html"})
    merged = json.loads(partial.read_text(encoding="utf-8"))["docs"]
    assert [e["location"] for e in merged] == ["b.html", "b.html#s", "c.html", "c.html#s"]
    # a rebuilt page its old index never held: its place is unknown, so the build is a full one
    _index(partial, "d.html")
    assert not dirty.merge_search_index(previous, partial, {"d.html"})


def test_a_superseded_version_is_left_out_of_the_search_index(fixture_site: BuildPaths) -> None:
    paths = fixture_site  # the session's build of the fixture's sources (conftest), a first and so a full build
    (record,) = {p.parent.name for p in (SITE / "docs" / "records").glob("*/v2.md")}
    pages = {e["location"].split("#")[0] for e in json.loads((paths.site / dirty.SEARCH_INDEX).read_bytes())["docs"]}
    assert f"records/{record}/v2.html" in pages
    assert f"records/{record}/v1.html" not in pages
    assert (paths.site / "records" / record / "v1.html").is_file()  # built, linked, only not searched
    assert (paths.tree / "records" / record / "v1.md").read_bytes().startswith(layout.UNSEARCHED_META)
    assert (
        (paths.tree / "records" / record / "v2.md").read_bytes().startswith(layout.BOOSTED_META)
    )  # current: ranked first in search
