"""``probebook reproduce RECORD``: re-measure (or match) every run a record version cites, then compare.

1. The record version is read from the sources (``--docs``) and its cited evidence from ``--archive``.
2. Re-measure (the default): each cited run's command is rebuilt with today's probe
   (``probebook.reproduce.commands``), printed, and run as one job of a campaign folder
   (``probebook.reproduce.campaign``: resumable, local or Slurm, ``--budget-s``). ``--dry-run`` prints the
   commands and runs nothing; ``--measure-only`` stops once the runs are stored (for a GPU machine that
   lacks what the comparison needs; compare later with ``--with`` the folder). Or ``--with ARCHIVE``: each
   cited document's counterpart in another archive (``probebook.reproduce.match``), nothing run. Or
   ``--with sha256:ID``, an earlier reproduction of the same record version in ``--archive``: its new runs, as it
   paired them, compared again by today's code (after a derivation changed, say, intervals on medians), nothing run.
   A value a command takes from evidence that could run code or open a path (``--workload``, ``--corpus``) runs
   only on the user's word, and numbers past a re-run's bounds are refused (``probebook.reproduce.trust``).
   Documents a campaign wrote are not re-run: the ``probebook campaign`` commands that redo them are named
   (``commands.campaign_parts``) and their numbers are missing from the comparison. New runs on another GPU model
   than the cited ones make the result ``cross-machine``, never a reproduction.
3. The record is rendered on both id sets and every number and claim compared
   (``probebook.reproduce.compare``, verdicts by ``probebook.reproduce.verdict``).
4. The result is stored in ``--archive`` (or ``--out``) as evidence of probe ``reproduction`` (its data's layout below),
   beside the new runs' evidence (measured, or copied from ``--with``'s archive), so it is citable and
   ``archive verify`` checks it; a summary table is printed, or with ``--json`` the data and the id.

The data layout (the site reads it: ``render.derive.reproduction``): ``record``, ``version``, ``title``,
``mode`` (``reproduction`` or ``cross-machine``), ``original`` and ``new`` (alias -> id), ``rule``,
``numbers`` (key, label, old, new, old_low, old_high, new_low, new_high, unit, shown_old, shown_new, change,
verdict, basis), ``claims`` (key, text, old, new, verdict), ``summary`` (counts), ``commands``,
``campaign_commands`` (alias -> the campaign command that redoes it), ``wall_s``; with ``--sessions``, also
``sessions_bound``, ``sessions``, ``passes`` and ``not_resolved_at_bound`` (``probebook.reproduce.more``).
"""

from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from measure.errors import EXIT, ProbebookError

PROBE = "reproduction"
log = logging.getLogger(__name__)
VERSION = 1


@dataclass(frozen=True)
class Options:
    """What ``probebook reproduce`` was asked (the CLI's options, one field each)."""

    record: str
    version: int | None = None
    docs: Path = Path("docs")
    archive: Path = Path("archive")
    out: Path | None = None
    """Where the new runs and the reproduction are stored (default: ``archive``, read for the cited evidence)."""
    other: Path | None = None
    partial: bool = False
    dry_run: bool = False
    measure_only: bool = False
    folder: Path | None = None
    executor: str = "local"
    executor_spec: Path | None = None
    budget_s: float | None = None
    retry_failed: bool = False
    point_timeout_s: float = 3600.0
    sessions: int | None = None
    """``--sessions N`` given to each re-run probe that measures in sessions (``measure.timing.TimingFields``);
    then the runs a verdict not resolved reads are re-run with more sessions (``probebook.reproduce.more``)."""
    max_sessions: int | None = None
    """``--max-sessions M``: the most sessions those re-runs reach (default: 2 x ``sessions``)."""
    json: bool = False
    trust_evidence: bool = False
    """Run every value the cited evidence names (after printing the commands), as if given here."""
    given: dict[str, list[str]] = field(default_factory=dict)
    """The open options' values given on this command line (param -> values): those run without --trust-evidence."""


