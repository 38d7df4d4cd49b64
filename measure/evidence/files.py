"""Writing one file of the archive safely: never through a link, all or nothing, never replacing a file in place;
and the size cap and file kinds its readers share (``measure.evidence.reading`` reads; ``measure.evidence.store``
keeps the archive's layout and its write-once rule on top of both).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from measure.errors import StoreError

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


def fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
