"""The write-once, content-addressed evidence archive (ARCHITECTURE.md §Evidence).

Layout: ``<root>/evidence/sha256/<2 hex>/<62 hex>.json``. A write goes to a temp file in
the same folder, is fsynced, then hard-linked to its final name (``link`` fails if the name
exists, so nothing is ever overwritten, even by a racing writer) and the folder is fsynced.
Temp files start with ``.tmp-``; every reader ignores them and ``verify --clean`` removes them.
A writer holds an exclusive ``flock`` on its temp file until it is linked and unlinked, and
``clean`` skips locked files, so cleaning never pulls a file from under a live writer (the
kernel drops the lock of a killed one); should it still happen, the writer writes it again.
"""

from __future__ import annotations

import os

try:
    import fcntl
except ImportError:  # not POSIX: no advisory locks; clean may then race a live writer (it retries)
    fcntl = None  # type: ignore[assignment]
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from measure.errors import EvidenceError, StoreError
from measure.evidence.envelope import Evidence, canonical_bytes, digest, parse
from measure.evidence.files import NOFOLLOW, TEMP_PREFIX, fsync_dir, kind_of, max_bytes
from measure.evidence.reading import parse_archived, read_hashed, read_regular

# The archive's file-name rules, in one place: a stored file is <2 hex>/<62 hex>.json; a loose file (one to
# add, or one left in the wrong folder) may be named <64 hex>.json, with an optional sha256:/sha256_/sha256- prefix.
_HEX = re.compile(r"[0-9a-f]+")
_FINAL = re.compile(r"[0-9a-f]{62}\.json")
_LOOSE = re.compile(r"(?:sha256[:_-])?([0-9a-f]{64})\.json")
# an archived file's path, from which the id it was given can be read back
_STORED_PATH = re.compile(r"([0-9a-f]{2})[/\\]([0-9a-f]{62})\.json")
MIN_PREFIX = 12


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
    """The one-line reason, from ``measure.evidence.envelope.parse``."""


@dataclass(frozen=True)
class Stray:
    """Something under ``evidence/`` that is not a stored evidence file or a temp file of a write."""

    path: Path
    """What was found."""
    why: str
    """What is wrong with it, e.g. ``a symbolic link`` or ``a file outside any shard folder``."""


def stored_entry(entry: os.DirEntry[str]) -> bool:
    """Whether a shard folder's entry is a stored file: a final name, and a regular file by the folder listing's
    file type (no stat call)."""
    return _FINAL.fullmatch(entry.name) is not None and entry.is_file(follow_symlinks=False)


@dataclass(frozen=True)
class Shard:
    """A real shard folder of the archive as listed once (``Store.tree``)."""

    name: str
    """Its two hex digits, the first two of the ids stored in it."""
    path: str
    """The folder."""
    entries: list[os.DirEntry[str]]
    """What it holds, sorted by name."""

    def temp_files(self) -> list[str]:
        """Paths of the temp files of writes in it (named ``.tmp-...``; interrupted ones are ``clean``'s to remove)."""
        return [e.path for e in self.entries if e.name.startswith(TEMP_PREFIX) and e.is_file(follow_symlinks=False)]


def stored_id(shard: str, name: str) -> str:
    """The id a stored file's shard folder and final name give it (callers pass final names only)."""
    return "sha256:" + shard + name[: -len(".json")]


