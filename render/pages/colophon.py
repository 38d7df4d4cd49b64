"""The site's colophon, printed in every page's footer: build date, source commit and the ledger's hash (issue 14).

It goes into the generated ``mkdocs.yml`` as ``copyright``, which mkdocs-material and Zensical both print
in the footer, so no theme override or plugin is needed and the engine stays swappable (ARCHITECTURE.md §The build).
Every part is a function of the build's inputs, so two builds of one commit stay byte-identical
(ARCHITECTURE.md §Invariants, item 5): the date is ``SOURCE_DATE_EPOCH`` (else the newest evidence or record
date, ``build.source_date_epoch``), the commit is git's for the sources folder, and the ledger hash is the SHA-256
of ``ledger.json``'s rows.
The text holds only digits, hex, letters and ``-:·``, so it needs no escaping wherever a theme prints it.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import subprocess
from pathlib import Path

UNKNOWN_COMMIT = "not in a git checkout"


def source_commit(folder: Path) -> str:
    """The commit the sources are checked out at, ``-dirty`` when they differ from it; or ``UNKNOWN_COMMIT``."""
    try:
        head = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=30
        )
        if head.returncode != 0:
            return UNKNOWN_COMMIT
        status = subprocess.run(
            ["git", "-C", str(folder), "status", "--porcelain", "--", "."], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        return UNKNOWN_COMMIT
    commit = head.stdout.strip()[:12]
    return commit + ("-dirty" if status.returncode != 0 or status.stdout.strip() else "")


def text(epoch: int, commit: str, ledger_bytes: bytes) -> str:
    """``Built 2026-11-30 from source commit 29c430b1f2e3 · ledger sha256:0a1b2c3d4e5f``."""
    day = _dt.datetime.fromtimestamp(epoch, _dt.timezone.utc).date().isoformat()
    where = f"source commit {commit}" if commit != UNKNOWN_COMMIT else f"sources {commit}"
    digest = hashlib.sha256(ledger_bytes).hexdigest()[:12]
    return f"Built {day} from {where} · ledger sha256:{digest}"
