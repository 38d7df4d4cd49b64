"""History pages: one generated page per configuration key, and their index (issue 38, part 3).

A record cites runs; a configuration key (``measure.evidence.configkey``) gathers every run of the same measurement,
whichever record cites it. Its page (``evidence/history/cfg-….md``) shows every run of the key as one session:
one chart (kind ``history``, drawn by ``render.charts.draw`` like every chart of the site) and two tables: the
across-sessions estimate of each point (``render.evidence.history.estimate``) and every measurement, each
session's value with its run's interval, date, commit, software stack, card, the pages that cite the run, and a
mark where a stack change moved the series (``history.change_points``). The index (``evidence/history/index.md``)
lists the keys by probe.

Which keys: every key whose runs measured a point (``history.has_history``), cited or not: whether a key has a
page then depends on its own documents alone, so an evidence page links to it without reading the archive, and a
key measured once still shows where a new session would land. About 110 pages for this archive's 420 documents; a
page is a few KB of tables and one chart, so the site grows by about a tenth, not by its square.

Every text taken from the evidence is escaped (``escape_text``); nothing here is markup from data.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from render.charts import theme as chart_theme
from render.charts.output import chart_files
from render.derive import replication
from render.derive.reading import significant
from render.evidence import history as hist
from render.evidence.index import INDEX as EVIDENCE_INDEX
from render.numbers.links import escape_text, evidence_page, relative_link, short_id
from render.pages.layout import nav_title
from render.tables.columns import unit_of

STACK_COLUMNS = (("torch", "torch"), ("cuda", "CUDA"), ("driver", "driver"), ("probe_version", "probe version"))
_RECORD = re.compile(r"^records/([^/]+)/v([0-9]+)\.md$")


def chart_name(key_ident: str) -> str:
    """The stem of a history page's chart files beside it (``cfg-….history.svg`` and the rest)."""
    return f"{key_ident}.history"


Chart = Callable[[str, tuple[str, ...], dict[str, Any]], Any]
"""(kind, evidence ids, options) -> a drawn chart (``render.charts.draw.render``) or its placeholder."""


def display(name: str) -> tuple[str, float]:
    """The unit a ``POINTS`` field is shown in and the factor from its own (``unit_of``; ``seconds`` as ``_s``)."""
    unit = unit_of("time_s" if name == "seconds" else name)
    return unit.label, unit.per_raw


def shown(value: float, factor: float) -> str:
    """A figure in its display unit, four significant figures, never an exponent (``reading.significant``)."""
    return significant(value * factor, 4)


def cited_runs(cited: list[tuple[str, str]], here: str) -> str:
    """The pages citing one run, as short links: ``h200-ceilings v2`` for a record version, else the page's title."""
    links = []
    for rel, title in dict.fromkeys(cited):
        m = _RECORD.match(rel)
        text = f"{m.group(1)} v{m.group(2)}" if m else title
        links.append(f"[{escape_text(text)}]({relative_link(here, rel)})")
    return ", ".join(links) or "—"


def chart_rows(series: hist.KeySeries) -> list[dict[str, Any]]:
    """The ``history`` chart's rows: each point's session (numbered from 1 in ``series.runs`` order) over the
    point's median across sessions, with its run's interval likewise."""
    number = {run: n for n, run in enumerate(series.runs, start=1)}
    # a legend names a point by its first field where that alone tells the points apart (a GEMM's shape name),
    # else by its values: the field names are the table's, and a legend entry has room for one short label
    firsts = [str(point[0]) for point in series.points]
    unique = len(set(firsts)) == len(firsts)
    rows = []
    for point, sessions in series.points.items():
        middle = _median([s.figure for s in sessions])
        label = str(point[0]) if unique else " · ".join(str(v) for v in point if v is not None)
        for s in sessions:
            low, high = s.interval or (s.figure, s.figure)
            rows.append(
                {
                    "session": number[s.run],
                    "point": label,
                    "ratio": s.figure / middle,
                    "low": low / middle,
                    "high": high / middle,
                }
            )
    return rows