def record_page(docs: Path, slug: str, version: int | None) -> tuple[Any, Any]:
    """(the record version's source page, every source) or one line naming what is wrong."""
    from render.pages import sources

    src = sources.load(Path(docs))
    records = {r.slug: r for r in src.records}
    if slug not in records:
        known = ", ".join(sorted(records)[:12]) or "none"
        raise ProbebookError(f"RECORD {slug!r}: no such record under {docs}/records (known: {known})")
    rec = records[slug]
    if version is None:
        return rec.current, src
    pages = {p.version: p for p in rec.versions}
    if version not in pages:
        have = ", ".join(str(v) for v in sorted(pages, key=lambda v: v or 0))
        raise ProbebookError(f"--version {version}: record {slug} has versions {have}")
    return pages[version], src


def _read(store: Any, ident: str) -> tuple[dict[str, Any], bytes]:
    """A stored document, hash-checked and read as today's envelope (``for_reading``)."""
    from measure.evidence.reading import for_reading, parse_archived
    from probebook.campaign.plan import checked

    checked(store, ident)
    raw = store.read_bytes(ident)
    return for_reading(parse_archived(raw, ident)), raw


def cited(page: Any, archive: Path) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    """(alias -> full id, id -> document) of the evidence the page cites, read from ``archive``."""
    from measure.evidence.store import Store
    from render.pages import sources

    if not Path(archive).is_dir():
        raise ProbebookError(f"--archive {archive}: no such archive folder")
    store = Store(archive)
    aliases = sources.resolve_evidence(page, store.resolve)
    if not aliases:
        raise ProbebookError(f"{page.path}: the record cites no evidence; nothing to reproduce")
    return aliases, {i: _read(store, i)[0] for i in sorted(set(aliases.values()))}


def other_archive(path: Path) -> Any:
    """Every document of ``--with`` (an archive, or a reproduction or campaign folder: its ``archive/``)."""
    from render.errors import BuildError
    from render.evidence.archive import load_evidence

    path = Path(path)
    if (path / "manifest.id").is_file():
        path = path / "archive"
    if not (path / "evidence").is_dir():
        raise ProbebookError(f"--with {path}: not an archive (no evidence/ folder) nor a reproduction's folder")
    try:
        return load_evidence(path)  # every file hash-checked: the other archive is untrusted
    except BuildError as exc:
        raise ProbebookError(f"--with {path}: {exc}") from None


def earlier_runs(archive: Path, ident: str, page: Any, aliases: dict[str, str]) -> tuple[dict[str, str], str]:
    """``--with sha256:ID``: (alias -> new id, mode) of an earlier reproduction of this record version.

    Its pairing is taken as it was archived (the match rule already ran, or the runs were made for it), so the
    comparison differs from the earlier one only by the code that renders and compares."""
    from measure.evidence.store import Store

    store = Store(archive)
    try:
        full = store.resolve(ident)
    except ProbebookError as exc:
        raise ProbebookError(f"--with {ident}: {exc}") from None
    doc, _raw = _read(store, full)
    data: dict[str, Any] = doc["data"] if isinstance(doc.get("data"), dict) else {}
    what = f"--with {full[:19]}"
    if doc.get("probe") != PROBE:
        raise ProbebookError(f"{what}: a {doc.get('probe')!r} document, not a reproduction")
    if (data.get("record"), data.get("version")) != (page.slug, page.version):
        raise ProbebookError(
            f"{what}: reproduces {data.get('record')} v{data.get('version')}, not {page.slug} v{page.version}"
        )
    new, original = data.get("new"), data.get("original")
    if not isinstance(new, dict) or original != aliases:
        raise ProbebookError(f"{what}: its original runs are not the ones {page.path} cites today")
    return {str(a): str(i) for a, i in new.items()}, str(data.get("mode") or "reproduction")


