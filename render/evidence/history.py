"""The history of one configuration key: every session's figure of each of its points, the across-sessions
estimate, and where a software-stack change moved the series (issue 38, part 3).

A configuration key (``measure.evidence.configkey``) names what a series of runs measured, whatever record cites
them; its history page (``render.evidence.historypage``) shows each run of the key as one session. This module
holds the data and the rules, as pure functions of the archive's documents:

- ``key_series``: the archive's documents grouped by key, each run's figure of each point (``series.POINTS``: the
  median of the point's windows) with the 95% interval of that median (``intervals.median_interval``), the run's
  date, commit, stack and card. Every key whose runs have points gets a history (whether a key has one depends on
  its own documents only, so an evidence page links to it without reading the rest of the archive).
- ``estimate``: where a new session lands, ``replication.prediction`` over the point's counted sessions (measured
  runs that finished, as ``series`` counts them) with the class's pooled between-session SD.
- ``change_points``: the step detection asv and conbench run over a benchmark's history, reduced to a rule that
  needs no fitting: a boundary between two sessions is a *change point* where the software stack differs across
  it (``configkey.stack_difference``) and the median of the sessions after it (up to the next stack change)
  differs from the median of those before it (from the previous one) by more than the across-sessions
  interval of that difference says sessions move by: ``|ln(after) − ln(before)| > t(df) · s · sqrt(1/kb + 1/ka)``
  with ``s`` the between-session SD on the log scale and ``df`` its degrees of freedom. A stack change whose
  medians stay inside is listed, not marked; one without a spread to judge it by is listed as not judged.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from measure.evidence.configkey import ConfigKey, config_key, stack_difference
from render.derive import replication
from render.evidence.series import MEASURED, POINTS, point_windows

FOLDER = "evidence/history"
INDEX = f"{FOLDER}/index.md"


def history_page(key_ident: str) -> str:
    """The tree path of a configuration key's history page (``evidence/history/cfg-….md``)."""
    return f"{FOLDER}/{key_ident}.md"


@dataclass(frozen=True)
class Session:
    """One run's figure of one point of a key."""

    run: str
    """The evidence id."""
    date: str
    """``created_at`` as the run wrote it (UTC, ISO 8601)."""
    figure: float
    """The median of the point's windows, in the ``POINTS`` field's own unit."""
    interval: tuple[float, float] | None
    """The 95% interval of that median (this run's windows only); None with too few windows."""
    windows: int
    counted: bool
    """A measured run that finished (``series``'s sessions): it counts towards the estimate."""
    stack: dict[str, Any]
    card: str
    commit: str
    """The git commit the run's code names, else the probe source's SHA-256 (first 12 hex digits), else ""."""


@dataclass
class KeySeries:
    """A key and its sessions, by point; ``runs`` in the order they were written."""

    key: ConfigKey
    figure_field: str
    """The ``POINTS`` field every figure is a median of (``step_s``, ``time_s``, ``tok_s``)."""
    names: tuple[str, ...]
    """The point's identity fields (``POINTS``)."""
    runs: list[str] = field(default_factory=list)
    points: dict[tuple[Any, ...], list[Session]] = field(default_factory=dict)


def has_history(doc: dict[str, Any]) -> bool:
    """Whether a document's key has a history page: its probe has points (``POINTS``) and the run measured one.
    Depends on the document alone."""
    return bool(point_windows(doc))


def commit_of(doc: dict[str, Any]) -> str:
    """The commit a run's code names: ``code.git_commit`` (12 digits), else the probe source's SHA-256, else ""."""
    code = doc.get("code") or {}
    for name, prefix in (("git_commit", ""), ("probe_source_sha256", "probe source ")):
        value = code.get(name) if isinstance(code, dict) else None
        if isinstance(value, str) and value:
            return prefix + value[:12]
    return ""


