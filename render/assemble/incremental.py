"""Incremental builds, render's half: a cache of rendered pages and a tree written file by file (ARCHITECTURE.md
§The build).

A hand-written page's output (its Markdown, the charts and downloads its functions made, its ledger
rows and claims, the evidence it cites) is a function of its inputs: its source bytes, the evidence
ids it resolves (evidence is named by its own digest, so an id stands for its bytes), the whole id set
(aliases resolve by prefix, and ``padding()`` finds its fit by prefix: a new document can change what
a prefix names), what render adds around it (the versions of its record, for the header and footer)
and render's own code. The cache (``<build>/cache/pages``) keeps each page's output under the SHA-256
of those inputs; a page whose key is there is not rendered again. Entries no build used are removed.
Entries are pickles (the Quantities of a record's headlines come back as the same objects, tuples and
all), each sealed with an HMAC whose key is outside the project (``render.assemble.sealed``): a build folder is
part of the tree, which may come from anywhere (a restored CI cache, an unpacked checkout), so a file is
unpickled only when this user's builds wrote it; anything else is ignored and made again (issue 25, item 5).
The files ``kept_file`` keeps (the vega-embed bundle every page loads, the archive's tarball) are sealed alike.

``write_tree`` rewrites only the tree files whose bytes changed and removes those no longer made, so
an unchanged file keeps its modification time and the site engine can skip it (``render.assemble.dirty``). The
digests of the files written are kept in ``<build>/tree.json`` (``TREE_MANIFEST``), so unchanged
files are known without reading them back. A generated evidence page is keyed the same way (its id,
the pages that cite it, render's code; ``EVIDENCE_PAGES``): while its key holds it is not made again.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

from render.assemble import sealed

CACHE_FOLDER = "cache/pages"
DERIVED = "cache/derived.pickle"
"""Derivations (fits, charts, tables) by key, from the builds made with this code (``DerivedCache``)."""
TREE_MANIFEST = "tree.json"
EVIDENCE_PAGES = "evidence-pages.json"
"""Each evidence page's key and tree files as the tree holds them: an unchanged one is not made again."""
_RENDER_CODE = Path(__file__).resolve().parent.parent
CACHE_FORMAT = 2
"""Bump when a cache entry's layout changes (old entries are then never read)."""


LIBRARIES = ("altair", "vl-convert-python", "scipy", "numpy", "pandas", "jinja2")
"""Packages whose version can change what render makes from the same inputs (a chart's SVG, a fit's digits)."""


@lru_cache(maxsize=1)
def code_digest() -> str:
    """SHA-256 over render's own code (every ``.py`` file) and the versions of ``LIBRARIES``: a change to any
    derivation or layout, or an upgraded chart renderer, re-renders all."""
    h = hashlib.sha256(f"format {CACHE_FORMAT}\0".encode())
    for name in LIBRARIES:
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            version = "absent"
        h.update(f"{name}=={version}\0".encode())
    for path in sorted(_RENDER_CODE.rglob("*.py")):
        data = path.read_bytes()
        h.update(path.relative_to(_RENDER_CODE).as_posix().encode() + b"\0" + len(data).to_bytes(8, "big") + data)
    return h.hexdigest()


def page_key(parts: list[tuple[str, bytes]]) -> str:
    """SHA-256 of named input parts (each length-prefixed, so no two lists give one byte string)."""
    h = hashlib.sha256(code_digest().encode())
    for name, data in parts:
        h.update(name.encode() + b"\0" + len(data).to_bytes(8, "big") + data)
    return h.hexdigest()


@dataclass(frozen=True)
class PageOutput:
    """What rendering one hand-written page produced."""

    files: dict[str, bytes]
    """Tree path -> bytes: the page itself and the files its functions made."""
    ledger: list[dict[str, Any]]
    """Its ledger rows, claims last, in the order the build adds them."""
    cited: list[str]
    """Evidence ids it cites, sorted."""
    headlines: list[tuple[str, Any]] | None = None
    """A record's headline results, (label, Quantity) each; None for other pages."""
    machine: str | None = None
    """A record's machine label; None for other pages."""
    answer: str | None = None
    """A record's Answer, its verdicts as Markdown for its own page (``render.pages.answers``); None without one."""


