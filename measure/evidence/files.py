"""Reading and writing one file of the archive safely: never through a link, never blocking on a FIFO, never
past a size cap, and a write never replacing a file in place (``measure.evidence.store`` keeps the archive's
layout and its write-once rule on top of these).
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from measure.errors import ProbebookError, StoreError

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # POSIX; Windows has no symbolic-link opens to guard against
TEMP_PREFIX = ".tmp-"
"""Temp files start with this; every reader ignores them and ``verify --clean`` removes them."""
# The largest evidence file any reader opens. The biggest document in this repository's archive is
# about 30 KB; a cap keeps a hostile or broken file (a sparse 1 TB file, a link to /dev/zero) from
# exhausting memory. PROBEBOOK_MAX_EVIDENCE_BYTES raises it for a campaign that needs more.
DEFAULT_MAX_BYTES = 64 << 20
MAX_BYTES_ENV = "PROBEBOOK_MAX_EVIDENCE_BYTES"


def max_bytes() -> int:
    """The size cap for one evidence or import file: ``$PROBEBOOK_MAX_EVIDENCE_BYTES``, else 64 MiB."""
    given = os.environ.get(MAX_BYTES_ENV)
    if given is None:
        return DEFAULT_MAX_BYTES
    if not given.isascii() or not given.isdigit() or int(given) < 1:
        raise StoreError(f"{MAX_BYTES_ENV}={given[:40]!r} must be a whole number of bytes >= 1")
    return int(given)


def kind_of(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "not a regular file"


def read_regular(path: str | os.PathLike[str], limit: int | None = None) -> bytes:
    """The bytes of a regular file, never following a symbolic link and never past ``limit`` bytes.

    A FIFO would block a reader forever and a link to ``/dev/zero`` never ends, so the file is
    opened without following links and without blocking, and checked to be a regular file of at
    most ``limit`` bytes (default ``max_bytes()``) before one byte is read. Every refusal is one
    ``StoreError`` line naming the file.
    """
    limit = max_bytes() if limit is None else limit
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if os.path.islink(path):
            raise StoreError(f"{path}: cannot read (a symbolic link; only regular files are read)") from None
        raise StoreError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise StoreError(f"{path}: cannot read ({kind_of(st.st_mode)}, not a regular file)")
        if st.st_size > limit:
            raise StoreError(
                f"{path}: {st.st_size} bytes, over the {limit}-byte cap for one file (set {MAX_BYTES_ENV} to raise it)"
            )
        over = StoreError(f"{path}: over the {limit}-byte cap for one file (set {MAX_BYTES_ENV} to raise it)")
        return _read_capped(fd, limit, over)  # over: it grew while we read
    except OSError as exc:
        raise StoreError(f"{path}: cannot read ({exc.strerror})") from None
    finally:
        os.close(fd)


def given_file(path: str | os.PathLike[str], what: str = "") -> None:
    """Refuse, in one line, a path given on a command line that is there but is not a regular file (a FIFO would
    block its reader forever, a device never end); ``what`` names the option (``--corpus``). Unlike
    ``read_regular`` a link is followed: the user named it. A path that is not there is left to its reader."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if not stat.S_ISREG(mode):
        raise ProbebookError(
            f"{what}{' ' if what else ''}{path}: {kind_of(mode)}, not a regular file; nothing was read"
        )