def page_markdown(
    series: hist.KeySeries,
    pool: replication.Spread | None,
    cited: dict[str, list[tuple[str, str]]],
    chart_alt: str,
    changes: dict[tuple[Any, ...], list[hist.Boundary]],
) -> str:
    """A key's history page (``history_page``), its chart (``chart_name``) beside it."""
    key = series.key
    here = hist.history_page(key.ident)
    unit, factor = display(series.figure_field)
    runs = len(series.runs)
    out = [
        # the engine makes the page's <title> from its first heading: nav_title, as every generated page's
        f"# {escape_text(nav_title(f'History: {key.probe} on {key.card}'))}",
        "",
        f"`{key.ident}`",
        "",
        escape_text(
            f"Every archived run of one configuration ({key.label()}): {runs} run{'s' if runs != 1 else ''}, each "
            f"shown as one session (a run measured in several fresh processes counts once), "
            f"{len(series.points)} point{'s' if len(series.points) != 1 else ''}. A figure is the median of a point's "
            f"{series.figure_field} over all of the run's windows, shown in {unit}."
        ),
        "",
        f"[All histories]({relative_link(here, hist.INDEX)}) · [All evidence]({relative_link(here, EVIDENCE_INDEX)})",
        "",
        "## Series",
        "",
        chart_theme.markdown(chart_name(key.ident), chart_alt.replace("[", "(").replace("]", ")")),
        "## Across sessions",
        "",
        escape_text(
            "Where a new session lands: the geometric mean of the finished measured sessions and its 95% prediction "
            "interval (replication.prediction), from the point's own between-session SD with "
            f"{replication.OWN_SESSIONS} or more sessions, else the SD pooled over the archive's repeated "
            f"{replication.probe_class(key.probe)} configurations. A change point is a software-stack change "
            "across which the medians of the sessions either side differ beyond what sessions alone move by."
        ),
        "",
        f"| point | sessions | estimate ({unit}) | 95% interval, a new session ({unit}) | SD used | stack changes |",
        "|---|---:|---:|---|---|---|",
    ]
    for point, sessions in series.points.items():
        guess = hist.estimate(sessions, pool)
        where = [series.runs.index(sessions[b.index].run) + 1 for b in changes[point]]
        listed = "; ".join(_boundary_text(b, n, unit, factor) for b, n in zip(changes[point], where, strict=True))
        listed = listed or "none"
        if guess is None:
            cells = ["—", "not estimated: no between-session SD for this class"]
            used = "—"
        else:
            cells = [shown(guess.center, factor), f"{shown(guess.low, factor)} – {shown(guess.high, factor)}"]
            used = f"{guess.spread.source}: {guess.spread.sd_log:.1%} (df {guess.spread.df})"
        counted = sum(1 for s in sessions if s.counted)
        out.append(
            f"| {escape_text(hist.point_label(series.names, point))} | {counted} | {cells[0]} | {cells[1]} | "
            f"{escape_text(used)} | {escape_text(listed)} |"
        )
    first: dict[str, hist.Session] = {}
    for sessions in series.points.values():
        for one in sessions:
            first.setdefault(one.run, one)
    out += [
        "",
        "## Sessions",
        "",
        escape_text("Each run of this configuration is one session, numbered in the order they were written."),
        "",
        "| session | run | date | commit | " + " | ".join(label for _, label in STACK_COLUMNS) + " | card | cited by |",
        "|---:|---|---|---|" + "---|" * len(STACK_COLUMNS) + "---|---|",
    ]
    for n, run in enumerate(series.runs, start=1):
        s = first[run]
        status = "" if s.counted else " (not counted: not a finished measured run)"
        cells = [
            str(n),
            f"[`{short_id(run)}`]({relative_link(here, evidence_page(run))}){status}",
            escape_text(s.date),
            escape_text(s.commit or "—"),
            *(escape_text(s.stack.get(name, "—")) for name, _ in STACK_COLUMNS),
            escape_text(s.card),
            cited_runs(cited.get(run, []), here),
        ]
        out.append("| " + " | ".join(cells) + " |")
    out += [
        "",
        "## Every measurement",
        "",
        escape_text(
            "Each session's figure of each point, with the 95% interval of its median from that run's windows "
            "alone. A stack change is marked on the first session after it; a change point is one the series "
            "moved across (the table above says by how much)."
        ),
        "",
        f"| point | session | date | value ({unit}) | 95% interval, this run ({unit}) | windows | stack change |",
        "|---|---:|---|---:|---|---:|---|",
    ]
    for point, sessions in series.points.items():
        at = {b.index: b for b in changes[point]}
        for n, s in enumerate(sessions):
            interval = f"{shown(s.interval[0], factor)} – {shown(s.interval[1], factor)}" if s.interval else "—"
            cells = [
                escape_text(hist.point_label(series.names, point)),
                str(series.runs.index(s.run) + 1),
                escape_text(s.date[:10]),
                shown(s.figure, factor),
                interval,
                str(s.windows),
                escape_text(_change_mark(at[n]) if n in at else ""),
            ]
            out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def _change_mark(b: hist.Boundary) -> str:
    fields = ", ".join(f"{k} {before} → {after}" for k, (before, after) in b.changed.items())
    verdict = "CHANGE POINT" if b.moved else "not judged" if b.limit is None else "within noise"
    return f"{verdict} ({fields})"


