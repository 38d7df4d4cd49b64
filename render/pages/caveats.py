"""The caveats a record's Answer names beside its verdicts (issue 42, item 3): what its cited evidence says about
itself that qualifies every number from it, so a reader of the Answer alone still meets it.

- Unstable points: measured points (a run's ``data.points`` summaries, else its rows: a campaign's one row per
  point) flagged ``unstable`` by the timing rule (the CV of their windows stayed above its threshold).
- Drift: a point whose timed windows (rows with a ``window`` index and a ``step_s`` or ``time_s``, in window order)
  move one way through the run: the median of the last third is more than ``DRIFT`` away from the first third's
  (medians, so one slow window is not a drift).
- Throttled, clock sag, host-bound: the run's marks (``render.derive.conditions.run_marks``).
- Instrumentation overhead: an ``optimizer`` run, or an optimizer-timing follow-up's points, whose hooks' cost is
  resolved above ``measure.constants.OVERHEAD_LIMIT`` (its 95% interval above it), so the timed optimizer share is
  not trusted; and those whose interval reaches the limit, not resolved (``render.derive.followup.overhead_check``).

Each caveat is a sentence whose numbers are ledger rows (``render.numbers.said``), linked to the evidence. Pure:
text from the documents.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from measure.constants import OVERHEAD_LIMIT
from render.derive import conditions, followup
from render.numbers import said
from render.numbers.links import escape_text, evidence_page, relative_link

DRIFT = 0.10
"""A point drifts when its last third of windows' median is more than this far from its first third's."""
MIN_WINDOWS = 6
"""Windows a point needs for a drift to be read: two thirds of at least two windows each, apart."""
_TIMES = ("step_s", "time_s")
_POINT = ("point", *conditions.POINT_FIELDS)


def _flagged(record: dict[str, Any]) -> bool:
    value = record.get("unstable")
    return any(v is True for v in value.values()) if isinstance(value, dict) else value is True


def unstable(doc: dict[str, Any]) -> tuple[int, int]:
    """(flagged unstable, measured) points of a run: its point summaries that say, else its rows that say."""
    data = doc.get("data") or {}
    points = [p for p in data.get("points") or [] if isinstance(p, dict) and "unstable" in p]
    rows = points or [r for r in data.get("samples") or [] if isinstance(r, dict) and "unstable" in r]
    return sum(map(_flagged, rows)), len(rows)


def _label(key: tuple[tuple[str, Any], ...]) -> str:
    named = dict(key)
    if named.get("point") is not None:
        return str(named["point"])
    return ", ".join(f"{field} {value}" for field, value in key if value is not None)


def drifts(doc: dict[str, Any]) -> list[tuple[str, float, float, float]]:
    """(point, first window's time, last window's time, change of the last third's median over the first third's)
    of each point that drifts, largest change first."""
    data = doc.get("data") or {}
    series: dict[tuple[tuple[str, Any], ...], list[tuple[int, float]]] = defaultdict(list)
    for table in ("samples", "windows"):
        for row in data.get(table) or []:
            if not isinstance(row, dict) or not isinstance(row.get("window"), int):
                continue
            time = next((row[t] for t in _TIMES if isinstance(row.get(t), (int, float)) and row[t] > 0), None)
            if time is None:
                continue
            point = (("table", table), *((f, row.get(f)) for f in _POINT if f in row))
            series[point].append((row["window"], float(time)))
    out = []
    for key, windows in series.items():
        times = [t for _, t in sorted(windows)]
        if len(times) < MIN_WINDOWS:
            continue
        third = len(times) // 3
        first, last = statistics.median(times[:third]), statistics.median(times[-third:])
        change = last / first - 1
        if abs(change) > DRIFT:
            out.append((_label(key[1:]), times[0], times[-1], change))
    return sorted(out, key=lambda d: -abs(d[3]))


def _time(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


Caveat = tuple[str, said.Said]
"""A caveat as (what it names, in words a number link must not take: a point's name; its sentence)."""


def overhead(ident: str, doc: dict[str, Any], docs: dict[str, dict[str, Any]]) -> str | None:
    """The instrumentation-overhead caveat of an ``optimizer`` run or an optimizer-timing follow-up (``docs``: the
    evidence its points name), or None where no timing is flagged or unresolved."""
    limit = f"{OVERHEAD_LIMIT:.0%}"
    run = followup.run_overhead(ident, doc)
    if run is not None:
        if run.verdict == "below":
            return None
        span = f", 95% interval {run.interval[0]:.1%} to {run.interval[1]:.1%}" if run.interval else ""
        said_of = (
            f"above the {limit} limit, so its timed optimizer share is not trusted"
            if run.verdict == "above"
            else f"not resolved against the {limit} limit"
        )
        return f"its instrumentation overhead ({run.overhead:.1%}{span}) is {said_of}"
    points = followup.followup_overheads(doc, docs)
    above = sum(p.verdict == "above" for p in points)
    open_ = sum(p.verdict == "not resolved" for p in points)
    parts = []
    if above:
        parts.append(
            f"{above:,} of its {len(points):,} points' instrumentation overhead is above the {limit} limit, so "
            "their timed optimizer share is not trusted"
        )
    if open_:
        parts.append(f"{open_:,} of its {len(points):,} points' overhead is not resolved against the {limit} limit")
    return "; ".join(parts) or None


def sentences(
    alias: str, ident: str, doc: dict[str, Any], docs: dict[str, dict[str, Any]] | None = None
) -> list[Caveat]:
    """The caveats of one cited document, each (the point it names, "" for none; its sentence), without a subject:
    the caller names the evidence. ``docs``: the evidence a campaign's points name (its overhead caveat)."""
    out: list[tuple[str, str, str]] = []
    flagged, measured = unstable(doc)
    if flagged:
        out.append(
            (
                "unstable",
                "",
                f"{flagged:,} of its {measured:,} measured points were flagged unstable "
                "(their windows varied more than the timing rule allows)",
            )
        )
    moved = drifts(doc)
    if moved:
        name, start, end, change = moved[0]
        way = "above" if change > 0 else "below"
        what = f"drift from {_time(start)} to {_time(end)}, first to last"
        if len(moved) > 1:
            what = f"drift from {_time(start)} to {_time(end)}, the most of {len(moved):,} points whose windows drift"
        out.append(("drift", name, f"{what} (the last third's median {abs(change):.0%} {way} the first third's)"))
    out += [(mark, "", text) for mark, text in conditions.run_marks(doc)]
    hooks = overhead(ident, doc, docs or {})
    if hooks:
        out.append(("instrumentation overhead", "", hooks))
    return [(name, said.Said(f"caveat({alias}).{kind}", text, (ident,), f"caveat: {kind}")) for kind, name, text in out]


def caveats(aliases: dict[str, str], docs: dict[str, dict[str, Any]]) -> dict[str, list[Caveat]]:
    """Alias -> the caveats of the evidence it names, for the aliases that carry any (each document once)."""
    out, seen = {}, set()
    for alias in sorted(aliases):
        ident = aliases[alias]
        if ident in seen:
            continue
        seen.add(ident)
        found = sentences(alias, ident, docs[ident], docs)
        if found:
            out[alias] = found
    return out


def markdown(page: str, aliases: dict[str, str], docs: dict[str, dict[str, Any]]) -> str:
    """The Answer's caveats line, ``**Caveats:** in the [ddp evidence](…), …``; "" when the evidence carries none."""
    parts = []
    for alias, found in caveats(aliases, docs).items():
        ident = aliases[alias]
        link = relative_link(page, evidence_page(ident))
        named = f"in the [{escape_text(str(docs[ident].get('probe') or 'cited'))} evidence]({link})"
        shown = [
            (f"the windows of `{name}` " if name else "") + said.linked(page, escape_text(s.text), s)
            for name, s in found
        ]
        parts.append(named + ", " + "; ".join(shown))
    if not parts:
        return ""
    text = "; ".join(parts)
    return f"**Caveats:** {text[0].upper()}{text[1:]}."


def ledger_rows(page: str, aliases: dict[str, str], docs: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The ledger rows of the numbers the caveats state."""
    return [row for found in caveats(aliases, docs).values() for _, s in found for row in said.rows(page, s)]
