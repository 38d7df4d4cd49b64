"""``probebook remeasure``: the current single-GPU records' runs as a resumable queue of re-measurements.

Re-measuring every current record on one card with the session design (issue 38: ``--sessions 3`` and today's
warm-up, windows and calls per window) takes more device time than one lease gives, and a card is not always lent
at once. So the work is a queue whose state is the archive itself: an entry is **done** when the archive (or
``run``'s ``--out``) holds evidence of its configuration on the target card measured with the session design.
Nothing else records progress, so a queue resumes wherever its evidence was brought back (``archive add``).

The entries: for each current record version (``docs/records/<slug>/vN.md``, the highest N), every cited run,
its command rebuilt with today's probe as ``probebook reproduce`` builds it (``probebook.reproduce.commands``), one
entry per configuration key (``measure.evidence.configkey``) with the card set to the target: a record's
``sweep`` and ``sweep_again`` (one command run twice) are one entry. A record whose runs span GPUs (``ddp``) is
left out, with a line saying so. An entry's status:

- ``done``: the archive holds a run of its key on the card (``done_by``) with the session design (``designed``);
- ``pending``: ``run`` will measure it;
- ``needs word``: its command takes an open value from evidence (``--workload``, ``--corpus``: ``trust``), run
  only with ``--trust-evidence``, as ``probebook reproduce`` runs it;
- ``campaign``: documents a campaign wrote, redone by the ``probebook campaign`` commands named (never run here);
- ``refused``: a recorded number past a re-run's bound (``measure.evidence.reruns``), never run;
- ``cannot``: no command today's probe takes (the line says why).

A run of a key matches when its shaping params are the cited run's, by key or, where a later probe version
records an option the cited run predates, by ``match.params_agree`` on the shaping params (the option at today's
default), so a new probe version does not make done work pending again.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from measure.errors import ProbebookError, printable

CARD = "NVIDIA H200"
MIN_SESSIONS = 3
"""The session design's sessions on CUDA (``measure.constants.SESSIONS``): a run with fewer is not done."""
DESIGN = ("sessions", "warmup", "windows", "iters")
"""The effort the session design sets (``measure.timing.SessionFields`` and ``TimingFields``): a queued command
drops the recorded values, so today's defaults apply. The other ``configkey.EFFORT`` params stay as recorded:
which points a sweep walks (``--seq-lens``), ``--utilisation``, a probe's own budget (``--window-s``, ``--steps``)
decide what the record reads, not how often it is timed."""
PROBE_ORDER = (
    "gemm",
    "copy",
    "optimizer",
    "ablate",
    "mask",
    "kernels",
    "agreement",
    "hvp",
    "eval-boundary",
    "stream",
    "step-scaling",
    "loss-memory",
    "batch-sweep",
    "padding",
)
"""The default queue order, cheapest probe first (one-process H200 runs of the records): a lease cut short leaves
the cheap entries measured."""
WAITING = ("pending", "needs word", "campaign", "refused", "cannot")


@dataclass
class Entry:
    """One configuration a record cites, and what re-measuring it takes."""

    record: str
    version: int | None
    aliases: list[str]
    probe: str
    key: str
    """``cfg-...`` of the cited run on the target card, or ``campaign:<manifest>``."""
    status: str
    command: str
    """The ``python -m measure`` command that re-measures it (a campaign's commands; empty if there is none)."""
    why: str = ""
    """The evidence that did it, the values that need word, the bound or the reason it cannot run."""
    words: list[str] = field(default_factory=list)
    """The words after ``python -m measure --archive OUT`` that run ``command``."""
    doc: dict[str, Any] = field(default_factory=dict, repr=False)
    sessioned: bool = True

    @property
    def name(self) -> str:
        return f"{self.record}/{'+'.join(self.aliases)}"

    def line(self) -> str:
        tail = f" ({self.why})" if self.why else ""
        shown = f": {self.command}" if self.command and self.status != "done" else ""
        return printable(f"{self.status:<10} {self.name} {self.probe} {self.key}{tail}{shown}", 2000)


