"""Processes this one forks die with it: a forked copy never outlives the process that made it (issue 25, 11).

A process killed by SIGKILL (or SIGTERM, whose default action runs no cleanup) cannot end its children, and a
child left behind can block forever writing to a pipe that another child still holds open, while it keeps the
parent's stdout and stderr (a test's or CI's output pipe) open, so whoever reads them waits forever too. The
build's workers (``render.build.parallel``) and ``archive verify``'s copies (``measure.evidence.archive_check``)
call ``die_with_parent`` first thing after the fork.
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
