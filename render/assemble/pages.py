"""One hand-written page, rendered: its cache key, and its Markdown with header, results, notices and footer
(ARCHITECTURE.md §Pages).

``render.assemble.stages.render_pages`` calls these for every page, in this process or in a worker
(``render.assemble.parallel``); a page's output depends only on what its key names (``render.assemble.incremental``).
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from typing import Any

from measure.errors import ProbebookError
from render.assemble import incremental
from render.derive import nominal
from render.errors import BuildError
from render.evidence import landing, series
from render.evidence.archive import Archive
from render.functions.derivations import Library
from render.functions.page import Page
from render.numbers import claims, directions, ledger
from render.numbers.links import LANDING
from render.pages import answers, bounded, caveats, layout, lessons, notices, provenance, reproductions
from render.pages.prose import check_links, inert_prose
from render.pages.sandbox import ACROSS, PageState, evaluate_summary, render_body
from render.pages.sources import Sources


def page_key(page: Any, src: Sources, aliases: dict[str, str], ids_digest: bytes, declared: bytes) -> str:
    """The cache key of one page's output: every input it is rendered from (``render.assemble.incremental``)."""
    followed = {page.slug} if page.kind == "record" else set(page.records) | {h.slug for h in page.history}
    siblings = [  # a record's versions; a lesson's records' versions (it links and renders against the current)
        (p.rel, p.version, p.date, p.title, p.supersedes, p.changes)
        for r in src.records
        if r.slug in followed
        for p in r.versions
    ]
    return incremental.page_key(
        [
            ("rel", page.rel.encode()),
            ("source", page.path.read_bytes()),
            ("aliases", json.dumps(sorted(aliases.items())).encode()),
            ("ids", ids_digest),
            ("record", json.dumps(siblings).encode()),
            ("declarations", declared if page.kind == "record" else b""),
        ]
    )


@dataclass(frozen=True)
class PageRenders:
    """The pages a build renders, by index, with what they are rendered from: the task the page pool
    (``render.assemble.parallel``) runs, in this process or in a worker."""

    pages: list[tuple[Any, dict[str, str]]]
    """Each page to render and its evidence aliases."""
    src: Sources
    evidence: Archive
    library: Library
    env: Any
    partial: frozenset[str]
    declarations: provenance.Declarations | None

    def __call__(self, n: int) -> tuple[incremental.PageOutput, dict[tuple, Any]]:
        """Page ``n`` and the derivations its rendering computed (a worker hands them back to the build's library)."""
        page, aliases = self.pages[n]
        before = len(self.library.computed)
        out = render_one(
            page, self.src, self.evidence, self.library, self.env, aliases, self.partial, self.declarations
        )
        return out, self.library.computed_since(before)


def render_one(
    page: Any,
    src: Sources,
    evidence: Archive,
    library: Library,
    env: Any,
    aliases: dict[str, str],
    partial: frozenset[str],
    declarations: provenance.Declarations | None,
) -> incremental.PageOutput:
    # while this page renders, a number's link knows what each evidence page shows where it would land
    token = LANDING.set(landing.landing_texts(evidence.docs))
    # while this page renders, an absolute time or rate states where a new session lands (issue 38)
    across = ACROSS.set(series.across(library.docs, library.pools))
    # and a claim comparing two runs reads their configurations, to see that it names where they differ
    configs = directions.CONFIGS.set(series.shaping_of(library.docs))
    try:
        return _render(page, src, evidence, library, env, aliases, partial, declarations)
    finally:
        directions.CONFIGS.reset(configs)
        ACROSS.reset(across)
        LANDING.reset(token)