def claimed_id(path: Path) -> str | None:
    """The id a file's name claims, if it is named by a digest (the archive's layout or ``<64 hex>.json``)."""
    name = path.name.lower()
    loose = _LOOSE.fullmatch(name)
    if loose:
        return "sha256:" + loose[1]
    shard = path.parent.name.lower()
    if _FINAL.fullmatch(name) and len(shard) == 2 and _HEX.fullmatch(shard):
        return stored_id(shard, name)
    return None


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

    def __init__(self, root: str | os.PathLike[str], limit: int | None = None):
        self.root = Path(root)
        self.base = self.root / "evidence" / "sha256"
        self.limit = max_bytes() if limit is None else limit
        """The size cap for one stored file (``max_bytes()`` unless given)."""

    def path_for(self, hexdigest: str) -> Path:
        self._refuse_linked_base()
        return self.base / hexdigest[:2] / f"{hexdigest[2:]}.json"

    def _refuse_linked_base(self) -> None:
        """Refuse, in one line, an ``evidence/`` or ``evidence/sha256/`` that is a link: nothing is read or written
        through one (issue 25, item 12: ``build`` skipped the linked folder, then resolved ids through it)."""
        for folder in (self.root / "evidence", self.base):
            if folder.is_symlink():
                raise StoreError(f"{folder}: a symbolic link; the evidence folder must be a real folder")

    # -- writing ------------------------------------------------------------------
    def put_bytes(self, raw: bytes) -> str:
        """Store valid, canonical evidence bytes; return the id. Identical bytes again are a no-op.

        Bytes that do not parse as current-schema evidence, or are not in canonical form, are
        refused (``EvidenceError``/``StoreError``), so nothing but canonical evidence is ever named.
        """
        doc = parse_archived(raw, "evidence to store")
        if canonical_bytes(doc) != raw:
            raise StoreError(
                "evidence to store is not in canonical form; store canonical_bytes(doc) (measure.evidence.envelope)"
            )
        return self._write(raw)

    def put(self, evidence: Evidence) -> str:
        """Validate, canonicalise and store one evidence document; return its id."""
        return self._write(evidence.to_bytes())  # to_bytes validates and canonicalises

    def _write(self, raw: bytes) -> str:
        ident = digest(raw)
        final = self.path_for(ident[7:])
        folder = final.parent
        made: Path | None = None
        try:
            if final.exists():
                self._same_bytes(final, raw)
                return ident
            if not folder.is_dir():
                folder.mkdir(parents=True, exist_ok=True)
                made = folder
                fsync_dir(folder.parent)  # make the new shard folder's own entry durable
            # A concurrent `verify --clean` may delete our temp file before it is linked;
            # then the link finds no source and we write it again.
            for _attempt in range(5):
                if self._link_new(folder, final, raw):
                    break
            else:
                raise StoreError(f"could not store {ident} in {folder}: its temp file kept being removed")
            fsync_dir(folder)
        except OSError as exc:  # read-only archive, disk full, permissions: the user's to fix
            if made is not None:
                _remove_if_empty(made)  # a failed write leaves the archive as it found it
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
        try:
            held = read_regular(final, len(raw))
        except StoreError as exc:
            raise StoreError(f"{exc}; it holds the name of {digest(raw)}: run `probebook archive verify`") from None
        if held != raw:
            raise StoreError(
                f"{final} already exists but does not hold the bytes its name promises "
                f"(expected {digest(raw)}, actual {digest(held)}); run `probebook archive verify`"
            )

    # -- reading ------------------------------------------------------------------
    def _shards(self) -> Iterator[os.DirEntry[str]]:
        """The real shard folders (two hex digits, not links), in order; unreadable ones are skipped here."""
        if (self.root / "evidence").is_symlink() or self.base.is_symlink():
            return  # never read evidence through a link out of the archive (``strays`` names it)
        try:
            entries = sorted(os.scandir(self.base), key=lambda e: e.name)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise StoreError(f"{self.base}: cannot list ({exc.strerror})") from None
        for sub in entries:
            if len(sub.name) == 2 and _HEX.fullmatch(sub.name) and sub.is_dir(follow_symlinks=False):
                yield sub

    @staticmethod
    def _entries(folder: str) -> list[os.DirEntry[str]]:
        try:
            return sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            return []  # named by ``strays``

    def iter_paths(self) -> Iterator[Path]:
        """Every final-named evidence file that is a regular file, in id order; temp files and strays are skipped."""
        for sub in self._shards():
            for entry in self._entries(sub.path):
                if _FINAL.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
                    yield Path(entry.path)

    def tree(self) -> list[Stray | Shard]:
        """Everything under ``evidence/``, listed once, in name order: a ``Stray`` for each thing that is not a
        real shard folder (or cannot be listed), and a ``Shard`` with its entries for each real one.

        Nothing is followed or opened: a linked ``evidence/``, ``sha256/`` or shard folder is named, never listed.
        """
        found: list[Stray | Shard] = []
        evidence = self.root / "evidence"
        if not evidence.is_dir() or evidence.is_symlink():
            if evidence.is_symlink():
                found.append(Stray(evidence, "a symbolic link; the evidence folder must be a real folder"))
            return found
        for entry in self._entries(str(evidence)):
            if entry.name != "sha256":
                found.append(Stray(Path(entry.path), "not the sha256 folder; evidence/ holds only sha256/"))
        if not os.path.lexists(self.base):
            return found
        if self.base.is_symlink() or not self.base.is_dir():
            return [*found, Stray(self.base, "not a real folder (a symbolic link or a file)")]
        try:
            top = sorted(os.scandir(self.base), key=lambda e: e.name)
        except OSError as exc:
            return [*found, Stray(self.base, f"cannot list ({exc.strerror})")]
        for sub in top:
            path = Path(sub.path)
            if sub.is_symlink():
                found.append(Stray(path, "a symbolic link; shard folders must be real folders"))
            elif not sub.is_dir(follow_symlinks=False):
                hint = self._misplaced(sub.name)
                found.append(Stray(path, f"a file outside any shard folder{hint}"))
            elif not (len(sub.name) == 2 and _HEX.fullmatch(sub.name)):
                found.append(Stray(path, "a folder that is not a shard (two lower-case hex digits)"))
            else:
                try:
                    found.append(Shard(sub.name, sub.path, sorted(os.scandir(sub.path), key=lambda e: e.name)))
                except OSError as exc:
                    found.append(Stray(path, f"cannot list ({exc.strerror})"))
        return found

    def strays(self) -> list[Stray]:
        """Everything under ``evidence/`` a reader skips: links, FIFOs, devices, stray and misplaced names.

        Readers never follow or open these; ``verify`` names each one so the archive can be mended.
        """
        found: list[Stray] = []
        for item in self.tree():
            if isinstance(item, Stray):
                found.append(item)
            else:
                found += filter(None, map(self.stray_entry, item.entries))
        return found

    def stray_entry(self, entry: os.DirEntry[str]) -> Stray | None:
        """What is wrong with one entry of a shard folder, or None for a stored file or a temp file of a write."""
        if stored_entry(entry):
            return None
        path = Path(entry.path)
        if entry.name.startswith(TEMP_PREFIX) and entry.is_file(follow_symlinks=False):
            return None  # an interrupted write's leftover: `verify --clean` removes it
        if entry.is_symlink():
            return Stray(path, "a symbolic link; readers never follow links out of the archive")
        try:
            mode = entry.stat(follow_symlinks=False).st_mode
        except OSError as exc:
            return Stray(path, f"cannot stat ({exc.strerror})")
        if not stat.S_ISREG(mode):
            return Stray(path, f"{kind_of(mode)}, not a regular file")
        if not _FINAL.fullmatch(entry.name):
            return Stray(path, f"not an evidence name (<62 hex>.json){self._misplaced(entry.name)}")
        return None

    @staticmethod
    def _misplaced(name: str) -> str:
        m = _LOOSE.fullmatch(name)
        return f"; it belongs at {m[1][:2]}/{m[1][2:]}.json (`probebook archive add` puts it there)" if m else ""

    def ids(self) -> list[str]:
        return [stored_id(p.parent.name, p.name) for p in self.iter_paths()]

    def resolve(self, text: str) -> str:
        """An id or unique prefix (>= 12 hex) -> the full ``sha256:<hex>`` id."""
        prefix = normalize_id(text)
        self._refuse_linked_base()
        folder = self.base / prefix[:2]
        rest = prefix[2:]
        matches = []
        if folder.is_dir() and not folder.is_symlink():
            matches = sorted(
                e.name[:-5]
                for e in self._entries(str(folder))
                if _FINAL.fullmatch(e.name) and e.name.startswith(rest) and e.is_file(follow_symlinks=False)
            )
        if not matches:
            raise StoreError(f"no evidence {text!r} in {self.root} (`probebook archive ls` lists what is there)")
        if len(matches) > 1:
            raise StoreError(f"evidence prefix {text!r} is ambiguous: it matches {len(matches)} ids; give more digits")
        return f"sha256:{prefix[:2]}{matches[0]}"

    def read_bytes(self, ident: str) -> bytes:
        """The stored bytes for an id or unique prefix (not validated; only a regular file, within the cap)."""
        return read_regular(self.path_for(self.resolve(ident)[7:]), self.limit)

    def get(self, ident: str) -> dict[str, Any]:
        """The validated document for an id or unique prefix."""
        full = self.resolve(ident)
        return parse(self.read_bytes(full), str(self.path_for(full[7:])))

    # -- checking -----------------------------------------------------------------
    def final_files(self) -> list[tuple[str, str]]:
        """(path, the id its name claims) of every final-named entry of a real shard folder, in id order.

        Nothing is opened: plain strings rather than ``Path`` objects, since per-file overhead dominates for
        small documents. Links and other non-regular entries are listed here and skipped by ``read_hashed``;
        ``strays`` names them.
        """
        return [
            (e.path, stored_id(item.name, e.name))
            for item in self.tree()
            if isinstance(item, Shard)
            for e in item.entries
            if _FINAL.fullmatch(e.name)
        ]

    def verify(self) -> list[Mismatch]:
        """Re-hash every stored file; return each whose bytes do not match its name.

        ``os.open``/``os.read`` on plain strings (``read_hashed``): this loop ran 3x faster than ``open`` +
        ``hashlib.file_digest`` per ``Path`` (``python bench/archive.py`` prints both, beside ``sha256sum``).
        """
        bad: list[Mismatch] = []
        for path, expected in self.final_files():
            read = read_hashed(path, self.limit)
            if read is not None and read[1] != expected:
                bad.append(Mismatch(Path(path), expected, read[1]))
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
                parse(read_regular(path, self.limit), str(path))
            except (EvidenceError, StoreError) as exc:
                found.append(Invalid(path, str(exc)))
        return found

    def temp_files(self) -> list[Path]:
        """Leftovers of interrupted writes, in the real shard folders (never looked for through a link)."""
        return [Path(p) for item in self.tree() if isinstance(item, Shard) for p in item.temp_files()]

    def clean(self) -> list[Path]:
        """Remove temp files left by interrupted writes (not those a live writer holds); return them."""
        removed = []
        for path in self.temp_files():
            try:
                # non-blocking and not through a link: a FIFO or link planted under a temp name after the
                # listing must neither hang the open nor lead outside the archive (strays names both)
                fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | NOFOLLOW)
            except FileNotFoundError:
                continue  # its writer finished meanwhile
            except OSError:
                continue  # a link (ELOOP) or unreadable: not a temp file of ours
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    continue
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


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()  # fails, as it should, when another writer has stored a file in it meanwhile
    except OSError:
        pass
