"""The *Trace diff* section of a reproduction's comparison page (issue 43): where the original and the re-measured
run both hold a kernels profile under one name, what moved between them, category by category and kernel by kernel
(``render.derive.kernels.trace_diff``, the table ``trace-diff`` a record can call), beside each side's timed step
with its interval, so a reader sees *why* a number moved, not only *that* it did.

The step is the probe's own ``data.event_step``: the median of its timed windows and the exact order-statistic
interval of that median (``render.derive.intervals.median_interval``). The profile itself is one trace per side,
read once: its per-step kernel times are observed, with no windows to give them an interval.
"""

from __future__ import annotations

from typing import Any

from measure.errors import ProbebookError
from render.derive import basis, intervals, kernels
from render.numbers import ledger
from render.numbers.links import escape_text, evidence_page, field_anchor, relative_link, short_id
from render.numbers.quantity import Quantity
from render.tables.columns import evidence_rows

_ROW = {"kernel": (str,), "category": (str,), "device_time_s": (int, float)}
"""The fields of a profile's row the diff reads (the table ``trace-diff`` checks the same, with ``calls``)."""
PROBE = "kernels"
"""The probe whose evidence carries a profile to diff."""
TOP = 10
"""Kernels shown per diff: the ten that moved most (the table's own default)."""


def pairs(original: dict[str, str], new: dict[str, str], docs: dict[str, dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(name, original id, new id) for each evidence name both sides hold as kernels profiles this archive keeps,
    in name order; a name on one side only, or evidence of another probe, has no trace to diff."""
    out = []
    for name in sorted(set(original) & set(new)):
        a, b = docs.get(original[name]), docs.get(new[name])
        if a is not None and b is not None and a.get("probe") == PROBE and b.get("probe") == PROBE:
            out.append((name, original[name], new[name]))
    return out


def step(doc: dict[str, Any], ident: str, side: str, name: str) -> Quantity:
    """A side's timed step (``data.event_step.median_s``) with the interval of its windows' median."""
    timed = (doc.get("data") or {}).get("event_step")
    timed = timed if isinstance(timed, dict) else {}
    median = timed.get("median_s")
    windows = [w for w in timed.get("windows_s") or [] if isinstance(w, (int, float)) and not isinstance(w, bool)]
    value = float(median) if isinstance(median, (int, float)) and not isinstance(median, bool) else None
    interval = intervals.median_interval(windows) if value is not None else None
    shown = basis.INTERVAL if interval is not None else basis.FEW if windows else basis.RECORDED
    return Quantity(
        value,
        "s",
        display="ms",
        uncertainty=interval,
        evidence=(ident,),
        derivation=f"data.event_step.median_s, the median of {len(windows)} timed windows ({side} run)",
        key=f"trace_diff({name}).{side}_step",
        anchor=field_anchor(doc, "data.event_step.median_s") if value is not None else "",  # its evidence page's row
        note=None if value is not None else "no timed step in this profile (data.event_step)",
        basis=shown,
    )


def section(
    rel: str, original: dict[str, str], new: dict[str, str], docs: dict[str, dict[str, Any]]
) -> tuple[list[str], list[dict[str, Any]]]:
    """The section's Markdown lines and ledger rows; nothing when no name is a kernels profile on both sides."""
    found = pairs(original, new, docs)
    if not found:
        return [], []
    out = [
        "",
        "## Trace diff",
        "",
        "Where both runs hold a kernels profile under one name: each category's device time per profiled step in "
        "the original (a) and the re-measured run (b), then the kernels that moved most. Each side's timed step, "
        "with its interval, is shown above its table; the profiles themselves are one trace each, observed once.",
    ]
    rows: list[dict[str, Any]] = []
    for name, a, b in found:
        sides = [step(docs[a], a, "original", name), step(docs[b], b, "new", name)]
        rows += [ledger.number_row(q, rel, q.key) for q in sides]
        links = [f"[`{short_id(i)}`]({relative_link(rel, evidence_page(i))})" for i in (a, b)]
        out += [
            "",
            f"### {escape_text(name)}",
            "",
            f"Step: {sides[0].markdown(rel)} in the original ({links[0]}), {sides[1].markdown(rel)} re-measured "
            f"({links[1]}).",
            "",
        ]
        try:
            diff = _diff(docs[a], docs[b])
        except ProbebookError as exc:  # a malformed profile: the page says why rather than failing the build
            out.append(f"*No trace diff: {escape_text(str(exc))}*")
            continue
        out += [
            "| category | kernel | a, per step | b, per step | change, per step | change |",
            "|:---|:---|---:|---:|---:|---:|",
        ]
        for i, row in enumerate(diff):
            shown = [_cell(name, i, row, field, (a, b)) for field in ("a_s", "b_s", "change_s", "change")]
            rows += [ledger.number_row(q, rel, q.key) for q in shown]
            kernel = f"`{escape_text(row['kernel'])}`" if row["kernel"] else ""
            out.append(
                f"| {escape_text(row['category'])} | {kernel} | " + " | ".join(q.markdown(rel) for q in shown) + " |"
            )
    return out, rows


def _diff(a: dict[str, Any], b: dict[str, Any]) -> list[dict[str, Any]]:
    """``render.derive.kernels.trace_diff`` of two profiles' checked rows, each over its own profiled steps."""
    what = "trace diff"
    steps: list[Any] = [(doc.get("params") or {}).get("steps") for doc in (a, b)]  # checked by the derivation
    return kernels.trace_diff(evidence_rows(what, a, _ROW), steps[0], evidence_rows(what, b, _ROW), steps[1], TOP)


_WHAT = {
    "a_s": "device time per profiled step in the original profile (a)",
    "b_s": "device time per profiled step in the re-measured profile (b)",
    "change_s": "b − a, device time per profiled step",
    "change": "b / a − 1 of device time per profiled step",
}


def _cell(name: str, i: int, row: dict[str, Any], field: str, ids: tuple[str, str]) -> Quantity:
    """One number of the diff: summed from each profile's rows, read once (observed, no windows)."""
    value = row[field]
    where = f"category {row['category']}" + (f", kernel {row['kernel']}" if row["kernel"] else "")
    return Quantity(
        value,
        "" if field == "change" else "s",
        fmt="+.1%" if field == "change" else ".4g",
        display=None if field == "change" else "ms",
        evidence=ids if field in ("change_s", "change") else (ids[0 if field == "a_s" else 1],),
        derivation=f"{_WHAT[field]}, {where} (render.derive.kernels.trace_diff)",
        key=f"trace_diff({name})[row {i + 1}].{field}",
        note=None if value is not None else "no change: a is 0 s (absent from the original profile)",
        basis=basis.OBSERVED,
    )
