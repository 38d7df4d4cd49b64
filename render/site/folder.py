"""The site folder: built aside, stamped, swapped in whole, and checked before it is published.

``site/`` is always the last good build. The site engine writes into a temporary folder beside
it (same filesystem, so a rename moves it); only after the engine succeeded and the sanitizer
cleaned every page is the new folder stamped and exchanged with ``site/`` in one
``renameat2(RENAME_EXCHANGE)`` call, so a reader or a killed build never sees a mix of two
builds. (Where the kernel lacks the call, two renames leave a moment with no ``site/``, never
a mixed one.) The stamp is a ``build`` entry in ``site/ledger.json``: ``status`` and the digest
of the build's inputs, and the digest of the rows it wrote (``ledger.rows_digest``); ``probebook publish``
accepts only a ``complete`` build whose inputs are unchanged and whose rows are the ones it wrote (issue 25,
item 9: a value edited into ``site/ledger.json`` after the build was published while the page said another). A
``filelock`` lock in the build folder serialises concurrent builds of one project.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import filelock

from measure.errors import ProbebookError
from measure.evidence.store import Store
from render.errors import BuildError
from render.numbers import ledger

LOCK_NAME = ".probebook.lock"
TEMP_INFIX = ".probebook-tmp-"
COMPLETE = "complete"
_RENDER_CODE = Path(__file__).resolve().parent.parent
# renameat2(2): AT_FDCWD resolves relative paths from the working folder; RENAME_EXCHANGE swaps two names.
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


class SiteError(ProbebookError):
    """The site folder cannot be replaced, or a built site cannot be published."""


@contextmanager
def build_lock(build_dir: Path) -> Iterator[None]:
    """Hold the project's build lock: a second build waits for the first instead of failing midway."""
    build_dir.mkdir(parents=True, exist_ok=True)
    with filelock.FileLock(str(build_dir / LOCK_NAME)):
        yield


def inputs_digest(docs: Path, archive: Path, config: Path) -> str:
    """``sha256:<hex>`` over everything a build reads: sources, evidence ids, the mkdocs config, render's code.

    Evidence files are named by their own digest (and the build verifies them), so their ids
    stand for their bytes. The published ledger is left out: it only shapes the Changes page,
    and publishing replaces it, which must not make the site it published stale.
    """
    h = hashlib.sha256()

    def add(label: str, data: bytes) -> None:
        h.update(label.encode("utf-8", "surrogateescape") + b"\0" + len(data).to_bytes(8, "big") + data)

    if docs.is_dir():
        for path in sorted(docs.rglob("*")):
            rel = "docs/" + path.relative_to(docs).as_posix()
            if path.is_symlink():  # its target, not its bytes: a link out of docs/ is refused by the build anyway
                add(rel, os.readlink(path).encode("utf-8", "surrogateescape"))
            elif path.is_file():
                add(rel, path.read_bytes())
    add("evidence", "\n".join(Store(archive).ids()).encode())
    add("config", config.read_bytes() if config.is_file() else b"")
    for path in sorted(_RENDER_CODE.rglob("*")):
        if path.is_file() and path.suffix in (".py", ".html", ".css", ".js", ".json"):
            add("render/" + path.relative_to(_RENDER_CODE).as_posix(), path.read_bytes())
    return "sha256:" + h.hexdigest()


def temp_folder(site: Path) -> Path:
    """A new empty folder beside ``site`` for the engine to write into; one line when none can be made there
    (``--out /proc/x``: a folder the kernel makes, where nothing can be created)."""
    try:
        site.parent.mkdir(parents=True, exist_ok=True)
        remove_stale(site)
        path = site.parent / f".{site.name}{TEMP_INFIX}{os.getpid()}-{os.urandom(4).hex()}"
        path.mkdir()
    except OSError as exc:
        raise BuildError(f"--out {site}: cannot make the site's folder beside it ({exc.strerror})") from None
    return path


def remove_stale(site: Path) -> list[Path]:
    """Remove temporary folders that builds killed before their swap left beside ``site`` (their owner is gone)."""
    removed: list[Path] = []
    if not site.parent.is_dir():
        return removed
    for path in sorted(site.parent.glob(f".{site.name}{TEMP_INFIX}*")):
        pid = path.name[len(f".{site.name}{TEMP_INFIX}") :].split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and _alive(int(pid)):
            continue  # a live build's folder
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stamp(folder: Path, inputs: str, engine: str) -> None:
    """Mark the built site's ledger as a complete build of ``inputs`` by ``engine`` (the last write before the swap)."""
    path = folder / "ledger.json"
    rows = ledger.read(path)
    build = {"status": COMPLETE, "inputs": inputs, "engine": engine, "rows": ledger.rows_digest(rows)}
    path.write_bytes(ledger.to_bytes(rows, build=build))


def _exchange(a: Path, b: Path) -> bool:
    """Swap two folders' names in one step; False where the kernel or libc cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        call = libc.renameat2
    except (OSError, AttributeError):
        return False
    call.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    return bool(call(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0)


def swap_in(new: Path, site: Path) -> None:
    """Make ``new`` the site: exchanged with the old one in one step, the old one then removed."""
    if not site.exists():
        os.rename(new, site)
        return
    if _exchange(new, site):
        shutil.rmtree(new)  # now the previous site
        return
    old = site.parent / f".{site.name}{TEMP_INFIX}{os.getpid()}-old"
    os.rename(site, old)
    os.rename(new, site)
    shutil.rmtree(old)


def check_publishable(site: Path, docs: Path, archive: Path, config: Path) -> dict[str, Any]:
    """The build stamp of ``site/ledger.json`` when it is a complete build of the current inputs; else refuse."""
    path = site / "ledger.json"
    stamp_ = ledger.read_build(path)
    if stamp_ is None:
        raise SiteError(f"{path}: no build stamp, so no complete build wrote it; run `probebook build` first")
    if stamp_.get("status") != COMPLETE:
        raise SiteError(f"{path}: the build that wrote it did not complete; run `probebook build` first")
    if stamp_.get("rows") != ledger.rows_digest(ledger.read(path)):
        raise SiteError(
            f"{path}: its numbers are not the ones the build wrote (the file was edited after the build); "
            "run `probebook build` again"
        )
    now = inputs_digest(docs, archive, config)
    if stamp_.get("inputs") != now:
        raise SiteError(
            f"{path}: the sources, evidence, config or render code changed since this site was built "
            "(or publish was given other --docs, --archive or --config than the build); run `probebook build` again"
        )
    return stamp_


_ROOT_ABSOLUTE = re.compile(rb'((?:href|src)=")/(?!/)')


def relative_404(site: Path) -> bool:
    """Make ``404.html``'s root-absolute links (``href="/index.html"``) relative to the site root.

    The engine writes them root-absolute when no ``site_url`` is set, which breaks the page opened from disk
    (file://) and on a site served below a path (``/probebook/``); relative links work in both wherever the
    page is served at the root of the site. The theme's ``"base": "/"`` gets the same change. True when changed.
    """
    path = site / "404.html"
    if not path.is_file():
        return False
    raw = path.read_bytes()
    fixed = _ROOT_ABSOLUTE.sub(rb"\1./", raw).replace(b'"base": "/"', b'"base": "."')
    if fixed != raw:
        path.write_bytes(fixed)
    return fixed != raw
