"""Processes this one forks die with it: a forked copy never outlives the process that made it (issue 25, 11).

A process killed by SIGKILL (or SIGTERM, whose default action runs no cleanup) cannot end its children, and a
child left behind can block forever writing to a pipe that another child still holds open, while it keeps the
parent's stdout and stderr (a test's or CI's output pipe) open, so whoever reads them waits forever too. The
build's workers (``render.assemble.parallel``) and ``archive verify``'s copies (``measure.evidence.archive_check``)
call ``die_with_parent`` first thing after the fork. A job ``probebook reproduce`` starts through submitit's
controller (its parent is that controller, not the runner) follows the runner itself: ``watch_token``.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1
"""prctl(2)'s option: the signal the kernel sends this process when the thread that forked it ends (Linux)."""
PARENT_POLL_S = 1.0
"""Where prctl is missing (macOS), how often a forked process checks that its parent still runs."""


def die_with_parent(parent: int) -> None:
    """In a process forked by ``parent``: be killed when it ends, however it ends.

    On Linux the kernel sends SIGKILL at the parent's death (``prctl(PR_SET_PDEATHSIG)``, through ctypes: no
    extra package); elsewhere a daemon thread polls the parent pid. The parent may have died before either was
    in place, so the parent pid is checked once they are: a process whose parent is gone was re-parented.
    """
    armed = False
    if sys.platform.startswith("linux"):
        try:
            armed = ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
        except (OSError, AttributeError):  # a libc without prctl: fall back to polling, as elsewhere
            armed = False
    if not armed:
        threading.Thread(target=_watch_parent, args=(parent,), name="watch-parent", daemon=True).start()
    if os.getppid() != parent:
        os._exit(1)


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_S)
    os._exit(1)


def _started(pid: int) -> str | None:
    """When process ``pid`` started, in clock ticks since boot (``/proc/PID/stat`` field 22); None when it is gone
    or a zombie (ended, not yet reaped). A pid is reused once its process ends: the start time tells the process
    apart from a later one."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            stat = fh.read()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()  # the command name, in parentheses, may hold spaces
    return fields[19] if len(fields) > 19 and fields[0] not in ("Z", "X") else None


def die_with_process(pid: int, started: str) -> None:
    """End this process (``os._exit``) once process ``pid``, not its parent, ends: a job a runner started through
    another process (submitit's controller) that must not outlive the runner. Polls every ``PARENT_POLL_S``;
    ``started`` is the runner's start time as ``_started`` read it, so a later process given the same pid is not
    taken for it. A runner already gone ends this process at once: it started a job nobody waits for."""
    if _started(pid) != started:
        os._exit(1)

    def watch() -> None:
        while _started(pid) == started:
            time.sleep(PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="watch-runner", daemon=True).start()


def process_token(pid: int) -> str | None:
    """``pid:start-time:boot-id`` of a process of this machine, which ``watch_token`` can follow from another."""
    started, boot = _started(pid), _boot_id()
    return f"{pid}:{started}:{boot}" if started is not None and boot is not None else None


def _boot_id() -> str | None:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
            return fh.read().strip() or None
    except OSError:
        return None


def watch_token(token: str | None) -> bool:
    """``die_with_process`` for a ``process_token``; whether it watches (not on another machine or boot: a Slurm
    node, where the runner's pid names nothing)."""
    parts = (token or "").split(":")
    if len(parts) != 3 or not parts[0].isdigit() or _boot_id() != parts[2]:
        return False
    die_with_process(int(parts[0]), parts[1])
    return True
