"""Page functions of an optimizer-timing follow-up campaign: ``optimizer_timing(ref)``, its points
(ARCHITECTURE.md §Pages); the rows are ``render.derive.followup``'s.

``optimizer_timing(ref)`` takes a collected follow-up (``campaign`` evidence whose manifest's ``data.kind`` is
``optimizer-timing``) and returns its measured points, each a view with ``.context .batch .share .optimizer
.tok_s .overhead .busy`` (``yes`` when the point's idle check found the device busy, as its evidence page shows
it); a page loops over them.
``optimizer_timing_summary(ref)``: ``.points .busy .share_min .share_max`` over the same points. Each Quantity
cites the campaign and the point's instrumented evidence.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from measure.errors import ProbebookError
from render.derive import followup
from render.evidence import pages as evidence_pages
from render.evidence.points import last_result
from render.functions.page import Page
from render.functions.registry import page_function
from render.functions.views import FieldView
from render.numbers.links import POINTS, point_anchor
from render.numbers.quantity import FLAG, Quantity


class OptimizerPointView(FieldView):
    FIELDS = {
        "context": ("context", "", {"fmt": "d"}),
        "batch": ("batch", "", {"fmt": "d"}),
        "share": ("optimizer_share", "", {"fmt": ".1%"}),
        "optimizer": ("optimizer_median_s", "s", {"display": "ms", "fmt": ".3g"}),
        "tok_s": ("tok_s", "tok/s", {"fmt": ".3g"}),
        "overhead": ("instrumentation_overhead", "", {"fmt": ".1%"}),
        "busy": ("device_busy", "", {"fmt": FLAG}),
    }
    TEMPLATE_ATTRS = frozenset(FIELDS)

    def __getattr__(self, name: str) -> Quantity:
        q = super().__getattr__(name)
        if name == "tok_s":  # the receipt's rate is the baseline run's (not archived), not the instrumented run's
            return replace(q, evidence=q.evidence[:1], more_anchors=())
        if name == "busy":  # the instrumented run's own idle check, which the campaign's receipt does not hold
            return replace(
                q, evidence=q.evidence[1:], anchor=q.more_anchors[0] if q.more_anchors else "", more_anchors=()
            )
        return q


class OptimizerSummaryView(FieldView):
    FIELDS = {
        "points": ("points", "", {"fmt": "d"}),
        "busy": ("busy", "", {"fmt": "d"}),
        "share_min": ("share_min", "", {"fmt": ".1%"}),
        "share_max": ("share_max", "", {"fmt": ".1%"}),
    }
    TEMPLATE_ATTRS = frozenset(FIELDS)


# Where each field of a point shows on the instrumented run's own page (render.evidence.pages.field_anchor); its
# tok_s is the baseline run's, which the archive does not hold, so that one cites and lands on the campaign alone.
_INSTRUMENTED = {
    "context": "params.seq_len",
    "batch": "params.batch",
    "share": "data.summary.optimizer_share",
    "optimizer": "data.summary.optimizer_median_s",
    "overhead": "data.summary.instrumentation_overhead",
    "busy": "data.device_check.busy",
}


def _landing(page: Page, index: int, instrumented: str) -> dict[str, tuple[str, ...]]:
    """Each field's places: the point's cell in the campaign's points table, then the instrumented run's field."""
    doc = page.library.docs[instrumented]
    out: dict[str, tuple[str, ...]] = {}
    for name, (source, _, _) in OptimizerPointView.FIELDS.items():
        # context and batch are in the point's name (``20m-s1024-b8``); busy only on the instrumented run's page,
        # which alone it cites (OptimizerPointView.__getattr__)
        cell = point_anchor(index) if name in ("context", "batch", "busy") else point_anchor(index, source)
        path = _INSTRUMENTED.get(name)
        out[name] = (cell, evidence_pages.field_anchor(doc, path) if path else "")
    return out


@page_function
def optimizer_timing(page: Page, ref: Any, preset: str | None = None) -> list[OptimizerPointView]:
    """An optimizer-timing follow-up's measured points (optionally of one ``preset``), by context and batch."""
    picked = _points(page, ref, preset, "optimizer_timing()")
    index = _point_index(page, picked)
    return [
        OptimizerPointView(
            vars(r),
            (ref_id, r.instrumented_evidence),
            f"optimizer-timing follow-up point {r.preset}, context {r.context}, batch {r.batch}: its receipt's result",
            f"optimizer_timing({alias}, {r.preset}, {r.context}, {r.batch})",
            landing=_landing(page, index[r.instrumented_evidence], r.instrumented_evidence),
        )
        for alias, ref_id, r in picked
    ]


