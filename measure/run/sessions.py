"""Measure a probe run in several fresh processes, sessions, and store them as ONE evidence document (issue 38).

Why: a re-measurement in another process lands outside one process's window interval far more often than
the interval says (between processes the 250m step varied about 20%, within one about 3%), so the unit a
reader replicates is the process, as pyperf's worker processes and MLPerf's repeated runs are. A probe's
``run`` wrapped by ``in_sessions`` measures its windows in ``--sessions N`` child processes (default
``measure.constants.SESSIONS`` on CUDA, ``SESSIONS_CPU`` on the CPU), one after another, each with its own
interpreter, warm-up, allocator and compile state, and merges what they return:

* every list of row objects in ``data`` (``samples``, ``points``, ``window_failures``, ...) is concatenated,
  each row with ``session`` (0..N-1); ``window`` and ``round`` are shifted by the session's offset
  (``Offsets``) so they stay unique in the document: paired arms still pair by ``round``, and a round
  belongs to one session, so pairs never cross sessions;
* any other ``data`` value (``clocks``, ``observed``, ``ceiling``, ``device_check``, ...) is kept per session
  under ``data["sessions"]`` (``{"session": i, "pid", "status", "error", "wall_s", ..., "data": {...}}``),
  and the first measured session's stays at the top level, so a reader of one-process documents keeps
  working;
* ``params.sessions`` says N; the status is ``complete`` only when every session is: a session that failed
  or died leaves the document ``partial`` with what the others measured (``merged_status``).

Protocol: the child is ``python -m measure.run.sessions --point -`` (``measure.run.isolate.serve``): it reads
``{"module", "config", "session", "journal", ...}``, runs the probe's ``run`` with ``sessions=1`` and prints
the evidence it made. Its own journal lies beside the parent's; a child that dies without printing leaves
the points it measured there, and the parent reads them back (``measure.run.runner.recover``). On CUDA the
next session's interpreter is started while the current one measures (its imports touch no device), so the
sessions after the first cost their measurement, not their start (``preload_s``, ``idle_before_spec_s``).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import importlib
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from measure.errors import ProbebookError, one_line
from measure.evidence.envelope import Evidence

log = logging.getLogger(__name__)

MODULE = "measure.run.sessions"
RENUMBERED = ("window", "round")
"""Row fields counted per session that must stay unique across the document (render pairs arms by ``round``
and refuses a round seen twice)."""
STOP_GRACE_S = 120.0
"""How long an interrupted parent waits for the running session to store what it measured before killing it."""


# --- merging (pure: documents in, one document's data out) ---------------------------------------------------


def is_rows(value: Any) -> bool:
    """Whether a ``data`` value is a list of row objects (merged by concatenation); an empty list counts."""
    return isinstance(value, list) and all(isinstance(v, dict) for v in value)


@dataclass
class Offsets:
    """What each renumbered field of a session's rows is shifted by: one past the largest value seen so far."""

    next: dict[str, int] = field(default_factory=dict)

    def shift(self, rows: list[dict[str, Any]], session: int) -> list[dict[str, Any]]:
        """``rows`` with ``session`` set and ``window``/``round`` shifted past every earlier session's."""
        out = []
        for row in rows:
            new = {**row, "session": session}
            for name in RENUMBERED:
                value = row.get(name)
                if isinstance(value, int) and not isinstance(value, bool):
                    new[name] = value + self.next.get(name, 0)
            out.append(new)
        return out

    def advance(self, tables: list[list[dict[str, Any]]]) -> None:
        """Move past the largest shifted value of each field in this session's ``tables``."""
        for name in RENUMBERED:
            values = [
                r[name]
                for rows in tables
                for r in rows
                if isinstance(r.get(name), int) and not isinstance(r[name], bool)
            ]
            if values:
                self.next[name] = max(self.next.get(name, 0), max(values) + 1)