def _check_settings(page: Any, functions: Page, aliases: dict[str, str], evidence: Archive) -> None:
    """Refuse a setting read from one run while a run of the same probe the page cites recorded another value
    (``render.derive.nominal.unshared_settings``): one line naming the file, the field and both runs."""
    typed = nominal.typed_settings(page.body, [evidence.docs[i] for i in set(aliases.values())])
    if typed:
        t = typed[0]
        shown = ", ".join(f"{v:g}" for v in t.recorded)
        raise BuildError(
            f"{page.path} line {t.line}: {t.typed} typed beside {t.field}, which the cited runs recorded as {shown}; "
            f'show the recorded value with value(), or label a typed one {{{{ nominal({t.typed}, "why") }}}}'
        )
    found = nominal.unshared_settings(functions.reads, {i: evidence.docs[i] for i in set(aliases.values())})
    if found:
        f = found[0]
        name = {ident: alias for alias, ident in aliases.items()}
        raise BuildError(
            f"{page.path}: {f.path} is read from {name.get(f.read, f.read[:19])} ({f.read_value:g}) alone, but "
            f"{name.get(f.other, f.other[:19])}, a like run (only the model size differs) the page cites too, "
            f'recorded {f.other_value:g}; read it from each run, value({name.get(f.other, "...")}, "{f.path}")'
        )


def _render(
    page: Any,
    src: Sources,
    evidence: Archive,
    library: Library,
    env: Any,
    aliases: dict[str, str],
    partial: frozenset[str],
    declarations: provenance.Declarations | None,
) -> incremental.PageOutput:
    functions = Page(library, aliases)
    refused = notices.failed_evidence(page.where("evidence"), aliases, evidence.docs)
    if refused:
        raise BuildError(refused)
    try:
        context = functions.context()
    except ProbebookError as exc:
        raise BuildError(f"{page.where('evidence')}: {exc}") from None
    record = next((r for r in src.records if r.slug == page.slug), None) if page.kind == "record" else None
    superseded = record is not None and answers.successor(page, record) is not None
    state = PageState(page.rel, partial=partial, superseded=superseded)
    with claims.superseded_page() if superseded else contextlib.nullcontext():
        headlines = evaluate_summary(env, page, context, state)
        verdicts = answers.evaluate(env, page, context, state, superseded) if page.kind == "record" else []
        body = render_body(env, page, context, state)
    blocks, machine, box = "", None, ""
    reproduced: list[dict[str, Any]] = []
    if lessons.is_lesson(page):
        # a lesson sees all its records' aliases but cites, lists and notes only the evidence it shows
        aliases = {alias: ident for alias, ident in aliases.items() if ident in state.cited}
        blocks = lessons.behind_it(page, src)
    if not superseded:  # a superseded version keeps what it published; the current one states like with like
        _check_settings(page, functions, aliases, evidence)
    if page.kind == "record":
        ids = sorted(set(aliases.values()))
        machine = provenance.machine_label(ids, evidence.docs)
        environment: list[tuple[str, Any]] = []
        blocks = provenance.environment_block(page.rel, aliases, evidence.docs, environment)
        state.rows += [(key, q) for key, q in environment if key not in dict(state.rows)]
        blocks += provenance.reproduce_block(page.rel, aliases, evidence.docs, declarations)
        # the archive's reproductions of this version: its key names every evidence id, so a new one re-renders it
        section, reproduced = reproductions.record_section(page.rel, page.slug or "", page.version, evidence.docs)
        blocks += section
        if record is None:
            raise BuildError(f"{page.rel}: no record {page.slug!r} among the sources")
        status = answers.status(page, record, answers.measured(ids, evidence.docs), machine)
        box = answers.box(verdicts, status, caveats.markdown(page.rel, aliases, evidence.docs) if verdicts else "")
    text = (
        layout.header(page, src, box)
        + layout.results_box(page.rel, headlines)
        + notices.markdown(aliases, evidence.docs, page.rel)
        + body.strip("\n")
        + "\n"
        + blocks
        + layout.footer(page, src, aliases, evidence.docs)
    )
    text = inert_prose(text)
    check_links(text, f"{page.path} (rendered)")
    bounded.check_markdown(text, f"{page.path} (rendered)")
    files = {page.rel: text.encode("utf-8"), **state.files}
    rows = (
        [ledger.number_row(q, page.rel, key) for key, q in state.rows]
        + reproduced
        + list(state.claims.values())
        + list(state.cells.values())
        + notices.ledger_rows(page.rel, aliases, evidence.docs)
        + (caveats.ledger_rows(page.rel, aliases, evidence.docs) if box else [])
    )
    cited = sorted(state.cited | set(aliases.values()))
    answer = "\n".join(" ".join(v.splitlines()) for v in verdicts) or None  # one verdict a line: the index shows one
    return incremental.PageOutput(files, rows, cited, headlines if page.kind == "record" else None, machine, answer)