@dataclass
class Queue:
    entries: list[Entry]
    skipped: dict[str, str]
    """Record -> why it is not in the queue (multi-GPU)."""

    def summary(self) -> list[str]:
        """One line per record: how many entries wait, by status; then the records that wait."""
        lines, waiting = [], []
        for record in dict.fromkeys(e.record for e in self.entries):
            mine = [e for e in self.entries if e.record == record]
            counts = {s: sum(e.status == s for e in mine) for s in ("done", *WAITING)}
            shown = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
            lines.append(f"{record} v{mine[0].version}: {len(mine)} entries: {shown}")
            if counts["done"] < len(mine):
                waiting.append(f"{record} ({len(mine) - counts['done']})")
        lines += [f"{record}: not queued: {why}" for record, why in sorted(self.skipped.items())]
        keys = {e.key for e in self.entries if e.status == "pending"}
        lines.append(
            f"records that wait: {', '.join(waiting) if waiting else 'none'}; distinct pending keys {len(keys)}"
        )
        return lines


def _card_key(doc: dict[str, Any], card: str) -> str:
    from measure.evidence.configkey import config_key

    return config_key({**doc, "machine": {"gpu": card}}).ident


def multi_gpu(docs: dict[str, dict[str, Any]]) -> str | None:
    """Why a record's runs are not one card's (a ``ddp`` run, or a run on several GPUs), or None."""
    for doc in docs.values():
        params, machine = doc.get("params") or {}, doc.get("machine") or {}
        gpus = params.get("gpus") if isinstance(params, dict) else None
        count = machine.get("gpu_count") if isinstance(machine, dict) else None
        if doc.get("probe") == "ddp" or (isinstance(gpus, int) and gpus > 1) or (isinstance(count, int) and count > 1):
            return f"its runs are multi-GPU ({doc.get('probe')}): a multi-GPU lease re-measures it"
    return None


def designed(doc: dict[str, Any], sessioned: bool, defaults: dict[str, Any]) -> bool:
    """Whether a run was measured with the session design: at least ``MIN_SESSIONS`` sessions; a probe that measures
    in one session (``SESSIONED`` false: kernels, sweeps) with today's default warm-up, windows and calls instead."""
    params = doc.get("params") or {}
    if sessioned:
        sessions = params.get("sessions")
        return isinstance(sessions, int) and not isinstance(sessions, bool) and sessions >= MIN_SESSIONS
    return all(params[n] == defaults[n] for n in DESIGN[1:] if n in params and defaults.get(n) is not None)


def done_by(entry: Entry, pool: dict[str, dict[str, Any]], card: str, defaults: dict[str, Any]) -> str | None:
    """The newest run in ``pool`` (id -> document) of ``entry``'s configuration on ``card`` with the session design."""
    from measure.evidence.configkey import card_of, shaping
    from measure.evidence.envelope import MEASURED
    from probebook.reproduce.match import params_agree

    mine = shaping(entry.doc.get("params") or {})
    found = []
    for ident, doc in pool.items():
        if doc.get("probe") != entry.probe or doc.get("status") not in MEASURED:
            continue
        if (doc.get("origin") or {}).get("kind") == "imported" or card_of(doc.get("machine") or {}) != card:
            continue
        if not designed(doc, entry.sessioned, defaults):
            continue
        theirs = shaping(doc.get("params") or {})
        if _card_key(doc, card) == entry.key or params_agree(entry.probe, mine, theirs, defaults):
            found.append((str(doc.get("created_at", "")), ident))
    return max(found)[1] if found else None


