"""One pass over an archive for ``probebook archive verify`` (ARCHITECTURE.md §4.2).

Each stored file is read once: its bytes are hashed and compared with its name, and a file whose
bytes match is parsed and validated from the same bytes (``measure.evidence.parse_archived``: orjson
where writing its reading back gives the same bytes, the strict reader otherwise, so integers stay
exact and a duplicate key is refused as before). Where there are enough files to pay for it, the
files are split among processes forked from this one, one per CPU core this process may use.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from measure.errors import EvidenceError
from measure.evidence import parse_archived
from measure.store import Invalid, Mismatch, Store, read_hashed

# Below this many files per extra process, forking one costs more than it saves (about 20 ms to start a
# worker against roughly 40 µs a file; bench/archive.py measures the command beside sha256sum).
FILES_PER_WORKER = 2000


@dataclass
class Check:
    """What one pass found."""

    count: int = 0
    """Stored files looked at (final-named regular files, links and strays aside)."""
    mismatches: list[Mismatch] = field(default_factory=list)
    """Files whose bytes do not hash to their names."""
    invalid: list[Invalid] = field(default_factory=list)
    """Files whose bytes match but which are not valid current-schema evidence."""


def check_files(files: list[tuple[str, str]], limit: int) -> Check:
    """Hash, then parse and validate, each (path, id its name claims) in ``files``."""
    found = Check()
    for path, expected in files:
        read = read_hashed(path, limit)
        if read is None:
            continue  # a link or another non-regular entry: ``Store.strays`` names it
        found.count += 1
        raw, actual = read
        if raw is None or actual != expected:
            found.mismatches.append(Mismatch(Path(path), expected, actual))
            continue
        try:
            parse_archived(raw, path)
        except EvidenceError as exc:
            found.invalid.append(Invalid(Path(path), str(exc)))
    return found


def default_workers(files: int) -> int:
    """Processes worth using for ``files`` files: one per usable core, at most one per ``FILES_PER_WORKER``."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, files // FILES_PER_WORKER))


def check(store: Store, workers: int | None = None) -> Check:
    """Every stored file of ``store`` hashed and, where it matches its name, parsed and validated.

    ``workers`` processes share the files (default ``default_workers``); this process is one of them.
    Forking is used only where the platform has it and no other thread runs (a fork copies one thread).
    """
    files = store.final_files()
    n = default_workers(len(files)) if workers is None else max(1, workers)
    if n == 1 or "fork" not in multiprocessing.get_all_start_methods() or threading.active_count() > 1:
        return check_files(files, store.limit)
    with ProcessPoolExecutor(n - 1, mp_context=multiprocessing.get_context("fork")) as pool:
        # interleaved shares: neighbouring files are alike in size, so each process gets a fair part
        others = [pool.submit(check_files, files[i::n], store.limit) for i in range(1, n)]
        parts = [check_files(files[0::n], store.limit)] + [f.result() for f in others]
    return Check(
        count=sum(p.count for p in parts),
        mismatches=sorted((m for p in parts for m in p.mismatches), key=lambda m: m.path),
        invalid=sorted((i for p in parts for i in p.invalid), key=lambda i: i.path),
    )