def read_given(path: str | os.PathLike[str], limit: int, what: str = "") -> bytes:
    """The bytes of a regular file a command line names (a link is followed), at most ``limit`` bytes; a FIFO, a
    device, a folder or a larger file is refused in one line before a byte is read, and opening never blocks."""
    named = f"{what}{' ' if what else ''}{path}"
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise ProbebookError(f"{named}: cannot read ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ProbebookError(f"{named}: {kind_of(st.st_mode)}, not a regular file; nothing was read")
        over = ProbebookError(f"{named}: over {limit} bytes, more than such a file holds; nothing was read")
        return _read_capped(fd, limit, over)
    except OSError as exc:
        raise ProbebookError(f"{named}: cannot read ({exc.strerror})") from None
    finally:
        os.close(fd)


def _read_capped(fd: int, limit: int, over: ProbebookError) -> bytes:
    """Every byte of the open file ``fd``, read in 1 MiB chunks; ``over`` raised once more than ``limit`` came (a
    file can grow while it is read, whatever its size said)."""
    chunks, size = [], 0
    while chunk := os.read(fd, 1 << 20):
        size += len(chunk)
        if size > limit:
            raise over
        chunks.append(chunk)
    return b"".join(chunks)


def _refuse_link(path: Path) -> None:
    """Refuse, in one line, a ``path`` (or its folder) that is anything but a regular file (a folder): a symbolic
    link there would take the write to wherever it points, outside the archive."""
    for where, want in ((path.parent, stat.S_ISDIR), (path, stat.S_ISREG)):
        try:
            mode = os.lstat(where).st_mode
        except FileNotFoundError:
            continue
        if not want(mode):
            raise StoreError(f"{where}: {kind_of(mode)}; nothing is written through it (only regular files are)")


def write_regular(path: Path, data: bytes) -> None:
    """Replace the regular file ``path`` with ``data`` whole, writing nothing through a link (issue 25, item 6).

    A fresh temp file beside it (``O_EXCL | O_NOFOLLOW``: a planted name or link there is never opened),
    written, fsynced, renamed over ``path`` (a rename replaces a name, never follows it), the folder fsynced.
    A failure (a full disk, a read-only folder) removes the temp file and is one line."""
    path = Path(path)
    _refuse_link(path)
    tmp = path.parent / f".{path.name}{TEMP_PREFIX}{os.getpid()}-{os.urandom(6).hex()}"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o644)
    except OSError as exc:
        raise StoreError(f"cannot write {path}: {exc.strerror}") from None
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise StoreError(f"cannot write {path}: {exc.strerror}") from None


def append_regular(path: Path, data: bytes) -> None:
    """Append ``data`` to the regular file ``path`` (made if absent), never through a link, all or nothing.

    ``O_NOFOLLOW`` with ``O_CREAT``: a link, even a dangling one, is refused rather than followed or made;
    a failed write is cut back to the length the file had, so no partial line is left."""
    path = Path(path)
    _refuse_link(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | NOFOLLOW | os.O_NONBLOCK, 0o644)
    except OSError as exc:
        raise StoreError(f"cannot write {path}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise StoreError(f"{path}: {kind_of(st.st_mode)}; nothing is written through it (only regular files are)")
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        except OSError as exc:
            os.ftruncate(fd, st.st_size)
            raise StoreError(f"cannot write {path}: {exc.strerror}") from None
    finally:
        os.close(fd)


# never follow a link, never block on a FIFO; non-regular files are named by ``Store.strays``
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


def read_hashed(path: str, limit: int) -> tuple[bytes | None, str] | None:
    """(bytes, ``sha256:<hex>``) of a stored regular file within ``limit`` bytes, or (None, why it was not hashed).

    None for a link or another non-regular file: not evidence, and named by ``Store.strays``.
    """
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError:
        return None  # a link: named by ``strays``
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        if st.st_size > limit:
            return None, f"not hashed ({st.st_size} bytes, over the {limit}-byte cap)"
        # One read call: asking one byte more than fstat said and getting fewer is the end of a regular file.
        raw = os.read(fd, st.st_size + 1)
        while len(raw) < st.st_size and (more := os.read(fd, 1 << 20)):  # a short read: read on to the end
            raw += more
        if len(raw) > limit:
            return None, f"not hashed (over the {limit}-byte cap)"
        return raw, "sha256:" + hashlib.sha256(raw).hexdigest()
    except OSError as exc:
        return None, f"unreadable ({exc.strerror})"
    finally:
        os.close(fd)


def fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
