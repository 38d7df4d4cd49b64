"""``mask``: which SDPA backend and kernels each attention mask actually takes, and what it costs.

Six mask kinds run on the workload's own step at one fixed shape (``--batch`` x ``--seq-len``): the
reference decoder honours them all; a plug-in (``--workload``) lists in ``Workload.mask_kinds`` the
mask requests its step reads from a batch's third item (``lengths``, ``doc_ids``, ``explicit_mask``,
``sliding_window``/``global_every``), and ``causal`` needs none:

* ``causal``: ``is_causal=True``, no mask tensor (the fused fast path);
* ``explicit``: the same causal pattern passed as a boolean 4D mask;
* ``padded``: right-padded rows (lengths evenly spaced from the full width down to
  ``--min-length-fraction`` of it) with a padding mask; padded targets are ignored by the loss;
* ``padded-causal``: the same padded batch with ``is_causal=True`` and no mask: under a causal
  mask a real token never attends to a later pad, so only the ignored targets are needed;
* ``sliding``: local layers see the last ``--sliding-window`` keys (default a quarter of the width),
  every ``--global-every``-th layer global (default none);
* ``document``: ``--documents`` packed documents per row with a document mask.

For each kind a few steps run under ``torch.profiler``: the backend is read from the aten SDPA
operators that ran (never from flags), and on CUDA the attention kernels' names and device time
are recorded (render reads their architecture tags, ``sm90`` ..., from the names). The kinds
are then timed in interleaved rounds, so drift cannot favour one. For the padded batch this
records its step time beside ``causal`` and its lengths (the loss positions it keeps); render
derives the slowdown against the padding share (``render/derive/masks.py``).

Padded equivalence: one forward in float32 (no autocast) of the padded batch with the padding mask
and with ``is_causal`` gives two losses over the real tokens; their difference is recorded
(``data.padded_equivalence``), so the claim that the mask changes nothing is measured, not argued.

Band check: the masks the model passes to SDPA in a ``sliding`` forward are captured by hooks and
checked on the CPU (``band_check``): no query row allows more than W keys, none looks ahead, none
reaches further back than W-1. A failed check stores the evidence as ``failed``. The hooks read the
reference decoder's attention, so a plug-in gets no band check; its padded equivalence comes from its
own ``Workload.forward`` under its dtype.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from measure.constants import WINDOWS
from measure.device_check import resolve_device
from measure.errors import ProbebookError
from measure.evidence.envelope import Evidence
from measure.options import option
from measure.probes.common import OneStepConfig, positive, record_workload
from measure.run.runner import Recorder, execute
from measure.run.sessions import in_sessions
from measure.timing import energy_field
from measure.workload.maskcheck import band_check  # the one band rule, shared with `probebook check masks`

PROBE = "mask"
VERSION = 2  # 2: the padded-causal kind and the padded equivalence check
HELP = "SDPA backend, kernels and step time per attention mask (causal, explicit, padded, sliding, document)."
EXAMPLE = "probebook measure mask --preset 250m --seq-len 2048 --batch 4 --sliding-window 512"
KINDS = ("causal", "explicit", "padded", "padded-causal", "sliding", "document")


@dataclass(frozen=True)
class Config(OneStepConfig):
    """Options of the mask probe."""

    kinds: tuple[str, ...] = option(KINDS, choices=KINDS)
    """Mask kinds to run, in this order (default: all six)."""
    min_length_fraction: float = 0.5
    """Shortest padded row as a fraction of the width; rows are evenly spaced from the full width down to it."""
    documents: int = 4
    """Documents packed into each row of the ``document`` batch (equal lengths)."""
    steps: int = 2
    """Steps per kind under the profiler (the backend and kernels are read from them)."""
    windows: int = option(WINDOWS, aliases=("--rounds",))
    """Interleaved rounds of all kinds (``--rounds`` is the same option)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 < self.min_length_fraction <= 1.0:
            raise ProbebookError(f"--min-length-fraction must be in (0, 1], got {self.min_length_fraction}")
        positive("documents", self.documents)
        positive("steps", self.steps)


