"""Messages and progress of long runs: module loggers, and a rich progress bar only on a terminal.

Every module writes through ``logging.getLogger(__name__)`` (as mkdocs does), never ``print`` to
stderr; ``configure`` (called once by ``probebook`` and ``python -m measure``) sends those records
to stderr as ``prog: message`` lines. A long run (a probe's points, a build's pages) reports each
step through ``Progress``: on a terminal, where rich is installed, a transient bar that leaves
nothing behind; elsewhere (a log file, CI, a pipe) no bar, only one INFO line per step, so logs stay
line-oriented. rich is optional here: ``python -m measure`` runs where only torch is installed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from types import TracebackType
from typing import Any

PACKAGES = ("measure", "render", "probebook")
HEARTBEAT_S = 30.0
"""Off a terminal, a run that has logged nothing for this long logs that it is still running: a CPU probe on a
loaded machine was silent for up to 8 minutes between points (issue 29), which reads as a hang."""
"""The loggers ``configure`` attaches its handler to (each module's logger is a child of one)."""


def configure(prog: str, level: int = logging.INFO) -> None:
    """Send the packages' log records to stderr as ``prog: message`` (once; a second call changes nothing)."""
    for name in PACKAGES:
        logger = logging.getLogger(name)
        if any(getattr(h, "_probebook", False) for h in logger.handlers):
            continue
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(f"{prog}: %(message)s"))
        handler._probebook = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
        logger.setLevel(level)
        logger.propagate = False


TORCH_FORMAT_ENV = "TORCH_LOGS_FORMAT"
"""The format torch's own log handlers use, read when torch is imported (``torch._logging._internal``,
``_default_formatter``; documented in ``torch._logging``'s help): a probe sets it, unless the user did."""
TORCH_FORMAT = "[torch %(name)s] %(levelname)s: %(message)s"


class _FirstLine(logging.Formatter):
    """A warning as one line: ``warnings.formatwarning`` adds the source line after a newline."""

    def format(self, record: logging.LogRecord) -> str:
        return super().format(record).splitlines()[0]


def separate_foreign_logs() -> None:
    """Torch's log lines and Python warnings on stderr, each with a prefix (``[torch NAME]``, ``[warning]``), so
    they never read as a probe's progress lines (``prog: ...``; issue 29). Call before torch is imported."""
    os.environ.setdefault(TORCH_FORMAT_ENV, TORCH_FORMAT)  # point processes inherit it
    logging.captureWarnings(True)
    logger = logging.getLogger("py.warnings")
    if not any(getattr(h, "_probebook", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_FirstLine("[warning] %(message)s"))
        handler._probebook = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
        logger.propagate = False


KINETO_LINE = re.compile(r"^(USDT|STAGE|INFO|WARNING|ERROR):\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \d+:\d+ \S+\.cpp:\d+\]")
"""A line torch's profiler (kineto, C++) writes straight to file descriptor 2, past every Python handler."""
SILENT_KINETO = ("USDT:", "STAGE:")
"""Its tracing markers (``profiler_start``, ``Completed Stage: Warm Up``): nothing a reader acts on."""


def foreign_line(line: str) -> str | None:
    """One line written to stderr during a profiled region, as it is shown: a kineto marker dropped (None), any
    other kineto line prefixed ``[torch profiler]``, anything else (a progress line, a warning) unchanged."""
    if not KINETO_LINE.match(line):
        return line
    return None if line.startswith(SILENT_KINETO) else f"[torch profiler] {line}"


@contextlib.contextmanager
def profiler_stderr() -> Iterator[None]:
    """Hold what reaches file descriptor 2 while a ``torch.profiler`` runs, then show it through ``foreign_line``.

    Kineto prints ``USDT:`` lines from C++ on every profiler start and stop, whatever ``KINETO_LOG_LEVEL`` says, so
    no Python logging setting reaches them (issue 40): the descriptor itself is borrowed for the region. Lines
    written meanwhile by Python keep their order and text; they show once the region ends.
    """
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # a stderr without a descriptor (a test's capture): nothing to hold
        yield
        return
    sys.stderr.flush()
    saved = os.dup(fd)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), fd)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, fd)
            os.close(saved)
            held.seek(0)
            for line in held.read().decode("utf-8", errors="replace").splitlines():
                shown = foreign_line(line)
                if shown is not None:
                    print(shown, file=sys.stderr)  # noqa: T201 -- replaying lines already written to stderr
            sys.stderr.flush()


def _bar_wanted() -> bool:
    """A bar only where a person watches: stderr is a terminal and rich is installed."""
    if not sys.stderr.isatty():
        return False
    try:
        import rich.progress  # noqa: F401
    except ImportError:
        return False
    return True


def due(now: float, last: float, every: float) -> bool:
    """Whether a heartbeat line is due: ``every`` seconds or more since the last line (all in seconds)."""
    return now - last >= every


class Progress:
    """Steps of one long run: a transient rich bar on a terminal, else one INFO log line per step
    (``lines=False``: nothing at all off a terminal, for runs whose steps are quick, like a build's pages)."""

    def __init__(
        self,
        what: str,
        logger: logging.Logger,
        total: int | None = None,
        enabled: bool = True,
        lines: bool = True,
        heartbeat_s: float | None = None,
    ):
        self.what, self.log, self.total, self.enabled, self.lines = what, logger, total, enabled, lines
        self.done = 0
        self._started = time.perf_counter()
        self._bar: Any = None
        self._task: Any = None
        self.heartbeat_s = heartbeat_s
        """Off a terminal, log "still running" after this long without a line (None: never; ``HEARTBEAT_S``)."""
        self._last = self._started
        self._label = "started"
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    def __enter__(self) -> Progress:
        if self.enabled and _bar_wanted():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self._bar.start()
            self._task = self._bar.add_task(self.what, total=self.total)
        elif self.enabled and self.lines and self.heartbeat_s and self._beat is None:
            self._stop.clear()
            self._beat = threading.Thread(target=self._heartbeat, name=f"{self.what}-heartbeat", daemon=True)
            self._beat.start()
        return self

    def _heartbeat(self) -> None:
        assert self.heartbeat_s is not None
        while not self._stop.wait(min(self.heartbeat_s, 1.0)):
            now = time.perf_counter()
            if due(now, self._last, self.heartbeat_s):
                self._last = now
                self.log.info(
                    "%s [%6.1fs] still running (%d step(s) done; last: %s)",
                    self.what,
                    now - self._started,
                    self.done,
                    self._label,
                )

    def step(self, label: str) -> None:
        """One step done: advance the bar, or log ``what [seconds] label``."""
        self.done += 1
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(self._task, advance=1, description=f"{self.what}: {label}")
        elif self.lines:
            self._last, self._label = time.perf_counter(), label
            self.log.info("%s [%6.1fs] %s", self.what, self._last - self._started, label)

    def close(self) -> None:
        self._stop.set()
        if self._beat is not None:
            self._beat.join()
            self._beat = None
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
