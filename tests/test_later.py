"""Files made while the site engine runs (render/assemble/deferred.py): the same site as made first, whether drawn in a
forked process (a fresh build) or a thread (this test process), and no placeholder kept."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import REPO, fixture_site_paths

from measure.errors import ProbebookError
from render.assemble import deferred as later
from render.assemble import incremental
from render.assemble import types as build_run
from render.assemble.stages import build
from render.charts.output import PENDING

SITE = Path(__file__).resolve().parent / "fixtures" / "site"
MARK = PENDING.encode()


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _holding_placeholders(folder: Path) -> list[str]:
    return sorted(rel for rel, data in _files(folder).items() if MARK in data)


def test_a_site_made_while_the_engine_runs_is_the_site_made_first(tmp_path: Path, monkeypatch) -> None:
    drawn_later = fixture_site_paths(tmp_path / "later")
    result = build(drawn_later, full=True)
    # the fixture's two charts (4 files each), the vega-embed bundle and the archive's tarball, and the chart of
    # each configuration key's history page (4 files each)
    histories = len(list((drawn_later.tree / "evidence" / "history").glob("*.history.svg")))
    assert histories > 0 and result.made_later == 2 * 4 + 2 + histories * 4
    assert _holding_placeholders(drawn_later.site) == []
    assert _holding_placeholders(drawn_later.build) == []  # tree, page cache, derivation cache, assets
    assert not any(t.name == "probebook-later" for t in threading.enumerate())

    monkeypatch.setattr(build_run, "LATER_ENGINES", ())  # the same build, every file made before the engine
    drawn_first = fixture_site_paths(tmp_path / "first")
    assert build(drawn_first, full=True).made_later == 0
    assert _files(drawn_later.site) == _files(drawn_first.site)
    assert _files(drawn_later.tree) == _files(drawn_first.tree)


# A fresh interpreter, as `probebook build` starts: one thread and no vl-convert, so the charts are drawn in a
# forked process (page_pool.ForkedTask), each ForkedTask made recorded and then made as it would be.
_FRESH = """
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from conftest import REPO, fixture_site_paths
from render.assemble import parallel as page_pool
from render.assemble.stages import build

made = []


class Recorded(page_pool.ForkedTask):
    def __init__(self, *args, **kwargs):
        made.append(args[1])
        super().__init__(*args, **kwargs)


