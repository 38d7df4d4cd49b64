"""Files a build keeps between builds besides its pages: the archive's tarball and the chart bundle (ARCHITECTURE.md
§The build).

Both are slow to make and a function of a few inputs, so a build folder keeps them (``incremental.kept_file``:
sealed, read back only when this user's builds wrote them). What they hold is the nouns' business
(``render.evidence.pages.archive_tarball``, ``render.site.assets.vega_embed_bundle``); keeping them is the build's,
so the evidence and site packages need nothing of it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from render.assemble import incremental
from render.evidence.pages import archive_tarball
from render.site import assets


def cached_tarball(
    cache: Path,
    raw: dict[str, bytes],
    published: bytes | None,
    epoch: int,
    read: bool = True,
    later: incremental.MakeLater | None = None,
) -> bytes:
    """``archive_tarball``, kept in ``cache`` (a build folder's) under a key of its inputs: the evidence ids (each
    names its bytes), the published ledger's digest and ``epoch``; compressing the archive is a second at 10,000
    documents, every build. Only the newest is kept. ``read=False`` (a full build) makes it afresh and keeps it;
    ``later``: made later (``render.assemble.deferred``) unless kept."""
    h = hashlib.sha256(f"epoch {epoch}\0".encode())
    h.update(hashlib.sha256(published).digest() if published is not None else b"none")
    h.update("\n".join(sorted(raw)).encode())
    path = cache / f"archive-{h.hexdigest()[:32]}.tar.gz"
    return incremental.kept_file(path, lambda: archive_tarball(raw, published, epoch), read, "archive-*.tar.gz", later)


def cached_bundle(cache: Path | None, read: bool = True, later: incremental.MakeLater | None = None) -> bytes:
    """``vega_embed_bundle()``, kept in ``cache`` (a build folder's) between processes: an author's rebuild
    should not spend a second and a half bundling the same JavaScript again (ARCHITECTURE.md §The build).
    ``read=False`` (a full build) makes it afresh and keeps that for the next build; ``later``: made later
    (``render.assemble.deferred``) unless kept."""
    if cache is None:
        return assets.vega_embed_bundle()
    return incremental.kept_file(cache / assets.bundle_name(), assets.vega_embed_bundle, read, later=later)


def asset_files(
    cache: Path | None = None, read: bool = True, later: incremental.MakeLater | None = None
) -> dict[str, bytes]:
    """``render.site.assets.site_files`` with the bundle kept in ``cache`` (None: made afresh and not kept);
    ``read=False``: made afresh and kept; ``later``: made later unless kept."""
    return assets.site_files({"vega-embed.js": lambda: cached_bundle(cache, read, later)})