def archive_pools(archive: Path) -> dict[str, Any]:
    """The between-session SD per probe class of ``--archive`` (``render.evidence.series.class_pools``): what the
    site's build gives the record's absolute times and rates their across-sessions interval from."""
    from render.errors import BuildError
    from render.evidence.archive import load_evidence
    from render.evidence.series import class_pools

    try:
        return class_pools(load_evidence(Path(archive)).docs.values())
    except BuildError as exc:
        raise ProbebookError(f"--archive {archive}: {exc}") from None


def default_folder(slug: str, version: int) -> Path:
    return Path("runs") / f"reproduce-{slug}-v{version}"


def remeasure(
    opts: Options, page: Any, runs: list[Any], parts: list[Any]
) -> tuple[int, dict[str, str], dict[str, dict]]:
    """Run (or resume) the runs' campaign; (status, alias -> new id, new id -> document). Writes the spec of each
    campaign part its command names into the folder."""
    import os

    from measure.evidence.store import Store
    from probebook.campaign.spec import Executor, executor_from
    from probebook.campaign.yaml_file import read_yaml
    from probebook.reproduce import campaign

    folder = folder_of(opts, page)
    # a job starts in the folder's source snapshot: a relative entry (PYTHONPATH=.) would name the wrong folder there
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if paths:
        os.environ["PYTHONPATH"] = os.pathsep.join(str(Path(p).resolve()) for p in paths)
    executor = Executor(max_concurrent=1, point_timeout_s=opts.point_timeout_s, gpu_lock=True)
    if opts.executor_spec is not None:  # a campaign spec's executor section: Slurm's settings, concurrency, limits
        doc = read_yaml(opts.executor_spec)
        if not isinstance(doc, dict) or set(doc) - {"executor"}:
            raise ProbebookError(f"--executor-spec {opts.executor_spec}: a YAML mapping with one key, executor")
        executor = executor_from(doc, f"--executor-spec {opts.executor_spec}")
    campaign.plan(folder, f"reproduce-{page.slug}-v{page.version}", runs, executor)
    campaign.write_specs(parts)
    code, _wall = campaign.run(folder, opts.executor, opts.budget_s, opts.retry_failed)
    done, not_done = campaign.results(folder)
    line = campaign.status_line(code, folder)
    if line:
        campaign.say(line)
    for alias, why in sorted(not_done.items()):
        campaign.say(f"reproduce: {alias}: {why}")
    if code == EXIT["budget spent"]:
        return code, done, {}
    if not_done and not opts.partial:
        return EXIT["check failed"], done, {}
    source, target = Store(Path(folder) / "archive"), Store(opts.out or opts.archive)
    docs = {}
    for ident in sorted(set(done.values())):
        doc, raw = _read(source, ident)
        target.put_bytes(raw)  # the new runs are evidence of the archive the reproduction is stored in
        docs[ident] = doc
    return 0, done, docs


def folder_of(opts: Options, page: Any) -> Path:
    """The reproduction's campaign folder: ``--folder``, else ``runs/reproduce-RECORD-vN``."""
    return Path(opts.folder or default_folder(page.slug, page.version))


def across_machines(
    aliases: dict[str, str], docs: dict[str, dict[str, Any]], new: dict[str, str], new_docs: dict[str, dict[str, Any]]
) -> dict[str, str]:
    """alias -> ``old GPU -> new GPU`` of each new run measured on another GPU model (``machine.gpu``; None is the
    CPU) than the run it repeats: a comparison across machines, not a reproduction."""
    from probebook.reproduce.match import gpu

    out = {}
    for alias, ident in sorted(new.items()):
        old, now = gpu(docs[aliases[alias]]), gpu(new_docs[ident])
        if old != now:
            out[alias] = f"{old or 'CPU'} -> {now or 'CPU'}"
    return out


