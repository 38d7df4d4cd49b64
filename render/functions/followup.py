"""Page functions of an optimizer-timing follow-up campaign: ``optimizer_timing(ref)``, its points
(ARCHITECTURE.md §Pages); the rows are ``render.derive.followup``'s.

``optimizer_timing(ref)`` takes a collected follow-up (``campaign`` evidence whose manifest's ``data.kind`` is
``optimizer-timing``) and returns its measured points, each a view with ``.context .batch .share .optimizer
.tok_s .overhead .busy`` (``yes`` when the point's idle check found the device busy, as its evidence page shows
it); a page loops over them. ``.flagged`` is ``yes`` when the point's instrumentation overhead is resolved above
``measure.constants.OVERHEAD_LIMIT`` (its 95% interval above it); then its ``.share .optimizer .overhead`` carry the
mark ``instrumentation overhead`` (not trusted as the optimizer's share), and ``overhead not resolved`` where the
interval reaches the limit (``render.derive.followup.overhead_check``).
``optimizer_timing_summary(ref)``: ``.points .busy .flagged .unresolved .share_min .share_max`` over the same points
(``.flagged``/``.unresolved``: points whose overhead is resolved above the limit / not resolved against it; the
smallest and largest share carry their point's mark). Each Quantity cites the campaign and the point's instrumented
evidence.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from measure.errors import ProbebookError
from render.derive import basis, followup, intervals
from render.evidence.points import last_result
from render.functions.page import Page
from render.functions.registry import page_function
from render.functions.views import FieldView
from render.numbers.links import POINTS, field_anchor, point_anchor
from render.numbers.number import FLAG
from render.numbers.quantity import Quantity


class OptimizerPointView(FieldView):
    # the share, optimizer time and overhead carry the instrumented run's rounds' interval
    # (render.derive.followup.point_intervals), else show the receipt's figure as recorded; the rate is the
    # baseline worker's as its receipt recorded it; the idle check is a reading; context and batch are params
    FIELDS = {
        "context": ("context", "", {"fmt": "d", "exact": True}),
        "batch": ("batch", "", {"fmt": "d", "exact": True}),
        "share": ("optimizer_share", "", {"fmt": ".1%", "basis": basis.RECORDED}),
        "optimizer": ("optimizer_median_s", "s", {"display": "ms", "fmt": ".3g", "basis": basis.RECORDED}),
        "tok_s": ("tok_s", "tok/s", {"fmt": ".3g", "basis": basis.RECORDED}),
        "overhead": ("instrumentation_overhead", "", {"fmt": ".1%", "basis": basis.RECORDED}),
        "busy": ("device_busy", "", {"fmt": FLAG, "basis": basis.OBSERVED}),
        # the overhead's interval judged against the limit (render.derive.followup.overhead_check): a test's verdict
        "flagged": ("overhead_flagged", "", {"fmt": FLAG, "basis": basis.TEST}),
    }
    TEMPLATE_ATTRS = frozenset(FIELDS)
    MARKED = frozenset({"share", "optimizer", "overhead"})
    """The figures the instrumented timing gives, which its overhead verdict marks."""

    def __getattr__(self, name: str) -> Quantity:
        q = super().__getattr__(name)
        if name in self.MARKED:
            q = overhead_marked(q, self._values.get("overhead_verdict"))
        if name == "tok_s":  # the receipt's rate is the baseline run's (not archived), not the instrumented run's
            return replace(q, evidence=q.evidence[:1], more_anchors=())
        if name == "busy":  # the instrumented run's own idle check, which the campaign's receipt does not hold
            return replace(
                q, evidence=q.evidence[1:], anchor=q.more_anchors[0] if q.more_anchors else "", more_anchors=()
            )
        return q


def overhead_marked(q: Quantity, verdict: Any) -> Quantity:
    """``q`` with the mark of an overhead ``verdict`` (``above``: flagged, ``not resolved``), explained in its
    title; unchanged for ``below`` or none."""
    mark = followup.MARKS.get(str(verdict))
    if mark is None or q.value is None:
        return q
    words = [m.strip() for m in (q.mark or "").split(",") if m.strip()]
    return replace(
        q,
        mark=", ".join([*words, mark]),
        extra=(*q.extra, (f"{mark}:", followup.overhead_title(str(verdict)))),
    )


class OptimizerSummaryView(FieldView):
    # counts of points are exact; the smallest and largest share carry the interval of the point that has it, and
    # its overhead mark
    FIELDS = {
        "points": ("points", "", {"fmt": "d", "exact": True}),
        "busy": ("busy", "", {"fmt": "d", "exact": True}),
        "flagged": ("flagged", "", {"fmt": "d", "exact": True}),
        "unresolved": ("unresolved", "", {"fmt": "d", "exact": True}),
        "share_min": ("share_min", "", {"fmt": ".1%", "basis": basis.RECORDED}),
        "share_max": ("share_max", "", {"fmt": ".1%", "basis": basis.RECORDED}),
    }
    TEMPLATE_ATTRS = frozenset(FIELDS)

    def __getattr__(self, name: str) -> Quantity:
        q = super().__getattr__(name)
        if name in ("share_min", "share_max"):
            q = overhead_marked(q, self._values.get(f"{name}_verdict"))
        return q


# Where each field of a point shows on the instrumented run's own page (render.numbers.links.field_anchor); its
# tok_s is the baseline run's, which the archive does not hold, so that one cites and lands on the campaign alone.
_INSTRUMENTED = {
    "context": "params.seq_len",
    "batch": "params.batch",
    "share": "data.summary.optimizer_share",
    "optimizer": "data.summary.optimizer_median_s",
    "overhead": "data.summary.instrumentation_overhead",
    "busy": "data.device_check.busy",
    "flagged": "data.summary.instrumentation_overhead",  # judged here from the overhead's rounds
}


def _landing(page: Page, index: int, instrumented: str) -> dict[str, tuple[str, ...]]:
    """Each field's places: the point's cell in the campaign's points table, then the instrumented run's field."""
    doc = page.library.docs[instrumented]
    out: dict[str, tuple[str, ...]] = {}
    for name, (source, _, _) in OptimizerPointView.FIELDS.items():
        # context and batch are in the point's name (``20m-s1024-b8``); busy only on the instrumented run's page,
        # which alone it cites (OptimizerPointView.__getattr__)
        cell = (
            point_anchor(index)
            if name in ("context", "batch", "busy")
            else point_anchor(index, "instrumentation_overhead" if name == "flagged" else source)
        )
        path = _INSTRUMENTED.get(name)
        out[name] = (cell, field_anchor(doc, path) if path else "")
    return out


@page_function
def optimizer_timing(page: Page, ref: Any, preset: str | None = None) -> list[OptimizerPointView]:
    """An optimizer-timing follow-up's measured points (optionally of one ``preset``), by context and batch."""
    picked = _points(page, ref, preset, "optimizer_timing()")
    index = _point_index(page, picked)
    views = []
    for alias, ref_id, r in picked:
        spans = _intervals(page, r)
        verdict = followup.overhead_check(r.instrumentation_overhead, spans.get("instrumentation_overhead"))
        views.append(
            OptimizerPointView(
                {**vars(r), "overhead_verdict": verdict, "overhead_flagged": int(verdict == "above")},
                (ref_id, r.instrumented_evidence),
                f"optimizer-timing follow-up point {r.preset}, context {r.context}, batch {r.batch}: its receipt's "
                "result" + (_ROUNDS if any(spans.values()) else ""),
                f"optimizer_timing({alias}, {r.preset}, {r.context}, {r.batch})",
                landing=_landing(page, index[r.instrumented_evidence], r.instrumented_evidence),
                intervals={name: spans.get(source) for name, (source, _, _) in OptimizerPointView.FIELDS.items()},
            )
        )
    return views