def design_command(command: str, probe: str, declared: dict[str, Any], sessioned: bool, device: str) -> list[str]:
    """``probebook measure PROBE ...`` as the words after ``python -m measure --archive OUT``: the recorded
    ``DESIGN`` flags dropped (today's defaults apply), ``--sessions 3`` where the probe measures in sessions, and
    ``--device``."""
    options = declared[probe]["options"]
    drop = {options[n]["flag"] for n in DESIGN if n in options}
    if "device" in options:
        drop.add(options["device"]["flag"])
    words, out, skip = shlex.split(command)[2:], [], False
    for word in words:
        if skip:
            skip = False
        elif word in drop:
            skip = True
        elif not any(word.startswith(f"{flag}=") for flag in drop):
            out.append(word)
    if sessioned:
        out += ["--sessions", str(MIN_SESSIONS)]
    return [*out, options["device"]["flag"], device] if "device" in options else out


def _lookup(archive: Path) -> Any:
    """``id -> document or None`` in ``archive`` (a campaign's manifest, which a record need not cite)."""
    from measure.evidence.reading import for_reading, parse_archived
    from measure.evidence.store import Store

    store = Store(archive)

    def get(ident: str) -> dict[str, Any] | None:
        try:
            full = store.resolve(ident)
            return for_reading(parse_archived(store.read_bytes(full), full))
        except ProbebookError:
            return None

    return get


def pool_of(*archives: Path) -> dict[str, dict[str, Any]]:
    """Every document of the archives that exist (each file hash-checked), by id."""
    from render.errors import BuildError
    from render.evidence.archive import load_evidence

    out: dict[str, dict[str, Any]] = {}
    for archive in archives:
        if not (Path(archive) / "evidence").is_dir():
            continue
        try:
            out.update(load_evidence(Path(archive)).docs)
        except BuildError as exc:
            raise ProbebookError(f"{archive}: {exc}") from None
    return out


def _order(slugs: list[str], wanted: list[str] | None) -> list[str]:
    if not wanted:
        return slugs
    unknown = [s for s in wanted if s not in slugs]
    if unknown:
        raise ProbebookError(f"--records {','.join(unknown)}: no such current record (known: {', '.join(slugs)})")
    return list(dict.fromkeys(wanted))


def build(
    docs: Path,
    archive: Path,
    card: str = CARD,
    records: list[str] | None = None,
    trust: bool = False,
    device: str = "cuda",
    also: tuple[Path, ...] = (),
) -> Queue:
    """The queue of every current single-GPU record (``records``: these, in this order), each entry's status read
    from ``archive`` and the archives in ``also`` (``run``'s ``--out``)."""
    from measure.cli import declarations
    from probebook.reproduce import commands
    from probebook.reproduce.session import cited
    from render.pages import sources

    if not Path(archive).is_dir():
        raise ProbebookError(f"--archive {archive}: no such archive folder")
    if not (Path(docs) / "records").is_dir():
        raise ProbebookError(f"--docs {docs}: no records/ folder")
    src = sources.load(Path(docs))
    current = {r.slug: r.current for r in src.records}
    slugs = _order(sorted(current), records)
    declared = declarations()
    pool = pool_of(archive, *also)
    entries: list[Entry] = []
    skipped: dict[str, str] = {}
    for slug in slugs:
        page = current[slug]
        aliases, docs_by_id = cited(page, archive)
        why = multi_gpu(docs_by_id)
        if why:
            skipped[slug] = why
            continue
        where = str(page.path)
        parts = commands.campaign_parts(aliases, docs_by_id, _lookup(archive), str(archive), "runs/campaigns")
        for part in parts:
            probes = {str(docs_by_id[aliases[a]].get("probe")) for a in part.aliases}
            key = f"campaign:{part.manifest[:19]}"
            entries.append(
                Entry(slug, page.version, list(part.aliases), "+".join(sorted(probes)), key, "campaign", part.command)
            )
        set_aside = {a for part in parts for a in part.aliases}
        runs = {a: i for a, i in aliases.items() if a not in set_aside}
        mine = _entries(slug, page.version, runs, docs_by_id, (card, device, trust), declared, pool, where)
        entries += sorted(mine, key=lambda e: (_rank(e.probe), e.aliases[0]))
    if not records:  # cheapest probe first across records: a short lease measures the most entries
        entries.sort(key=lambda e: (_rank(e.probe), e.record, e.aliases[0]))
    return Queue(entries, skipped)