page_pool.ForkedTask = Recorded
result = build(fixture_site_paths(Path(sys.argv[1])), full=True)
print(json.dumps({"made_later": result.made_later, "apart": made}))
"""


# slow: a whole fixture-site build in a fresh interpreter and a second one here (about 8 s of CPU), end to end;
# .ci/run runs it with -m slow
@pytest.mark.slow
def test_a_fresh_build_draws_in_a_process_apart_and_makes_the_same_site(tmp_path: Path, monkeypatch) -> None:
    # one build date for both builds: the pages print it, and two builds either side of midnight differed by it
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1796083200")
    root = tmp_path / "apart"
    proc = subprocess.run(
        [sys.executable, "-c", _FRESH, str(root), str(Path(__file__).resolve().parent)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=True,
    )
    apart = fixture_site_paths(root)
    histories = len(list((apart.tree / "evidence" / "history").glob("*.history.svg")))  # one chart per key's page
    assert histories > 0
    made = 2 * 4 + 2 + histories * 4  # the records' charts, their files, and each history page's chart
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"made_later": made, "apart": [later.NICE]}
    assert _holding_placeholders(apart.site) == [] and _holding_placeholders(apart.build) == []

    monkeypatch.setattr(build_run, "LATER_ENGINES", ())
    first = fixture_site_paths(tmp_path / "first")
    build(first, full=True)
    assert _files(apart.site) == _files(first.site)
    assert _files(apart.tree) == _files(first.tree)


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


def _written_tree(root: Path, files: dict[str, bytes]) -> tuple[Path, Path]:
    """A tree as write_tree leaves it, and its manifest."""
    tree, manifest = root / "docs", root / incremental.TREE_MANIFEST
    incremental.write_tree(files, tree, manifest, ".marker")
    return tree, manifest


def test_the_thread_settles_and_writes_the_tree_and_caches_held_pages_only_then(tmp_path: Path) -> None:
    cache = incremental.PageCache(tmp_path)
    waiting = later.DeferredWork({}, cache)
    first, second = waiting.file(lambda: b"first file\n"), waiting.file(lambda: b"second file\n")
    assert first != second and later.is_placeholder(first) and later.is_placeholder(second)
    held = incremental.PageOutput({"a.md": b"# A\n", "a.bin": first}, [], [])
    plain = incremental.PageOutput({"b.md": b"# B\n"}, [], [])
    assert waiting.hold("key-a", held) is True
    assert waiting.hold("key-b", plain) is False
    assert not (cache.folder / "key-a.pickle").exists()  # never cached with a placeholder in it
    files = {"a.md": b"# A\n", "a.bin": first, "x.bin": second}
    tree, manifest = _written_tree(tmp_path, files)
    waiting.start(files, tree, manifest)
    waiting.finish()
    assert files == {"a.md": b"# A\n", "a.bin": b"first file\n", "x.bin": b"second file\n"}
    assert waiting.replaced == {"a.bin": (first, b"first file\n"), "x.bin": (second, b"second file\n")}
    assert waiting.settled == 2
    assert {rel: (tree / rel).read_bytes() for rel in files} == files
    assert json.loads(manifest.read_text(encoding="utf-8")) == {
        rel: hashlib.sha256(data).hexdigest() for rel, data in files.items()
    }
    assert sorted(p.name for p in tree.rglob("*") if p.name.endswith(".tmp")) == []
    cached = cache.get("key-a")
    assert cached is not None and cached.files == {"a.md": b"# A\n", "a.bin": b"first file\n"}


def test_what_a_thread_raises_is_raised_by_finish(tmp_path: Path) -> None:
    waiting = later.DeferredWork({})

    def broken() -> bytes:
        raise ProbebookError("the maker failed")

    files = {"a.bin": waiting.file(broken)}
    tree, manifest = _written_tree(tmp_path, files)
    waiting.start(files, tree, manifest)
    with pytest.raises(ProbebookError, match="the maker failed"):
        waiting.finish()

    other = later.DeferredWork({})
    files = {"b.bin": other.file(lambda: (tmp_path / "no-such-file").read_bytes())}
    tree, manifest = _written_tree(tmp_path / "other", files)
    other.start(files, tree, manifest)
    with pytest.raises(ProbebookError, match=r"^while the site engine ran: FileNotFoundError: .*no-such-file"):
        other.finish()


def test_write_made_replaces_the_engine_copies_of_placeholders_and_refuses_changed_ones(tmp_path: Path) -> None:
    placeholder = PENDING.encode() + b"file 0\n"
    (tmp_path / "a.bin").write_bytes(placeholder)  # copied before the thread replaced it in the tree
    (tmp_path / "b.bin").write_bytes(b"made b\n")  # copied after
    made = {"a.bin": (placeholder, b"made a\n"), "b.bin": (placeholder, b"made b\n"), "c.bin": (placeholder, b"c\n")}
    later.write_made(made, tmp_path)  # c.bin: not copied (excluded by the config), so not published
    assert _files(tmp_path) == {"a.bin": b"made a\n", "b.bin": b"made b\n"}

    (tmp_path / "a.bin").write_bytes(b"something the engine wrote\n")
    with pytest.raises(ProbebookError, match=re.escape("a.bin: the site engine changed a.bin")):
        later.write_made(made, tmp_path)
    assert (tmp_path / "a.bin").read_bytes() == b"something the engine wrote\n"
