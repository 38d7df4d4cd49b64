"""Older probe versions read as today's probe lays them out: applied where render loads evidence, never written
back (the archived bytes never change; ARCHITECTURE.md §Invariants, item 1). Schema migrations, which rewrite a
document of an older envelope version, are ``measure.evidence.envelope.migrate``'s."""

from __future__ import annotations

from typing import Any

OBSERVED_IN_PARAMS_UNTIL = {"kernels": 2, "ablate": 1, "step-scaling": 1}
"""Probe -> its last version that kept what it observed at run time in ``params``
(ARCHITECTURE.md §Invariants, item 7)."""
OBSERVED_PARAMS = {
    "sdpa_backend": "sdpa_backend",
    "compile_engaged": "compile_engaged",
    "compiled_regions": "compiled_regions",
    "observed_dtype": "dtype",
    "loss_ops": "loss_ops",
}
"""Old ``params`` key -> its key in ``data["observed"]`` (what ``measure.workload.observe`` reads from a step)."""


COMM_BUCKETS_POSITIONAL_UNTIL = 2
"""The ddp probe's last version that stored ``data.comm_buckets`` as ``[ready_s, done_s, bytes]`` arrays."""
COMM_BUCKET_FIELDS = ("ready_s", "done_s", "bytes")
"""A comm bucket's named fields (version 3 on): ready and all-reduce done, seconds from the step's start; bytes."""


def for_reading(doc: dict[str, Any]) -> dict[str, Any]:
    """The document as the current probe version lays it out, for reading; the archived bytes never change.

    Probe versions up to ``OBSERVED_IN_PARAMS_UNTIL`` stored their run-time observations (SDPA backend,
    compilation, dtype, loss ops) in ``params``, which holds inputs only; here they move to
    ``data["observed"]``. ddp versions up to ``COMM_BUCKETS_POSITIONAL_UNTIL`` stored each comm bucket as
    a positional array; here it gets ``COMM_BUCKET_FIELDS`` as names. kernels version 4 on a GPU read
    its expert GEMM time from the annotation's GPU span, idle gaps included (``_expert_span_withdrawn``).
    A document needing none of these is returned as it is.
    """
    return _optimizer_settings_stated(_expert_span_withdrawn(_named_comm_buckets(_observed_out_of_params(doc))))


OPTIMIZER_SETTINGS_UNSTATED_UNTIL = 2
"""batch-sweep's last version without optimizer settings: it ran the workload's own and never clipped."""
OPTIMIZER_DEFAULTS = {"clip": 0.0, "beta1": None, "beta2": None, "weight_decay": None}
"""What those versions ran, as version 3's options state it (``measure.probes.common.OptimizerFields``)."""


def _optimizer_settings_stated(doc: dict[str, Any]) -> dict[str, Any]:
    """batch-sweep up to ``OPTIMIZER_SETTINGS_UNSTATED_UNTIL``: its params state the settings it ran with, so its
    configuration key is that of a version 3 run with the defaults (one series, not two)."""
    params = doc.get("params")
    if (
        doc.get("probe") != "batch-sweep"
        or doc.get("probe_version", 0) > OPTIMIZER_SETTINGS_UNSTATED_UNTIL
        or not isinstance(params, dict)
    ):
        return doc
    return {**doc, "params": {**OPTIMIZER_DEFAULTS, **params}}


EXPERT_SPAN_UNTIL = 4
"""The last kernels version whose ``data.expert_gemm`` on a GPU may be a span (a share of 1.64 was stored)."""


def _expert_span_withdrawn(doc: dict[str, Any]) -> dict[str, Any]:
    """kernels up to ``EXPERT_SPAN_UNTIL`` on CUDA: the expert time and share are withdrawn, with the reason."""
    data = doc.get("data")
    params = doc.get("params")
    if (
        doc.get("probe") != "kernels"
        or doc.get("probe_version", 0) > EXPERT_SPAN_UNTIL
        or not isinstance(data, dict)
        or not isinstance(data.get("expert_gemm"), dict)
        or not isinstance(params, dict)
        or params.get("device") != "cuda"
    ):
        return doc
    withdrawn = {
        **data["expert_gemm"],
        "time_s": None,
        "share": None,
        "withdrawn": "kernels v4 read the annotation's GPU span (idle gaps included), not its kernels; fixed in v5",
    }
    return {**doc, "data": {**data, "expert_gemm": withdrawn}}


def _named_comm_buckets(doc: dict[str, Any]) -> dict[str, Any]:
    data = doc.get("data")
    if (
        doc.get("probe") != "ddp"
        or doc.get("probe_version", 0) > COMM_BUCKETS_POSITIONAL_UNTIL
        or not isinstance(data, dict)
        or not isinstance(data.get("comm_buckets"), list)
    ):
        return doc
    steps = data["comm_buckets"]
    named = [
        [dict(zip(COMM_BUCKET_FIELDS, b, strict=True)) if isinstance(b, list) and len(b) == 3 else b for b in step]
        if isinstance(step, list)
        else step
        for step in steps
    ]
    return {**doc, "data": {**data, "comm_buckets": named}}


def _observed_out_of_params(doc: dict[str, Any]) -> dict[str, Any]:
    last = OBSERVED_IN_PARAMS_UNTIL.get(doc.get("probe", ""))
    params = doc.get("params")
    if last is None or doc.get("probe_version", 0) > last or not isinstance(params, dict):
        return doc
    moved = {new: params[old] for old, new in OBSERVED_PARAMS.items() if old in params}
    if not moved:
        return doc
    data = dict(doc.get("data") or {})
    data["observed"] = {**moved, **(data.get("observed") or {})}
    kept = {k: v for k, v in params.items() if k not in OBSERVED_PARAMS}
    return {**doc, "params": kept, "data": data}
