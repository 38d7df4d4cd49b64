"""Shared pytest fixtures: a real temporary archive, a real ``probebook`` subprocess, results built once per session.

An expensive result that several tests only read (the fixture site, a probe run, a campaign) is
made once per session for all xdist workers with ``shared_folder`` (see its docstring and
ARCHITECTURE.md §Tests and gates); ``fixture_site`` is the worked example.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

# One OpenMP thread per test process (and per ``probebook`` child, which inherits the environment), unless the
# caller chose: ``-n auto`` already runs one worker per core, and torch's default of one thread per core on top
# oversubscribes the cores. OpenMP threads then spin while they wait for each other, and a tiny CPU probe run
# took 17 s instead of 4.6 s on a busy 2-core machine. Set before any test module imports torch (it reads the
# variable when it starts its thread pool); what the tests check does not depend on the thread count.
os.environ.setdefault("OMP_NUM_THREADS", "1")

# Compiled bytecode kept for the test workers and every Python child they start: with PYTHONDONTWRITEBYTECODE set (as
# on the CI machine's image) each process compiled the project from source again, and pytest rewrote every test
# module's asserts again in each worker (collecting the suite took 10.9 s of CPU per worker with it set, 5.5 s with the
# bytecode kept). It is kept where Python keeps it by default, in __pycache__ beside each source (git ignores them),
# and not in a folder of the run's own (PYTHONPYCACHEPREFIX): Python then reads bytecode from that folder only, so
# every run compiled the standard library, torch, scipy and mkdocs from source again, in each worker at once (5.4 s of
# CPU per worker, and in the first children), where their installed bytecode serves. The full-disk tests write no
# bytecode: Python keeps a short .pyc write under a file-size limit, and a truncated file fails every later import.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SITE_FIXTURE = FIXTURES / "site"
HANG_S = 900.0
"""The suite's one wall-clock limit (seconds) on a child process, a wait or a read: past it, it has hung. No test's
result rests on it: on a 2-core machine shared with other work, children that a quiet machine ran in under a minute
took 6-12 minutes, and the fixed 30-300 s limits this replaces failed good runs (issue 29). It only keeps a hang from
blocking the suite forever; the CPU-time bounds in the tests and CI's overall limit (.ci/run) do the rest."""


RUN_TIME = (
    "probebook tests: the README's command (`python3 -m pytest -n auto`, end-to-end tests left to `-m slow`) "
    "takes about 250 s of CPU on a 2-core machine, 2 to 9 min of wall by its other load (bench/test_cpu.py "
    "measures it); a subset: `pytest tests/test_fit.py`, `pytest -k fit -n 0`, the end-to-end tests "
    "`pytest -n auto -m slow` (.ci/run runs both)"
)
"""The run's first line: what the whole run costs, so one who wants less knows to pick a subset, and how."""


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Print ``RUN_TIME`` before pytest's own header (in the controller only: an xdist worker's output is not shown)."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and not hasattr(session.config, "workerinput"):
        reporter.write_line(RUN_TIME)


def shared_folder(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]) -> Path:
    """The folder ``name``, filled by ``make(folder)`` once per test session and shared by every xdist worker.

    How a test that only READS an expensive result (a built site, a probe run, a campaign) should
    get it: a session-scoped fixture that returns ``shared_folder(tmp_path_factory, "my-thing", make)``.
    The first worker to ask builds it under a file lock in the session's temporary folder (the one
    above each worker's own); the others wait for the lock and then read what it built
    (pytest-xdist's documented pattern, "Making session-scoped fixtures execute only once"). Tests
    must not change what is in the folder: a test that changes sources or the archive builds its own.
    A ``make`` that fails leaves no marker, so the next worker tries again and fails the same way.
    """
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the session's folder (pytest-N), shared by gw0, gw1, ...
    folder = base / f"shared-{name}"
    done = base / f"shared-{name}.done"
    with FileLock(str(base / f"shared-{name}.lock")):
        if not done.exists():
            if folder.exists():
                shutil.rmtree(folder)  # a make that failed half-way in another worker
            folder.mkdir()
            make(folder)
            done.touch()
    return folder


