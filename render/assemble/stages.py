"""The build: one linear pipeline of named stages, each taking and returning plain data (ARCHITECTURE.md §The build).

``load_evidence`` (verify + parse the archive) -> ``load_sources`` (front matter, records) ->
``lint`` -> ``render_pages`` (templates call the derivations; every number becomes a ledger
row; charts and tables are written beside their page) -> ``generate_pages`` (evidence pages,
indexes, Changes) -> ``write_tree`` -> ``write_config`` -> ``make_site`` (``render.assemble.site_stage``: the
site engine, mkdocs-material or Zensical, in a subprocess: ``render.site.engines``; the sanitizer; the swap).
Render's output is a plain Markdown tree plus a plain ``mkdocs.yml`` (the root one with a
generated ``nav``), so the site engine stays swappable: nothing depends on mkdocs plugins or hooks.

Two builds of the same archive and sources give byte-identical sites: every stage is ordered,
and the engine runs with ``SOURCE_DATE_EPOCH`` (the caller's, else the newest date in the evidence
and records, so no wall-clock time enters the site: ``render.assemble.dates``).
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

from measure.evidence.reading import read_regular
from measure.evidence.store import Store
from measure.progress import Progress
from render.assemble import histories, incremental, kept
from render.assemble import pages as page_render
from render.assemble import parallel as page_pool
from render.assemble.dates import footer_epoch, source_date_epoch
from render.assemble.deferred import LATER_MIN, DeferredWork
from render.assemble.site_stage import make_site, owned_or_empty
from render.assemble.types import ASSETS_CACHE, BuildPaths, BuildResult, BuildRun, Tree
from render.errors import BuildError
from render.evidence import index as evidence_index
from render.evidence import landing
from render.evidence import pages as evidence_pages
from render.evidence import taken as evidence_taken
from render.evidence.archive import Archive, load_evidence
from render.functions.derivations import Library, load_libraries
from render.numbers import claims, ledger, legend
from render.numbers.links import LANDING
from render.pages import (
    benchfiles,
    changes,
    colophon,
    history,
    layout,
    lessons,
    lint,
    notices,
    provenance,
    reproductions,
)
from render.pages import sources as sourcesmod
from render.pages.prose import check_links
from render.pages.sandbox import make_environment
from render.pages.sources import Sources
from render.site import engines
from render.site import folder as sitedir
from render.site.assets import CHARTS, chart_manifest
from render.site.config import write_config

log = logging.getLogger(__name__)

TREE_MARKER = ".probebook-tree"
EVIDENCE_CHUNK = 100
"""Evidence pages made per task when workers make them (``render.assemble.parallel``): enough to outweigh a
task's cost."""
APART_PAGES = 1000
"""Evidence pages made apart while the records render, at most (``prepare_evidence_pages``): about 0.8 s of one
core, as long as the build's own imports and 50 records take; more would leave the build waiting on one core."""


# -- stage 2 and 3: sources and lint ---------------------------------------------------------


def load_sources(docs: Path) -> Sources:
    return sourcesmod.load(docs)


def check_prose(src: Sources) -> None:
    lint.check(src.pages)
    for page in src.pages:
        check_links(page.body, str(page.path))


# -- stage 4: pages ----------------------------------------------------------------------


