"""Run one probe point in a fresh Python process and read back its result (ARCHITECTURE.md §Lessons).

Why a process per point: a hard CUDA out-of-memory (or any sticky CUDA error) poisons the
process that hit it, so a sweep that walks up to OOM measures each point in its own process;
a fresh process also starts every point from an empty allocator.

Protocol: the parent starts ``python -m <module> --point -``; the child imports what it needs,
reads one JSON object (the point's spec) from stdin, measures, prints one line
``probebook-point: {json}`` on stdout and exits. ``--point '{json}'`` runs a spec given on the
command line instead (for a person debugging one point). A child that dies before printing (a
hard fault, a signal, the kernel's OOM killer, the time limit) yields no line and the parent
reports how it ended.

Spawn-ahead (CUDA only): the next children are started while the current point runs, so that
their interpreter start and imports (``warm_imports``) can overlap the measurement; each point
records ``preload_s`` and ``idle_before_spec_s`` (how long a child was ready before its spec came),
so the overlap is measured, not assumed. A waiting child touches no device, so it holds no device
memory. On CPU it is off: a child importing torch would take cores from the point being timed.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from measure.errors import ProbebookError, one_line

MARKER = "probebook-point: "
CUDA_AHEAD = 3  # children kept started on CUDA: ~7 s of imports (preload_s on a 2-core host) over 2-3 s points
REPO = Path(__file__).resolve().parents[2]
# what an allocation failure says, besides torch.OutOfMemoryError: a CPU allocator refusal, a
# cuBLAS/cuDNN workspace that could not be allocated, a CUDA runtime "out of memory"
_OOM_TEXT = (
    "out of memory",
    "can't allocate memory",
    "CUBLAS_STATUS_ALLOC_FAILED",
    "CUDNN_STATUS_ALLOC_FAILED",
    "Cannot allocate memory",
)
# on CUDA only the device's allocator sets a boundary: the caching allocator's "CUDA out of memory",
# the runtime's "CUDA error: out of memory", a cuBLAS/cuDNN workspace refused on the device
_CUDA_OOM_TEXT = (
    "CUDA out of memory",
    "CUDA error: out of memory",
    "CUBLAS_STATUS_ALLOC_FAILED",
    "CUDNN_STATUS_ALLOC_FAILED",
)
_HOST_TEXT = ("DefaultCPUAllocator", "Cannot allocate memory", "can't allocate memory")


def is_oom(exc: BaseException, device: str) -> bool:
    """Whether an exception is an allocation failure of ``device`` (observed from its type or the allocator's text).

    On ``cuda`` only a CUDA allocation failure counts (issue 27): a host ``MemoryError``, a CPU allocator's
    refusal or an ``ENOMEM`` ("Cannot allocate memory", a host mmap or fork) says the host ran short, not that
    the batch does not fit the card, so it is an error of the point, never its OOM boundary. On ``cpu`` the
    host is the device: those are its allocation failures (the CPU tests cap the address space to reach them).
    """
    try:
        import torch

        torch_oom: type[BaseException] | None = torch.OutOfMemoryError
    except ImportError:
        torch_oom = None
    text = str(exc)
    if device == "cuda":
        if isinstance(exc, MemoryError) or any(fragment in text for fragment in _HOST_TEXT):
            return False
        if torch_oom is not None and isinstance(exc, torch_oom):
            return True
        return isinstance(exc, RuntimeError) and is_oom_text(text, device)
    if isinstance(exc, MemoryError) or (torch_oom is not None and isinstance(exc, torch_oom)):
        return True
    return isinstance(exc, RuntimeError) and is_oom_text(text, device)


def is_oom_text(text: str, device: str) -> bool:
    """Whether an error's text (a stored error line: ``Type: message``) reports an allocation failure of
    ``device``, by the rule of ``is_oom``; the campaign audit reads receipts with it."""
    if device == "cuda":
        if text.startswith("MemoryError") or any(fragment in text for fragment in _HOST_TEXT):
            return False
        return "OutOfMemoryError" in text or any(fragment in text for fragment in _CUDA_OOM_TEXT)
    return any(m in text for m in ("OutOfMemoryError", "MemoryError")) or any(f in text for f in _OOM_TEXT)


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
    ended_unix: float = 0.0
    """Wall-clock time (``time.time()``) when the parent saw the process end."""

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

    def __init__(self, module: str, env: dict[str, str] | None = None, timeout_s: float = 600.0, ahead: int = 0):
        self.module = module
        self.env = {**os.environ, **(env or {})}
        # the children import the same measure package as the parent, wherever it lives
        self.env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
        self.timeout_s = timeout_s
        self.ahead = ahead
        self._ready: collections.deque[subprocess.Popen[str]] = collections.deque()

    def _start(self) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", self.module, "--point", "-"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
            cwd=REPO,
        )

    def run(self, spec: dict[str, Any]) -> Outcome:
        """Measure one spec in a fresh process; with ``ahead``, keep that many more started meanwhile."""
        proc = self._ready.popleft() if self._ready else self._start()
        start = time.perf_counter()
        try:
            assert proc.stdin is not None  # started with stdin=PIPE; communicate() closes it later
            proc.stdin.write(json.dumps(spec, allow_nan=False) + "\n")
            proc.stdin.flush()
        except BrokenPipeError:
            pass  # it died while starting; communicate() below collects how
        while len(self._ready) < self.ahead:
            self._ready.append(self._start())
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
        wall, ended = time.perf_counter() - start, time.time()
        result = None
        for line in out.splitlines():
            if line.startswith(MARKER):
                result = json.loads(line[len(MARKER) :])
        return Outcome(result, proc.returncode, err[-2000:], wall, timed_out, ended)

    def waiting(self) -> list[int]:
        """Process ids of the children started ahead and not yet given a spec."""
        return [proc.pid for proc in self._ready]

    def close(self) -> None:
        """Stop the spawned-ahead processes that will not be used."""
        while self._ready:
            proc = self._ready.popleft()
            proc.kill()
            proc.communicate()

    def __enter__(self) -> PointProcess:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


PHASES = ("preload_s", "idle_before_spec_s", "setup_s", "warmup_s", "timed_s", "observe_s", "measure_s")
"""Where a point process's time went, in seconds: ``prepare`` (imports); waiting for the spec (a spawned-ahead
child was ready that long before its spec came); the probe's own phases (``Phases.mark``); all after the spec."""


