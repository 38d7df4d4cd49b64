"""The build's last stage (``render.assemble.stages``): the site engine on the written tree, the sanitizer, the
stamp, and the swap of the finished folder into ``--out`` (``render.site.folder``); a dirty build when
``render.assemble.dirty`` finds one exact, the files made later while the engine runs (``render.assemble.deferred``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from render.assemble import dirty, incremental
from render.assemble.deferred import write_made
from render.assemble.types import BuildPaths, BuildRun, Tree
from render.errors import BuildError
from render.site import engines, sanitize
from render.site import folder as sitedir
from render.site.config import writes_pages_once

SITE_MARKER = ".probebook-site"


def owned_or_empty(folder: Path, marker: str, what: str) -> None:
    if folder.exists() and any(folder.iterdir()) and not (folder / marker).exists():
        raise BuildError(f"{folder} holds files render did not write; give {what} an empty or new folder")


def make_site(paths: BuildPaths, run: BuildRun, tree: Tree, epoch: int) -> bool:
    """Engine, sanitizer and stamp in a folder beside ``paths.site``, then swapped in whole (``render.site.folder``).

    Unless ``run.full``, the engine rebuilds only the pages of the tree files this build rewrote when
    ``render.assemble.dirty`` finds that exact against ``run.saved``, the last build's state; returns whether it
    did. ``run.clean=False`` skips the sanitizer. Zensical (``run.engine``) has no dirty builds: it rebuilds what
    changed from its own cache (``render.site.engines``), cleared by ``run.full``. Files of ``tree`` made later
    (``run.later``, ``render.assemble.deferred``) are made while the engine runs, on the whole site.
    """
    owned_or_empty(paths.site, SITE_MARKER, "--out")
    chosen = engines.get(run.engine)
    config = paths.build / "mkdocs.yml"
    tree_files = json.loads((paths.build / incremental.TREE_MANIFEST).read_bytes())
    now = dirty.state_for(chosen.name, config, list(tree_files), epoch, run.clean, run.inputs)
    later, rewritten, clean, started = run.later, tree.rewritten, run.clean, run.started
    sweep = None
    reuse = (
        later is None
        and rewritten is not None
        and chosen.dirty_builds
        and clean
        and not run.full
        and paths.site.is_dir()
        and dirty.can_reuse(run.saved, paths.site, now)
    )
    out = sitedir.temp_folder(paths.site)
    try:
        if reuse:
            seen = dirty.copy_site(paths.site, out, rewritten or [])
            _run_engine(chosen, config, out, epoch, True, started)
            started = None  # used: a second run starts its own
            changed = dirty.changed_since(out, seen)
            index = dirty.SEARCH_INDEX
            pages = {dirty.site_path(rel) for rel in rewritten or [] if rel.endswith(".md")}
            reuse = changed is not None and dirty.merge_search_index(paths.site / index, out / index, pages)
            if reuse:
                sanitize.clean_site(out, only=changed)
            else:  # a page's search entries cannot be placed, or a linked file was written: build it all
                shutil.rmtree(out)
                out.mkdir()
        if not reuse:
            if later is not None:  # while the engine runs: draw, make, clean what it wrote
                sweep = sanitize.BackgroundSanitizer(out, chosen.theme) if clean and writes_pages_once(config) else None
                later.start(tree.files, paths.tree, paths.build / incremental.TREE_MANIFEST, sweep)
            _run_engine(chosen, config, out, epoch, not run.full, started)
            if later is not None:
                later.finish()
                write_made(later.replaced, out)
            if clean:
                sanitize.clean_site(out, theme=chosen.theme, swept=sweep)
        sitedir.relative_404(out)
        (out / SITE_MARKER).write_text("built by probebook; the whole folder is replaced at every build\n")
        sitedir.stamp(out, run.inputs, chosen.name)
        sitedir.swap_in(out, paths.site)
        dirty.save(paths.build, now)
    finally:
        if later is not None:
            later.cancel()  # the engine failed: stop drawing
        if out.exists():
            shutil.rmtree(out, ignore_errors=True)
    return reuse


def _run_engine(
    chosen: engines.Engine,
    config: Path,
    out: Path,
    epoch: int,
    incremental: bool,
    started: engines.RunningEngine | None,
) -> None:
    try:
        chosen.run(config, out, epoch, incremental, started)
    except engines.EngineError as exc:
        raise BuildError(str(exc)) from None
