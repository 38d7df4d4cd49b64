"""Pages rendered by forked workers (render.assemble.parallel): when the pool is used, and that it changes nothing;
one task run apart (page_pool.ForkedTask): its result, its priority, its errors as one line, its end when stopped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import HANG_S, REPO, bench_module

from measure.errors import ProbebookError
from render.assemble import incremental, sealed
from render.assemble import parallel as page_pool
from render.assemble import stages as build_module
from render.site import assets as site_assets


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
from render.assemble import parallel as page_pool
from render.assemble import stages as build_module
from render.assemble.stages import build
from measure.errors import ProbebookError
build_module.EVIDENCE_CHUNK = 5  # small tasks, so a few documents make several
build_module.APART_PAGES = 7  # a cold build: some evidence pages made apart, the rest by the workers
docs, root = Path(sys.argv[1]), Path(sys.argv[2])
out = {"workers": page_pool.workers(int(sys.argv[3]))}
paths = fixture_site_paths(root, docs)
if len(sys.argv) > 5:
    paths = replace(paths, archive=Path(sys.argv[5]))
try:
    build(paths, site=False)  # an empty build folder: every page is rendered, the bundle read from the test's copy
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


def _seed_bundle(*roots: Path) -> None:
    """Each build folder's kept vega-embed bundle, made once here: the bundle is not what these tests test."""
    bundle = site_assets.vega_embed_bundle()
    for root in roots:
        folder = root / "build" / build_module.ASSETS_CACHE
        folder.mkdir(parents=True)
        (folder / site_assets.bundle_name()).write_bytes(sealed.seal(bundle))  # as a build keeps it


# slow: two whole builds of a synthetic archive, each in a fresh interpreter (about 11 s of CPU), end to end; .ci/run
# runs it with -m slow
@pytest.mark.slow
def test_a_build_on_two_workers_equals_a_serial_one(tmp_path: Path) -> None:
    bench_render = bench_module("render")  # its synthetic archive, made through the real Store.put
    count = 15  # three tasks of evidence pages at the script's 5 a task
    ids = bench_render.make_archive(tmp_path / "archive", count)
    bench_render.make_docs(tmp_path / "docs", ids, 1)  # a home page and a record with two charts
    _seed_bundle(tmp_path / "two", tmp_path / "one")
    two = _build(tmp_path / "docs", tmp_path / "two", "2", tmp_path / "archive")
    one = _build(tmp_path / "docs", tmp_path / "one", "1", tmp_path / "archive")
    assert (two["workers"], one["workers"], "error" in two, "error" in one) == (2, 0, False, False)
    tree = _tree(tmp_path / "two" / "build" / "docs")
    assert sum(1 for p in tree if p.startswith("evidence/") and p.endswith(".md")) >= count
    assert any(p.endswith(".dark.svg") for p in tree)
    assert tree == _tree(tmp_path / "one" / "build" / "docs")
    # the derivations the workers computed came back and were kept, as a serial build keeps them
    kept = incremental.DerivedCache(tmp_path / "two" / "build").load()
    assert kept and set(kept) == set(incremental.DerivedCache(tmp_path / "one" / "build").load())


def test_both_stop_at_the_first_error_in_page_order(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "playbook").mkdir(parents=True)
    (docs / "index.md").write_text("# Home\n", encoding="utf-8")
    for name, call in (("a-first.md", "fit(nosuch)"), ("b-fine.md", "'fine'"), ("z-later.md", 'chart("no-kind")')):
        (docs / "playbook" / name).write_text(f"# Page {name}\n\n{{{{ {call} }}}}\n", encoding="utf-8")
    two, one = _build(docs, tmp_path / "two", "2"), _build(docs, tmp_path / "one", "1")
    assert two["workers"] == 2 and two["error"] == one["error"]
    assert "a-first.md" in two["error"] and "\n" not in two["error"]


# Each in a fresh interpreter: one thread, the state a `probebook build` forks from.
_APART = """
import json, os, sys, threading, time
from measure.errors import ProbebookError
from render.assemble.parallel import ForkedTask

def report(task, stop_after=None):
    stop = threading.Event()
    if stop_after is not None:
        threading.Timer(stop_after, stop.set).start()
    apart = ForkedTask(task, 5, "drawing")
    try:
        done, value = apart.result(stop)
        out = {"done": done, "value": value}
    except ProbebookError as exc:
        out = {"error": str(exc)}
    out["alive"] = apart.alive()
    print(json.dumps(out))

def fail(exc):
    raise exc

TASKS = {
    "value": lambda: {"pid": os.getpid(), "priority": os.getpriority(os.PRIO_PROCESS, 0)},
    "refused": lambda: fail(ProbebookError("chart 'x': no samples")),
    "failed": lambda: fail(ValueError("bad value")),
    "died": lambda: os._exit(3),
    "slow": lambda: time.sleep(900),
}
print(json.dumps({"pid": os.getpid(), "priority": os.getpriority(os.PRIO_PROCESS, 0)}))
report(TASKS[sys.argv[1]], 0.3 if sys.argv[1] == "slow" else None)
"""


def _apart(task: str) -> tuple[dict, dict]:
    proc = subprocess.run(
        [sys.executable, "-c", _APART, task],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=True,
        timeout=HANG_S,
    )
    here, out = (json.loads(line) for line in proc.stdout.strip().splitlines())
    return here, out


def test_a_task_apart_runs_in_another_process_at_a_lower_priority() -> None:
    here, out = _apart("value")
    assert out["done"] is True and out["alive"] is False
    assert out["value"]["pid"] != here["pid"]
    assert out["value"]["priority"] == min(here["priority"] + 5, 19)


def test_what_a_task_apart_raises_or_how_it_dies_is_one_line() -> None:
    assert _apart("refused")[1] == {"error": "chart 'x': no samples", "alive": False}
    assert _apart("failed")[1] == {"error": "drawing: ValueError: bad value", "alive": False}
    assert _apart("died")[1] == {"error": "drawing: the process ended without a result (exit status 3)", "alive": False}


def test_a_task_apart_is_ended_when_the_build_stops() -> None:
    started = time.perf_counter()
    assert _apart("slow")[1] == {"done": False, "value": None, "alive": False}
    # ended, not waited for: far under the task's 900 s however loaded the machine (about 1 s quiet)
    assert time.perf_counter() - started < 300, "the stopped task was waited for, not ended"
