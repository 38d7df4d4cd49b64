"""Run one probe point in a fresh Python process and read back its result (DESIGN §3, §7).

Why a process per point: a hard CUDA out-of-memory (or any sticky CUDA error) poisons the
process that hit it, so a sweep that walks up to OOM measures each point in its own process;
a fresh process also starts every point from an empty allocator.

Protocol: the parent starts ``python -m <module> --point -``; the child imports what it needs,
reads one JSON object (the point's spec) from stdin, measures, prints one line
``probebook-point: {json}`` on stdout and exits. ``--point '{json}'`` runs a spec given on the
command line instead (for a person debugging one point). A child that dies before printing (a
hard fault, a signal, the kernel's OOM killer, the time limit) yields no line and the parent
reports how it ended.

Spawn-ahead (CUDA only): the next child is started while the current point runs, so that its
interpreter start and ``import torch`` can overlap the measurement (the saving is not measured
here; it is at most that start-up time per point). It touches no device until it reads its spec,
so it holds no device memory meanwhile. On CPU it is off: a child importing torch would take
cores from the point being timed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from measure.errors import ProbebookError

MARKER = "probebook-point: "
REPO = Path(__file__).resolve().parent.parent
# what an allocation failure says, besides torch.OutOfMemoryError: a CPU allocator refusal, a
# cuBLAS/cuDNN workspace that could not be allocated, a CUDA runtime "out of memory"
_OOM_TEXT = ("out of memory", "can't allocate memory", "CUBLAS_STATUS_ALLOC_FAILED", "CUDNN_STATUS_ALLOC_FAILED",
             "Cannot allocate memory")


def one_line(exc: BaseException) -> str:
    """``Type: first line of the message``, at most 500 characters."""
    lines = f"{type(exc).__name__}: {exc}".strip().splitlines()
    return (lines[0] if lines else type(exc).__name__)[:500]


def is_oom(exc: BaseException) -> bool:
    """Whether an exception is an allocation failure (observed from its type or the allocator's message)."""
    if isinstance(exc, MemoryError):
        return True
    try:
        import torch
        if isinstance(exc, torch.OutOfMemoryError):
            return True
    except ImportError:
        pass
    text = str(exc)
    return isinstance(exc, RuntimeError) and any(fragment in text for fragment in _OOM_TEXT)


@dataclass(frozen=True)
class Outcome:
    """How one point process ended."""

    result: dict[str, Any] | None
    """The JSON object it printed, or None when it printed none."""
    returncode: int
    """Exit status (negative: killed by that signal)."""
    stderr_tail: str
    """The last 2,000 characters of its stderr."""
    wall_s: float
    """Seconds from sending the spec to the process's end."""
    timed_out: bool
    """True when the parent killed it at the time limit."""

    def death(self) -> str:
        """One line saying how a process that printed no result ended."""
        if self.timed_out:
            how = "killed at the point time limit"
        elif self.returncode < 0:
            name = signal.Signals(-self.returncode).name if -self.returncode in signal.valid_signals() else "?"
            how = f"killed by signal {-self.returncode} ({name})"
            if self.returncode == -signal.SIGKILL:
                how += ", e.g. by the kernel's OOM killer"
        else:
            how = f"exited with status {self.returncode} without a result"
        last = self.stderr_tail.strip().splitlines()
        return how + (f": {last[-1][:300]}" if last else "")


class PointProcess:
    """Runs specs through ``python -m <module> --point -``, one fresh process each (a context manager)."""

    def __init__(self, module: str, env: dict[str, str] | None = None, timeout_s: float = 600.0,
                 spawn_ahead: bool = False):
        self.module = module
        self.env = {**os.environ, **(env or {})}
        # the children import the same measure package as the parent, wherever it lives
        self.env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
        self.timeout_s = timeout_s
        self.spawn_ahead = spawn_ahead
        self._next: subprocess.Popen[str] | None = None

    def _start(self) -> subprocess.Popen[str]:
        return subprocess.Popen([sys.executable, "-m", self.module, "--point", "-"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env, cwd=REPO)

    def run(self, spec: dict[str, Any], more: bool = True) -> Outcome:
        """Measure one spec in a fresh process; with spawn-ahead and ``more``, start the next one meanwhile."""
        proc = self._next or self._start()
        self._next = None
        start = time.perf_counter()
        try:
            proc.stdin.write(json.dumps(spec, allow_nan=False) + "\n")  # type: ignore[union-attr]
            proc.stdin.flush()  # type: ignore[union-attr]  (communicate() closes it)
        except BrokenPipeError:
            pass  # it died while starting; communicate() below collects how
        if self.spawn_ahead and more:
            self._next = self._start()
        timed_out = False
        try:
            out, err = proc.communicate(timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            timed_out = True
        except BaseException:  # Ctrl-C or SIGINT from a time limit: leave no orphan measuring on the device
            proc.kill()
            proc.communicate()
            raise
        wall = time.perf_counter() - start
        result = None
        for line in out.splitlines():
            if line.startswith(MARKER):
                result = json.loads(line[len(MARKER):])
        return Outcome(result, proc.returncode, err[-2000:], wall, timed_out)

    def close(self) -> None:
        """Stop a spawned-ahead process that will not be used."""
        if self._next is not None:
            self._next.kill()
            self._next.communicate()
            self._next = None

    def __enter__(self) -> "PointProcess":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def serve(measure: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]], argv: list[str] | None = None,
          preload: tuple[str, ...] = ("torch", "measure.workload.reference")) -> int:
    """The child's side: read the spec, call ``measure(spec, facts)``, print one result line.

    ``facts`` is a dict the measurement fills as it learns things (e.g. the parameter count), so
    that a point which then fails still reports them. An allocation failure is reported as
    ``{"status": "oom", "error": ...}``; bad input as ``{"status": "error", "input_error": true}``;
    any other exception as ``{"status": "error"}``. The ``preload`` modules are imported before the
    spec is read, so a spawned-ahead child has them ready (importing torch touches no device).
    """
    import importlib
    parser = argparse.ArgumentParser(description="Measure one probe point and print one JSON line.")
    parser.add_argument("--point", required=True, help="the point's spec as JSON, or - to read it from stdin")
    args = parser.parse_args(argv)
    for name in preload:
        importlib.import_module(name)
    text = sys.stdin.readline() if args.point == "-" else args.point
    spec = json.loads(text)
    facts: dict[str, Any] = {}
    try:
        measured = measure(spec, facts)
        result = {**facts, **measured}
    except ProbebookError as exc:
        result = {**facts, "status": "error", "input_error": True, "error": str(exc)}
    except Exception as exc:  # reported to the parent, which decides what the point means
        result = {**facts, "status": "oom" if is_oom(exc) else "error", "error": one_line(exc)}
    print(MARKER + json.dumps(result, allow_nan=False, sort_keys=True), flush=True)
    return 0