def key_series(docs: dict[str, dict[str, Any]]) -> dict[str, KeySeries]:
    """Every key with a history, by key ident: its runs in written order (then id), each point's sessions."""
    from render.derive import intervals  # numpy loads only where a history is built

    out: dict[str, KeySeries] = {}
    order = sorted(docs, key=lambda i: (str(docs[i].get("created_at") or ""), i))
    for ident in order:
        doc = docs[ident]
        windows = point_windows(doc)
        if not windows:
            continue
        key = config_key(doc)
        names, name = POINTS[key.probe]
        series = out.setdefault(key.ident, KeySeries(key, name, names))
        series.runs.append(ident)
        counted = (doc.get("origin") or {}).get("kind") == "measured" and doc.get("status") in MEASURED
        for point, values in windows.items():
            session = Session(
                run=ident,
                date=str(doc.get("created_at") or ""),
                figure=statistics.median(values),
                interval=intervals.median_interval(values),
                windows=len(values),
                counted=counted,
                stack=config_key(doc).stack,
                card=key.card,
                commit=commit_of(doc),
            )
            series.points.setdefault(point, []).append(session)
    return dict(sorted(out.items()))


def spread_for(figures: Sequence[float], pool: replication.Spread | None) -> replication.Spread | None:
    """The between-session SD a point's series is judged by: its own with ``OWN_SESSIONS`` or more sessions, else
    the class's pool (``replication.prediction``'s choice)."""
    own = replication.own_log_sd(figures)
    if own is not None and len([f for f in figures if f > 0]) >= replication.OWN_SESSIONS:
        return own
    return pool


def estimate(sessions: Sequence[Session], pool: replication.Spread | None) -> replication.Prediction | None:
    """Where a new session of this point lands: ``replication.prediction`` over its counted sessions."""
    return replication.prediction([s.figure for s in sessions if s.counted], pool)


@dataclass(frozen=True)
class Boundary:
    """A software-stack change between two sessions of one point, and whether the series moved across it."""

    index: int
    """The first session after the change (an index into the series)."""
    changed: dict[str, tuple[Any, Any]]
    """The stack fields that differ: field -> (before, after)."""
    before: float
    """The median figure of the sessions since the previous stack change."""
    after: float
    """The median figure of the sessions up to the next stack change."""
    limit: float | None
    """The largest ``|ln(after / before)|`` sessions alone explain; None: no between-session SD to judge by."""

    @property
    def moved(self) -> bool:
        """A change point: the medians differ beyond what sessions alone move by."""
        return self.limit is not None and abs(math.log(self.after / self.before)) > self.limit


def change_points(
    stacks: Sequence[dict[str, Any]], figures: Sequence[float], spread: replication.Spread | None
) -> list[Boundary]:
    """The stack changes of a series (``stacks`` and positive ``figures``, one each per session, in written order),
    each with the medians of the segments either side and the limit of ``|ln(after/before)|`` that sessions alone
    reach: ``t(df) · s · sqrt(1/kb + 1/ka)``, ``spread`` giving ``s`` and ``df`` (None: not judged)."""
    if len(stacks) != len(figures):
        raise ValueError("change_points: one stack per figure")
    cuts = [i for i in range(1, len(stacks)) if stack_difference(stacks[i - 1], stacks[i])]
    edges = [0, *cuts, len(figures)]
    out = []
    for n, cut in enumerate(cuts, start=1):
        before, after = figures[edges[n - 1] : cut], figures[cut : edges[n + 1]]
        limit = None
        if spread is not None and spread.df > 0:
            limit = replication.t_quantile(spread.df) * spread.sd_log * math.sqrt(1 / len(before) + 1 / len(after))
        out.append(
            Boundary(
                cut,
                stack_difference(stacks[cut - 1], stacks[cut]),
                statistics.median(before),
                statistics.median(after),
                limit,
            )
        )
    return out


def point_changes(sessions: Sequence[Session], pool: replication.Spread | None) -> list[Boundary]:
    """``change_points`` over one point's sessions, judged by ``spread_for`` its counted figures."""
    spread = spread_for([s.figure for s in sessions if s.counted], pool)
    return change_points([s.stack for s in sessions], [s.figure for s in sessions], spread)


def point_label(names: Sequence[str], point: Sequence[Any]) -> str:
    """A point as a page names it: ``mode fixed_batch, batch 4, tokens 2048``."""
    return ", ".join(f"{n} {v}" for n, v in zip(names, point, strict=True) if v is not None) or "the run"