def listing(runs: list[Any], parts: list[Any]) -> list[str]:
    """The commands reproduce runs (and the campaign commands it does not), each after its comment lines."""
    lines = []
    for r in runs:
        lines += [f"# {r.who}: {r.probe}", *(f"# {n}" for n in r.notes)]
        if r.asks:
            lines.append(f"# needs your word (pass it to reproduce yourself, or --trust-evidence): {', '.join(r.asks)}")
        lines.append(r.command)
    for part in parts:
        lines += [*(f"# {n}" for n in part.notes), part.command]
    return lines


def _refuse_unbounded(runs: list[Any], where: str) -> None:
    over = {r.who: r.bounds for r in runs if r.bounds}
    if over:
        named = "; ".join(f"evidence {who} names {', '.join(b)}" for who, b in sorted(over.items()))
        raise ProbebookError(f"{where}: {named} (bounds: measure/evidence/reruns.py BOUNDS); nothing was run")


def _refuse_unasked(runs: list[Any], where: str, trusted: bool) -> None:
    from probebook.reproduce import trust

    wanted = {r.who: list(r.asks) for r in runs if r.asks}
    if wanted and not trusted:
        raise ProbebookError(trust.consent_error(where, wanted))


def _show(lines: list[str], to_stderr: bool) -> None:
    """The commands before anything runs: on stdout, or as log lines on stderr where stdout carries --json."""
    for line in lines:
        if to_stderr:
            log.warning("reproduce: %s", line)
        else:
            sys.stdout.write(line + "\n")
    sys.stdout.flush()


def measured_on(new_docs: dict[str, dict[str, Any]], here: dict[str, Any]) -> dict[str, Any]:
    """The machine a reproduction names: when every new document ran on one GPU model and count, the newest
    one's machine fingerprint (its clocks and temperature are a moment's), else ``here``.

    With ``--with`` the comparison may run elsewhere than the runs (a GPU's runs compared on a laptop); the
    reproduction is of the machine that measured, so a reader sees "1 × H200", not the laptop."""
    machines = [d["machine"] for d in new_docs.values() if isinstance(d.get("machine"), dict)]
    kinds = {(m.get("gpu"), m.get("gpu_count")) for m in machines}
    if len(machines) != len(new_docs) or len(kinds) != 1:
        return here
    newest = max(new_docs.values(), key=lambda d: str(d.get("created_at", "")))
    return dict(newest["machine"])


def archived(opts: Options, page: Any, data: dict[str, Any], new_docs: dict[str, dict[str, Any]]) -> str:
    """Store the reproduction as evidence in ``--archive``; its id. Its machine is the new runs' (``measured_on``)."""
    from measure.evidence.envelope import Evidence
    from measure.evidence.store import Store
    from measure.machine import code_fingerprint, fingerprint

    params = {"record": page.slug, "version": page.version, "with": str(opts.other) if opts.other else None}
    machine = measured_on(new_docs, fingerprint())
    evidence = Evidence(
        probe=PROBE, probe_version=VERSION, params=params, data=data, machine=machine, code=code_fingerprint(None)
    )
    return Store(opts.out or opts.archive).put(evidence)


@dataclass
class Outcome:
    """What ``reproduce`` did: its exit status, the lines it prints, and the reproduction stored (if any)."""

    code: int
    lines: list[str]
    """stdout lines: the commands of ``--dry-run``, the new ids of ``--measure-only``."""
    data: dict[str, Any] | None = None
    ident: str | None = None


