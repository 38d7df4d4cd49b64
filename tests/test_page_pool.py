"""Pages rendered by forked workers (render.page_pool): when the pool is used, and that it changes nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, SITE_FIXTURE, bench_module

from measure.errors import ProbebookError
from render import page_pool


def test_the_jobs_setting_is_a_whole_number_of_at_least_one(monkeypatch: pytest.MonkeyPatch) -> None:
    for bad in ("abc", "0", "-2", "1.5"):
        monkeypatch.setenv(page_pool.ENV, bad)
        with pytest.raises(ProbebookError, match=rf"^{page_pool.ENV}='{bad}': give a whole number of workers"):
            page_pool.workers(10)
    monkeypatch.setenv(page_pool.ENV, "1")
    assert page_pool.workers(10) == 0  # one worker: this process renders, serially
    monkeypatch.delenv(page_pool.ENV)
    assert page_pool.jobs_wanted() is None


def test_no_pool_once_vl_convert_runs_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    import vl_convert  # noqa: F401  (its runtime's threads would not survive a fork)

    monkeypatch.setenv(page_pool.ENV, "2")
    assert not page_pool.fork_is_safe()
    assert page_pool.workers(10) == 0


# Run in a fresh interpreter: one thread and no vl-convert, the state a `probebook build` starts in.
_SCRIPT = """
import json, os, sys
from pathlib import Path
sys.path.insert(0, sys.argv[4])
from dataclasses import replace
from conftest import fixture_site_paths
from render import page_pool
from render.build import build
from measure.errors import ProbebookError
docs, root = Path(sys.argv[1]), Path(sys.argv[2])
out = {"workers": page_pool.workers(int(sys.argv[3]))}
paths = fixture_site_paths(root, docs)
if len(sys.argv) > 5:
    paths = replace(paths, archive=Path(sys.argv[5]))
try:
    build(paths, site=False, full=True)
except ProbebookError as exc:
    out["error"] = str(exc)
print(json.dumps(out))
"""


def _build(docs: Path, root: Path, jobs: str, archive: Path | None = None) -> dict:
    env = {**os.environ, page_pool.ENV: jobs, "PYTHONPATH": str(REPO)}
    pages = str(sum(1 for _ in docs.rglob("*.md")))
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            _SCRIPT,
            str(docs),
            str(root),
            pages,
            str(REPO / "tests"),
            *([str(archive)] if archive else []),
        ],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    result: dict = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_build_on_two_workers_equals_a_serial_one_and_stops_at_the_same_error(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(SITE_FIXTURE / "docs", docs)
    two, one = _build(docs, tmp_path / "two", "2"), _build(docs, tmp_path / "one", "1")
    assert (two["workers"], one["workers"]) == (2, 0)
    assert "error" not in two and "error" not in one
    assert _tree(tmp_path / "two" / "build" / "docs") == _tree(tmp_path / "one" / "build" / "docs")
    # the derivations the workers computed came back and were kept, as a serial build keeps them
    from render import incremental

    kept_two = incremental.DerivedCache(tmp_path / "two" / "build").load()
    assert set(kept_two) == set(incremental.DerivedCache(tmp_path / "one" / "build").load()) and kept_two

    # two pages that fail: both builds name the first in page order, with the same one line
    for name, call in (("a-first.md", "fit(nosuch)"), ("z-later.md", 'chart("no-kind", sweep)')):
        (docs / "playbook" / name).write_text(f"# Broken {name}\n\n{{{{ {call} }}}}\n", encoding="utf-8")
    two, one = _build(docs, tmp_path / "two-bad", "2"), _build(docs, tmp_path / "one-bad", "1")
    assert two["error"] == one["error"]
    assert "a-first.md" in two["error"] and "\n" not in two["error"]


def test_evidence_pages_made_by_workers_equal_those_made_serially(tmp_path: Path) -> None:
    bench_render = bench_module("render")  # its synthetic archive, made through the real Store.put
    from render import build as build_module

    count = 2 * build_module.EVIDENCE_CHUNK + 10  # three chunks of evidence pages
    ids = bench_render.make_archive(tmp_path / "archive", count)
    bench_render.make_docs(tmp_path / "docs", ids, 3)
    two = _build(tmp_path / "docs", tmp_path / "two", "2", tmp_path / "archive")
    one = _build(tmp_path / "docs", tmp_path / "one", "1", tmp_path / "archive")
    assert (two["workers"], one["workers"], "error" in two, "error" in one) == (2, 0, False, False)
    tree = _tree(tmp_path / "two" / "build" / "docs")
    assert sum(1 for p in tree if p.startswith("evidence/") and p.endswith(".md")) >= count
    assert tree == _tree(tmp_path / "one" / "build" / "docs")