def render_pages(
    src: Sources,
    evidence: Archive,
    store: Store,
    declarations: provenance.Declarations | None,
    run: BuildRun,
) -> Tree:
    """Template every page; collect ledger rows, charts/tables and who cites which evidence.

    A record gets its headline results above its body and its environment and reproduce blocks below
    (``render.pages.provenance``); ``declarations`` are the probes' options, from the CLI (``measure.cli``).
    A page whose inputs are unchanged since a build that used ``run.cache`` is taken from it, not rendered;
    ``run.derived`` keeps the fits, charts and tables between builds. With ``run.later``, charts are described,
    not drawn, and drawn by it (``render.assemble.deferred``); pages and derivations holding its placeholders are
    cached once it has settled them.
    """
    cache, derived, later = run.cache, run.derived, run.later
    tree = Tree(unsearched=layout.superseded_pages(src))
    library = Library(evidence.docs, derived.load() if derived is not None else None)
    library.later = later is not None
    env = make_environment({p.rel: (p.body, str(p.path)) for p in src.pages})
    cited = tree.cited
    partial = notices.partial_ids(evidence.docs)
    ids_digest = hashlib.sha256("\n".join(sorted(evidence.docs)).encode()).digest()
    declared = json.dumps(declarations, sort_keys=True, default=repr).encode()
    outputs: list[incremental.PageOutput | None] = []
    aliased = []
    records = {r.slug: r.current for r in src.records}
    for page in src.pages:
        for slug in page.records:  # a lesson's ids are its records': a bad one is named on the record first
            sourcesmod.resolve_evidence(records[slug], store.resolve)
        aliases = sourcesmod.resolve_evidence(page, store.resolve)
        key = page_render.page_key(page, src, aliases, ids_digest, declared) if cache is not None else ""
        outputs.append(cache.get(key) if cache is not None else None)
        aliased.append((page, aliases, key))
    todo = [i for i, out in enumerate(outputs) if out is None]
    pages = [(aliased[i][0], aliased[i][1]) for i in todo]
    render = page_render.PageRenders(pages, src, evidence, library, env, partial, declarations)
    # the bar steps beside the loop, not around it: the pages' outputs go from the pool straight to this loop
    bar = Progress("pages", log, total=len(todo), lines=False)
    with page_pool.WorkerPool(render, len(todo)) as rendered, bar:
        for index, (out, computed) in zip(todo, rendered, strict=True):
            library.adopt(computed)
            if cache is not None and not (later is not None and later.hold(aliased[index][2], out)):
                cache.put(aliased[index][2], out)
            outputs[index] = out
            bar.step(aliased[index][0].rel)
    # a lesson may not state a reading its records' current versions withdrew (``render.pages.lessons``)
    lessons.check_withdrawn(((p, a, o.ledger) for (p, a, _k), o in zip(aliased, outputs, strict=True) if o), src)
    for (page, _aliases, _key), out in zip(aliased, outputs, strict=True):
        assert out is not None
        tree.files.update(out.files)
        tree.ledger += out.ledger
        if out.headlines is not None:
            tree.headlines[page.rel] = out.headlines
        if out.machine is not None:
            tree.machines[page.rel] = out.machine
        if getattr(out, "answer", None):  # a cache entry from before answers has none
            tree.verdicts[page.rel] = out.answer  # type: ignore[assignment]
        for ident in out.cited:
            cited.setdefault(ident, []).append((page.rel, layout.page_title(page)))
    for rel, source in src.files:
        if rel in tree.files:  # sources.load refuses names like these; a copy never replaces what a page made
            raise BuildError(f"{source}: {rel} is a file a page's functions made; rename it")
        tree.files[rel] = source.read_bytes()

    def keep_derived() -> None:
        if later is not None:
            library.settle(later.drawn)
        if derived is not None:
            derived.save(library.derived(), frozenset(evidence.docs), changed=bool(library.computed))

    if later is None:
        keep_derived()
    else:
        later.add_charts(library.computed)
        later.after(keep_derived)
    return tree


# -- stage 5: generated pages ------------------------------------------------------------------


