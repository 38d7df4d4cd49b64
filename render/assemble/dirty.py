"""Incremental builds, the site engine's half: rebuild only the pages whose Markdown changed
(ARCHITECTURE.md §The build).

``render.assemble.incremental`` rewrites only the tree files whose bytes changed, so an unchanged page keeps its
modification time. When the last build's state (``<build>/site.json``) says the current site was built
from the same config (and so the same nav), the same file list, the same ``SOURCE_DATE_EPOCH``, the
same engine and the same sanitizer setting, the new site starts as a copy of the current one and
mkdocs runs with ``--dirty``: it renders only pages whose source is newer than their HTML (mkdocs'
own rule), the sanitizer cleans only the files that changed, and the search index, which a dirty
build writes for the rebuilt pages alone, is merged back into the full one in page order. Anything
else (a new or removed file, a title or nav change, a new engine version, no state) is a full build.
The result is byte-identical to a full build (``tests/test_incremental.py``).

Why a page's HTML depends only on its own Markdown while the nav is unchanged: every nav entry has
its title written in the config, evidence pages are outside the nav (no neighbours), and links are
rewritten by path. The checks a dirty build cannot make (anchors in pages it did not render) were
made by the full build those pages came from.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from render.numbers import ledger
from render.site import sanitize

STATE = "site.json"
SEARCH_INDEX = "search/search_index.json"
"""mkdocs-material's search index, in the site."""


@dataclass(frozen=True)
class SiteState:
    """What a site was built from, beyond the tree's bytes: a dirty build needs all of it unchanged."""

    engine: str
    """The engine and its packages' versions."""
    config: str
    """SHA-256 of ``build/mkdocs.yml`` (the base config plus the generated nav)."""
    files: str
    """SHA-256 of the tree's file list."""
    epoch: int
    """``SOURCE_DATE_EPOCH`` the engine ran with."""
    clean: bool
    """Whether the sanitizer ran."""
    inputs: str
    """The stamp's inputs digest of the site this state describes (so a site built elsewhere is not trusted)."""


def _versions(engine: str) -> str:
    names = ("mkdocs", "mkdocs-material", "pymdown-extensions", "Markdown") if engine == "mkdocs" else (engine,)
    found = []
    for name in names:
        try:
            found.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name}==?")
    return f"{engine}: " + ", ".join(found)


def state_for(engine: str, config: Path, tree_files: list[str], epoch: int, clean: bool, inputs: str) -> SiteState:
    """The state a build with these inputs leaves (and a dirty build must find)."""
    return SiteState(
        engine=_versions(engine),
        config=hashlib.sha256(config.read_bytes()).hexdigest(),
        files=hashlib.sha256("\n".join(sorted(tree_files)).encode()).hexdigest(),
        epoch=epoch,
        clean=clean,
        inputs=inputs,
    )


def save(build_dir: Path, state: SiteState) -> None:
    tmp = build_dir / f".{STATE}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(asdict(state), sort_keys=True), encoding="utf-8")
    os.replace(tmp, build_dir / STATE)


def take(build_dir: Path) -> SiteState | None:
    """The last build's state, removed from the build folder: a build that stops anywhere leaves none behind.

    A build that writes the tree but not the site (``--no-site``, or one that fails) would otherwise leave
    tree files newer than the site with a state that still vouches for it.
    """
    path = build_dir / STATE
    try:
        saved = SiteState(**json.loads(path.read_bytes()))
    except (OSError, ValueError, TypeError):
        saved = None
    path.unlink(missing_ok=True)
    return saved


def can_reuse(saved: SiteState | None, site: Path, now: SiteState) -> bool:
    """Whether ``site`` is the build ``saved`` describes, and ``saved`` equals ``now`` but for its inputs digest."""
    if saved is None:
        return False
    try:
        stamp = ledger.read_build(site / "ledger.json")
    except Exception:
        return False
    if stamp is None or stamp.get("inputs") != saved.inputs or stamp.get("status") != "complete":
        return False
    return asdict(saved) | {"inputs": ""} == asdict(now) | {"inputs": ""}


