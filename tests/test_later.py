"""Files made while the site engine runs (render/later.py): the same site as made first, no placeholder kept."""

from __future__ import annotations

import hashlib
import json
import shutil
import threading
from pathlib import Path

import pytest
from conftest import fixture_site_paths

from measure.errors import ProbebookError
from render import build as build_module
from render import incremental, later
from render.build import build
from render.chart_output import PENDING

SITE = Path(__file__).resolve().parent / "fixtures" / "site"
MARK = PENDING.encode()


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _holding_placeholders(folder: Path) -> list[str]:
    return sorted(rel for rel, data in _files(folder).items() if MARK in data)


def test_a_site_made_while_the_engine_runs_is_the_site_made_first(tmp_path: Path, monkeypatch) -> None:
    drawn_later = fixture_site_paths(tmp_path / "later")
    result = build(drawn_later, full=True)
    # the fixture's two charts (4 files each), the vega-embed bundle and the archive's tarball
    assert result.made_later == 2 * 4 + 2
    assert _holding_placeholders(drawn_later.site) == []
    assert _holding_placeholders(drawn_later.build) == []  # tree, page cache, derivation cache, assets
    assert not any(t.name == "probebook-later" for t in threading.enumerate())

    monkeypatch.setattr(build_module, "LATER_ENGINES", ())  # the same build, every file made before the engine
    drawn_first = fixture_site_paths(tmp_path / "first")
    assert build(drawn_first, full=True).made_later == 0
    assert _files(drawn_later.site) == _files(drawn_first.site)
    assert _files(drawn_later.tree) == _files(drawn_first.tree)


def test_a_rebuild_after_a_build_that_made_files_later_reuses_them(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(SITE / "docs", docs)
    paths = fixture_site_paths(tmp_path, docs)
    assert build(paths).made_later > 0
    kept = incremental.DerivedCache(paths.build).load()
    assert any(key[0] == "chart" for key in kept) and not any(MARK in repr(v).encode() for v in kept.values())
    page = next(docs.glob("records/*/v*.md"))
    page.write_text(page.read_text(encoding="utf-8") + "\nOne more sentence.\n", encoding="utf-8")
    again = build(paths)
    assert again.made_later == 0  # every chart was kept; nothing waits, so the engine may rebuild one page
    assert _holding_placeholders(paths.site) == []


def test_an_engine_that_fails_stops_the_drawing_and_leaves_the_site(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(SITE / "docs", docs)
    paths = fixture_site_paths(tmp_path, docs)
    build(paths)
    before = _files(paths.site)
    page = next(docs.glob("records/*/v*.md"))
    page.write_text(page.read_text(encoding="utf-8") + "\nSee [a page](no-such-page.md).\n", encoding="utf-8")
    with pytest.raises(ProbebookError, match="no-such-page.md"):
        build(paths, full=True)  # a full build: its charts are drawn while the engine runs, and it fails
    assert not any(t.name == "probebook-later" for t in threading.enumerate())
    assert _files(paths.site) == before
    assert _holding_placeholders(paths.build / incremental.CACHE_FOLDER) == []


def test_settle_replaces_each_placeholder_and_caches_held_pages_only_then(tmp_path: Path) -> None:
    cache = incremental.PageCache(tmp_path)
    waiting = later.Later({}, cache)
    first, second = waiting.file(lambda: b"first file\n"), waiting.file(lambda: b"second file\n")
    assert first != second and later.is_placeholder(first) and later.is_placeholder(second)
    held = incremental.PageOutput({"a.md": b"# A\n", "a.bin": first}, [], [])
    plain = incremental.PageOutput({"b.md": b"# B\n"}, [], [])
    assert waiting.hold("key-a", held) is True
    assert waiting.hold("key-b", plain) is False
    assert not (cache.folder / "key-a.pickle").exists()  # never cached with a placeholder in it
    waiting.start()
    waiting.finish()
    files = {"a.md": b"# A\n", "a.bin": first, "x.bin": second}
    replaced = waiting.settle(files)
    assert files == {"a.md": b"# A\n", "a.bin": b"first file\n", "x.bin": b"second file\n"}
    assert replaced == {"a.bin": (first, b"first file\n"), "x.bin": (second, b"second file\n")}
    assert waiting.settled == 2
    cached = cache.get("key-a")
    assert cached is not None and cached.files == {"a.md": b"# A\n", "a.bin": b"first file\n"}


def test_what_a_thread_raises_is_raised_by_finish(tmp_path: Path) -> None:
    waiting = later.Later({})

    def broken() -> bytes:
        raise ProbebookError("the maker failed")

    waiting.file(broken)
    waiting.start()
    with pytest.raises(ProbebookError, match="the maker failed"):
        waiting.finish()


def test_write_made_refuses_a_copy_the_engine_changed(tmp_path: Path) -> None:
    tree, site = tmp_path / "tree", tmp_path / "site"
    tree.mkdir()
    site.mkdir()
    placeholder = PENDING.encode() + b"file 0\n"
    manifest = tmp_path / "tree.json"
    for folder in (tree, site):
        (folder / "a.bin").write_bytes(placeholder)
    manifest.write_text('{"a.bin": "stale"}', encoding="utf-8")
    later.write_made({"a.bin": (placeholder, b"made\n")}, tree, manifest, site)
    assert (tree / "a.bin").read_bytes() == (site / "a.bin").read_bytes() == b"made\n"
    assert json.loads(manifest.read_text(encoding="utf-8")) == {"a.bin": hashlib.sha256(b"made\n").hexdigest()}
    assert (site / "a.bin").stat().st_mtime_ns >= (tree / "a.bin").stat().st_mtime_ns

    (site / "a.bin").write_bytes(b"something the engine wrote\n")
    (tree / "a.bin").write_bytes(placeholder)
    with pytest.raises(ProbebookError, match="a.bin: the site engine changed a.bin"):
        later.write_made({"a.bin": (placeholder, b"made\n")}, tree, manifest, site)
    assert (site / "a.bin").read_bytes() == b"something the engine wrote\n"