def _point_index(page: Page, picked: list[tuple[str, str, followup.OptimizerPoint]]) -> dict[str, int]:
    """Instrumented evidence id -> its point's position in the campaign's ``data.points`` (its row on the page)."""
    doc = page.library.docs[picked[0][1]]
    points = (doc.get("data") or {}).get("points") or []
    return {
        str(last_result(p).get("instrumented_evidence")): i
        for i, p in enumerate(points)
        if isinstance(p, dict) and last_result(p).get("instrumented_evidence")
    }


@page_function
def optimizer_timing_summary(page: Page, ref: Any, preset: str | None = None) -> OptimizerSummaryView:
    """A follow-up's ``.points``, ``.busy`` (points whose device was busy before timing), ``.share_min .share_max``."""
    picked = _points(page, ref, preset, "optimizer_timing_summary()")
    rows = [r for _, _, r in picked]
    low, high = followup.share_range(rows)
    values = {"points": len(rows), "busy": followup.busy_points(rows), "share_min": low, "share_max": high}
    alias, ref_id = picked[0][0], picked[0][1]
    what = f"optimizer-timing follow-up {alias}: {len(rows)} measured points' receipts and idle checks"
    # the campaign holds every receipt these numbers are read from; each point's own evidence is cited by its row.
    # The smallest and largest share land on the point that has it; the counts on the sentence counting the points.
    index = _point_index(page, picked)
    low_at = min(rows, key=lambda r: r.optimizer_share).instrumented_evidence
    high_at = max(rows, key=lambda r: r.optimizer_share).instrumented_evidence
    landing = {
        "points": POINTS,
        "busy": POINTS,
        "share_min": point_anchor(index[low_at], "optimizer_share"),
        "share_max": point_anchor(index[high_at], "optimizer_share"),
    }
    return OptimizerSummaryView(
        values, (ref_id,), what, f"optimizer_timing_summary({alias}, {preset})", landing=landing
    )


def _points(page: Page, ref: Any, preset: str | None, what: str) -> list[tuple[str, str, followup.OptimizerPoint]]:
    ref = page.ref(ref, None, what)
    doc = page.doc(ref)
    manifest = page.library.docs.get(str((doc.get("params") or {}).get("manifest")))
    kind = ((manifest or {}).get("data") or {}).get("kind")
    if doc.get("probe") != "campaign" or kind != followup.KIND:
        raise ProbebookError(
            f"{what} needs a collected optimizer-timing follow-up; {ref.alias} ({ref.short}) is not one"
        )
    points = (doc.get("data") or {}).get("points") or []
    wanted = {((p.get("attempts") or [{}])[-1].get("result") or {}).get("instrumented_evidence") for p in points}
    docs = {i: page.library.docs[i] for i in wanted if i in page.library.docs}
    try:
        rows = followup.optimizer_points(points, docs)
    except ProbebookError as exc:
        raise ProbebookError(f"{what}: {ref.alias} ({ref.short}): {exc}") from None
    picked = [r for r in rows if preset is None or r.preset == preset]
    if not picked:
        raise ProbebookError(f"{what}: {ref.alias} ({ref.short}) has no measured point of {preset!r}")
    return [(ref.alias, ref.id, r) for r in picked]
