"""The write-once, content-addressed evidence archive (ARCHITECTURE.md §4.2).

Layout: ``<root>/evidence/sha256/<2 hex>/<62 hex>.json``. A write goes to a temp file in
the same folder, is fsynced, then hard-linked to its final name (``link`` fails if the name
exists, so nothing is ever overwritten, even by a racing writer) and the folder is fsynced.
Temp files start with ``.tmp-``; every reader ignores them and ``verify --clean`` removes them.
A writer holds an exclusive ``flock`` on its temp file until it is linked and unlinked, and
``clean`` skips locked files, so cleaning never pulls a file from under a live writer (the
kernel drops the lock of a killed one); should it still happen, the writer writes it again.
"""

from __future__ import annotations

import hashlib
import os

try:
    import fcntl
except ImportError:  # not POSIX: no advisory locks; clean may then race a live writer (it retries)
    fcntl = None  # type: ignore[assignment]
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from measure.errors import EvidenceError, StoreError
from measure.evidence import Evidence, canonical_bytes, digest, parse

_HEX = re.compile(r"[0-9a-f]+")
_FINAL = re.compile(r"[0-9a-f]{62}\.json")
# an archived file's path, from which the id it was given can be read back
_STORED_PATH = re.compile(r"([0-9a-f]{2})[/\\]([0-9a-f]{62})\.json")
MIN_PREFIX = 12
TEMP_PREFIX = ".tmp-"


@dataclass(frozen=True)
class Mismatch:
    """A stored file whose bytes do not hash to its name."""

    path: Path
    """The stored file."""
    expected: str
    """The id its name claims, ``sha256:<hex>``."""
    actual: str
    """The digest of its bytes, or ``unreadable (...)`` when it cannot be read."""


@dataclass(frozen=True)
class Invalid:
    """A stored file whose bytes match its name but which is not valid current-schema evidence."""

    path: Path
    """The stored file."""
    message: str
    """The one-line reason, from ``measure.evidence.parse``."""


