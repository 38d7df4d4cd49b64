"""The plain data the build's stages pass along (``render.assemble.stages``): where it reads and writes
(``BuildPaths``), how this build runs and its speed-ups' state (``BuildRun``), the tree, the result."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from render.assemble import dirty, incremental
from render.assemble.deferred import ENGINES as LATER_ENGINES
from render.assemble.deferred import DeferredWork
from render.errors import BuildError
from render.evidence.pages import Prepared
from render.numbers.ledger import Diff  # by name: the dataclasses' ``ledger`` fields shadow the module there
from render.numbers.quantity import Quantity
from render.pages import provenance
from render.site import engines
from render.site import folder as sitedir

ASSETS_CACHE = "cache/assets"
"""Where a build folder keeps the assets made at build time (``render.assemble.kept.cached_bundle``)."""


@dataclass(frozen=True)
class BuildPaths:
    """Where a build reads and writes."""

    docs: Path
    """Hand-written sources (index.md, playbook/, records/)."""
    archive: Path
    """The evidence archive (holding evidence/ and published/)."""
    build: Path
    """Render's output folder: the Markdown tree goes to ``build/docs``, the config to ``build/mkdocs.yml``."""
    site: Path
    """Where mkdocs writes the site."""
    config: Path
    """The base ``mkdocs.yml`` (theme, palette, extensions); render adds only ``nav`` and paths."""
    published: Path | None = None
    """The published ledger the Changes page compares with; default ``<archive>/published/ledger.json``."""
    declarations: provenance.Declarations | None = field(default=None, compare=False)
    """The probes' options (``measure.cli.declarations()``, handed in by the CLI), for the records' reproduce
    blocks; render never imports a probe. None: the blocks say the commands are not shown."""

    @property
    def tree(self) -> Path:
        return self.build / "docs"

    @property
    def published_ledger(self) -> Path:
        return self.published if self.published is not None else self.archive / "published" / "ledger.json"

    def check(self, site: bool = True) -> None:
        """Refuse, before anything is written, a build folder or site that would write into the sources or the archive
        (issue 25, item 13: ``--build-dir docs`` wrote the tree and caches among the pages), or over the config."""
        sources = {"--docs": self.docs.resolve(), "--archive": self.archive.resolve()}
        written = {"--build-dir": self.build.resolve()}
        if site:
            written["--out"] = self.site.resolve()
        for flag, out in written.items():
            for given, src in sources.items():
                if out == src or out.is_relative_to(src) or src.is_relative_to(out):
                    raise BuildError(
                        f"{flag} {self.build if flag == '--build-dir' else self.site}: overlaps the {given} folder "
                        f"{src}; the build writes there, so give a folder outside it (and not above it)"
                    )
            if out.exists() and not out.is_dir():
                raise BuildError(f"{flag} {out}: a file, not a folder; give a folder (made if absent)")
            _can_make(flag, self.build if flag == "--build-dir" else self.site)
        if (self.build / "mkdocs.yml").resolve() == self.config.resolve():
            raise BuildError(f"--build-dir {self.build}: the build writes its mkdocs.yml over --config {self.config}")
        if self.config.is_dir():
            raise BuildError(f"--config {self.config}: a folder, not a mkdocs.yml")


def _can_make(flag: str, folder: Path) -> None:
    """Refuse, before anything is built, a folder the build could not make: one under ``/proc`` or ``/sys`` (the
    kernel's), below a file, or read-only. A folder is made beside it and removed, as the build's own will be."""
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        probe = folder.parent / f".{folder.name}.probebook-check-{os.getpid()}"
        probe.mkdir()
        probe.rmdir()
    except (FileExistsError, NotADirectoryError):
        raise BuildError(f"{flag} {folder}: a file stands on its path; give a folder that can be made") from None
    except OSError as exc:
        raise BuildError(f"{flag} {folder}: no folder can be made there ({exc.strerror}); give another") from None


@dataclass
class Tree:
    """The rendered Markdown tree, before it is written."""

    files: dict[str, bytes] = field(default_factory=dict)
    """Tree path -> bytes."""
    ledger: list[dict[str, Any]] = field(default_factory=list)
    """One row per published number."""
    nav: list[Any] = field(default_factory=list)
    """The mkdocs ``nav``."""
    cited: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    """Evidence id -> (tree path, title) of each page that cites it."""
    diff: Diff | None = None
    """This ledger against the published one."""
    kept: set[str] = field(default_factory=set)
    """Tree paths left as the last build wrote them (evidence pages whose inputs did not change)."""
    rewritten: list[str] | None = None
    """Tree paths this build wrote (bytes new or changed); None before the tree is written."""
    unsearched: set[str] = field(default_factory=set)
    """Tree paths of pages left out of the search index: superseded record versions (``layout.sealed``)."""
    units: dict[str, list[Any]] = field(default_factory=dict)
    """Evidence id -> [key, tree paths] of its page, for the next build's ``previous``."""
    headlines: dict[str, list[tuple[str, Quantity]]] = field(default_factory=dict)
    """Record page -> its headline results (label, Quantity), for the records index and the home page."""
    machines: dict[str, str] = field(default_factory=dict)
    """Record page -> the GPUs its evidence ran on, in words."""
    verdicts: dict[str, str] = field(default_factory=dict)
    """Record page -> its Answer as Markdown for that page (``render.pages.answers``), for the index and home page."""


