"""What every bench/h200_*.sh summary starts with: the archive verified, then each document with its id.

Used from the scripts' summary blocks (``from bench.summary import documents``; lib.sh puts the repo root
on PYTHONPATH), so the verify line and the reading of each document are written once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from measure.evidence.envelope import parse
from measure.evidence.store import Store


def documents(archive: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Print ``verify: N evidence, M mismatched`` for ``archive``, then yield (full id, document) for each."""
    store = Store(archive)
    print(f"verify: {len(store.ids())} evidence, {len(store.verify())} mismatched")
    for path in store.iter_paths():
        yield "sha256:" + path.parent.name + path.name[:-5], parse(path.read_bytes(), str(path))
