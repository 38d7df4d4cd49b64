"""Page functions of an optimizer-timing follow-up campaign: ``optimizer_timing(ref)``, its points
(ARCHITECTURE.md §Pages); the rows are ``render.derive.followup``'s.

``optimizer_timing(ref)`` takes a collected follow-up (``campaign`` evidence whose manifest's ``data.kind`` is
``optimizer-timing``) and returns its measured points, each a view with ``.context .batch .share .optimizer
.tok_s .overhead .busy`` (1 when the point's idle check found the device busy); a page loops over them.
``optimizer_timing_summary(ref)``: ``.points .busy .share_min .share_max`` over the same points. Each Quantity
cites the campaign and the point's instrumented evidence.
"""

from __future__ import annotations

from typing import Any

from measure.errors import ProbebookError
from render.derive import followup
from render.functions.page import Page
from render.functions.registry import page_function
from render.functions.views import FieldView


class OptimizerPointView(FieldView):
    FIELDS = {
        "context": ("context", "", {"fmt": "d"}),
        "batch": ("batch", "", {"fmt": "d"}),
        "share": ("optimizer_share", "", {"fmt": ".1%"}),
        "optimizer": ("optimizer_median_s", "s", {"display": "ms", "fmt": ".3g"}),
        "tok_s": ("tok_s", "tok/s", {"fmt": ".3g"}),
        "overhead": ("instrumentation_overhead", "", {"fmt": ".1%"}),
        "busy": ("device_busy", "", {"fmt": "d"}),
    }
    TEMPLATE_ATTRS = frozenset(FIELDS)


class OptimizerSummaryView(FieldView):
    FIELDS = {
        "points": ("points", "", {"fmt": "d"}),
        "busy": ("busy", "", {"fmt": "d"}),
        "share_min": ("share_min", "", {"fmt": ".1%"}),
        "share_max": ("share_max", "", {"fmt": ".1%"}),
    }
    TEMPLATE_ATTRS = frozenset(FIELDS)


@page_function
def optimizer_timing(page: Page, ref: Any, preset: str | None = None) -> list[OptimizerPointView]:
    """An optimizer-timing follow-up's measured points (optionally of one ``preset``), by context and batch."""
    return [
        OptimizerPointView(
            vars(r),
            (ref_id, r.instrumented_evidence),
            f"optimizer-timing follow-up point {r.preset}, context {r.context}, batch {r.batch}: its receipt's result",
            f"optimizer_timing({alias}, {r.preset}, {r.context}, {r.batch})",
        )
        for alias, ref_id, r in _points(page, ref, preset, "optimizer_timing()")
    ]


@page_function
def optimizer_timing_summary(page: Page, ref: Any, preset: str | None = None) -> OptimizerSummaryView:
    """A follow-up's ``.points``, ``.busy`` (points whose device was busy before timing), ``.share_min .share_max``."""
    picked = _points(page, ref, preset, "optimizer_timing_summary()")
    rows = [r for _, _, r in picked]
    low, high = followup.share_range(rows)
    values = {"points": len(rows), "busy": followup.busy_points(rows), "share_min": low, "share_max": high}
    alias, ref_id = picked[0][0], picked[0][1]
    what = f"optimizer-timing follow-up {alias}: {len(rows)} measured points' receipts and idle checks"
    # the campaign holds every receipt these numbers are read from; each point's own evidence is cited by its row
    return OptimizerSummaryView(values, (ref_id,), what, f"optimizer_timing_summary({alias}, {preset})")


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