# What mkdocs writes in every build, dirty or not (its theme's static templates, sitemap and search plugin).
ALWAYS_WRITTEN = ("404.html", "sitemap.xml", "sitemap.xml.gz", SEARCH_INDEX, "search/search_index.js")
# search_index.js: the offline plugin's copy of the index, written at every build
# (render.site.sanitize.inline_search_index)


def site_path(tree_rel: str) -> str:
    """Where a tree file lands in the site (``use_directory_urls: false``: ``a/b.md`` -> ``a/b.html``)."""
    return tree_rel[:-3] + ".html" if tree_rel.endswith(".md") else tree_rel


def copy_site(site: Path, out: Path, rewritten: list[str]) -> dict[str, tuple[int, int]]:
    """Link every file of the current site into the empty ``out``; return each linked file's (size, mtime).

    Hard links, not copies: a site of thousands of files is linked in a fraction of the time a copy
    takes. A link shares its bytes with the live site, so no file the engine or render will write may
    be a link: the files mkdocs always writes, the site files of ``rewritten`` tree files (the pages
    it rebuilds), ``ledger.json`` (the stamp) and the marker are left out, to be written afresh.
    """
    skip = {*ALWAYS_WRITTEN, *(site_path(rel) for rel in rewritten), "ledger.json", ".probebook-site"}
    seen: dict[str, tuple[int, int]] = {}
    for dirpath, _dirs, files in os.walk(site):
        rel_dir = Path(dirpath).relative_to(site)
        (out / rel_dir).mkdir(parents=True, exist_ok=True)
        for name in files:
            rel = (rel_dir / name).as_posix()
            src, dst = Path(dirpath) / name, out / rel_dir / name
            if rel in skip:
                continue
            os.link(src, dst, follow_symlinks=False)
            st = dst.stat()
            seen[rel] = (st.st_size, st.st_mtime_ns)
    return seen


def changed_since(out: Path, seen: dict[str, tuple[int, int]]) -> list[Path] | None:
    """Files under ``out`` the engine wrote after ``copy_site``; None if it wrote into a linked file.

    A linked file written in place would change the live site too: never expected (``copy_site`` leaves
    out every file mkdocs writes), but checked, and the caller then builds the whole site afresh.
    """
    changed = []
    for dirpath, _dirs, files in os.walk(out):
        for name in files:
            path = Path(dirpath) / name
            st = path.stat()
            rel = path.relative_to(out).as_posix()
            if seen.get(rel) != (st.st_size, st.st_mtime_ns):
                if rel in seen and st.st_nlink > 1:
                    return None
                changed.append(path)
    return sorted(changed)


def _page_of(location: str) -> str:
    return location.split("#", 1)[0]


def merge_search_index(previous: Path, partial: Path, rebuilt: set[str] | frozenset[str] = frozenset()) -> bool:
    """Write into ``partial`` (the dirty build's index: rebuilt pages only) the full index; False if it cannot.

    The previous site's index already passed the sanitizer; the rebuilt pages' entries pass it now. Each
    rebuilt page's entries take the place its old ones held, so the order is the full build's page order.
    ``rebuilt``: the site paths of the pages the engine rendered; one of them with no entries now (a version
    superseded since, which ``search: exclude`` leaves out) loses its old ones, as a full build would have none.
    """
    try:
        old = json.loads(previous.read_bytes())
        new = json.loads(partial.read_bytes())
    except (OSError, ValueError):
        return False
    fresh: dict[str, list[dict[str, Any]]] = {}
    for entry in filter(sanitize.searchable, new.get("docs", [])):
        fresh.setdefault(_page_of(entry["location"]), []).append(entry)
    for entries in fresh.values():
        for entry in entries:
            sanitize.clean_entry(entry)
    merged: list[dict[str, Any]] = []
    placed: set[str] = set()
    for entry in old.get("docs", []):
        page = _page_of(entry["location"])
        if page not in fresh:
            if page not in rebuilt:
                merged.append(entry)
        elif page not in placed:
            merged += fresh[page]
            placed.add(page)
    if placed != set(fresh):
        return False  # a rebuilt page that had no entries before: its place is unknown
    sanitize.write_search_index(partial, {**new, "docs": merged})
    return True