def reproduce(opts: Options) -> Outcome:
    """Do it; see the module docstring."""
    from measure.cli import declarations
    from measure.evidence.store import Store
    from probebook.reproduce import commands, compare, match, more, verdict

    started = time.perf_counter()
    if opts.other is not None and (opts.dry_run or opts.measure_only):
        raise ProbebookError("--with compares evidence measured elsewhere: --dry-run and --measure-only run nothing")
    if opts.other is not None and opts.sessions is not None:
        raise ProbebookError("--sessions sets the re-runs' sessions; --with runs nothing")
    if opts.max_sessions is not None and opts.sessions is None:
        raise ProbebookError("--max-sessions bounds the sessions --sessions N adds; give --sessions")
    page, src = record_page(opts.docs, opts.record, opts.version)
    aliases, docs = cited(page, opts.archive)
    declared = declarations()
    where = str(page.path)
    parts = commands.campaign_parts(
        aliases, docs, _lookup(opts.archive), str(opts.archive), str(folder_of(opts, page) / "campaigns")
    )
    set_aside = {a for part in parts for a in part.aliases}
    measurable = {a: i for a, i in aliases.items() if a not in set_aside}  # the runs reproduce itself compares
    campaign_commands = {a: part.command for part in parts for a in part.aliases}
    runs: list[Any] = []
    bound: int | None = None
    if opts.other is None:
        runs = [
            commands.rebuild(a, aliases[a], docs[aliases[a]], declared, where, opts.given, opts.sessions)
            for a in sorted(measurable)
        ]
        if opts.sessions is not None:  # after the probes' parser refused a --sessions it cannot take
            bound = more.bound_of(opts.sessions, opts.max_sessions)
        lines = listing(runs, parts)
        if opts.dry_run:
            _refuse_unbounded(runs, where)
            return Outcome(0, lines)
        _show(lines, opts.json)
        _refuse_unbounded(runs, where)
        _refuse_unasked(runs, where, opts.trust_evidence)
        if not runs:
            log.warning("reproduce: %s: every cited document comes from a campaign; run the commands above", where)
            return Outcome(0, [])
        code, new, new_docs = remeasure(opts, page, runs, parts)
        if code != 0 or opts.measure_only:
            return Outcome(code, [f"{alias} {ident}" for alias, ident in sorted(new.items())] if code == 0 else [])
        across = across_machines(aliases, docs, new, new_docs)
        for alias, moved in across.items():
            log.warning("reproduce: %s: measured on another GPU model (%s): a comparison across machines", alias, moved)
        mode, command_lines = ("cross-machine" if across else "reproduction"), [r.command for r in runs]
    elif str(opts.other).startswith("sha256:"):
        new, mode = earlier_runs(opts.archive, str(opts.other), page, aliases)
        store = Store(opts.archive)
        new_docs = {i: _read(store, i)[0] for i in sorted(set(new.values()))}
        command_lines = []
        if opts.out is not None:  # the runs join the archive the reproduction is stored in
            target = Store(opts.out)
            for ident in new_docs:
                target.put_bytes(store.read_bytes(ident))
    else:
        other = other_archive(opts.other)
        others = other.docs
        planned = reproduction_folder(Path(opts.other))
        if planned is not None:  # a reproduction's folder pairs its runs as its own manifest planned them
            found = match.by_manifest(planned[0], planned[1], measurable, docs, others)
        else:
            found = match.match(measurable, docs, others, declared)
        problems = found.problems()
        if problems and not opts.partial:
            raise ProbebookError(
                f"--with {opts.other}: {'; '.join(problems)} (rule: probebook/reproduce/match.py; "
                "--partial compares what matched)"
            )
        for alias, model in sorted(found.across.items()):
            log.warning("reproduce: %s: matched on another GPU model (%s): a comparison across machines", alias, model)
        new, new_docs, mode = found.found, {i: others[i] for i in found.found.values()}, found.mode
        command_lines = []
        target = Store(opts.out or opts.archive)
        for ident in sorted(new_docs):  # the matched documents join the archive the reproduction is stored in
            target.put_bytes(other.raw[ident])
    if opts.other is not None:
        for part in parts:
            log.warning("reproduce: %s: %s", part.notes[0], part.command)
    result = compare.compare(page, src, {**docs, **new_docs}, aliases, new, declared, archive_pools(opts.archive))
    extra: dict[str, Any] = {}
    if opts.other is None and opts.sessions is not None and bound is not None:
        added = _more_sessions(opts, page, src, (aliases, docs), (new, new_docs), runs, declared, result, bound)
        if added.code != 0:
            return Outcome(added.code, [])
        result, new, new_docs, extra = added.result, added.new, added.new_docs, added.fields()
        mode = "cross-machine" if across_machines(aliases, docs, new, new_docs) else mode
    data = {
        "record": page.slug,
        "version": page.version,
        "title": str(page.title or ""),
        "mode": mode,
        "original": dict(sorted(aliases.items())),
        "new": dict(sorted(new.items())),
        "rule": verdict.RULE,
        **result,
        "commands": command_lines,
        "campaign_commands": dict(sorted(campaign_commands.items())),
        **extra,
        "wall_s": time.perf_counter() - started,
    }
    return Outcome(0, [], data, archived(opts, page, data, new_docs))