def generate_pages(
    tree: Tree,
    src: Sources,
    evidence: Archive,
    published: list[dict[str, Any]] | None,
    past: list[dict[str, Any]] | None,
    run: BuildRun,
) -> Tree:
    """Evidence pages, section indexes, the Changes page, ``ledger.json`` and the nav.

    ``published``: the published ledger, ``past``: the published history's entries (``render.pages.history``), for
    the Changes page. An evidence page whose key is as in ``run.previous`` (``render.assemble.incremental``) is
    kept, not made again; one in ``run.prepared`` gets only its "Cited by" list here. Assets made at build time are
    kept in ``run.assets`` between builds (``render.site.assets``), made afresh and kept by ``run.full``, and those
    not kept are made while the engine runs with ``run.later``.
    """
    previous, later = run.previous, run.later
    cited = tree.cited
    # one page per reproduction, made first: the numbers its trace diffs take from kernels profiles land on their
    # entries on those profiles' evidence pages, like a record's do
    compared, compared_rows = reproductions.comparison_pages(evidence.docs, src)
    numbers = evidence_taken.by_evidence(tree.ledger + compared_rows)  # each page's entries: its key changes with them
    todo: list[tuple[str, str]] = []
    for ident in sorted(evidence.docs):
        key = incremental.page_key(
            [
                ("evidence", ident.encode()),
                ("cited", json.dumps(cited.get(ident, [])).encode()),
                ("numbers", json.dumps(numbers.get(ident, [])).encode()),
            ]
        )
        before = (previous or {}).get(ident)
        if before is not None and before[0] == key:
            tree.kept.update(before[1])
            tree.units[ident] = before
        else:
            todo.append((ident, key))
    ready = run.prepared or {}
    docs, raw = evidence.docs, evidence.raw
    for ident, key in todo:
        if ident in ready:  # made apart while the records rendered: only the "Cited by" list is added here
            files = evidence_pages.page_files(
                ident, docs[ident], raw[ident], cited.get(ident, []), ready[ident], numbers.get(ident, [])
            )
            tree.files.update(files)
            tree.units[ident] = [key, sorted(files)]
    todo = [(ident, key) for ident, key in todo if ident not in ready]
    chunks = [todo[i : i + EVIDENCE_CHUNK] for i in range(0, len(todo), EVIDENCE_CHUNK)]

    def make(n: int) -> list[dict[str, bytes]]:
        return [
            evidence_pages.page_files(ident, docs[ident], raw[ident], cited.get(ident, []), None, numbers.get(ident))
            for ident, _key in chunks[n]
        ]

    with page_pool.WorkerPool(make, len(chunks)) as made:
        # while workers make the evidence pages, this process makes the site's assets (the chart bundle)
        tree.files.update(
            kept.asset_files(run.assets, read=not run.full, later=later.file if later is not None else None)
        )
        for chunk, pages in zip(chunks, made, strict=True):
            for (ident, key), files in zip(chunk, pages, strict=True):
                tree.files.update(files)
                tree.units[ident] = [key, sorted(files)]
    tree.files.update(evidence_index.pages(evidence.docs, cited))
    histories.pages(tree, evidence, run)
    reproduced = reproductions.index_status(src, evidence.docs)
    # the indexes show records' headlines: their links choose a raw row or their entry as on the record's page
    token = LANDING.set(landing.landing_texts(evidence.docs))
    try:
        index = layout.records_index(src, tree.headlines, tree.machines, tree.verdicts, reproduced)
        latest = layout.latest_results(src, tree.headlines, tree.machines, tree.verdicts)
    finally:
        LANDING.reset(token)
    tree.files["records/index.md"] = index.encode("utf-8")
    tree.files.update(compared)
    tree.ledger += compared_rows
    tree.files["archive/index.md"] = layout.archive_index(src).encode("utf-8")
    if "index.md" not in tree.files:
        tree.files["index.md"] = b"# probebook\n\nWrite docs/index.md to replace this page.\n"
    tree.files["index.md"] += latest.encode("utf-8")
    if "playbook/index.md" not in tree.files:
        tree.files["playbook/index.md"] = b"# Playbook\n\nNo lessons yet.\n"
    tree.diff = ledger.diff(published or [], tree.ledger)
    titles = {p.rel: layout.page_title(p) for p in src.pages}
    existing = {p for p in (*tree.files, *tree.kept) if p.endswith(".md")}
    moved = claims.truth_changes(published or [], tree.ledger)
    tree.files[changes.PAGE] = changes.page_markdown(
        tree.diff, published is not None, existing, titles, moved, past, history.snapshot(src), tree.ledger
    ).encode("utf-8")
    tree.files["ledger.json"] = ledger.to_bytes(tree.ledger)
    # the specs charts.js may draw: those pages' functions made, never a copied source (render.site.assets)
    tree.files[CHARTS] = chart_manifest((*tree.files, *tree.kept), (rel for rel, _ in src.files))
    tree.nav = layout.nav(src)
    if not any(p.kind == "home" for p in src.pages):
        tree.nav.insert(0, {"Home": "index.md"})
    if not any(p.rel == "playbook/index.md" for p in src.pages):
        tree.nav.insert(1, {"Playbook": [{"Playbook": "playbook/index.md"}]})
    return tree


