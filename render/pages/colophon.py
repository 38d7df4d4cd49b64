"""The site's colophon, printed in every page's footer: build date, source commit and the ledger's hash (issue 14).

It goes into the generated ``mkdocs.yml`` as ``copyright``, which mkdocs-material and Zensical both print
in the footer, so no theme override or plugin is needed and the engine stays swappable (ARCHITECTURE.md
§The build). Every part is a function of the build's inputs, so two builds of one commit stay byte-identical
(ARCHITECTURE.md §Invariants, item 5): the date is ``SOURCE_DATE_EPOCH`` (else the newest evidence or record
date, ``render.assemble.dates.source_date_epoch``), the commit is git's for the repository that holds the sources
folder, and the ledger hash is the SHA-256 of ``ledger.json``'s rows. The text holds only digits, hex, letters and
``-:·``, so it needs no escaping wherever a theme prints it.

No code runs from the sources (issue 25, item 4): git reads a repository's own config, and ``core.fsmonitor``
there names a command that ``git status`` runs, so a ``docs/.git`` planted by a pull request or an unpacked
archive ran its command at every build. The repository is therefore looked for above the sources folder only
(a ``.git`` inside it is never used), found by looking for ``.git`` rather than by asking git, and git runs at
that repository's root with everything that can start a program from config forced off (``GIT_OPTIONS``,
``git_environment``).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import subprocess
from pathlib import Path

UNKNOWN_COMMIT = "not in a git checkout"

GIT_OPTIONS = (
    "-c", "core.fsmonitor=false",  # git-config(1): a command run by every status, from the repository's config
    "-c", "core.hooksPath=/dev/null",  # no hook (post-index-change runs when status refreshes the index)
    "-c", "core.untrackedCache=false",
    "-c", "status.submoduleSummary=false",
    "-c", "diff.external=",
    "-c", "core.pager=cat",
)  # fmt: skip
"""Options before git's subcommand: the settings that name a program to run, forced off whatever config says."""


def git_environment() -> dict[str, str]:
    """This process's environment without ``GIT_*`` (a ``GIT_DIR`` would point git elsewhere), no system or
    global config (git-config(1): ``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL``), no prompt, no index write."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_TERMINAL_PROMPT="0",
        GIT_OPTIONAL_LOCKS="0",  # git(1): status then writes no refreshed index (and starts no hook for it)
    )
    return env


def repository_root(sources: Path) -> Path | None:
    """The nearest folder strictly above ``sources`` that holds a ``.git`` folder or file, or None.

    Found by looking, not by running git, and never inside ``sources``: a ``.git`` planted there is not read."""
    here = sources.resolve().parent
    for folder in (here, *here.parents):
        try:
            found = (folder / ".git").lstat()
        except OSError:  # absent or unreadable: look further up
            continue
        if found.st_mode & 0o170000 in (0o040000, 0o100000):  # a folder, or a worktree's ``gitdir:`` file
            return folder
    return None


def source_commit(sources: Path) -> str:
    """The commit the sources are checked out at, ``-dirty`` when they differ from it; or ``UNKNOWN_COMMIT``."""
    root = repository_root(sources)
    if root is None:
        return UNKNOWN_COMMIT
    where = os.path.relpath(sources.resolve(), root)
    git = ["git", "-C", str(root), *GIT_OPTIONS]
    env = git_environment()
    try:
        head = subprocess.run(
            [*git, "rev-parse", "--verify", "-q", "HEAD^{commit}"], capture_output=True, text=True, timeout=30, env=env
        )
        if head.returncode != 0:
            return UNKNOWN_COMMIT
        status = subprocess.run(
            [*git, "status", "--porcelain", "--ignore-submodules=all", "--", where],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
    except (OSError, subprocess.TimeoutExpired):  # no git installed, or a repository too slow to read
        return UNKNOWN_COMMIT
    commit = head.stdout.strip()[:12]
    if not all(c in "0123456789abcdef" for c in commit) or len(commit) != 12:
        return UNKNOWN_COMMIT
    return commit + ("-dirty" if status.returncode != 0 or status.stdout.strip() else "")


def text(epoch: int, commit: str, ledger_bytes: bytes) -> str:
    """``Built 2026-11-30 from source commit 29c430b1f2e3 · ledger sha256:0a1b2c3d4e5f``."""
    day = _dt.datetime.fromtimestamp(epoch, _dt.timezone.utc).date().isoformat()
    where = f"source commit {commit}" if commit != UNKNOWN_COMMIT else f"sources {commit}"
    digest = hashlib.sha256(ledger_bytes).hexdigest()[:12]
    return f"Built {day} from {where} · ledger sha256:{digest}"