_ROUNDS = (
    f"; 95% interval: the instrumented run's interleaved rounds resampled jointly ({intervals.RESAMPLES:,} resamples)"
)


def _intervals(page: Page, point: followup.OptimizerPoint) -> dict[str, tuple[float, float] | None]:
    """A point's intervals (``render.derive.followup.point_intervals``), once per build."""
    doc = page.library.docs[point.instrumented_evidence]
    samples = (doc.get("data") or {}).get("samples") or []
    key = f"{point.instrumented_evidence}|optimizer rounds"
    spans: dict[str, tuple[float, float] | None] = page.library.memo(
        ("optimizer rounds", point.instrumented_evidence, point),
        lambda: followup.point_intervals(samples, point, key),
    )
    return spans


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
    verdicts = [
        followup.overhead_check(r.instrumentation_overhead, _intervals(page, r).get("instrumentation_overhead"))
        for r in rows
    ]
    values: dict[str, Any] = {
        "points": len(rows),
        "busy": followup.busy_points(rows),
        "flagged": verdicts.count("above"),
        "unresolved": verdicts.count("not resolved"),
        "share_min": low,
        "share_max": high,
    }
    alias, ref_id = picked[0][0], picked[0][1]
    what = f"optimizer-timing follow-up {alias}: {len(rows)} measured points' receipts and idle checks"
    # the campaign holds every receipt these numbers are read from; each point's own evidence is cited by its row.
    # The smallest and largest share land on the point that has it; the counts on the sentence counting the points.
    index = _point_index(page, picked)
    low_point = min(rows, key=lambda r: r.optimizer_share)
    high_point = max(rows, key=lambda r: r.optimizer_share)
    low_at, high_at = low_point.instrumented_evidence, high_point.instrumented_evidence
    values["share_min_verdict"] = verdicts[rows.index(low_point)]
    values["share_max_verdict"] = verdicts[rows.index(high_point)]
    spans = {
        "share_min": _intervals(page, low_point).get("optimizer_share"),
        "share_max": _intervals(page, high_point).get("optimizer_share"),
    }
    if any(spans.values()):
        what += "; smallest and largest share: the interval of the point that has it" + _ROUNDS
    landing = {
        "points": POINTS,
        "busy": POINTS,
        "flagged": POINTS,
        "unresolved": POINTS,
        "share_min": point_anchor(index[low_at], "optimizer_share"),
        "share_max": point_anchor(index[high_at], "optimizer_share"),
    }
    return OptimizerSummaryView(
        values, (ref_id,), what, f"optimizer_timing_summary({alias}, {preset})", landing=landing, intervals=spans
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