def normalize_id(text: str) -> str:
    """``sha256:<hex>`` or bare hex -> lower-case hex; refuse paths and non-hex with one line."""
    raw = text.strip()
    if "/" in raw or "\\" in raw or raw.endswith(".json"):
        found = _STORED_PATH.search(raw.lower())
        hint = f" (an archived file with that name has id sha256:{found[1]}{found[2]})" if found else ""
        raise StoreError(
            f"{text!r} is a path, not an evidence id{hint}; give sha256:<hex> or a unique "
            f"prefix of >= {MIN_PREFIX} hex digits (`probebook archive ls` lists them)"
        )
    hexpart = raw[len("sha256:") :] if raw.lower().startswith("sha256:") else raw
    hexpart = hexpart.lower()
    if not hexpart or not _HEX.fullmatch(hexpart):
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
        """Store valid, canonical evidence bytes; return the id. Identical bytes again are a no-op.

        Bytes that do not parse as current-schema evidence, or are not in canonical form, are
        refused (``EvidenceError``/``StoreError``), so nothing but canonical evidence is ever named.
        """
        doc = parse(raw, "evidence to store")
        if canonical_bytes(doc) != raw:
            raise StoreError(
                "evidence to store is not in canonical form; store measure.evidence.canonical_bytes(doc) instead"
            )
        return self._write(raw)

    def put(self, evidence: Evidence) -> str:
        """Validate, canonicalise and store one evidence document; return its id."""
        return self._write(evidence.to_bytes())  # to_bytes validates and canonicalises

    def _write(self, raw: bytes) -> str:
        ident = digest(raw)
        final = self.path_for(ident[7:])
        folder = final.parent
        try:
            if final.exists():
                self._same_bytes(final, raw)
                return ident
            if not folder.is_dir():
                folder.mkdir(parents=True, exist_ok=True)
                _fsync_dir(folder.parent)  # make the new shard folder's own entry durable
            # A concurrent `verify --clean` may delete our temp file before it is linked;
            # then the link finds no source and we write it again.
            for _attempt in range(5):
                if self._link_new(folder, final, raw):
                    break
            else:
                raise StoreError(f"could not store {ident} in {folder}: its temp file kept being removed")
            _fsync_dir(folder)
        except OSError as exc:  # read-only archive, disk full, permissions: the user's to fix
            raise StoreError(f"cannot write evidence into {folder}: {exc.strerror or exc}") from None
        return ident

    @staticmethod
    def _link_new(folder: Path, final: Path, raw: bytes) -> bool:
        """Write ``raw`` to a fresh temp file, fsync, hard-link to ``final``. False if the temp vanished."""
        tmp = folder / f"{TEMP_PREFIX}{os.getpid()}-{os.urandom(6).hex()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)  # "a live writer owns this": `clean` leaves it alone
            view = memoryview(raw)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
            try:
                os.link(tmp, final)  # fails if the name exists: never overwrite
            except FileExistsError:
                Store._same_bytes(final, raw)  # another writer stored the same bytes first
            except FileNotFoundError:
                return False
            return True
        finally:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            os.close(fd)  # releases the lock, after the temp name is gone

    @staticmethod
    def _same_bytes(final: Path, raw: bytes) -> None:
        """An existing final file must hold exactly these bytes; anything else is tampering."""
        with open(final, "rb") as fh:
            held = fh.read(len(raw) + 1)
        if held != raw:
            raise StoreError(
                f"{final} already exists but does not hold the bytes its name promises "
                f"(expected {digest(raw)}, actual {digest(held)}); run `probebook archive verify`"
            )

    # -- reading ------------------------------------------------------------------
    def iter_paths(self) -> Iterator[Path]:
        """Every final-named evidence file, in id order; temp files are skipped."""
        if not self.base.is_dir():
            return
        for sub in sorted(os.scandir(self.base), key=lambda e: e.name):
            if not (len(sub.name) == 2 and _HEX.fullmatch(sub.name) and sub.is_dir()):
                continue
            for entry in sorted(os.scandir(sub.path), key=lambda e: e.name):
                if _FINAL.fullmatch(entry.name):
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
            matches = sorted(
                e.name[:-5] for e in os.scandir(folder) if _FINAL.fullmatch(e.name) and e.name.startswith(rest)
            )
        if not matches:
            raise StoreError(f"no evidence {text!r} in {self.root} (`probebook archive ls` lists what is there)")
        if len(matches) > 1:
            raise StoreError(f"evidence prefix {text!r} is ambiguous: it matches {len(matches)} ids; give more digits")
        return f"sha256:{prefix[:2]}{matches[0]}"

    def read_bytes(self, ident: str) -> bytes:
        """The stored bytes for an id or unique prefix (not validated)."""
        path = self.path_for(self.resolve(ident)[7:])
        try:
            return path.read_bytes()
        except OSError as exc:
            raise StoreError(f"{path}: cannot read ({exc.strerror})") from None

    def get(self, ident: str) -> dict:
        """The validated document for an id or unique prefix."""
        full = self.resolve(ident)
        return parse(self.read_bytes(full), str(self.path_for(full[7:])))

    # -- checking -----------------------------------------------------------------
    def verify(self) -> list[Mismatch]:
        """Re-hash every stored file; return each whose bytes do not match its name.

        Plain ``os.listdir``/``os.open``/``os.read`` strings rather than ``Path`` objects and
        buffered files: per-file overhead dominates for small documents, and this loop ran 3x
        faster than ``open`` + ``hashlib.file_digest`` per ``Path`` (``python bench/archive.py``
        prints both, beside ``sha256sum`` over the same files).
        """
        bad = []
        base = str(self.base)
        if not os.path.isdir(base):
            return bad
        sha256 = hashlib.sha256
        for shard in sorted(os.listdir(base)):
            folder = os.path.join(base, shard)
            if not (len(shard) == 2 and _HEX.fullmatch(shard) and os.path.isdir(folder)):
                continue
            for name in sorted(os.listdir(folder)):
                if not _FINAL.fullmatch(name):
                    continue
                path = os.path.join(folder, name)
                expected = "sha256:" + shard + name[:-5]
                try:
                    fd = os.open(path, os.O_RDONLY)
                    try:
                        h = sha256()
                        while chunk := os.read(fd, 1 << 20):  # one read for a typical document
                            h.update(chunk)
                    finally:
                        os.close(fd)
                    actual = "sha256:" + h.hexdigest()
                except OSError as exc:
                    actual = f"unreadable ({exc.strerror})"
                if actual != expected:
                    bad.append(Mismatch(Path(path), expected, actual))
        return bad

    def invalid(self, skip: set[Path] | frozenset[Path] = frozenset()) -> list[Invalid]:
        """Stored files (other than ``skip``) that are not valid current-schema evidence.

        ``verify`` proves the bytes are the ones archived; this says whether readers can use
        them (e.g. an old-schema file archived before a migration, or junk that was hashed).
        """
        found = []
        for path in self.iter_paths():
            if path in skip:
                continue
            try:
                parse(path.read_bytes(), str(path))
            except OSError as exc:
                found.append(Invalid(path, f"{path}: cannot read ({exc.strerror})"))
            except EvidenceError as exc:
                found.append(Invalid(path, str(exc)))
        return found

    def temp_files(self) -> list[Path]:
        """Leftovers of interrupted writes."""
        if not self.base.is_dir():
            return []
        return sorted(p for p in self.base.glob(f"??/{TEMP_PREFIX}*") if _HEX.fullmatch(p.parent.name))

    def clean(self) -> list[Path]:
        """Remove temp files left by interrupted writes (not those a live writer holds); return them."""
        removed = []
        for path in self.temp_files():
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                continue  # its writer finished meanwhile
            try:
                if fcntl is not None:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    except BlockingIOError:
                        continue  # a live writer holds it
                os.unlink(path)
                removed.append(path)
            except FileNotFoundError:
                pass
            finally:
                os.close(fd)
        return removed


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
