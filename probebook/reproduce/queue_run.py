"""``probebook remeasure run``: the queue's pending entries measured in order, within one lease's seconds.

Each entry runs as ``python -m measure --archive OUT <its command>`` (``queue.design_command``) under a limit cut
to what is left of ``--hard-s``; at the limit it gets SIGINT first, so the probe stores what it measured as
``partial`` (as ``bench/lib.sh`` runs ``timeout -s INT -k 15``), and SIGKILL 15 s later. An entry is never started
with under ``LEAST_S`` seconds left: it and every later one wait, each named in one line. A key several records
cite runs once. After each entry the queue is read again from ``OUT``, so a run that stored session-design
evidence of its key is done, and the next call (another lease, another session) resumes at the first entry still
pending. Each entry's (record/aliases, key, seconds, exit status) is appended to a TSV log.
"""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from probebook.reproduce import queue as q

LEAST_S = 20.0
"""The fewest seconds left of ``--hard-s`` an entry starts with (less measures nothing worth keeping)."""
GRACE_S = 15.0
"""Seconds between SIGINT (store partial evidence) and SIGKILL, as ``timeout -k 15``."""
LOG_FIELDS = ("started_at", "entry", "key", "probe", "wall_s", "rc", "command")


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _child_output() -> Any:
    """The probes' own output goes to stderr, so stdout carries the queue's lines only."""
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # a stderr without a descriptor (captured in-process)
        return subprocess.DEVNULL


def run_one(words: list[str], out: Path, limit_s: float) -> tuple[float, int]:
    """(wall seconds, exit status) of ``python -m measure --archive OUT WORDS`` under ``limit_s``: SIGINT to its
    process group at the limit (a probe and its session processes store partial evidence), SIGKILL after
    ``GRACE_S``."""
    # absolute paths: a probe's session processes do not run in this folder, so a relative --archive or
    # PYTHONPATH entry would name another one there (a relative --archive lost every session's journal)
    argv = [sys.executable, "-m", "measure", "--archive", str(out.resolve()), *words]
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(Path(p).resolve()) for p in paths)} if paths else None
    started = time.monotonic()
    out_, err = _child_output(), _child_output()
    child = subprocess.Popen(argv, stdout=out_, stderr=err, env=env, start_new_session=True)
    try:
        child.wait(timeout=limit_s)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGINT)
        try:
            child.wait(timeout=GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    except BaseException:  # our own interrupt: the child stores what it measured, then we go
        os.killpg(child.pid, signal.SIGINT)
        child.wait(timeout=GRACE_S)
        raise
    return time.monotonic() - started, child.returncode


def recover(out: Path) -> None:
    """Journals a killed probe left in ``OUT/journal`` become partial evidence (``python -m measure recover``)."""
    for journal in sorted((out / "journal").glob("*.jsonl")) if (out / "journal").is_dir() else []:
        argv = [sys.executable, "-m", "measure", "--archive", str(out.resolve()), "recover", str(journal)]
        if subprocess.run(argv, stdout=_child_output(), stderr=_child_output(), check=False).returncode == 0:
            journal.unlink(missing_ok=True)


def _log(path: Path, row: dict[str, Any]) -> None:
    new = not path.exists()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=LOG_FIELDS, delimiter="\t", lineterminator="\n")
        if new:
            writer.writeheader()
        writer.writerow(row)


def run(queue: q.Queue, out: Path, hard_s: float, card: str, log: Path) -> int:
    """Measure ``queue``'s pending entries in order within ``hard_s`` seconds; print a line per entry and the
    entries still waiting at the end. 0 when nothing pending is left, else 3 (resume it in another lease)."""
    from measure.errors import EXIT

    started = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    tried: set[str] = set()
    for entry in queue.entries:
        if entry.status != "pending":
            continue
        if tried:  # an entry measured this call may answer this one too (another record cites its key)
            q.refresh(entry, q.pool_of(out), card)
            if entry.status == "done":
                say(f"done {entry.name} {entry.key}: {entry.why}, measured earlier in this call")
                continue
        if entry.key in tried:
            say(f"skip {entry.name} {entry.key}: tried once in this call")
            continue
        left = hard_s - (time.monotonic() - started)
        if left < LEAST_S:
            say(f"skip {entry.name} {entry.key}: {max(left, 0.0):.0f} s left of --hard-s {hard_s:g} (< {LEAST_S:g} s)")
            continue
        tried.add(entry.key)
        when = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        say(f"start {entry.name} {entry.key} (limit {left:.0f} s): {entry.command}")
        wall, rc = run_one(entry.words, out, left)
        recover(out)
        q.refresh(entry, q.pool_of(out), card)
        say(f"end {entry.name} {entry.key}: {wall:.1f} s, rc={rc}, {entry.status}")
        row = {"started_at": when, "entry": entry.name, "key": entry.key, "probe": entry.probe}
        _log(log, row | {"wall_s": f"{wall:.3f}", "rc": rc, "command": entry.command})
    waiting = [e for e in queue.entries if e.status != "done"]
    for entry in waiting:
        say(f"waits: {entry.status} {entry.name} {entry.key}")
    pending = [e for e in waiting if e.status == "pending"]
    say(f"{len(pending)} pending, {len(waiting) - len(pending)} waiting for a word, a campaign or a fix; log {log}")
    return EXIT["budget spent"] if pending else 0