def _boundary_text(b: hist.Boundary, session: int, unit: str, factor: float) -> str:
    return f"before session {session}: {_change_text(b, unit, factor)}"


def _change_text(b: hist.Boundary, unit: str, factor: float) -> str:
    fields = ", ".join(f"{k} {before} → {after}" for k, (before, after) in b.changed.items())
    moved = b.after / b.before - 1
    if b.limit is None:
        verdict = "not judged (no between-session SD)"
    else:
        reach = f"sessions alone move the medians by up to ±{b.limit:.1%} on the log scale"
        verdict = f"CHANGE POINT: medians moved {moved:+.1%}; {reach}" if b.moved else f"within noise ({reach})"
    return f"{fields}; {verdict}; median before {shown(b.before, factor)} {unit}, after {shown(b.after, factor)} {unit}"


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def index_markdown(all_series: dict[str, hist.KeySeries]) -> str:
    """The index of history pages: one table per probe, a row per key (card, sessions, dates, what it shapes)."""
    out = [
        "# History",
        "",
        escape_text(
            f"{len(all_series)} configurations with measured points. Each configuration's page shows every session "
            "that measured it, whichever record cites it, with the across-sessions estimate and the software-stack "
            "changes that moved it."
        ),
        "",
        f"[All evidence]({relative_link(hist.INDEX, EVIDENCE_INDEX)})",
        "",
    ]
    by_probe: dict[str, list[hist.KeySeries]] = {}
    for series in all_series.values():
        by_probe.setdefault(series.key.probe, []).append(series)
    for probe, group in sorted(by_probe.items()):
        out += [f"## {escape_text(probe)}", "", "| configuration | card | sessions | dates |", "|---|---|---:|---|"]
        group.sort(key=lambda s: (s.key.card, -len(s.runs), s.key.ident))
        for series in group:
            dates = sorted({s.date[:10] for ss in series.points.values() for s in ss})
            span = dates[0] if dates[0] == dates[-1] else f"{dates[0]} to {dates[-1]}"
            link = relative_link(hist.INDEX, hist.history_page(series.key.ident))
            shaped = series.key.label().split(" (", 1)[-1].rstrip(")") if "(" in series.key.label() else ""
            out.append(
                f"| [`{series.key.ident}`]({link}) {escape_text(shaped)} | {escape_text(series.key.card)} | "
                f"{len(series.runs)} | {escape_text(span)} |"
            )
        out.append("")
    return "\n".join(out) + "\n"


def key_files(
    series: hist.KeySeries,
    pool: replication.Spread | None,
    cited: dict[str, list[tuple[str, str]]],
    chart: Chart,
) -> dict[str, bytes]:
    """A key's page and its chart's files, by tree path; ``chart`` draws (or describes) the chart."""
    changes = {point: hist.point_changes(sessions, pool) for point, sessions in series.points.items()}
    rows = chart_rows(series)
    number = {run: n for n, run in enumerate(series.runs, start=1)}
    marks = sorted({number[ss[b.index].run] for point, ss in series.points.items() for b in changes[point] if b.moved})
    drawn = chart(
        "history",
        tuple(series.runs),
        {"rows": rows, "changes": marks, "title": f"{series.key.probe}: each session over its point's median"},
    )
    page = hist.history_page(series.key.ident)
    folder = page.rsplit("/", 1)[0]
    name = chart_name(series.key.ident)
    files = {f"{folder}/{name}.{suffix}": data for suffix, data in chart_files(drawn).items()}
    files[page] = page_markdown(series, pool, cited, drawn.alt, changes).encode("utf-8")
    return files


def pages(
    docs: dict[str, dict[str, Any]],
    cited: dict[str, list[tuple[str, str]]],
    pools: dict[str, replication.Spread],
    chart: Chart,
) -> dict[str, bytes]:
    """Every history page, their charts and the index, by tree path."""
    all_series = hist.key_series(docs)
    out: dict[str, bytes] = {hist.INDEX: index_markdown(all_series).encode("utf-8")}
    for series in all_series.values():
        pool = pools.get(replication.probe_class(series.key.probe))
        out.update(key_files(series, pool, cited, chart))
    return out