def _positive(value: Any) -> float | None:
    """A duration as evidence can hold it: positive and finite, else None (a time field is never 0)."""
    return float(value) if isinstance(value, (int, float)) and 0 < value < float("inf") else None


def phase_times(result: dict[str, Any], outcome: Outcome) -> dict[str, float | None]:
    """The point's phase durations (``PHASES``) and ``exit_s``: from printing its result to the process's end."""
    out = {name: _positive(result.get(name)) for name in PHASES}
    printed = result.get("printed_unix")
    out["exit_s"] = _positive(outcome.ended_unix - printed) if isinstance(printed, (int, float)) else None
    return out


class Phases:
    """Records, into ``facts``, the seconds since the previous mark under each phase's name."""

    def __init__(self, facts: dict[str, Any]):
        self.facts = facts
        self.last = time.perf_counter()

    def mark(self, name: str) -> None:
        now = time.perf_counter()
        self.facts[name] = now - self.last
        self.last = now


def warm_imports() -> None:
    """Import what every point needs, touching no device, so a spawned-ahead child is ready for its spec."""
    import torch
    import torch.profiler

    import measure.workload.reference  # noqa: F401

    # an optimizer's first construction imports the compiler stack (torch._dynamo: seconds, measured in
    # this module's preload_s); a throwaway one on a host tensor pays that here instead of in setup_s
    torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))])


def attempt(
    measure: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]], spec: dict[str, Any], facts: dict[str, Any]
) -> dict[str, Any]:
    """``measure(spec, facts)`` as a result object: ok, ``oom`` (an allocation failure), or ``error``.

    Bad input gives ``{"status": "error", "input_error": true}``; the facts gathered before a failure are kept.
    """
    try:
        measured = measure(spec, facts)  # fills facts as it goes: read them after it returns
        return {**facts, **measured}
    except ProbebookError as exc:
        return {**facts, "status": "error", "input_error": True, "error": str(exc)}
    except Exception as exc:  # reported to the caller, which decides what the point means
        oom = is_oom(exc, spec.get("device", "cpu"))
        return {**facts, "status": "oom" if oom else "error", "error": one_line(exc)}


def serve(
    measure: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]],
    argv: list[str] | None = None,
    prepare: Callable[[], None] = warm_imports,
) -> None:
    """The child's side: read the spec, call ``measure(spec, facts)``, print one result line.

    ``facts`` is a dict the measurement fills as it learns things (e.g. the parameter count), so
    that a point which then fails still reports them. An allocation failure is reported as
    ``{"status": "oom", "error": ...}``; bad input as ``{"status": "error", "input_error": true}``;
    any other exception as ``{"status": "error"}``. ``prepare`` runs before the spec is read, so a
    spawned-ahead child has done it by the time its point starts.
    """
    parser = argparse.ArgumentParser(allow_abbrev=False, description="Measure one probe point and print one JSON line.")
    parser.add_argument("--point", required=True, help="the point's spec as JSON, or - to read it from stdin")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    try:
        prepare()
        loaded = time.perf_counter()
        text = sys.stdin.readline() if args.point == "-" else args.point
    except KeyboardInterrupt:
        # Ctrl-C (or timeout -s INT, which signals the whole group) reached a child spawned ahead that had no point
        # yet: nothing was measured, so nothing to report and no traceback; the parent says the run was stopped
        os._exit(130)
    spec_read = time.perf_counter()
    spec = json.loads(text)
    facts: dict[str, Any] = {"preload_s": loaded - started, "idle_before_spec_s": spec_read - loaded}
    result = attempt(measure, spec, facts)
    result.update({"measure_s": time.perf_counter() - spec_read, "printed_unix": time.time()})
    print(MARKER + json.dumps(result, allow_nan=False, sort_keys=True), flush=True)
    sys.stderr.flush()
    # the result is out; skip interpreter teardown (module finalisers, profiler and allocator shutdown),
    # which only delays the next point: the kernel reclaims the process's memory, the driver its context
    os._exit(0)