def _entries(
    slug: str,
    version: int | None,
    runs: dict[str, str],
    docs: dict[str, dict[str, Any]],
    how: tuple[str, str, bool],
    declared: dict[str, Any],
    pool: dict[str, dict[str, Any]],
    where: str,
) -> list[Entry]:
    """One entry per configuration of a record's runs (alias -> id): a run whose key, or whose shaping params
    (``match.params_agree``: an option a later probe version added at its default), an earlier entry has joins it."""
    from measure.cli import probe_module
    from measure.evidence.configkey import shaping
    from probebook.reproduce import commands
    from probebook.reproduce.match import params_agree

    card, device, trust = how
    out: list[Entry] = []
    for alias in sorted(runs):
        doc = docs[runs[alias]]
        probe, key = str(doc.get("probe")), _card_key(doc, card)
        defaults = {n: s["default"] for n, s in declared[probe]["options"].items()} if probe in declared else {}
        params = shaping(doc.get("params") or {})
        twin = next(
            (
                e
                for e in out
                if e.probe == probe
                and (e.key == key or params_agree(probe, shaping(e.doc.get("params") or {}), params, defaults))
            ),
            None,
        )
        if twin is not None:
            twin.aliases.append(alias)
            continue
        sessioned = bool(getattr(probe_module(probe).Config, "SESSIONED", False)) if probe in declared else False
        entry = Entry(slug, version, [alias], probe, key, "pending", "", doc=doc, sessioned=sessioned)
        out.append(entry)
        try:
            run = commands.rebuild(alias, runs[alias], doc, declared, where)
        except ProbebookError as exc:
            entry.status, entry.why = "cannot", str(exc)
        else:
            words = entry.words = design_command(run.command, probe, declared, sessioned, device)
            entry.command = shlex.join(["python", "-m", "measure", *words])
            if run.bounds:
                entry.status, entry.why = "refused", f"past a re-run's bound: {', '.join(run.bounds)}"
            elif run.asks and not trust:
                entry.status, entry.why = "needs word", f"--trust-evidence runs {', '.join(run.asks)}"
        if probe in declared:
            refresh(entry, pool, card, defaults)
    return out


def _rank(probe: str) -> int:
    return PROBE_ORDER.index(probe) if probe in PROBE_ORDER else len(PROBE_ORDER)


def refresh(entry: Entry, pool: dict[str, dict[str, Any]], card: str, defaults: dict[str, Any] | None = None) -> None:
    """``entry`` marked done when ``pool`` holds a run of its configuration with the session design
    (``defaults``: today's option defaults of its probe, read from the probe when None)."""
    if defaults is None:
        from measure.cli import declarations

        declared = declarations()[entry.probe]["options"]
        defaults = {n: s["default"] for n, s in declared.items()}
    ident = done_by(entry, pool, card, defaults)
    if ident is None:
        return
    entry.status = "done"
    timed = entry.sessioned or any(n in (entry.doc.get("params") or {}) for n in DESIGN[1:])
    entry.why = f"by {ident[:19]}" if timed else f"by {ident[:19]}: a run with no timed windows, no session design"


def as_json(queue: Queue) -> dict[str, Any]:
    """The queue as plain data (``list --json``)."""
    rows = [
        {"record": e.record, "version": e.version, "aliases": e.aliases, "probe": e.probe, "key": e.key}
        | {"status": e.status, "command": e.command, "why": e.why}
        for e in queue.entries
    ]
    return {"entries": rows, "skipped": queue.skipped}


def dumps(queue: Queue) -> str:
    return json.dumps(as_json(queue), indent=1, ensure_ascii=False)
