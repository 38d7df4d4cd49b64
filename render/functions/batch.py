"""Page functions of the batch-sweep records: ``batch_summary()``, ``batch_models()``, ``campaign_time()``
(ARCHITECTURE.md §Pages).

Plain functions registered by ``render.functions.registry.page_function``, each called with the page first; the
summaries themselves are ``render.derive.batchsweep.summarize`` (``batch_summary()`` shows one),
the wall-time breakdown ``render.derive.campaign``.
"""

from __future__ import annotations

from typing import Any

from measure.errors import ProbebookError
from render.derive import batchsweep, lossmem
from render.derive import campaign as campaignmod
from render.functions.page import Page
from render.functions.registry import page_function
from render.functions.views import BatchView, CampaignTimeView, call_text, number
from render.numbers.links import rows_anchor, with_column


@page_function
def batch_summary(
    page: Page, ref: Any, model: str | None = None, context: Any = None, margin: Any = batchsweep.MARGIN
) -> BatchView:
    """The batch sweep summary of one (model, context) group; ``context="fastest"``: the model's fastest context.
    ``.headroom`` (bytes) and ``.headroom_share`` at the largest fitting batch, and ``.recommended_batch``: the
    largest that leaves ``margin`` (``.margin``, default 10%) of the card free."""
    ref = page.ref(ref, "batch-sweep", "batch_summary()")
    card = lossmem.machine_bytes([page.doc(ref)])
    groups = page.library.memo(("batch", ref.id), lambda: batchsweep.summarize(page.rows(ref), device_bytes=card))
    fastest = context == "fastest"
    picked = [
        g
        for g in groups
        if (model is None or g.model == model)
        and (context is None or fastest or g.context == int(number(context, "context")))
    ]
    if fastest:
        best = batchsweep.fastest_group(picked)
        picked = [best] if best is not None else []
    if len(picked) != 1:
        shown = "; ".join(f"model={g.model!r} context={g.context}" for g in groups)
        raise ProbebookError(
            f"batch_summary(): {len(picked)} groups match; pick one with model= and context= (groups: {shown})"
        )
    g = picked[0]
    what = f"batch sweep to OOM of {g.model} at context {g.context}"
    used = [  # the curve's rows: every batch of this model at this context, its tok/s in view
        i
        for i, r in enumerate(page.rows(ref))
        if isinstance(r, dict) and str(r.get("model")) == g.model and r.get("context") == g.context
    ]
    group_rows = [page.rows(ref)[i] for i in used]
    ci = None
    if g.fastest_stable_batch is not None and g.fastest_tok_s is not None:
        ci = batchsweep.point_interval(group_rows, g.fastest_stable_batch, g.fastest_tok_s)
    room = batchsweep.headroom(group_rows, g.largest_fitting_batch, card, float(number(margin, "margin")))
    key_margin = {} if margin == batchsweep.MARGIN else {"margin": margin}
    return BatchView(
        vars(g) | vars(room),
        (ref.id,),
        what,
        f"batch_summary({call_text(ref.alias, model=model, context=context, **key_margin)})",
        {
            "headroom": "the largest fitting batch's row records no peak, or the card's memory is unknown",
            "headroom_share": "the largest fitting batch's row records no peak, or the card's memory is unknown",
            "recommended_batch": f"no fitting batch leaves {float(number(margin, 'margin')):.0%} of the card free",
            "first_oom": "no batch ran out of memory",
            "fastest_batch": batchsweep.no_fastest_reason(g),
            "fastest_tok_s": batchsweep.no_fastest_reason(g),
            "largest_batch": "no batch fits",
        },
        (with_column(rows_anchor(used), "tok_s"),),
        intervals={"fastest_tok_s": ci},
    )


@page_function
def batch_models(page: Page, ref: Any, stable: bool = False) -> list[str]:
    """The models (presets) a batch sweep covers, smallest first; ``stable=True``: only those with a
    fastest stable batch at some context, i.e. those ``batch_summary(ref, model=m, context="fastest")`` takes.

    Names, not numbers: a page loops over them (a record's per-preset charts and rows), so a
    preset with no stable point drops out of a projection table instead of failing the build.
    """
    ref = page.ref(ref, "batch-sweep", "batch_models()")
    card = lossmem.machine_bytes([page.doc(ref)])
    groups = page.library.memo(("batch", ref.id), lambda: batchsweep.summarize(page.rows(ref), device_bytes=card))
    return batchsweep.models(groups, stable=bool(stable))


@page_function
def campaign_time(page: Page, ref: Any) -> CampaignTimeView:
    """Where a collected campaign's wall time went: ``.wall .device_busy .points .attempts .runs`` and, per
    measured point, ``.job_start .imports .device_wait .setup .warmup .timed .observe .trace`` (seconds)."""
    ref = page.ref(ref, None, "campaign_time()")
    doc = page.doc(ref)
    if doc.get("probe") != "campaign":
        raise ProbebookError(f"campaign_time() needs a collected campaign; {ref.alias} ({ref.short}) is not one")
    data = doc.get("data") or {}
    t = campaignmod.wall_time(data.get("points") or [], page.rows(ref))
    values = {
        "wall_s": t.wall_s,
        "device_busy_s": t.device_busy_s,
        "points": t.points,
        "attempts": t.attempts,
        "runs": t.runs,
        **campaignmod.per_point(t),
    }
    notes = {
        "runs": "the receipts predate the runner's start time",
        "wall": "no attempt has ended",
        "trace": "the points parsed their profile on the device (batch-sweep version 1)",
    }
    what = (
        f"wall time of campaign {doc['params'].get('campaign')}; "
        f"per point: mean over the {t.points} measured points that record each phase"
    )
    return CampaignTimeView(values, (ref.id,), what, f"campaign_time({ref.alias})", notes)