@dataclass
class Session:
    """What one session's process gave back."""

    session: int
    pid: int | None = None
    evidence: dict[str, Any] | None = None
    """The evidence document the session made (or recovered from its journal); None when there is none."""
    error: str | None = None
    """How the process ended when it did not print a document (one line)."""
    facts: dict[str, Any] = field(default_factory=dict)
    """``wall_s``, ``returncode``, ``preload_s``, ``idle_before_spec_s``, ``recovered``."""

    @property
    def status(self) -> str:
        if self.evidence is None:
            return "failed"
        return str(self.evidence.get("status", "failed"))

    @property
    def measured(self) -> bool:
        return self.evidence is not None and bool((self.evidence.get("data") or {}).get("samples"))


def merge_data(sessions: list[Session]) -> dict[str, Any]:
    """One document's ``data`` from the sessions' documents (see the module docstring)."""
    merged: dict[str, Any] = {}
    per_session: list[dict[str, Any]] = []
    offsets = Offsets()
    for s in sessions:
        data = (s.evidence or {}).get("data") or {}
        tables = {k: offsets.shift(v, s.session) for k, v in data.items() if is_rows(v)}
        offsets.advance(list(tables.values()))
        for key, rows in tables.items():
            merged.setdefault(key, []).extend(rows)
        rest = {k: v for k, v in data.items() if not is_rows(v)}
        for key, value in rest.items():
            merged.setdefault(key, value)  # the first session that has it: where older readers look
        per_session.append(
            {
                "session": s.session,
                "pid": s.pid,
                "status": s.status,
                "error": (s.evidence or {}).get("error") if s.evidence is not None else s.error,
                **s.facts,
                "data": rest,
            }
        )
    merged.setdefault("samples", [])
    merged.setdefault("points", [])
    merged["sessions"] = per_session
    return merged


def merged_status(sessions: list[Session], planned: int, interrupted: str | None = None) -> tuple[str, str | None]:
    """The document's status and error from its sessions' (``planned`` were asked for).

    ``complete`` when every planned session completed; ``unstable`` when every one measured all its points but
    some flagged noisy windows; ``partial`` when some measured and another failed, died, stopped early or never
    ran (each named in the error); ``failed`` when none measured anything.
    """
    problems = []
    for s in sessions:
        if s.status in ("complete", "unstable"):
            continue
        why = (s.evidence or {}).get("error") if s.evidence is not None else s.error
        problems.append(f"session {s.session} {s.status}: {why or 'no reason given'}")
    missing = planned - len(sessions)
    if missing > 0:
        problems.append(f"{missing} of {planned} sessions not run" + (f" ({interrupted})" if interrupted else ""))
    if not any(s.measured for s in sessions):
        return "failed", "; ".join(problems) or "no session measured anything"
    if problems:
        return "partial", f"{len(problems)} problem(s) among {planned} sessions: " + "; ".join(problems)
    noisy = [s for s in sessions if s.status == "unstable"]
    if noisy:
        return "unstable", "; ".join(f"session {s.session}: {(s.evidence or {}).get('error')}" for s in noisy)
    return "complete", None


def merge(sessions: list[Session], planned: int, interrupted: str | None = None) -> Evidence:
    """One evidence document from the sessions' (the first measured session's envelope, ``params.sessions``)."""
    first = next(s.evidence for s in sessions if s.evidence is not None)
    status, error = merged_status(sessions, planned, interrupted)
    params = {**first["params"], "sessions": planned}
    return Evidence(
        probe=first["probe"],
        probe_version=first["probe_version"],
        params=params,
        data=merge_data(sessions),
        machine=first["machine"],
        code=first["code"],
        status=status,
        error=error,
    )


# --- the parent's side ---------------------------------------------------------------------------------------


def in_sessions(run: Callable[..., Evidence]) -> Callable[..., Evidence]:
    """Wrap a probe's ``run(config, journal, progress)`` so that it measures in ``config.sessions`` processes.

    One session (``--sessions 1``, the CPU's default, or a child) runs ``run`` in this process, as before.
    """

    @functools.wraps(run)
    def wrapper(config: Any, journal: Any = None, progress: bool = False) -> Evidence:
        from measure.device_check import resolve_device

        if getattr(config, "sessions", None) == 1 or not getattr(config, "SESSIONED", False):
            return run(config, journal, progress)
        count = config.session_count(resolve_device(config.device))
        if count == 1:
            return run(config, journal, progress)
        return run_sessions(run.__module__, config, count, journal, progress)

    return wrapper


