"""The plain data the build's stages pass along (``render.assemble.stages``): where it reads and writes, evidence,
tree."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from render.assemble.deferred import DeferredWork
from render.errors import BuildError
from render.numbers.ledger import Diff  # by name: the dataclasses' ``ledger`` fields shadow the module there
from render.numbers.quantity import Quantity
from render.pages import provenance


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
    later: DeferredWork | None = None
    """What makes the files that hold placeholders while the site engine runs (``render.assemble.deferred``); None:
    none do."""


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
