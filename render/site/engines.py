"""The site engines: how each turns render's Markdown tree and ``build/mkdocs.yml`` into HTML
(ARCHITECTURE.md §The build).

Render's output is engine-neutral (a plain Markdown tree and a plain ``mkdocs.yml`` with a generated
``nav``); this module is the only place that knows how an engine is started, where it writes, how it
reports a failure, and which theme layout the sanitizer must expect of its pages:

- ``mkdocs``: Material for MkDocs through ``python -m mkdocs build --strict -d OUT``;
- ``zensical``: Zensical (by the authors of Material for MkDocs; it reads the same ``mkdocs.yml``)
  through ``python -m zensical build --strict``. Zensical keeps ``docs_dir`` and ``site_dir`` inside
  the config's folder, so it writes into the build folder and the result is moved into ``OUT``. Its
  cache (``.cache`` in the build folder) makes a repeated build rebuild only what changed; a build from
  the cache is byte-identical to one without it (``tests/test_engines.py``).

Each runs in a subprocess with ``SOURCE_DATE_EPOCH`` and a fixed hash seed, so no wall-clock time or
hash order enters the site; a failure is one line with the engine's first warning or error.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from measure.errors import ProbebookError
from render.site import sanitize

# mkdocs-material stays the default: the site tests, the browser test and the published site were written
# against its output, and Zensical is a 0.0.x release whose output (theme variant, search index) still
# changes between versions. ``python bench/render.py --engines`` measures both on the same tree.
DEFAULT = "mkdocs"
ZENSICAL_OUT = ".zensical-site"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class EngineError(ProbebookError):
    """The site engine refused the build (its first warning or error, and where the full log is)."""


@dataclass(frozen=True)
class Engine:
    """One site engine: how it is run and the theme layout its pages have."""

    name: str
    """The name ``--engine`` takes."""
    run: Callable[[Path, Path, int, bool, RunningEngine | None], None]
    """``run(config, out, epoch, incremental, started)``: build the site of ``config`` (``build/mkdocs.yml``) into
    ``out``, in the process ``start`` made ahead of time, if given."""
    theme: sanitize.EngineTheme
    """Where its pages' content area and its search index are, for the sanitizer."""
    dirty_builds: bool
    """Whether ``incremental`` means a dirty build over a copy of the last site (``render.assemble.dirty``, mkdocs)."""
    start: Callable[[], RunningEngine] | None = None
    """Start the engine's process ahead of its work (``RunningEngine``), if it can wait for it."""


def _env(epoch: int | None) -> dict[str, str]:
    # NO_COLOR: Zensical colours its diagnostics; the log and the error line are read as plain text.
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONHASHSEED": "0", "NO_COLOR": "1"}
    if epoch is not None:
        env["SOURCE_DATE_EPOCH"] = str(epoch)
    return env


def _run(name: str, cmd: list[str], build_dir: Path, epoch: int, first: Callable[[list[str]], str | None]) -> None:
    """Run one engine command in the build folder (absolute paths in ``cmd``); its output goes to <build>/<name>.log."""
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(epoch), cwd=build_dir)
    _check(name, proc.returncode, proc.stdout + proc.stderr, build_dir, first)


def _check(name: str, status: int, output: str, build_dir: Path, first: Callable[[list[str]], str | None]) -> None:
    """Keep the engine's output in <build>/<name>.log; a failed run is one line: its first warning or error."""
    log = build_dir / f"{name}.log"
    output = _ANSI.sub("", output)
    log.write_text(output, encoding="utf-8")
    if status != 0:
        line = first(output.splitlines()) or f"exit status {status}"
        raise EngineError(f"{name} build --strict failed: {line} (full log: {log})")


def _first_mkdocs(lines: list[str]) -> str | None:
    found = [ln.strip() for ln in lines if ln.strip().startswith(("WARNING", "ERROR")) or "Error" in ln]
    return found[0] if found else None


def _first_zensical(lines: list[str]) -> str | None:
    """Zensical prints ``Warning: what`` and, a few lines below, ``[ page.md:LINE:COL ]``."""
    for i, ln in enumerate(lines):
        text = ln.strip()
        if text.startswith(("Warning:", "Error:")):
            where = next((m.group(1) for m in map(_ZENSICAL_WHERE.search, lines[i + 1 : i + 4]) if m), None)
            return f"{text} ({where})" if where else text
    errors = [ln.strip() for ln in lines if "Error" in ln]
    return errors[-1] if errors else None


_ZENSICAL_WHERE = re.compile(r"\[ (\S+:\d+:\d+) \]")


# The mkdocs process is started before render has written the tree (``start_mkdocs``), so that Python's start
# and mkdocs' imports, about 0.4 s of one core, overlap render's work; it then waits for its command line, one
# line of JSON on stdin: {"argv": mkdocs' arguments, "epoch": SOURCE_DATE_EPOCH, "cwd": the build folder}. An
# empty stdin (the build stopped before its engine) ends it. ``mkdocs build --dirty`` logs a warning on every
# dirty build, and --strict would fail on it: render.assemble.dirty decides when a dirty build is exact, so that one
# warning is dropped and every other still fails the build.
_MKDOCS_DRIVER = """
import json, logging, os, sys
if sys.path[0] == "":  # python -c puts the current folder first: the caller's, which must not shadow a library
    del sys.path[0]
import markdown, jinja2, mkdocs.commands.build, mkdocs.config.defaults, mkdocs.structure.pages
from mkdocs.__main__ import cli
import material.plugins.search.plugin, material.plugins.offline.plugin, pymdownx.superfences
line = sys.stdin.readline()
if not line:
    sys.exit(0)
go = json.loads(line)
os.environ["SOURCE_DATE_EPOCH"] = str(go["epoch"])
os.chdir(go["cwd"])
if "--dirty" in go["argv"]:
    logging.getLogger("mkdocs.commands.build").addFilter(
        lambda r: "A 'dirty' build is being performed" not in r.getMessage())
sys.argv = ["mkdocs", *go["argv"]]
cli()
"""


