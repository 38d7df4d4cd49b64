"""The build's first stage: the archive verified and parsed (ARCHITECTURE.md §The build)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from measure.errors import EvidenceError, StoreError, printable
from measure.evidence.reading import read_archived
from measure.evidence.store import Store
from render.errors import BuildError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Archive:
    """The archive as render sees it: documents and their exact bytes, by full id."""

    docs: dict[str, dict[str, Any]]
    raw: dict[str, bytes]


_LOADED: dict[str, tuple[tuple[Any, ...], Archive]] = {}


def _fingerprint(store: Store) -> tuple[Any, ...]:
    """(name, size, mtime, inode) of every stored file: what ``serve``'s watcher also compares."""
    out = []
    for path in store.iter_paths():
        st = path.stat()
        out.append((path.as_posix(), st.st_size, st.st_mtime_ns, st.st_ino))
    return tuple(out)


def load_evidence(archive: Path, reuse: bool = False) -> Archive:
    """Verify every stored file's hash, then parse it; any problem stops the build with one line.

    Links, FIFOs and stray names under ``evidence/`` are never opened; each is named in one warning line.
    ``reuse`` (``serve``, which builds many times in one process) returns the archive as this process last
    read it while no stored file was added, removed, replaced or touched.
    """
    store = Store(archive)
    if reuse:
        seen = _fingerprint(store)
        last = _LOADED.get(str(archive.resolve()))
        if last is not None and last[0] == seen:
            return last[1]
    for stray in store.strays():
        where = printable(f"{stray.path}: {stray.why}")  # a file name may hold terminal escape codes
        log.warning("warning: %s (skipped; `probebook archive verify` lists it)", where)
    bad = store.verify()
    if bad:
        m = bad[0]
        raise BuildError(
            f"{m.path}: bytes do not match the file's name (expected {m.expected}, actual {m.actual})"
            + (f"; {len(bad) - 1} more" if len(bad) > 1 else "")
            + "; run `probebook archive verify`"
        )
    docs, raw = {}, {}
    for path in store.iter_paths():
        ident = "sha256:" + path.parent.name + path.name[:-5]
        try:
            docs[ident], raw[ident] = read_archived(path, store.limit)  # older probe versions read as current
        except (EvidenceError, StoreError) as exc:
            raise BuildError(str(exc)) from None
    loaded = Archive(docs, raw)
    if reuse:
        _LOADED[str(archive.resolve())] = (seen, loaded)
    return loaded
