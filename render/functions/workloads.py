"""Page function of what a run's workload counts: ``params(ref)`` (ARCHITECTURE.md §Pages).

``params(ref)``: ``.total .trainable .active`` (counts) and ``.flops`` (dense matmul FLOPs per token,
``4·P_all + 2·P_trainable``, frozen weights and inactive experts accounted for, ``measure.evidence.flops``) and
``.trainable_only_flops`` (``6·P_trainable``, the count that misleads for a frozen base). ``mfu()`` takes
``.flops`` by default when the evidence has no ``model_flops_per_token``; the counts come from
``render.derive.workload``.
"""

from __future__ import annotations

from typing import Any

from measure.errors import ProbebookError
from render.derive import workload
from render.functions.page import Page
from render.functions.registry import page_function
from render.functions.views import FieldView


class ParamsView(FieldView):
    # recorded counts, and arithmetic on them alone: exact (in arithmetic, plain numbers)
    FIELDS = {
        "total": ("total", "", {"fmt": ",d", "exact": True}),
        "trainable": ("trainable", "", {"fmt": ",d", "exact": True}),
        "active": ("active", "", {"fmt": ",d", "exact": True}),
        "flops": ("dense_flops", "", {"fmt": ",d", "exact": True}),
        "trainable_only_flops": ("trainable_only_flops", "", {"fmt": ",d", "exact": True}),
    }
    TEMPLATE_ATTRS = frozenset(FIELDS)


@page_function
def params(page: Page, ref: Any) -> ParamsView:
    """A run's total, trainable and active parameters, and its dense model FLOPs per token with frozen weights."""
    ref = page.ref(ref, None, "params()")
    try:
        counts = workload.param_counts(page.doc(ref).get("params") or {}, f"{ref.alias} ({ref.short})")
    except ProbebookError as exc:
        raise ProbebookError(f"params(): {exc}") from None
    what = "params.n_params_total, n_params_trainable, n_params_active; FLOPs: 4·P_all + 2·P_trainable"
    notes = {"active": "a dense model: every parameter is active"}
    recorded = page.doc(ref).get("params") or {}
    if recorded.get("model_flops_per_token", 0) is None:  # a plug-in that gave no layers/heads/head_dim (issue 40)
        what += " (attention's term missing: the run recorded no attention shape, model_flops_per_token null)"
    landing = {  # each count on its params row; the FLOPs, made from two of them, on the params table
        name: f"params-n_params_{name}" if f"n_params_{name}" in recorded else "params"
        for name in ("total", "trainable", "active")
    }
    landing.update(flops="params", trainable_only_flops="params")
    return ParamsView(vars(counts), (ref.id,), what, f"params({ref.alias})", notes, landing)