@dataclass(frozen=True)
class BuildRun:
    """How one build runs and what its speed-ups hold; every stage takes it beside ``BuildPaths``.

    None of it changes what the build makes (ARCHITECTURE.md §The build): a build with every field at its
    default makes the same tree, without reading or keeping anything between builds. ``begin`` makes a build's
    run under the build folder's lock; ``render_tree`` adds the caches as it reaches them, so a field is set
    where the stage that fills it used to run and an error still surfaces from the same stage.
    """

    site: bool = True
    """Whether a site engine follows the tree (``--no-site``: False)."""
    clean: bool = True
    """Whether the sanitizer cleans the built site; only ``bench/render.py`` turns it off, to time it."""
    full: bool = False
    """Everything made afresh (nothing read from the caches, which are still written): the same result."""
    reuse: bool = False
    """The archive as this process last read it, if unchanged (``render.evidence.archive.load_evidence``, serve)."""
    engine: str = engines.DEFAULT
    """The site engine (``render.site.engines``)."""
    started: engines.RunningEngine | None = None
    """The engine's process, started ahead so its start overlaps render's work."""
    inputs: str = ""
    """The digest of the sources, archive and config the site is stamped with (``render.site.folder.stamp``)."""
    saved: dirty.SiteState | None = None
    """The last build's site state, taken (``dirty.take``): a dirty build needs it to match it (``dirty.can_reuse``)."""
    placeholders: bool | None = None
    """Whether the tree may hold placeholders made while the engine runs (``render.assemble.deferred``): True when
    the engine builds the whole site anyway, False when it could rebuild only what changed (placeholders then only
    for ``deferred.LATER_MIN`` charts or more), None when it may not (no engine, or one that cannot take them)."""
    assets: Path | None = None
    """Where assets made at build time are kept between builds (``ASSETS_CACHE``); None: made afresh, not kept."""
    previous: dict[str, list[Any]] | None = None
    """Evidence id -> the key and files of its page as the tree already holds them
    (``render.assemble.incremental.read_units``); None: every evidence page is made."""
    cache: incremental.PageCache | None = None
    """Rendered pages by input key (``render.assemble.incremental.PageCache``)."""
    derived: incremental.DerivedCache | None = None
    """Fits, charts and tables kept between builds (``render.assemble.incremental.DerivedCache``)."""
    later: DeferredWork | None = None
    """What makes the files that hold placeholders while the site engine runs (``render.assemble.deferred``); None:
    every file is made before the tree is written."""
    prepared: dict[str, Prepared] | None = None
    """Evidence pages made apart while the records rendered (``stages.prepare_evidence_pages``), less their lists."""

    @classmethod
    def begin(
        cls,
        paths: BuildPaths,
        site: bool = True,
        clean: bool = True,
        full: bool = False,
        reuse: bool = False,
        engine: str = engines.DEFAULT,
        started: engines.RunningEngine | None = None,
    ) -> BuildRun:
        """A build's run, under its lock: the inputs' digest, the last site's state (taken, so a build that stops
        anywhere leaves none; saved again once a site is swapped in) and whether the tree may hold placeholders."""
        inputs = sitedir.inputs_digest(paths.docs, paths.archive, paths.config)
        saved = dirty.take(paths.build)
        placeholders = None
        if site and engine in LATER_ENGINES:
            placeholders = full or not paths.site.is_dir() or saved is None  # True: the engine builds it all anyway
        return cls(
            site=site,
            clean=clean,
            full=full,
            reuse=reuse,
            engine=engine,
            started=started,
            inputs=inputs,
            saved=saved,
            placeholders=placeholders,
            assets=paths.build / ASSETS_CACHE,
        )


@dataclass(frozen=True)
class BuildResult:
    """What a build produced."""

    tree: Path
    site: Path | None
    ledger: list[dict[str, Any]]
    diff: Diff
    pages: int
    """Pages in the tree, written by this build or kept from the last one."""
    evidence: int
    made_later: int = 0
    """Tree files made while the site engine ran (charts, the bundle, the tarball: ``render.assemble.deferred``)."""
    pages_written: int = 0
    """Of ``pages``, those this build wrote (new or changed bytes); an incremental build keeps the rest."""