def padded_lengths(batch: int, seq_len: int, min_fraction: float) -> list[int]:
    """Row lengths (tokens) evenly spaced from ``seq_len`` down to ``ceil(min_fraction * seq_len)``.

    ``padded_lengths(4, 12, 0.5)`` is ``[12, 10, 8, 6]``.
    """
    shortest = max(1, -(-int(min_fraction * seq_len * 1000) // 1000))  # ceil without float surprises
    if batch == 1:
        return [seq_len]
    return [round(seq_len - (seq_len - shortest) * i / (batch - 1)) for i in range(batch)]


def document_ids(seq_len: int, documents: int) -> list[int]:
    """Document id per position for ``documents`` equal packed documents: ``document_ids(6, 3) == [0,0,1,1,2,2]``."""
    if documents > seq_len:
        raise ProbebookError(f"--documents {documents} exceeds --seq-len {seq_len}: a document needs a token")
    return [pos * documents // seq_len for pos in range(seq_len)]


def _sdpa_ops(counts: dict[str, int]) -> dict[str, int]:
    return {name: n for name, n in sorted(counts.items()) if "scaled_dot_product" in name}


@in_sessions
def run(config: Config, journal: Any = None, progress: bool = False) -> Evidence:
    """Observe and time every mask kind; return the evidence (not stored)."""
    device = resolve_device(config.device)
    batch, seq_len = config.step_shape(device)
    window = config.sliding_window or max(1, seq_len // 4)
    if window > seq_len:
        raise ProbebookError(f"--sliding-window {window} exceeds --seq-len {seq_len}: the window would be no window")
    lengths = padded_lengths(batch, seq_len, config.min_length_fraction)
    docs = document_ids(seq_len, config.documents)
    params = {**config.params(device), "batch": batch, "seq_len": seq_len, "sliding_window": window}

    def body(rec: Recorder) -> None:
        import torch
        from torch.autograd import DeviceType
        from torch.profiler import ProfilerActivity, profile

        from measure.evidence.kernel_names import categorize
        from measure.progress import profiler_stderr
        from measure.timing import clock_for, sm_clock, sync_for, time_interleaved
        from measure.workload import load_workload
        from measure.workload.observe import sdpa_backend

        # the model is built without a window; the ``sliding`` kind switches it on for its own steps
        options = config.workload_options(device)
        from dataclasses import replace

        workload = load_workload(replace(options, sliding_window=None, global_every=None), config.workload)
        model = workload.model
        record_workload(rec, workload)
        offered = ("causal", *workload.mask_kinds)
        refused = [k for k in config.kinds if k not in offered]
        if refused:
            raise ProbebookError(
                f"--kinds: {', '.join(refused)} not honoured by {workload.name} (it offers {', '.join(offered)}; "
                "a plug-in lists the mask requests its step reads from a batch's third item in Workload.mask_kinds)"
            )
        reference = workload.name.startswith("reference:")
        inputs, targets = workload.make_batch(batch, seq_len)[:2]
        length_t = torch.tensor(lengths, device=device)
        padded_targets = targets.masked_fill(torch.arange(seq_len, device=device)[None] >= length_t[:, None], -100)
        doc_t = torch.tensor(docs, device=device)[None].expand(batch, seq_len).contiguous()
        batches = {
            "causal": (inputs, targets),
            "explicit": (inputs, targets, {"explicit_mask": True}),
            "padded": (inputs, padded_targets, {"lengths": length_t}),
            "padded-causal": (inputs, padded_targets),
            "sliding": (inputs, targets, {"sliding_window": window, "global_every": config.global_every}),
            "document": (inputs, targets, {"doc_ids": doc_t}),
        }
        steps: dict[str, Any] = {kind: functools.partial(workload.step, batches[kind]) for kind in config.kinds}
        sync = sync_for(device)
        on_device = device == "cuda"
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_device else [])
        rec.data["clocks"] = {"sm_mhz_before": sm_clock(device)}
        observed: dict[str, Any] = {}
        for kind, fn in steps.items():
            fn()  # one unprofiled step first: lazy initialisation stays out of the trace
            sync()
            with profiler_stderr(), profile(activities=activities) as prof:
                for _ in range(config.steps):
                    fn()
                sync()
            counts: dict[str, int] = {}
            kernels: list[dict[str, Any]] = []
            for event in prof.key_averages():
                counts[event.key] = counts.get(event.key, 0) + event.count
                if on_device and event.device_type == DeviceType.CUDA and categorize(event.key) == "attention":
                    seconds = float(getattr(event, "self_device_time_total", 0.0)) / 1e6
                    kernels.append({"kernel": event.key, "calls": event.count, "device_time_s": seconds})
            kernels.sort(key=lambda r: -r["device_time_s"])
            ops = _sdpa_ops(counts)
            observed[kind] = {
                "sdpa_backend": sdpa_backend(set(ops)),
                "sdpa_backends": sorted({b for b in (sdpa_backend({op}) for op in ops) if b}),
                "sdpa_ops": ops,
                "attention_kernels": kernels,
            }
            rec.point([], None, f"{kind}: {observed[kind]['sdpa_backend']} ({len(kernels)} attention kernels)")
        rec.data["observed"] = {"kinds": observed}
        rec.data["batches"] = {
            "padded": {"lengths": lengths, "width": seq_len},
            "document": {"documents": config.documents, "width": seq_len},
            "sliding": {"window": window, "global_every": config.global_every},
        }
        if ("padded" in steps or "padded-causal" in steps) and reference:
            rec.data["padded_equivalence"] = _padded_equivalence(model, inputs, padded_targets, length_t)
        elif "padded" in steps and workload.forward is not None:
            rec.data["padded_equivalence"] = _padded_equivalence_forward(
                workload.forward, batches["padded"], batches["padded-causal"], config.dtype
            )
        if "sliding" in steps and reference:
            # the hooks read the reference decoder's attention inputs; a plug-in's masks are its own
            rec.data["band_check"] = _band_check_model(model, batches["sliding"][0], window, config.global_every)
        timed = time_interleaved(
            steps,
            clock_for(device),
            config.plan(),
            sync,
            on_round=lambda r, times, clocks, energy: rec.point(
                [
                    {"kind": k, "round": r, "step_s": s, "sm_clock_mhz": clocks.get(k), **energy_field(energy.get(k))}
                    for k, s in times.items()
                ],
                None,
                f"round {r}",
            ),
        )
        rec.data["clocks"]["sm_mhz_after"] = sm_clock(device)
        rec.points.extend(
            {"kind": k, "median_s": a.median_s, "iqr_s": a.iqr_s, "cv": a.cv, "unstable": a.unstable}
            for k, a in timed.arms.items()
        )
        rec.data["extended"] = timed.extended
        band = rec.data.get("band_check")
        if band is not None and not band["ok"]:
            rec.fail(f"band check failed on the model's sliding-window masks: {band['failures']}")
        del torch

    return execute(PROBE, VERSION, params, __file__, body, journal, progress)


def _padded_equivalence(model: Any, inputs: Any, targets: Any, lengths: Any) -> dict[str, Any]:
    """Loss over the real tokens of the padded batch with the padding mask and with ``is_causal``, in float32."""
    import torch
    import torch.nn.functional as F

    with torch.no_grad():
        losses = {}
        for name, request in (("mask", {"lengths": lengths}), ("is_causal", {})):
            logits = model(inputs, **request).float()
            losses[name] = float(F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1)))
            del logits
    return {
        "dtype": "float32",
        "loss_mask": losses["mask"],
        "loss_is_causal": losses["is_causal"],
        "abs_diff": abs(losses["mask"] - losses["is_causal"]),
    }


def _padded_equivalence_forward(forward: Any, masked: Any, causal: Any, dtype: str) -> dict[str, Any]:
    """A plug-in's loss on the padded batch with the padding mask and with ``is_causal``, from its own forward."""
    import torch

    with torch.no_grad():
        loss_mask, loss_causal = float(forward(masked)[0]), float(forward(causal)[0])
    return {
        "dtype": {"bf16": "bfloat16 autocast", "fp32": "float32"}[dtype],
        "loss_mask": loss_mask,
        "loss_is_causal": loss_causal,
        "abs_diff": abs(loss_mask - loss_causal),
    }


def _band_check_model(model: Any, inputs: Any, window: int, global_every: int | None) -> dict[str, Any]:
    """Capture the mask every attention layer receives in one ``sliding`` forward and band-check it on the CPU."""
    import torch

    from measure.workload.model import is_local

    seen: dict[int, Any] = {}
    handles = []
    for i, block in enumerate(model.blocks):

        def hook(_module: Any, args: tuple[Any, ...], i: int = i) -> None:
            mask = args[3] if len(args) > 3 else None
            seen[i] = None if mask is None else mask.detach().to("cpu")

        handles.append(block.attn.register_forward_pre_hook(hook))
    model.sliding_window, model.global_every = window, global_every
    try:
        with torch.no_grad():
            model(inputs[:1])
    finally:
        model.sliding_window, model.global_every = None, None
        for h in handles:
            h.remove()
    layers, failures = [], []
    for i in range(len(model.blocks)):
        local = is_local(i, window, global_every)
        mask = seen.get(i)
        entry: dict[str, Any] = {"layer": i, "local": local, "mask": "is_causal" if mask is None else "tensor"}
        if local:
            if mask is None:
                failures.append(f"layer {i} is local but took is_causal")
            else:
                entry.update(band_check(mask.numpy(), window))
                if not entry["ok"]:
                    failures.append(f"layer {i}")
        elif mask is not None:
            failures.append(f"layer {i} is global but got a mask tensor")
        layers.append(entry)
    return {"window": window, "global_every": global_every, "layers": layers, "failures": failures, "ok": not failures}