class RunningEngine:
    """An engine's process, started ahead of its work and waiting for its command line (``go``)."""

    def __init__(self, driver: str):
        self._proc = subprocess.Popen(
            [sys.executable, "-c", driver],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(None),
        )

    def go(self, argv: list[str], epoch: int, cwd: Path) -> tuple[int, str]:
        """Run the engine with ``argv`` in ``cwd``; wait for it; (exit status, its output)."""
        line = json.dumps({"argv": argv, "epoch": epoch, "cwd": str(cwd)}) + "\n"
        out, err = self._proc.communicate(line)
        return self._proc.returncode, out + err

    @property
    def ended(self) -> bool:
        """Whether the process has ended (it ran, or ``close`` ended it)."""
        return self._proc.poll() is not None

    def close(self) -> None:
        """End the process if its work never came (the build stopped first); nothing if it already ran."""
        if self._proc.returncode is None:
            self._proc.kill()
            self._proc.communicate()


def start_mkdocs() -> RunningEngine:
    """Python with mkdocs and the Material theme imported, waiting for its command line."""
    return RunningEngine(_MKDOCS_DRIVER)


def run_mkdocs(
    config: Path, out: Path, epoch: int, incremental: bool = False, started: RunningEngine | None = None
) -> None:
    """``mkdocs build --strict`` into ``out``, in ``started`` (``start_mkdocs``), else in a process started now.

    ``incremental`` adds ``--dirty``: only pages whose Markdown is newer than their HTML in ``out`` (a copy of
    the last site, made by ``render.assemble.dirty`` when it found that exact) are built.
    """
    args = ["build", "--strict", "-f", str(config.resolve()), "-d", str(out.resolve())]
    proc = started if started is not None else start_mkdocs()
    try:
        status, output = proc.go([*args, "--dirty"] if incremental else args, epoch, config.parent.resolve())
    finally:
        proc.close()
    _check("mkdocs", status, output, config.parent, _first_mkdocs)


def run_zensical(
    config: Path, out: Path, epoch: int, incremental: bool = True, started: RunningEngine | None = None
) -> None:
    """``python -m zensical build --strict`` into the build folder, then moved into ``out`` (``started`` is always
    None: Zensical's process is not started ahead of its work).

    Zensical keeps its cache in the build folder and rebuilds only what changed; without ``incremental``
    (``probebook build --full``) it clears the cache first (``--clean``) and builds everything afresh.
    The config it reads is ``build/mkdocs.yml`` with ``site_dir`` pointed inside the build folder
    (Zensical refuses a ``site_dir`` outside the config's folder), written beside it as ``zensical.yml``.
    """
    build_dir = config.parent
    settings = yaml.safe_load(config.read_text(encoding="utf-8"))
    settings["site_dir"] = ZENSICAL_OUT
    zconfig = build_dir / "zensical.yml"
    zconfig.write_text(
        "# generated by probebook from mkdocs.yml for Zensical (site_dir inside the build folder); do not edit\n"
        + yaml.safe_dump(settings, sort_keys=False, allow_unicode=True),
        encoding="utf-8",
    )
    written = build_dir / ZENSICAL_OUT
    if written.exists():
        shutil.rmtree(written)  # a killed earlier build's output; builds of one project hold the build lock
    cmd = [sys.executable, "-m", "zensical", "build", "--strict", "-f", str(zconfig.resolve())]
    if not incremental:
        cmd.append("--clean")
    _run("zensical", cmd, build_dir, epoch, _first_zensical)
    _move_into(written, out)


def _move_into(src: Path, out: Path) -> None:
    """Make ``src``'s files those of the empty folder ``out``: one rename on one filesystem, else a copy."""
    out.rmdir()
    try:
        os.rename(src, out)
    except OSError:  # the build folder and the site on different filesystems
        shutil.copytree(src, out, symlinks=True)
        shutil.rmtree(src)


ENGINES: dict[str, Engine] = {
    "mkdocs": Engine("mkdocs", run_mkdocs, sanitize.MATERIAL, dirty_builds=True, start=start_mkdocs),
    "zensical": Engine("zensical", run_zensical, sanitize.ZENSICAL, dirty_builds=False),
}


def start(name: str) -> RunningEngine | None:
    """The process of engine ``name`` started ahead of its work, if it has one (``Engine.start``)."""
    chosen = get(name)
    return chosen.start() if chosen.start is not None else None


def get(name: str) -> Engine:
    """The engine called ``name``; refuse any other in one line."""
    try:
        return ENGINES[name]
    except KeyError:
        raise EngineError(f"--engine {name!r}: not a site engine (choose from {', '.join(ENGINES)})") from None