class PageCache:
    """Rendered pages by input key, one file each; what a build did not use is pruned at its end."""

    def __init__(self, build_dir: Path, read: bool = True):
        self.folder = build_dir / CACHE_FOLDER
        self.read = read
        """False for a full build: every page is rendered afresh (and its output still cached)."""
        self.used: set[str] = set()
        self.hits = 0
        self.misses = 0
        if read:
            self._drop_unsealed()

    def _drop_unsealed(self) -> None:
        """Remove entries this user's builds did not seal, with one warning: here, in the build's process, since
        pages are read in forked workers, where each would warn on its own."""
        warn = sealed.Warned("a page-cache entry")
        try:
            paths = sorted(self.folder.glob("*.pickle"))
        except OSError:  # no cache folder yet
            return
        for path in paths:
            if _read_sealed(path, warn) is None:
                path.unlink(missing_ok=True)

    def get(self, key: str) -> PageOutput | None:
        self.used.add(key)
        if not self.read:
            self.misses += 1
            return None
        path = self.folder / f"{key}.pickle"
        payload = _read_sealed(path)
        if payload is None:
            self.misses += 1
            return None  # absent, or not written by this user's builds: render again
        try:
            out = pickle.loads(payload)
        except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError):
            self.misses += 1
            return None  # written by other code of ours (a digest collision of old layouts): render again
        if not isinstance(out, PageOutput):
            self.misses += 1
            return None
        self.hits += 1
        return out

    def put(self, key: str, out: PageOutput) -> None:
        write_atomic(self.folder / f"{key}.pickle", sealed.seal(pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)))

    def prune(self) -> None:
        """Remove entries this build did not use (a page's older outputs), so the cache does not grow."""
        if not self.folder.is_dir():
            return
        for path in self.folder.iterdir():
            if path.suffix == ".pickle" and path.stem not in self.used:
                path.unlink(missing_ok=True)


class DerivedCache:
    """The derivations of earlier builds (``render.functions.derivations.Library``), kept in one file under the
    code digest.

    A derivation's key names everything it is computed from except render's code and libraries, which the
    digest stands for: a file written by other code is not read. Entries whose evidence left the archive
    are dropped when the file is written again; an entry that does not pickle is not kept.
    """

    def __init__(self, build_dir: Path, read: bool = True):
        self.path = build_dir / DERIVED
        self.read = read
        """False for a full build: every derivation is computed afresh (and still kept for the next build)."""

    def load(self) -> dict[tuple, Any]:
        if not self.read:
            return {}
        payload = _read_sealed(self.path, sealed.Warned("the derivation cache"))
        if payload is None:
            return {}
        try:
            stored = pickle.loads(payload)
        except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
            return {}
        if not isinstance(stored, dict) or stored.get("code") != code_digest():
            return {}
        entries = stored.get("entries")
        return entries if isinstance(entries, dict) else {}

    def save(self, entries: dict[tuple, Any], ids: set[str] | frozenset[str], changed: bool) -> None:
        """Write ``entries`` whose evidence is all in ``ids``, unless nothing ``changed`` and the file holds them."""
        kept = {k: v for k, v in entries.items() if all(i in ids for i in _ids_in(k))}
        if not changed and len(kept) == len(entries) and self.read and self.path.exists():
            return
        try:
            data = _pickled(kept)
        except Exception:
            data = _pickled({k: v for k, v in kept.items() if _pickles(v)})
        write_atomic(self.path, sealed.seal(data))


def _read_sealed(path: Path, warn: Callable[[Path], None] | None = None) -> bytes | None:
    """The payload of the sealed file at ``path``; None when it is absent or not sealed by us (then ``warn``)."""
    try:
        blob = read_own_file(path)
    except FileNotFoundError:
        return None
    except OSError:
        blob = b""  # a link, a FIFO, a folder: planted, like a file with no seal
    payload = sealed.unseal(blob)
    if payload is None and warn is not None:
        warn(path)
    return payload


def read_own_file(path: Path) -> bytes:
    """The bytes of the regular file at ``path``, not following a link at its last component (``O_NOFOLLOW``)
    and never waiting on a FIFO (``O_NONBLOCK``): a build folder's own files are plain files it wrote."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise OSError(f"{path}: not a regular file")
        return f.read()


def _pickled(entries: dict[tuple, Any]) -> bytes:
    return pickle.dumps({"code": code_digest(), "entries": entries}, protocol=pickle.HIGHEST_PROTOCOL)


def _pickles(value: Any) -> bool:
    try:
        pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        return False
    return True


def write_atomic(path: Path, data: bytes, temp: Path | None = None) -> None:
    """``data`` at ``path`` whole or not at all: a temp file beside it (or in the folder ``temp``), then a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = (temp or path.parent) / f".{path.name}.{os.getpid()}.tmp"
    tmp.write_bytes(data)
    os.replace(tmp, path)


MakeLater = Callable[[Callable[[], bytes]], bytes]
"""What takes a file's maker and gives a placeholder for its bytes, made later
(``render.assemble.deferred.DeferredWork.file``)."""


