"""Render a record version against other evidence and compare every ledger number and claim of its page.

The page is rendered by the build's own page stage (``render.assemble.pages.render_one``: the same sources,
templates, page functions and ledger rows a build makes), in memory, aside from the site: no ``site/``,
no ``archive/published/``, no site engine (so no mkdocs), and charts described, not drawn. It is rendered
twice with today's code, once with the cited evidence and once with the cited ids swapped for the new ones,
inside ``render.numbers.claims.unchecked`` so a claim the new evidence makes false is recorded as false
rather than failing the render. Numbers pair by ledger key (keys name aliases, not ids, so a swap keeps them).
"""

from __future__ import annotations

import logging
import math
from typing import Any

from measure.errors import ProbebookError
from probebook.reproduce import verdict
from render.derive.reproduction import THREE_WAY as OUTCOMES

CLAIM = verdict.CLAIM
log = logging.getLogger(__name__)


def render_rows(
    page: Any,
    src: Any,
    docs: dict[str, dict[str, Any]],
    aliases: dict[str, str],
    declarations: dict | None,
    pools: dict[str, Any] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """(the page's ledger rows rendered with ``aliases`` -> ids of ``docs``, ledger key -> headline label).

    ``pools``: the archive's between-session SD per probe class (``render.evidence.series.class_pools``), so an
    absolute time or rate gets the across-sessions interval the site publishes; None pools the rendered runs only."""
    from render.assemble import pages as page_render
    from render.evidence.archive import Archive
    from render.functions.derivations import Library
    from render.numbers import claims
    from render.pages import notices
    from render.pages.sandbox import make_environment

    archive = Archive({i: docs[i] for i in sorted(set(aliases.values()))}, {})
    library = Library(archive.docs, None, pools)
    library.later = True  # charts are described, not drawn: their numbers are what is compared
    env = make_environment({p.rel: (p.body, str(p.path)) for p in src.pages})
    with claims.unchecked():
        out = page_render.render_one(
            page, src, archive, library, env, aliases, notices.partial_ids(archive.docs), declarations
        )
    labels = {}
    for label, q in out.headlines or []:
        key = getattr(q, "key", None)
        if key and key not in labels:
            labels[key] = str(label)
    return out.ledger, labels


def _interval(row: dict[str, Any] | None) -> tuple[float, float] | None:
    unc = (row or {}).get("uncertainty")
    if isinstance(unc, list) and len(unc) == 2 and all(isinstance(v, (int, float)) for v in unc):
        return float(unc[0]), float(unc[1])
    return None


def _value(row: dict[str, Any] | None) -> float | None:
    value = (row or {}).get("value")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def three_way(old: dict[str, Any], new: dict[str, Any] | None, probes: dict[str, str]) -> dict[str, Any]:
    """A number's three-way fields: ``outcome``, ``judged_by``, ``effect`` and its interval (``effect_low``,
    ``effect_high``; None where it is unbounded) and the band ``delta`` of the probes its evidence comes from."""
    judged = verdict.judged_by(old)
    delta = verdict.band(probes[i] for i in old.get("evidence") or () if i in probes)
    exact = verdict.exact_by_nature(old) and verdict.exact_by_nature(new or {})
    change = not old.get("unit") and str(old.get("text") or "").strip().endswith("%")  # a saving, a share
    found = verdict.three_way(_value(old), _value(new), _interval(old), _interval(new), judged, delta, exact, change)
    if new is None or found is None:
        return {"outcome": None, "judged_by": judged, "effect": None, "effect_low": None, "effect_high": None}
    return {
        "outcome": found.outcome,
        "judged_by": judged,
        "effect": _finite(found.effect),
        "effect_low": _finite(found.interval[0]),
        "effect_high": _finite(found.interval[1]),
        "delta": delta,
    }


TWINS = "both sides matched one new run"
"""The reason a number (or claim) read between twin aliases is ``not comparable``: two aliases citing two runs of
one configuration key (one per lease, say) both matched the one new run of that key (``match.by_key``), so what the
record derived between them (a trace diff, a ratio of the two) would be the new run against itself."""


def twins(original: dict[str, str], new: dict[str, str]) -> dict[str, tuple[str, str]]:
    """Original id -> (the aliases citing it, the one new id it and another alias's other original id both matched),
    for every such original: the twins of ``TWINS``. An alias that cites the same document as another is no twin."""
    by_new: dict[str, set[str]] = {}
    for alias in sorted(set(original) & set(new)):
        by_new.setdefault(new[alias], set()).add(original[alias])
    out = {}
    for ident, olds in by_new.items():
        if len(olds) > 1:
            for old in olds:
                names = ", ".join(sorted(a for a in original if original[a] == old))
                out[old] = (names, ident)
    return out


def twin_reason(row: dict[str, Any], twin: dict[str, tuple[str, str]]) -> str | None:
    """``TWINS`` with the aliases and the new run it names, when ``row`` reads two or more twins that matched one new
    run (``twins``); None otherwise (a number of one of them alone compares as any other)."""
    read: dict[str, list[str]] = {}
    for ident in dict.fromkeys(row.get("evidence") or ()):
        if ident in twin:
            aliases, new_id = twin[ident]
            read.setdefault(new_id, []).append(aliases)
    for new_id, named in sorted(read.items()):
        if len(named) > 1:
            return f"{TWINS} ({' and '.join(sorted(named))}: {new_id[:19]})"
    return None


def numbers(
    old_rows: list[dict[str, Any]],
    new_rows: list[dict[str, Any]],
    labels: dict[str, str],
    probes: dict[str, str] | None = None,
    twin: dict[str, tuple[str, str]] | None = None,
) -> list[dict]:
    """One comparison per number of the original render (claims and numbers in words apart, ``verdict.compared``),
    in its ledger order (``probes``: evidence id -> probe, for each number's practical band). A number read between
    ``twin`` originals (``twins``) is ``not comparable``, with its ``reason``, whatever the new render made of it:
    a number of the new run against itself, or none at all (a diff of a run with itself is left out), says nothing
    of the original's."""
    new_by_key = {r["key"]: r for r in new_rows if verdict.compared(r)}
    out = []
    for old in old_rows:
        if not verdict.compared(old):
            continue
        new = new_by_key.get(old["key"])
        o, n = _value(old), _value(new)
        oi, ni = _interval(old), _interval(new)
        reason = twin_reason(old, twin or {})
        found = verdict.number_verdict(
            o, n, oi, ni, verdict.exact_by_nature(old) and verdict.exact_by_nature(new or {}), new is not None
        )
        three = three_way(old, None if reason else new, probes or {})
        out.append(
            {
                "key": old["key"],
                "label": labels.get(old["key"], old["key"]),
                "old": o,
                "new": n,
                "old_low": oi[0] if oi else None,
                "old_high": oi[1] if oi else None,
                "new_low": ni[0] if ni else None,
                "new_high": ni[1] if ni else None,
                "unit": str(old.get("unit") or ""),
                "shown_old": str(old.get("text") or ""),
                "shown_new": str(new.get("text") or "") if new else "",
                "change": verdict.relative_change(o, n),
                "verdict": "not comparable" if reason else found,
                "reason": reason,
                "basis": verdict.number_basis(old),
                **three,
            }
        )
    return out


def _truth(row: dict[str, Any] | None) -> bool | None:
    value = (row or {}).get("value")
    return None if value is None or row is None else bool(value)


def claim_rows(
    old_rows: list[dict[str, Any]],
    new_rows: list[dict[str, Any]],
    twin: dict[str, tuple[str, str]] | None = None,
) -> list[dict[str, Any]]:
    """One comparison per claim of the original render: its truth before and after, and the verdict (``not
    comparable``, with its ``reason``, for a claim read between ``twin`` originals, as ``numbers`` says)."""
    new_by_key = {r["key"]: r for r in new_rows if r.get("unit") == CLAIM}
    out = []
    for old in old_rows:
        if old.get("unit") != CLAIM:
            continue
        was = _truth(old)
        found = new_by_key.get(old["key"])
        now = _truth(found)
        sentence = (old.get("claim") or {}).get("sentence") or old["key"].removeprefix("claim: ")
        reason = twin_reason(old, twin or {})
        judged = verdict.claim_outcome(bool(was), now, (found or {}).get("outcome"))
        out.append(
            {
                "key": old["key"],
                "text": str(sentence),
                "old": bool(was),
                "new": now,
                "verdict": "not comparable" if reason else judged,
                "reason": reason,
            }
        )
    return out


def summary(nums: list[dict[str, Any]], claims: list[dict[str, Any]]) -> dict[str, int]:
    """The counts of each verdict (a claim not comparable is counted in ``claims`` only). The verdicts count the
    measured numbers; the recorded ones (``verdict.number_basis``) are counted apart, with how many are the same."""
    out = {"numbers": len(nums), "measured": 0, "within": 0, "outside": 0, "not_comparable": 0, "missing": 0}
    out.update({"recorded": 0, "recorded_same": 0, **dict.fromkeys(OUTCOMES.values(), 0)})
    for n in nums:
        if n.get("basis") == verdict.RECORDED:
            out["recorded"] += 1
            out["recorded_same"] += n["verdict"] == "within"
            continue
        out["measured"] += 1
        out[n["verdict"].replace(" ", "_")] += 1
        if n.get("outcome") in OUTCOMES:
            out[OUTCOMES[n["outcome"]]] += 1
    out.update({"claims": len(claims), "held": 0, "flipped": 0, "claims_not_resolved": 0})
    for c in claims:
        if c["verdict"] != "not comparable":
            out["claims_not_resolved" if c["verdict"] == "not resolved" else c["verdict"]] += 1
    return out


def compare(
    page: Any,
    src: Any,
    docs: dict[str, dict[str, Any]],
    original: dict[str, str],
    new: dict[str, str],
    declarations: dict | None,
    pools: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``numbers``, ``claims`` and ``summary`` of the record rendered on ``original`` against ``new`` ids (``pools``:
    as ``render_rows`` takes them).

    The page is rendered with every new id first. Where it does not render (a page function refuses a new
    document: a later probe version that no longer records a field the record reads), the new ids are swapped
    in one alias at a time, in alias order, and an alias whose new document stops the page keeps its original
    one, with the reason on stderr. An alias that keeps its original document (that, or absent from ``new``
    under ``--partial``) is left out of the comparison: every number or claim that reads it is dropped from the
    new render, so it is ``missing`` (a claim ``not comparable``), never compared with itself. Two aliases whose
    different originals both matched one new run (twins, ``twins``) are compared each on its own, and what the record
    derives between them is ``not comparable``, with the reason, and the aliases named on stderr.
    """
    old_rows, labels = render_rows(page, src, docs, original, declarations, pools)
    swapped, new_rows = _swap(page, src, docs, original, new, declarations, pools)
    kept = {original[a] for a in original if a not in swapped}
    new_rows = [r for r in new_rows if not kept.intersection(r.get("evidence") or ())]
    probes = {i: str(d.get("probe")) for i, d in docs.items()}
    twin = twins(original, {a: new[a] for a in swapped})
    nums = numbers(old_rows, new_rows, labels, probes, twin)
    claims = claim_rows(old_rows, new_rows, twin)
    said = sorted({r["reason"] for r in [*nums, *claims] if r["reason"]})
    for reason in said:
        count = sum(r["reason"] == reason for r in [*nums, *claims])
        log.warning("reproduce: %s: not comparable, %d numbers and claims read between them", reason, count)
    return {"numbers": nums, "claims": claims, "summary": summary(nums, claims)}


def _swap(
    page: Any,
    src: Any,
    docs: dict[str, dict[str, Any]],
    original: dict[str, str],
    new: dict[str, str],
    declarations: dict | None,
    pools: dict[str, Any] | None = None,
) -> tuple[set[str], list[dict[str, Any]]]:
    """(the aliases whose new document the page renders with, the ledger rows of that render)."""
    from render.errors import BuildError

    try:
        return set(new), render_rows(page, src, docs, {**original, **new}, declarations, pools)[0]
    except (BuildError, ProbebookError) as exc:
        first = exc
    swapped: set[str] = set()
    rows: list[dict[str, Any]] = []
    for alias in sorted(new):
        trial = {**original, **{a: new[a] for a in swapped | {alias}}}
        try:
            rows = render_rows(page, src, docs, trial, declarations, pools)[0]
        except (BuildError, ProbebookError) as exc:
            log.warning("reproduce: %s: the record does not render on its new evidence: %s", alias, exc)
            continue
        swapped.add(alias)
    if not swapped:
        log.warning("reproduce: the record does not render on the new evidence: %s", first)
        return set(), []
    return swapped, rows