def _more_sessions(
    opts: Options,
    page: Any,
    src: Any,
    cited_runs: tuple[dict[str, str], dict[str, dict[str, Any]]],
    first: tuple[dict[str, str], dict[str, dict[str, Any]]],
    runs: list[Any],
    declared: dict[str, Any],
    result: dict[str, Any],
    bound: int,
) -> Any:
    """``--sessions N``: the runs that verdicts not resolved read, re-run with more sessions until resolved or at
    ``bound`` (``probebook.reproduce.more``), each pass printed before it runs and run as its own campaign folder."""
    import dataclasses

    from probebook.reproduce import commands, compare, more

    aliases, docs = cited_runs
    where, folder = str(page.path), folder_of(opts, page)

    def measure(number: int, wanted: dict[str, int], asked_by: tuple[str, ...]) -> tuple[int, dict, dict, list[str]]:
        again = [
            commands.rebuild(a, aliases[a], docs[aliases[a]], declared, where, opts.given, n)
            for a, n in sorted(wanted.items())
        ]
        said = f"# more sessions, pass {number} (at most {bound}): not resolved: {', '.join(asked_by)}"
        _show([said, *listing(again, [])], opts.json)
        pass_opts = dataclasses.replace(opts, folder=more.pass_folder(folder, number))
        code, new, new_docs = remeasure(pass_opts, page, again, [])
        return code, new, new_docs, [r.command for r in again]

    def judge(new: dict[str, str], new_docs: dict[str, dict[str, Any]]) -> dict[str, Any]:
        return compare.compare(page, src, {**docs, **new_docs}, aliases, new, declared, archive_pools(opts.archive))

    rows, _labels = compare.render_rows(page, src, docs, aliases, declared, archive_pools(opts.archive))
    evidence_of = {str(r["key"]): list(r.get("evidence") or ()) for r in rows}
    first_sessions = int(opts.sessions or 1)  # a run whose probe measures in one session is never re-run
    sessioned = {r.alias: first_sessions for r in runs if getattr(commands.build_config(r.command), "SESSIONED", False)}
    new, new_docs = first
    return more.add_sessions(result, new, new_docs, sessioned, bound, evidence_of, aliases, measure, judge)


def _lookup(archive: Path) -> Any:
    """``id -> document or None`` in ``archive`` (a campaign's manifest, which a record need not cite)."""
    from measure.evidence.store import Store

    store = Store(archive)

    def get(ident: str) -> dict[str, Any] | None:
        try:
            return _read(store, store.resolve(ident))[0]
        except ProbebookError:
            return None

    return get


def reproduction_folder(path: Path) -> tuple[list[dict[str, Any]], dict[str, str]] | None:
    """A reproduction's folder given to ``--with``: (its manifest's points, point key -> the evidence its run
    stored); None for anything else (an archive, another campaign's folder)."""
    from probebook.campaign.plan import load_manifest
    from probebook.reproduce import campaign

    if not (path / "manifest.id").is_file():
        return None
    _ident, manifest = load_manifest(path)
    if manifest["data"].get("kind") != campaign.KIND:
        return None
    done, _not_done = campaign.results(path)
    return list(manifest["data"]["points"]), done