def bench_module(name: str) -> Any:
    """``bench/<name>.py`` as a module (``bench_<name>``): its generators are what the benchmarks build, so a
    test that needs a large synthetic archive uses the same one."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"bench_{name}", REPO / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[f"bench_{name}"] = module
    spec.loader.exec_module(module)
    return module


def fixture_site_paths(root: Path, docs: Path | None = None) -> Any:
    """The BuildPaths of the fixture site (tests/fixtures/site) built under ``root``; ``docs``: other sources
    (a test's edited copy of the fixture's docs) built against the same archive."""
    from measure.cli import declarations
    from render.assemble.stages import BuildPaths

    return BuildPaths(
        docs=SITE_FIXTURE / "docs" if docs is None else docs,
        archive=SITE_FIXTURE / "archive",
        build=root / "build",
        site=root / "site",
        config=REPO / "mkdocs.yml",
        published=root / "no-published-ledger.json",
        declarations=declarations(),
    )


REPOSITORY_BUILD_STDOUT = "build-stdout.txt"
"""What ``probebook build`` printed for the session's build of the repository (``repository_build``)."""


def repository_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository's own site built once per session by the README's first command, ``probebook build`` run as a
    real process in the repository (docs/, archive/ and its published ledger, mkdocs.yml), its output sent outside
    it: ``--out`` and ``--build-dir`` under the returned folder, which also keeps the command's stdout
    (``REPOSITORY_BUILD_STDOUT``). Shared by every test that reads it (``shared_folder``): the CLI test of that
    command and the tests that read the site; read it, never write to it. One build, not two: the CLI test built
    its own copy, which was the slow stage's second-longest test (154 s on the 2-core CI machine)."""

    def make(folder: Path) -> None:
        out = run_cli(
            "build",
            "--out",
            str(folder / "site"),
            "--build-dir",
            str(folder / "build"),
            env={"PROBEBOOK_ARCHIVE": "archive"},
        )
        if out.returncode != 0:
            raise AssertionError(f"probebook build of the repository exited {out.returncode}:\n{out.stderr}")
        (folder / REPOSITORY_BUILD_STDOUT).write_text(out.stdout, encoding="utf-8")

    return shared_folder(tmp_path_factory, "repository-site", make)


def repository_site_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built site of ``repository_build``."""
    return repository_build(tmp_path_factory) / "site"


@pytest.fixture(scope="session")
def repository_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository's own built site (``repository_site_build``)."""
    return repository_site_build(tmp_path_factory)