# -- stage 6 and 7: write the tree and the config (``render.site.config``) ----------------------


def _legend(rel: str, data: bytes) -> bytes:
    """A Markdown page with the legend of the signs it shows (``render.numbers.legend``), added once its text is
    whole (a page's indexes and results are appended after it renders)."""
    if not rel.endswith(".md") or b"](#" + legend.ANCHOR.encode() + b' "' not in data:
        return data
    return legend.with_legend(data.decode("utf-8")).encode("utf-8")


def write_tree(tree: Tree, out: Path) -> list[str]:
    """Make ``out`` hold the tree (only a folder render made, or an empty one, is ever changed).

    Only files whose bytes changed are rewritten (``render.assemble.incremental.write_tree``); returns their paths.
    """
    owned_or_empty(out, TREE_MARKER, "the build folder")
    # no page meta from prose; render's own keeps superseded versions out of the search index
    files = {rel: layout.sealed(rel, _legend(rel, data), rel in tree.unsearched) for rel, data in tree.files.items()}
    return incremental.write_tree(files, out, out.parent / incremental.TREE_MANIFEST, TREE_MARKER, tree.kept)


# -- the pipeline ------------------------------------------------------------------------------


def prepare_evidence_pages(evidence: Archive) -> page_pool.ForkedTask | None:
    """The first ``APART_PAGES`` evidence pages but their "Cited by" lists (``evidence_pages.prepare``), made in a
    process apart while this one renders the records (the rest are made by every core after); None where the
    build makes pages serially (``page_pool.workers``: it may not fork, ``PROBEBOOK_JOBS=1``, or too few pages)."""
    if not page_pool.workers(len(evidence.docs)):
        return None
    docs = {i: evidence.docs[i] for i in sorted(evidence.docs)[:APART_PAGES]}
    return page_pool.ForkedTask(lambda: {i: evidence_pages.prepare(i, d) for i, d in docs.items()}, 0, "evidence pages")


