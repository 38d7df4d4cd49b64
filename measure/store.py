"""The write-once, content-addressed evidence archive (DESIGN §2).

Layout: ``<root>/evidence/sha256/<2 hex>/<62 hex>.json``. A write goes to a temp file in
the same folder, is fsynced, then hard-linked to its final name (``link`` fails if the name
exists, so nothing is ever overwritten, even by a racing writer) and the folder is fsynced.
Temp files start with ``.tmp-``; every reader ignores them and ``verify --clean`` removes them.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from measure.errors import StoreError
from measure.evidence import Evidence, digest, parse

_HEX = re.compile(r"^[0-9a-f]+$")
_FINAL = re.compile(r"^[0-9a-f]{62}\.json$")
MIN_PREFIX = 12
TEMP_PREFIX = ".tmp-"


@dataclass(frozen=True)
class Mismatch:
    """A stored file whose bytes do not hash to its name."""

    path: Path
    expected: str
    actual: str


def normalize_id(text: str) -> str:
    """``sha256:<hex>`` or bare hex -> lower-case hex; refuse paths and non-hex with one line."""
    raw = text.strip()
    if "/" in raw or "\\" in raw or raw.endswith(".json"):
        raise StoreError(f"{text!r} looks like a path; give an evidence id such as sha256:<hex> "
                         "(`probebook archive ls` lists them)")
    hexpart = raw[len("sha256:"):] if raw.lower().startswith("sha256:") else raw
    hexpart = hexpart.lower()
    if not hexpart or not _HEX.match(hexpart):
        raise StoreError(f"{text!r} is not an evidence id: expected sha256: and hex digits")
    if len(hexpart) > 64:
        raise StoreError(f"{text!r} is longer than a SHA-256 digest (64 hex)")
    if len(hexpart) < MIN_PREFIX:
        raise StoreError(f"{text!r} is too short: give at least {MIN_PREFIX} hex digits of the id")
    return hexpart


class Store:
    """An evidence archive rooted at ``root`` (the folder holding ``evidence/``)."""

    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)
        self.base = self.root / "evidence" / "sha256"

    def path_for(self, hexdigest: str) -> Path:
        return self.base / hexdigest[:2] / f"{hexdigest[2:]}.json"

    # -- writing ------------------------------------------------------------------
    def put_bytes(self, raw: bytes) -> str:
        """Store canonical evidence bytes; return the id. Identical bytes again are a no-op."""
        ident = digest(raw)
        final = self.path_for(ident[7:])
        if final.exists():
            return ident
        folder = final.parent
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f"{TEMP_PREFIX}{os.getpid()}-{os.urandom(6).hex()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
        try:
            view = memoryview(raw)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, final)  # fails if the name exists: never overwrite
        except FileExistsError:
            pass  # another writer stored the same bytes first
        finally:
            os.unlink(tmp)
        _fsync_dir(folder)
        return ident

    def put(self, evidence: Evidence) -> str:
        """Validate, canonicalise and store one evidence document; return its id."""
        return self.put_bytes(evidence.to_bytes())

    # -- reading ------------------------------------------------------------------
    def iter_paths(self) -> Iterator[Path]:
        """Every final-named evidence file, in id order; temp files are skipped."""
        if not self.base.is_dir():
            return
        for sub in sorted(os.scandir(self.base), key=lambda e: e.name):
            if not (sub.is_dir() and len(sub.name) == 2 and _HEX.match(sub.name)):
                continue
            for entry in sorted(os.scandir(sub.path), key=lambda e: e.name):
                if _FINAL.match(entry.name):
                    yield Path(entry.path)

    def ids(self) -> list[str]:
        return ["sha256:" + p.parent.name + p.name[:-5] for p in self.iter_paths()]

    def resolve(self, text: str) -> str:
        """An id or unique prefix (>= 12 hex) -> the full ``sha256:<hex>`` id."""
        prefix = normalize_id(text)
        folder = self.base / prefix[:2]
        rest = prefix[2:]
        matches = []
        if folder.is_dir():
            matches = sorted(e.name[:-5] for e in os.scandir(folder)
                             if _FINAL.match(e.name) and e.name.startswith(rest))
        if not matches:
            raise StoreError(f"no evidence {text!r} in {self.root} (`probebook archive ls` lists what is there)")
        if len(matches) > 1:
            raise StoreError(f"evidence prefix {text!r} is ambiguous: it matches {len(matches)} ids; give more digits")
        return f"sha256:{prefix[:2]}{matches[0]}"

    def read_bytes(self, ident: str) -> bytes:
        full = self.resolve(ident)
        return self.path_for(full[7:]).read_bytes()

    def get(self, ident: str) -> dict:
        """The validated document for an id or unique prefix."""
        full = self.resolve(ident)
        path = self.path_for(full[7:])
        return parse(path.read_bytes(), str(path))

    # -- checking -----------------------------------------------------------------
    def verify(self) -> list[Mismatch]:
        """Re-hash every stored file; return each whose bytes do not match its name."""
        bad = []
        for path in self.iter_paths():
            expected = path.parent.name + path.name[:-5]
            with open(path, "rb") as fh:
                actual = hashlib.file_digest(fh, "sha256").hexdigest()
            if actual != expected:
                bad.append(Mismatch(path, "sha256:" + expected, "sha256:" + actual))
        return bad

    def temp_files(self) -> list[Path]:
        """Leftovers of interrupted writes."""
        if not self.base.is_dir():
            return []
        return sorted(p for p in self.base.glob(f"??/{TEMP_PREFIX}*"))

    def clean(self) -> list[Path]:
        """Remove leftover temp files; return what was removed."""
        removed = []
        for path in self.temp_files():
            try:
                path.unlink()
                removed.append(path)
            except FileNotFoundError:
                pass
        return removed


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