def kept_file(
    path: Path,
    make: Callable[[], bytes],
    read: bool = True,
    replaces: str | None = None,
    later: MakeLater | None = None,
) -> bytes:
    """The bytes kept at ``path`` by an earlier build, else ``make()``, kept there for the next build.

    For what a build makes that is a function of the inputs ``path``'s name stands for (the chart bundle,
    the archive's tarball). ``read=False`` (a full build) makes it afresh and keeps that; ``replaces``, a
    glob of the same folder, names older versions removed when a new one is kept. ``later`` (``DeferredWork.file``):
    what stands in for bytes not kept, made (and kept) later.
    """
    if read:
        payload = _read_sealed(path, sealed.Warned("a kept file"))
        if payload is not None:
            return payload
    if later is not None:  # made while the site engine runs: a placeholder now (render.assemble.deferred)
        return later(lambda: kept_file(path, make, False, replaces))
    data = make()
    if replaces is not None:
        for old in path.parent.glob(replaces):
            old.unlink(missing_ok=True)
    write_atomic(path, sealed.seal(data))
    return data


def _ids_in(key: Any) -> list[str]:
    """The evidence ids named anywhere in a derivation's key."""
    if isinstance(key, str):
        return [key] if key.startswith("sha256:") else []
    if isinstance(key, tuple):
        return [i for part in key for i in _ids_in(part)]
    return []


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_tree(
    files: dict[str, bytes], out: Path, manifest: Path, marker: str, kept: set[str] | frozenset[str] = frozenset()
) -> list[str]:
    """Make ``out`` hold exactly ``files`` and ``kept``, rewriting only files whose bytes changed; return those.

    Unchanged files keep their bytes and modification time. ``manifest`` holds the digest of every file
    the last call wrote; a file it does not list, or whose size differs, is written again. ``kept`` names
    files the caller knows to be unchanged (it did not make them again); each must be in the manifest.
    """
    try:
        known: dict[str, str] = json.loads(manifest.read_bytes()) if (out / marker).exists() else {}
    except (OSError, ValueError):
        known = {}
    if not known and out.exists():
        shutil.rmtree(out)  # no manifest: nothing is known about what is there
    out.mkdir(parents=True, exist_ok=True)
    if not (out / marker).exists():
        (out / marker).write_text("written by probebook render; only files whose bytes changed are rewritten\n")
    written: list[str] = []
    digests: dict[str, str] = {}
    for rel in kept:
        if rel not in known or not (out / rel).is_file():
            raise ValueError(f"{rel}: kept, but the tree does not hold it")  # read_units checks this first
        digests[rel] = known[rel]
    for rel in sorted(files):
        data = files[rel]
        digests[rel] = _digest(data)
        path = out / rel
        if known.get(rel) == digests[rel] and _size(path) == len(data):
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink() or path.is_dir():
            raise OSError(f"{path}: not a regular file in render's own tree")
        path.write_bytes(data)
        written.append(rel)
    for rel in sorted(set(known) - set(files) - set(kept)):
        (out / rel).unlink(missing_ok=True)
    _remove_empty_folders(out)
    write_atomic(manifest, json.dumps(digests, sort_keys=True).encode("utf-8"))
    return written


def replace_in_tree(out: Path, manifest: Path, files: dict[str, bytes], temp: Path) -> None:
    """Replace ``files`` (tree path -> bytes) in a tree ``write_tree`` wrote, each whole (written in the folder
    ``temp``, on the same file system but outside the tree, then renamed), and their digests in its ``manifest``."""
    digests = json.loads(manifest.read_bytes())
    for rel, data in sorted(files.items()):
        write_atomic(out / rel, data, temp)
        digests[rel] = _digest(data)
    write_atomic(manifest, json.dumps(digests, sort_keys=True).encode("utf-8"))


def read_units(build_dir: Path, tree: Path, marker: str) -> dict[str, list[Any]]:
    """The last build's evidence pages (id -> [key, tree paths]) that the tree still holds as it wrote them."""
    try:
        units = json.loads((build_dir / EVIDENCE_PAGES).read_bytes())
        known = json.loads((build_dir / TREE_MANIFEST).read_bytes())
    except (OSError, ValueError):
        return {}
    if not (tree / marker).exists() or not isinstance(units, dict):
        return {}
    return {
        ident: unit
        for ident, unit in units.items()
        if isinstance(unit, list) and len(unit) == 2 and all(rel in known and (tree / rel).is_file() for rel in unit[1])
    }


def save_units(build_dir: Path, units: dict[str, list[Any]]) -> None:
    write_atomic(build_dir / EVIDENCE_PAGES, json.dumps(units, sort_keys=True).encode("utf-8"))


def forget_units(build_dir: Path) -> None:
    (build_dir / EVIDENCE_PAGES).unlink(missing_ok=True)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1


def _remove_empty_folders(root: Path) -> None:
    for dirpath, _dirs, _files in os.walk(root, topdown=False):
        if Path(dirpath) != root:
            try:
                os.rmdir(dirpath)
            except OSError:
                pass  # not empty
