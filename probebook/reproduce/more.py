"""``reproduce --sessions N``: more sessions for the runs whose verdicts are not resolved, up to a bound.

After the first comparison, every number whose three-way ``outcome`` is ``not resolved`` (and every claim whose
verdict is) names the runs it reads: the aliases of the original ids its ledger row lists (``row["evidence"]``).
Each such run whose probe measures in sessions (``SESSIONED``) is re-run once more, through the same campaign
machinery as the first runs (a campaign folder per pass, so a pass resumes like the first), with its sessions
doubled (``next_sessions``), never past the bound M (``--max-sessions``, default 2 x N, at most
``measure.constants.MAX_SESSIONS``). The record is then compared again with the new runs in place of the ones
they repeat, and so on until every verdict is resolved or equivalent, or no run it reads can take more sessions.

A run re-measured replaces the one it repeats (its sessions are not pooled with the earlier run's): the
comparison is always of one run per alias, as a first pass with that many sessions would have made.

The reproduction records ``sessions_bound`` (M), ``sessions`` (alias -> the sessions its compared run measured
in, for each run whose probe measures in sessions), ``passes`` (one per extra pass: the verdicts that asked for
it, alias -> sessions, alias -> new id, the commands) and ``not_resolved_at_bound`` (the keys still not resolved
when it stopped). The loop is here; what runs a pass and what compares are given by ``session`` (no import cycle).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from measure.constants import MAX_SESSIONS
from measure.errors import ProbebookError

NOT_RESOLVED = "not resolved"
"""A number's three-way ``outcome`` and a claim's ``verdict`` when the evidence does not settle it."""


def bound_of(sessions: int, max_sessions: int | None) -> int:
    """The most sessions a re-run may reach: ``max_sessions``, else twice ``sessions``, never past ``MAX_SESSIONS``;
    one line when ``--max-sessions`` is below ``--sessions`` or past ``MAX_SESSIONS`` (``--sessions`` itself is the
    probe's to refuse, as its command is built)."""
    if max_sessions is None:
        return min(2 * sessions, MAX_SESSIONS)
    if max_sessions < sessions or max_sessions > MAX_SESSIONS:
        raise ProbebookError(
            f"--max-sessions {max_sessions}: between --sessions ({sessions}) and {MAX_SESSIONS} "
            "(measure/constants.py MAX_SESSIONS)"
        )
    return max_sessions


def next_sessions(current: int, bound: int) -> int | None:
    """The sessions of a run's next pass: double its ``current``, never past ``bound``; None once it is there.

    Doubling: a median's interval narrows about as 1/sqrt(sessions), so each pass buys about as much as all the
    ones before it, and the bound is reached in a few passes."""
    if current >= bound:
        return None
    return min(2 * current, bound)


def pass_folder(folder: Path, number: int) -> Path:
    """The campaign folder of extra pass ``number``, beside the first runs' ``folder`` (``FOLDER-more-N``): a campaign
    folder plans one set of runs, and each pass resumes from its own as the first runs do from theirs."""
    return folder.with_name(f"{folder.name}-more-{number}")


def open_verdicts(result: dict[str, Any]) -> list[str]:
    """The ledger keys of a comparison (``compare.compare``'s result) whose verdicts are not resolved: numbers by
    their three-way ``outcome``, claims by their ``verdict``, in the comparison's order."""
    numbers = [n["key"] for n in result.get("numbers", []) if n.get("outcome") == NOT_RESOLVED]
    return numbers + [c["key"] for c in result.get("claims", []) if c.get("verdict") == NOT_RESOLVED]


def aliases_read(keys: Iterable[str], evidence_of: dict[str, list[str]], aliases: dict[str, str]) -> list[str]:
    """The aliases (sorted) whose original ids the ledger rows of ``keys`` read (``evidence_of``: key -> ids, the
    original render's ``row["evidence"]``; ``aliases``: alias -> original id). Two aliases citing one id are both
    read."""
    ids = {i for key in keys for i in evidence_of.get(key, ())}
    return sorted(alias for alias, ident in aliases.items() if ident in ids)


def to_rerun(
    keys: Iterable[str],
    evidence_of: dict[str, list[str]],
    aliases: dict[str, str],
    sessions: dict[str, int],
    bound: int,
) -> dict[str, int]:
    """alias -> the sessions of its next run, for each run the open verdicts ``keys`` read that can take more.

    ``sessions``: alias -> the sessions of the run compared now, for the runs whose probe measures in sessions
    only (a run absent from it is never re-run: more of its one session would be the same measurement)."""
    out = {}
    for alias in aliases_read(keys, evidence_of, aliases):
        if alias in sessions:
            more = next_sessions(sessions[alias], bound)
            if more is not None:
                out[alias] = more
    return out


@dataclass(frozen=True)
class Pass:
    """One extra pass: which open verdicts asked for it, and the runs it measured."""

    number: int
    """1 for the first pass after the first comparison."""
    asked_by: tuple[str, ...]
    """The ledger keys not resolved before it."""
    sessions: dict[str, int]
    """alias -> the sessions each run of this pass was asked for."""
    new: dict[str, str] = field(default_factory=dict)
    """alias -> the new evidence id each run stored (a run that failed under ``--partial`` is absent)."""
    commands: tuple[str, ...] = ()

    def fields(self) -> dict[str, Any]:
        """As the reproduction stores it (named fields)."""
        return {
            "pass": self.number,
            "asked_by": list(self.asked_by),
            "sessions": dict(sorted(self.sessions.items())),
            "new": dict(sorted(self.new.items())),
            "commands": list(self.commands),
        }


@dataclass
class Added:
    """What the extra passes did: the exit status, and (when 0) the comparison and runs to store."""

    code: int
    result: dict[str, Any]
    """The last comparison (``compare.compare``'s result)."""
    new: dict[str, str]
    """alias -> the id each alias is compared by now."""
    new_docs: dict[str, dict[str, Any]]
    """Every new document measured, by id (the first pass's and each extra pass's: all are stored as evidence)."""
    sessions: dict[str, int]
    passes: list[Pass]
    bound: int

    def fields(self) -> dict[str, Any]:
        """The reproduction's fields of this loop (its data's layout: the module docstring)."""
        return {
            "sessions_bound": self.bound,
            "sessions": dict(sorted(self.sessions.items())),
            "passes": [p.fields() for p in self.passes],
            "not_resolved_at_bound": open_verdicts(self.result),
        }


Measure = Callable[[int, dict[str, int], tuple[str, ...]], tuple[int, dict[str, str], dict[str, dict], list[str]]]
"""``measure(pass, alias -> sessions, open keys)``: print, then run the pass's campaign; (status, alias -> new id,
new id -> document, the commands it ran)."""
Judge = Callable[[dict[str, str], dict[str, dict[str, Any]]], dict[str, Any]]
"""``judge(alias -> new id, new id -> document)``: the comparison of the record on those runs."""


def add_sessions(
    result: dict[str, Any],
    new: dict[str, str],
    new_docs: dict[str, dict[str, Any]],
    sessions: dict[str, int],
    bound: int,
    evidence_of: dict[str, list[str]],
    aliases: dict[str, str],
    measure: Measure,
    judge: Judge,
) -> Added:
    """Re-run, pass after pass, the runs that open verdicts read, with more sessions, until none is open or none of
    the runs they read can take more (``to_rerun``); see the module docstring.

    ``result``, ``new``, ``new_docs``: the first comparison and its runs; ``sessions``: alias -> sessions of the
    first runs whose probe measures in sessions."""
    new, new_docs, sessions = dict(new), dict(new_docs), dict(sessions)
    passes: list[Pass] = []
    asked = dict(sessions)  # alias -> the sessions last asked for: a run that failed is not asked the same again
    while True:
        asked_by = tuple(open_verdicts(result))
        wanted = to_rerun(asked_by, evidence_of, aliases, asked, bound)
        if not wanted:
            return Added(0, result, new, new_docs, sessions, passes, bound)
        number = len(passes) + 1
        code, measured, docs, commands = measure(number, wanted, asked_by)
        if code != 0:
            return Added(code, result, new, new_docs, sessions, passes, bound)
        passes.append(Pass(number, asked_by, wanted, dict(measured), tuple(commands)))
        asked.update(wanted)
        if not measured:  # every run of the pass failed (--partial): nothing new to compare
            continue
        new.update(measured)
        new_docs.update(docs)
        sessions.update({alias: wanted[alias] for alias in measured})
        result = judge(new, new_docs)