def render_tree(paths: BuildPaths, run: BuildRun | None = None) -> tuple[Tree, Archive, Sources, BuildRun]:
    """Every stage up to a written tree and config (no site engine); ``run``: how this build runs (default: a tree
    alone, its caches read and kept in ``paths.build``, every file made before the tree is written).

    Returns the tree, the archive and sources it was made from, and ``run`` with the caches it filled: its
    ``later`` makes the bytes of the files that hold placeholders (``render.assemble.deferred``), if any.
    """
    run = run if run is not None else BuildRun(assets=paths.build / ASSETS_CACHE)
    evidence = load_evidence(paths.archive, run.reuse and not run.full)
    src = load_sources(paths.docs)
    check_prose(src)
    previous = None if run.full else incremental.read_units(paths.build, paths.tree, TREE_MARKER)
    apart = prepare_evidence_pages(evidence) if previous is None else None  # every evidence page is made
    try:
        if apart is not None:  # imported once, here, while the evidence pages are made: not in each render worker
            load_libraries(draw=False)
        cache = incremental.PageCache(paths.build, read=not run.full)
        derived = incremental.DerivedCache(paths.build, read=not run.full)
        waiting = DeferredWork(evidence.docs, cache)
        run = replace(run, previous=previous, cache=cache, derived=derived, later=waiting)
        tree = render_pages(src, evidence, Store(paths.archive), paths.declarations, run)
        cache.prune()
        if run.placeholders is None or (run.placeholders is False and len(waiting.charts) < LATER_MIN):
            waiting.now()  # an author's edit that added a chart: drawn first, so the engine may rebuild only that page
            waiting.settle(tree.files)
            run = replace(run, later=None)
        published = ledger.read(paths.published_ledger) if paths.published_ledger.exists() else None
        past = history.read(history.path_beside(paths.published_ledger))
        run = replace(run, prepared=apart.wait() if apart is not None else None)
        tree = generate_pages(tree, src, evidence, published, past, run)
    finally:
        if apart is not None:
            apart.end()  # nothing once it has returned; stopped if the build stopped first
    published_bytes = (
        read_regular(paths.published_ledger, Store(paths.archive).limit) if published is not None else None
    )
    tree.files[evidence_pages.TARBALL] = kept.cached_tarball(
        paths.build / ASSETS_CACHE,
        evidence.raw,
        published_bytes,
        source_date_epoch(evidence, src),
        read=not run.full,
        later=run.later.file if run.later is not None else None,
    )
    bench = benchfiles.found(src)  # bench/ paths in prose link to the Benchmarks page (render.pages.benchfiles)
    if bench:
        for page in src.pages:
            text = tree.files[page.rel].decode("utf-8")
            tree.files[page.rel] = benchfiles.link(text, page.rel, bench).encode("utf-8")
        tree.files[benchfiles.PAGE] = benchfiles.page(bench, colophon.source_commit(paths.docs)).encode("utf-8")
    incremental.forget_units(paths.build)  # written again once the tree holds what it describes
    tree.rewritten = write_tree(tree, paths.tree)
    incremental.save_units(paths.build, tree.units)
    footer = colophon.text(footer_epoch(), colophon.source_commit(paths.docs), tree.files["ledger.json"])
    write_config(paths.config, tree.nav, paths.build, footer)
    return tree, evidence, src, run


def build(
    paths: BuildPaths,
    site: bool = True,
    clean: bool = True,
    full: bool = False,
    reuse: bool = False,
    engine: str = engines.DEFAULT,
    started: engines.RunningEngine | None = None,
) -> BuildResult:
    """Verify the archive, render the tree, and (unless ``site`` is False) build, sanitize and swap in the site.

    Pages and site files whose inputs did not change are reused (``render.assemble.incremental``,
    ``render.assemble.dirty``); ``full`` renders and builds everything afresh, with the same result. ``reuse``
    keeps the parsed archive in this process between builds while it is unchanged (``serve``). ``started``: the
    engine's process, started by the caller (``engines.start``; the CLI, before importing this module), else started
    here. One build of a project at a time: a second waits for the build folder's lock.
    """
    try:
        paths.check(site)
        if started is None and site:  # started now, so its start overlaps render's work
            started = engines.start(engine)
        with sitedir.build_lock(paths.build):
            run = BuildRun.begin(paths, site, clean, full, reuse, engine, started)
            tree, evidence, src, run = render_tree(paths, run)
            if site:
                make_site(paths, run, tree, source_date_epoch(evidence, src))
    finally:
        if started is not None:  # ended if the build stopped before the engine
            started.close()
    assert tree.diff is not None
    return BuildResult(
        tree=paths.tree,
        site=paths.site if site else None,
        ledger=tree.ledger,
        diff=tree.diff,
        pages=len({p for p in (*tree.files, *tree.kept) if p.endswith(".md")}),
        pages_written=sum(1 for p in tree.rewritten or () if p.endswith(".md")),
        evidence=len(evidence.docs),
        made_later=run.later.settled if run.later is not None else 0,
    )