def session_journal(journal: Path | None, session: int, folder: str) -> Path:
    """Where session ``session`` journals its points: beside the run's journal, else in a temporary folder."""
    if journal is not None:  # absolute: the session's process runs in the repository's folder, not the caller's
        path = Path(journal).absolute()
        return path.with_name(f"{path.stem}-session{session}{path.suffix or '.jsonl'}")
    return Path(folder) / f"session{session}.jsonl"


class Child:
    """One session's process: its stdout kept whole, its stderr passed through and its tail kept."""

    def __init__(self, env: dict[str, str]):
        from measure.run.isolate import REPO

        self.proc = subprocess.Popen(
            [sys.executable, "-m", MODULE, "--point", "-"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=REPO,
        )
        self.out: list[str] = []
        self.tail: collections.deque[str] = collections.deque(maxlen=40)
        self._threads = [
            threading.Thread(target=self._read_out, daemon=True),
            threading.Thread(target=self._read_err, daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _read_out(self) -> None:
        assert self.proc.stdout is not None
        self.out.append(self.proc.stdout.read())

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.tail.append(line)
            sys.stderr.write(line)  # the session's progress lines, live
            sys.stderr.flush()

    def send(self, spec: dict[str, Any]) -> None:
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps(spec, allow_nan=False) + "\n")
            self.proc.stdin.close()
        except BrokenPipeError:
            pass  # it died while starting; wait() says how

    def wait(self) -> str | None:
        """Wait for the process to end; on an interrupt, give it ``STOP_GRACE_S`` to store what it measured.

        Returns None, or why the run stopped early (the interrupt's one line).
        """
        interrupted = None
        try:
            self.proc.wait()
        except KeyboardInterrupt as exc:  # Ctrl-C (the child got it too), SIGTERM turned into one by the CLI
            interrupted = one_line(exc) if str(exc) else "interrupted"
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:  # it did not get the signal: pass it on
                self.proc.send_signal(signal.SIGINT)
                try:
                    self.proc.wait(timeout=STOP_GRACE_S)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        for t in self._threads:
            t.join(timeout=10)
        return interrupted

    def result(self) -> dict[str, Any] | None:
        from measure.run.isolate import MARKER

        found = None
        for line in "".join(self.out).splitlines():
            if line.startswith(MARKER):
                found = json.loads(line[len(MARKER) :])
        return found

    def death(self) -> str:
        code = self.proc.returncode
        if code is not None and code < 0:
            how = f"killed by signal {-code}"
        else:
            how = f"exited with status {code} without a result"
        last = "".join(self.tail).strip().splitlines()
        return how + (f": {last[-1][:300]}" if last else "")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def run_sessions(module: str, config: Any, count: int, journal: Path | None, progress: bool) -> Evidence:
    """Run probe ``module``'s ``run`` in ``count`` fresh processes, one after another; merge their evidence."""
    from measure.run.isolate import REPO
    from measure.run.runner import Recorder, recover

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
    ahead = getattr(config, "device", "cpu") != "cpu"  # CUDA: start the next interpreter meanwhile (not on CPU)
    base = {
        "module": module,
        "config": {**dataclasses.asdict(config), "sessions": 1},
        "progress": progress,
        "parent": os.getpid(),
    }
    done: list[Session] = []
    interrupted: str | None = None
    rec: Recorder | None = None
    with tempfile.TemporaryDirectory(prefix="probebook-sessions-") as folder:
        waiting: Child | None = None
        try:
            for i in range(count):
                child = waiting or Child(env)
                waiting = None
                path = session_journal(journal, i, folder)
                log.info("session %d of %d: process %d", i + 1, count, child.proc.pid)
                started = time.perf_counter()
                child.send({**base, "session": i, "journal": str(path)})
                if ahead and i + 1 < count:
                    waiting = Child(env)
                interrupted = child.wait()
                session = collect(i, child, path, time.perf_counter() - started, recover)
                if session is None:  # bad input, said before anything was measured: one line, exit 2
                    raise ProbebookError((child.result() or {}).get("error") or "bad input")
                done.append(session)
                path.unlink(missing_ok=True)
                rec = journal_session(rec, session, journal, done, count)
                log.info(
                    "session %d of %d: %s in %.1f s", i + 1, count, session.status, session.facts.get("wall_s") or 0
                )
                if interrupted:
                    break
        finally:
            if waiting is not None:
                waiting.stop()
    if not any(s.evidence is not None for s in done):
        reasons = "; ".join(f"session {s.session}: {s.error}" for s in done)
        raise RuntimeError(f"no session produced evidence: {reasons or interrupted or 'none ran'}")
    return merge(done, count, interrupted)


def collect(i: int, child: Child, journal: Path, wall_s: float, recover: Callable[[Path], Evidence]) -> Session | None:
    """Session ``i`` from its process's result line, or from its journal when it printed none.

    None: the session refused its input before measuring (the first one only: later ones ran the same config).
    """
    result = child.result()
    facts: dict[str, Any] = {"wall_s": wall_s, "returncode": child.proc.returncode, "recovered": False}
    if result is not None:
        facts.update({k: result.get(k) for k in ("preload_s", "idle_before_spec_s")})
    if result is not None and result.get("status") == "ok":
        return Session(i, result.get("pid") or child.proc.pid, result["evidence"], None, facts)
    if result is not None and result.get("input_error") and i == 0:
        return None
    error = result.get("error") if result is not None else child.death()
    if journal.exists():  # it died, or raised outside the runner: what its journal kept is still measured
        try:
            evidence = recover(journal).to_dict()
        except ProbebookError:
            evidence = None
        if evidence is not None:
            evidence["error"] = f"session process ended early ({error}); its journal kept what it measured"
            return Session(i, child.proc.pid, evidence, error, {**facts, "recovered": True})
    return Session(i, child.proc.pid, None, error, facts)


def journal_session(rec: Any, session: Session, journal: Path | None, done: list[Session], count: int) -> Any:
    """Append a finished session's rows to the run's journal (``measure recover`` then keeps them), tagged."""
    from measure.run.runner import Recorder

    if journal is None or session.evidence is None:
        return rec
    doc = session.evidence
    if rec is None:
        rec = Recorder(doc["probe"], {**doc["params"], "sessions": count}, Path(journal))
        rec.header(doc["probe_version"], doc["machine"], doc["code"])
    data = merge_data(done)
    rows = [r for r in data["samples"] if r.get("session") == session.session]
    points = [p for p in data["points"] if p.get("session") == session.session]
    rec.journal_rows(rows, points)
    return rec


# --- the child's side ----------------------------------------------------------------------------------------


def measure_session(spec: dict[str, Any], facts: dict[str, Any]) -> dict[str, Any]:
    """Run one session of the probe ``spec["module"]`` in this process; its evidence as a result object."""
    from measure.lifetime import die_with_parent
    from measure.options import config_from_dict
    from measure.progress import configure, separate_foreign_logs

    die_with_parent(int(spec["parent"]))
    configure(f"session {spec['session']}")
    separate_foreign_logs()
    module = importlib.import_module(spec["module"])
    config = config_from_dict(module.Config, {**spec["config"], "sessions": 1})
    facts["pid"] = os.getpid()
    journal = Path(spec["journal"]) if spec.get("journal") else None
    evidence = module.run(config, journal=journal, progress=bool(spec.get("progress")))
    if journal is not None:
        journal.unlink(missing_ok=True)
    return {"status": "ok", "evidence": evidence.to_dict()}


def _prepare() -> None:
    """Import torch before the spec comes, so a session started ahead has done it (touches no device)."""
    import torch  # noqa: F401


def _interrupt(signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt(f"stopped by signal {signum}")


if __name__ == "__main__":
    from measure.run.isolate import serve

    signal.signal(signal.SIGTERM, _interrupt)  # as the CLI does: the runner stores what was measured as partial
    serve(measure_session, prepare=_prepare)
