"""Pages rendered on every core: a pool of forked workers for a build with many pages to render (ARCHITECTURE.md
§The build).

A page's output is a function of its inputs (``render.assemble.incremental``), so pages can be rendered in any
order and in any process; the build assembles them in page order, and the first error in page order
stops it, exactly as a serial build would. Most of a cold build's render time is drawing charts
(vl-convert) and fitting (scipy), one core each; a machine with two cores renders the pages of a
large site in about half the time.

Workers are forked, so they start with the evidence already parsed and share it with the build
(no copy, no pickling of the archive). Forking is safe only from a process with one thread and
without vl-convert's JavaScript runtime started (its threads do not survive a fork), so the pool is
used only then: in a fresh ``probebook build``, not in ``serve``'s long-lived process or a test
process that already drew a chart, which render serially. ``PROBEBOOK_JOBS`` sets the number of
workers (``1``: serial); by default, one per core, for at least ``MIN_PAGES`` pages.

``ForkedTask`` runs one task in one forked process at a lower priority, for work done beside the site engine
(``render.assemble.deferred``): the engine keeps its core, and the priority ends with the process.

Every forked process dies with the build that forked it (``die_with_parent``), however the build ends: a build
killed by SIGKILL or SIGTERM runs no cleanup, and a worker left behind blocks forever writing its result to a
pipe nobody reads while it holds the build's stdout and stderr (a test's or CI's output pipe) open (issue 25, 11).
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

from measure.errors import ProbebookError
from measure.lifetime import die_with_parent

MIN_PAGES = 16
"""Fewer pages to render than this are rendered serially: each worker loads the chart and fit libraries
itself (about 1.6 s of CPU), which a page drawing two charts (about 0.2 s) repays only in numbers."""
ENV = "PROBEBOOK_JOBS"

_TASK: Callable[[int], Any] | None = None
"""What a worker does with a task's index: set before the workers are forked, so they inherit it."""


def _run(index: int) -> Any:
    assert _TASK is not None
    return _TASK(index)


def jobs_wanted() -> int | None:
    """``PROBEBOOK_JOBS`` as a whole number of at least 1, or None when it is not set."""
    raw = os.environ.get(ENV)
    if raw is None or raw == "":
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise ProbebookError(f"{ENV}={raw!r}: give a whole number of workers, at least 1 (1 renders serially)")
    return int(raw)


def workers(pages: int) -> int:
    """How many workers to render ``pages`` pages with; 0 means serially, in this process."""
    wanted = jobs_wanted()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    count = min(wanted if wanted is not None else cores, pages)
    if count < 2 or (wanted is None and pages < MIN_PAGES) or not fork_is_safe():
        return 0
    return count


def fork_is_safe() -> bool:
    """Whether this process may fork workers: fork exists, one thread runs, and vl-convert has not started."""
    return (
        "fork" in multiprocessing.get_all_start_methods()
        and threading.active_count() == 1
        # imported only inside the calls that draw or bundle (chart_svg.raw_svg and warm, site_assets), which start
        # its runtime: importing render.charts.draw, or describing a chart (charts.describe), leaves it unimported
        and "vl_convert" not in sys.modules
    )


class WorkerPool:
    """``task(i)`` for i in 0..count-1, on forked workers when ``workers(count)`` says so, else (or when ``serial``)
    here, serially.

    The tasks are handed to the workers when the batch is made, so this process can do other work while
    they run; iterating gives the results in order of ``i``, and an exception a task raised is raised when
    its turn comes. Leaving the ``with`` block cancels what has not started and waits for the workers.
    """

    def __init__(self, task: Callable[[int], Any], count: int, serial: bool = False):
        global _TASK
        self.count = count
        self.workers = 0 if serial else workers(count)
        self._task = task
        self._pool: ProcessPoolExecutor | None = None
        self._futures: list[Future[Any]] = []
        if self.workers:
            _TASK = task
            try:
                self._pool = ProcessPoolExecutor(
                    self.workers,
                    mp_context=multiprocessing.get_context("fork"),
                    initializer=die_with_parent,
                    initargs=(os.getpid(),),
                )
                # the first submit forks every worker (the fork start method starts them all at once), so
                # they inherit _TASK; this process no longer needs it once they have it
                self._futures = [self._pool.submit(_run, i) for i in range(count)]
            finally:
                _TASK = None

    def __enter__(self) -> WorkerPool:
        return self

    def __iter__(self) -> Iterator[Any]:
        if self._pool is None:
            return (self._task(i) for i in range(self.count))
        return (future.result() for future in self._futures)

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


class ForkedTask:
    """``task()`` in one forked process whose priority is ``nice`` lower than this one's; ``result`` reads back
    what it returned (pickled), or raises what it raised as one line.

    Made only where ``fork_is_safe()``. A priority lowered in a thread of this process would be inherited by
    every thread that thread starts (vl-convert's runtime keeps its threads for the life of the process), so
    the work runs in a process of its own, whose priority ends with it.
    """

    def __init__(self, task: Callable[[], Any], nice: int, name: str):
        context = multiprocessing.get_context("fork")
        self.name = name
        self._receive, send = context.Pipe(duplex=False)
        self._process = context.Process(target=_apart, args=(task, send, nice, os.getpid()), name=name, daemon=True)
        self._process.start()
        send.close()  # the child holds the other end: if it dies without sending, ``recv`` sees the end of the pipe

    def result(self, stop: threading.Event) -> tuple[bool, Any]:
        """(True, what the task returned) once it has; (False, None) if ``stop`` is set first (the process is
        then ended). What the task raised is raised here: a ``ProbebookError`` as its own line, anything else
        as one line naming its type."""
        while not self._receive.poll(0.05):
            if stop.is_set():
                self.end()
                return False, None
        try:
            outcome, value = self._receive.recv()
        except EOFError:
            self._process.join()
            raise ProbebookError(
                f"{self.name}: the process ended without a result (exit status {self._process.exitcode})"
            ) from None
        self._process.join()
        if outcome == "refused":
            raise ProbebookError(value)
        if outcome == "failed":
            raise ProbebookError(f"{self.name}: {value}")
        return True, value

    def wait(self) -> Any:
        """What the task returned, once it has (``result`` without a way to stop)."""
        return self.result(threading.Event())[1]

    def alive(self) -> bool:
        """Whether the process still runs."""
        return self._process.is_alive()

    def end(self) -> None:
        """Stop the process now, if it still runs, and wait for it."""
        if self._process.is_alive():
            self._process.terminate()
        self._process.join()
        self._receive.close()


def _apart(task: Callable[[], Any], send: Any, nice: int, parent: int) -> None:
    """The forked process's whole life: die with the build, lower its priority, run ``task``, send the outcome."""
    die_with_parent(parent)
    try:
        os.nice(nice)
    except OSError:  # a platform without priorities: the work is the same, only its share of the CPU differs
        pass
    try:
        message: tuple[str, Any] = ("done", task())
    except ProbebookError as exc:
        message = ("refused", str(exc))
    except BaseException as exc:
        message = ("failed", f"{type(exc).__name__}: {exc}")
    send.send(message)
    send.close()
