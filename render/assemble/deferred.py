"""Work done while the site engine runs: a cold build's charts, made files and sanitizing (ARCHITECTURE.md §The build).

The site engine (mkdocs) builds on one core, in a subprocess. Most of the rest of a cold build is
drawing charts (altair and vl-convert, about 0.1 s of CPU each) and making the vega-embed bundle and the
archive's tarball. None of that is Markdown: the engine needs those files' names, to check links and copy
them, not their bytes. So a build with many charts to draw writes each such file with a placeholder
(``chart_output.PENDING``), starts the engine, and meanwhile draws and makes them on the other core: in a
forked process at a lower priority (``NICE``), so the engine keeps its own core, or, where this process may
not fork (``page_pool.fork_is_safe``: ``serve``, a process that has drawn), in a thread of this process.
When the engine is done, each placeholder is replaced in the tree and in the built site, before the
sanitizer, the stamp and the swap.
mkdocs copies a file that is not a page as it is, to the same path, so the site is byte-identical to one
built with every file made first (``tests/test_later.py``). Once everything is drawn and made, a thread of
this process sanitizes the pages the engine has finished writing (``render.site.sanitize.BackgroundSanitizer``), so
that after the
engine only the last pages written are left to clean.

A page's Markdown needs each chart's alt text, which ``render.charts.draw.describe`` gives without drawing.
Placeholders go only to the engines in ``ENGINES``, and the engine then builds the whole site: a dirty
build (``render.assemble.dirty``) trusts the files' modification times. So a build draws later only when the
engine builds everything anyway or there are at least ``LATER_MIN`` charts to draw; an author's edit that
adds a chart draws it first and keeps the dirty build. Otherwise (and for ``--no-site``) everything is
made first, on every core (``DeferredWork.now``). No placeholder is ever cached: a page whose files hold one is
kept back from ``render.assemble.incremental.PageCache`` until it is settled, and so is the chart.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from measure.errors import ProbebookError
from render.assemble import incremental
from render.assemble import parallel as page_pool
from render.charts.output import PENDING, ChartOutput, PendingChart
from render.errors import BuildError
from render.site.sanitize import BackgroundSanitizer

LATER_MIN = 16
"""Charts to draw, at least, for a build to draw them while the engine runs even if it could have rebuilt only
the pages that changed: 16 charts take about 1.6 s of CPU, a dirty build about as long at 1,000 documents."""
NICE = 10
"""How much lower the drawing process's priority is than the build's (``os.nice``). Drawing keeps about 1.1
cores busy (vl-convert's runtime has helper threads besides the one that draws), so at the same priority it
takes a share of the engine's core; at a lower one it yields it, and still has the other core to itself."""
ENGINES = ("mkdocs",)
"""Engines that copy a file that is not a page unchanged to the same path (so a placeholder can be replaced)."""

_MARK = PENDING.encode()


def is_placeholder(data: bytes) -> bool:
    return data.startswith(_MARK)


class DeferredWork:
    """What a build makes later: charts described but not drawn, and files whose makers wait."""

    def __init__(self, docs: dict[str, dict[str, Any]], cache: incremental.PageCache | None = None):
        self.docs = docs
        self.cache = cache
        """Where the held pages go once settled."""
        self.charts: dict[tuple, PendingChart] = {}
        """Derivation key -> the chart standing in for the one to draw (``render.functions.derivations.Library``)."""
        self.makers: dict[bytes, Callable[[], bytes]] = {}
        """Placeholder -> what makes the file's bytes."""
        self.held: list[tuple[str, incremental.PageOutput]] = []
        """(cache key, output) of each page whose files hold placeholders: cached once settled."""
        self.drawn: dict[tuple, ChartOutput] = {}
        self.made: dict[bytes, bytes] = {}
        self.replaced: dict[str, tuple[bytes, bytes]] = {}
        """Tree path -> (placeholder, bytes) of each tree file the thread replaced (``start``)."""
        self._thread: threading.Thread | None = None
        self._apart: page_pool.ForkedTask | None = None
        self._error: BaseException | None = None
        self._stop = threading.Event()
        self._swept = threading.Event()
        """Set once the engine is done: no page is cleaned while the engine runs after that."""
        self._after: list[Callable[[], None]] = []
        self.settled = 0
        """Files ``settle`` replaced a placeholder in."""

    def file(self, make: Callable[[], bytes]) -> bytes:
        """A placeholder for a file whose bytes ``make()`` gives later."""
        token = f"{PENDING}file {len(self.makers)}\n".encode()
        self.makers[token] = make
        return token

    def add_charts(self, computed: dict[tuple, Any]) -> None:
        """Take the charts a build described but did not draw, from its derivations."""
        self.charts.update({k: v for k, v in computed.items() if isinstance(v, PendingChart)})

    def hold(self, key: str, out: incremental.PageOutput) -> bool:
        """Keep ``out`` here until settled if its files hold a placeholder (True); else False."""
        if any(is_placeholder(data) for data in out.files.values()):
            self.held.append((key, out))
            return True
        return False

    def now(self) -> None:
        """Draw the charts and make the files here and now: on forked workers when there are many
        (``render.assemble.parallel``), else in this process."""
        keys = list(self.charts)
        with page_pool.WorkerPool(lambda i: self._draw(keys[i]), len(keys)) as drawn:
            self.drawn = dict(zip(keys, drawn, strict=True))
        self.made = {token: make() for token, make in self.makers.items()}

    def start(
        self,
        files: dict[str, bytes],
        tree: Path,
        manifest: Path,
        sweep: BackgroundSanitizer | None = None,
        apart: bool | None = None,
    ) -> None:
        """While this process waits on the engine: draw and make, settle ``files`` (the tree's, as ``write_tree``
        wrote them to ``tree`` with ``manifest``) and write what was made into the tree, then, until ``finish``,
        clean the pages the engine has written (``render.site.sanitize.BackgroundSanitizer``).

        The drawing and making run ``apart`` (default: where ``page_pool.fork_is_safe``), in a forked process at
        ``NICE`` lower priority, the rest in a thread of this process; else all of it in that thread.
        """
        if apart is None:
            apart = page_pool.fork_is_safe()
        # forked before the thread starts: a process with one thread forks safely
        self._apart = page_pool.ForkedTask(self._make_all, NICE, "while the site engine ran") if apart else None
        self._thread = threading.Thread(
            target=self._run, args=(files, tree, manifest, sweep), name="probebook-later", daemon=True
        )
        self._thread.start()

    def _make_all(self) -> tuple[dict[tuple, ChartOutput], dict[bytes, bytes]] | None:
        """Every chart drawn and every file made (None if the build stopped first)."""
        drawn, made = {}, {}
        for key in self.charts:
            if self._stop.is_set():
                return None
            drawn[key] = self._draw(key)
        for token, make in self.makers.items():
            if self._stop.is_set():
                return None
            made[token] = make()
        return drawn, made

    def _run(self, files: dict[str, bytes], tree: Path, manifest: Path, sweep: BackgroundSanitizer | None) -> None:
        try:
            if self._apart is not None:
                finished, got = self._apart.result(self._stop)
            else:
                got = self._make_all()
                finished = got is not None
            if not finished or got is None:
                return
            self.drawn, self.made = got
            self.replaced = self.settle(files)
            # each file replaced whole (a rename), so the engine copies the placeholder or the bytes, never half
            made = {rel: data for rel, (_placeholder, data) in self.replaced.items()}
            incremental.replace_in_tree(tree, manifest, made, temp=manifest.parent)
            while sweep is not None and not self._swept.is_set():  # look again soon while pages keep coming
                self._swept.wait(0.05 if sweep.once(self._swept.is_set) else 0.25)
        except BaseException as exc:
            self._error = exc

    def finish(self) -> None:
        """The engine is done: wait for what the thread must still draw or make (it stops cleaning pages);
        raise what it raised."""
        if self._thread is not None:
            self._swept.set()
            self._thread.join()
            self._thread = None
        if isinstance(self._error, ProbebookError):
            raise self._error
        if self._error is not None:  # e.g. the disk filled while the tarball was written: one line, not a trace
            raise BuildError(f"while the site engine ran: {type(self._error).__name__}: {self._error}") from None

    def cancel(self) -> None:
        """Stop the thread after what it is drawing (the build failed), and wait for it."""
        self._stop.set()
        self._swept.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _draw(self, key: tuple) -> ChartOutput:
        from render.charts import (
            draw as charts,  # here: the build imports this module before it may fork (render.assemble.parallel)
        )

        p = self.charts[key]
        try:
            return charts.render(p.kind, [self.docs[i] for i in p.ids], **p.options)
        except BuildError:
            raise
        except Exception as exc:
            raise BuildError(f"chart {p.kind!r} of {', '.join(p.ids)}: {exc}") from None

    def replacements(self) -> dict[bytes, bytes]:
        """Placeholder -> final bytes, for everything drawn and made."""
        out = dict(self.made)
        for key, pending in self.charts.items():
            out.update(pending.files(self.drawn[key]))
        return out

    def settle(self, files: dict[str, bytes]) -> dict[str, tuple[bytes, bytes]]:
        """Replace every placeholder in ``files`` (tree path -> bytes), cache the held pages settled, then run
        what waited for this (``after``). Returns tree path -> (placeholder, final bytes) of each file replaced.
        """
        final = self.replacements()
        replaced = {rel: (data, final[data]) for rel, data in files.items() if is_placeholder(data)}
        files.update({rel: new for rel, (_old, new) in replaced.items()})
        self.settled += len(replaced)
        for key, out in self.held:
            settled = {rel: final.get(data, data) for rel, data in out.files.items()}
            if self.cache is not None:
                self.cache.put(key, dataclasses.replace(out, files=settled))
        self.held = []
        for then in self._after:
            then()
        return replaced

    def after(self, then: Callable[[], None]) -> None:
        """Run ``then()`` once settled (the build keeps its derivations then, charts drawn)."""
        self._after.append(then)


def write_made(replaced: dict[str, tuple[bytes, bytes]], site: Path) -> None:
    """Put the files made while the engine ran in the built ``site`` (the thread put them in the tree).

    The engine copied each file to the same path in the site: the placeholder, replaced here, or the file
    as made, if the thread had replaced it in the tree first. A file it did not copy (the config excluded
    it) is not published; a copy that is neither means the engine changed it. The site's copy is written
    after the tree's, so it is the newer, as a copy the engine made would be (a dirty build copies a file
    again only when the tree's is newer: ``render.assemble.dirty``).
    """
    for rel, (placeholder, data) in sorted(replaced.items()):
        built = site / rel
        if not built.is_file():
            continue
        copied = built.read_bytes()
        if copied == placeholder:
            built.write_bytes(data)
        elif copied != data:
            raise BuildError(f"{built}: the site engine changed {rel} while copying it, so it cannot be made later")