@pytest.fixture(scope="session")
def fixture_site(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The fixture site (tests/fixtures/site), built ONCE per session with the real pipeline and mkdocs.

    Shared by every test that only reads it (test_site_build, test_browser, ...); read it, never
    write to it. A test that changes sources or the archive builds its own.
    """
    from render.assemble.stages import build

    root = shared_folder(tmp_path_factory, "fixture-site", lambda folder: build(fixture_site_paths(folder)))
    return fixture_site_paths(root)


@pytest.fixture(scope="session")
def fixture_site_zensical(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The same fixture site built by Zensical, once per session (test_engines, test_browser); read it only."""
    from render.assemble.stages import build

    def make(folder: Path) -> None:
        build(fixture_site_paths(folder), engine="zensical")

    return fixture_site_paths(shared_folder(tmp_path_factory, "fixture-site-zensical", make))


def assert_measured(out: subprocess.CompletedProcess[str]) -> None:
    """A probe run stored what it measured: exit 0, or 1 with its evidence stored ``unstable`` (issue 29: on a
    loaded CPU a tiny step's windows are noisy; the run is kept and flagged, which is not what these tests test)."""
    if out.returncode == 1 and "evidence stored as unstable" in out.stderr:
        return
    assert out.returncode == 0, out.stderr


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    """An empty archive folder (the store creates its layout on first write)."""
    root = tmp_path / "archive"
    root.mkdir()
    return root


def run_cli(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = HANG_S
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m probebook ARGS`` as a real process; return its exit code and output."""
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "probebook", *args],
        cwd=cwd or REPO,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def cli():
    """The ``run_cli`` helper, as a fixture."""
    return run_cli


def run_cli_here(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``probebook ARGS`` in this process; return its exit code and output as ``run_cli`` does.

    The same parser, dispatch and one-line error handling as the console script (``probebook.cli.main``),
    without a new interpreter: a command that loads render's page functions spends about 2 s of CPU on
    imports and vl-convert's start in every new process, once per test worker here. ``cwd`` and ``env``
    hold only while the command runs. Keep at least one ``run_cli`` test per command, so the real
    process's exit status and stderr stay tested too.
    """
    from measure.progress import PACKAGES, configure
    from probebook.cli import main

    out, err = io.StringIO(), io.StringIO()
    configure("probebook")  # the log handlers keep the stream they were made with: point them at err
    handlers = [h for n in PACKAGES for h in logging.getLogger(n).handlers if getattr(h, "_probebook", False)]
    before = [h.stream for h in handlers]
    saved_env = {name: os.environ.get(name) for name in env or {}}
    saved_cwd = os.getcwd()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        for handler in handlers:
            handler.setStream(err)
        os.environ.update(env or {})
        os.chdir(cwd or REPO)
        try:
            code = main(list(args))
        except SystemExit as stop:  # argparse's usage errors exit, as in the console script
            code = stop.code if isinstance(stop.code, int) else 1
        finally:
            os.chdir(saved_cwd)
            for name, value in saved_env.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            for handler, stream in zip(handlers, before, strict=True):
                handler.setStream(stream)
    return subprocess.CompletedProcess(["probebook", *args], code, out.getvalue(), err.getvalue())


@pytest.fixture
def cli_here():
    """The ``run_cli_here`` helper, as a fixture."""
    return run_cli_here


def synthetic_doc(probe: str, samples: list[dict[str, Any]], **data: Any) -> dict[str, Any]:
    """A current-schema evidence document with synthetic samples (never published), for render's tests."""
    return {
        "schema": "probebook.evidence/1",
        "probe": probe,
        "probe_version": 1,
        "created_at": "2026-11-29T08:00:00Z",
        "machine": {},
        "code": {},
        "params": {},
        "data": {"samples": samples, **data},
        "status": "complete",
        "origin": {"kind": "imported", "source": "synthetic test values"},
    }


def render_page(library: Any, aliases: dict[str, str], body: str, tmp_path: Path) -> tuple[str, Any]:
    """Render ``body`` as a record page's template with ``library``'s evidence under ``aliases``.

    Returns the page's text and its ``PageState`` (the ledger rows it produced), through the real
    page functions and template environment.
    """
    from render.functions.page import Page
    from render.pages import sources
    from render.pages.sandbox import PageState, make_environment, render_body

    rel = "records/x/v1.md"
    page = sources.parse_page(tmp_path / rel, rel, "page", body)
    state = PageState(rel)
    env = make_environment({rel: (page.body, str(tmp_path / rel))})
    return render_body(env, page, Page(library, aliases).context(), state), state


FIT_JSON_KEYS = [
    "terms",
    "c_s",
    "a_s_per_token",
    "b_s_per_token2",
    "residuals_s",
    "max_abs_residual_s",
    "asymptote_tok_s",
    "quadratic_share",
    "n_points",
    "ci",
]
"""The step-scaling fit's JSON object, key by key in order (``render.derive.fit.StepFit.to_json``)."""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium a test module shares (``bench/screenshots.py``'s, as the screenshots take it); the
    module skips cleanly where Chromium or Playwright is not installed."""
    shots = bench_module("screenshots")
    if not shots.CHROMIUM.exists():
        pytest.skip(f"{shots.CHROMIUM} is not installed (apt-get install -y chromium; .ci/run does it)")
    pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    with shots.chromium() as chromium:
        yield chromium
