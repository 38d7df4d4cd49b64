"""The sliding-window band check on the masks a workload's attention really receives: cheap, before a job (issue 40).

``probebook check masks --workload X --sliding-window W`` builds the workload (a plug-in or the reference
decoder) with the window, runs one forward of one batch under a torch function mode that records every call of
``torch.nn.functional.scaled_dot_product_attention`` (its ``attn_mask`` and ``is_causal``), and checks each call
in order as one layer: a local layer (``measure.evidence.flops.is_local``: every layer, or all but every K-th with
``--global-every K``) must get a mask in which no query row allows more than W keys, none looks ahead and none
reaches W or more positions back (``band_check``); a global layer must stay causal and reach past the window. A
plug-in that lists ``sliding`` in ``Workload.mask_kinds`` also gets the request as its batch's third item, as
``measure mask`` sends it. Attention that does not go through SDPA is not seen: the check says so rather than
passing. Torch is imported inside the functions.
"""

from __future__ import annotations

from typing import Any

from measure.errors import ProbebookError
from measure.evidence.flops import is_local


def band_check(allowed: Any, window: int) -> dict[str, Any]:
    """Check a boolean mask (S, S) or (B, 1, S, S), ``True`` = may attend, against a window of ``window`` keys.

    ``ok`` when no query row allows more than ``window`` keys, no key after the query (look-ahead) and
    no key ``window`` or more positions back. Works on numpy arrays and CPU tensors alike.
    """
    import numpy as np

    mask = np.asarray(allowed, dtype=bool)
    if mask.ndim == 2:
        mask = mask[None, None]
    if mask.ndim != 4 or mask.shape[-1] != mask.shape[-2]:
        raise ProbebookError(f"band check: expected a square mask (S, S) or (B, 1, S, S), got shape {mask.shape}")
    s = mask.shape[-1]
    q = np.arange(s)[:, None]
    k = np.arange(s)[None, :]
    lookahead = int((mask & (k > q)).sum())
    too_far = int((mask & (q - k >= window)).sum())
    max_keys = int(mask.sum(axis=-1).max()) if s else 0
    return {
        "window": window,
        "rows": int(mask.shape[0] * mask.shape[1] * s),
        "max_keys_per_row": max_keys,
        "lookahead_keys": lookahead,
        "beyond_window_keys": too_far,
        "ok": max_keys <= window and lookahead == 0 and too_far == 0,
    }


def allowed(mask: Any) -> Any:
    """A mask as SDPA reads it, as booleans on the CPU: a bool mask as is; an additive float mask allows where it
    is above half the dtype's lowest value (``-inf`` or ``finfo.min`` mark the masked keys)."""
    import torch

    mask = mask.detach().to("cpu")
    if mask.dtype == torch.bool:
        return mask
    return mask > torch.finfo(mask.dtype).min / 2


def judge(calls: list[dict[str, Any]], window: int, global_every: int | None) -> dict[str, Any]:
    """Each captured SDPA call as one layer, in order, checked against the window (pure: masks as booleans).

    A call is ``{"mask": bool array or None, "is_causal": bool}``; returns ``{"ok", "layers", "failures"}``, each
    layer ``{"layer", "local", "mask", ...band_check's fields}``. No call at all is a failure: nothing was checked.
    """
    layers, failures = [], []
    for i, call in enumerate(calls):
        local = is_local(i, window, global_every)
        mask = call["mask"]
        entry: dict[str, Any] = {"layer": i, "local": local, "mask": "tensor" if mask is not None else None}
        if mask is None:
            entry["mask"] = "is_causal" if call["is_causal"] else "none"
            if local:
                failures.append(f"layer {i} is local but took {entry['mask']} (no window applied)")
            elif not call["is_causal"]:
                failures.append(f"layer {i} attends to every key, later ones included (no mask, not causal)")
        else:
            try:
                entry.update(band_check(mask, window))
            except ProbebookError as exc:
                failures.append(f"layer {i}: {exc}")
            else:
                if local and not entry["ok"]:
                    failures.append(
                        f"layer {i} is local: up to {entry['max_keys_per_row']} keys a row, "
                        f"{entry['lookahead_keys']} ahead, {entry['beyond_window_keys']} beyond the window of {window}"
                    )
                elif not local and entry["lookahead_keys"]:
                    failures.append(f"layer {i} is global but looks ahead ({entry['lookahead_keys']} keys)")
                elif not local and mask.shape[-1] > window and not entry["beyond_window_keys"]:
                    failures.append(f"layer {i} is global but its mask is a window: no key {window} or more back")
        layers.append(entry)
    if not calls:
        failures.append("no scaled_dot_product_attention call ran: this model's attention cannot be checked here")
    return {"ok": not failures, "window": window, "global_every": global_every, "layers": layers, "failures": failures}


def capture(run: Any) -> list[dict[str, Any]]:
    """Run ``run()`` once; return every SDPA call it made as ``{"mask", "is_causal"}`` (masks as CPU booleans)."""
    import torch
    import torch.nn.functional as F
    from torch.overrides import TorchFunctionMode

    calls: list[dict[str, Any]] = []

    class Seen(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            if func is F.scaled_dot_product_attention:
                mask = kwargs.get("attn_mask", args[3] if len(args) > 3 else None)
                causal = kwargs.get("is_causal", args[5] if len(args) > 5 else False)
                calls.append({"mask": None if mask is None else allowed(mask).numpy(), "is_causal": bool(causal)})
            return func(*args, **kwargs)

    with Seen():
        run()
    del torch
    return calls


def check_masks(options: Any, spec: str | None, batch: int, seq_len: int) -> dict[str, Any]:
    """Build the workload with ``options``' window, run one forward of one batch, and ``judge`` its SDPA masks."""
    import torch

    from measure.workload import load_workload

    window = options.sliding_window
    if window is None:
        raise ProbebookError("check masks: --sliding-window W is required (the window the band check holds masks to)")
    workload = load_workload(options, spec)
    data = workload.make_batch(batch, seq_len)
    if "sliding" in workload.mask_kinds:  # the request ``measure mask`` sends a plug-in for its sliding kind
        data = (*tuple(data)[:2], {"sliding_window": window, "global_every": options.global_every})
    forward = workload.forward

    def run() -> Any:
        if forward is None:  # a tuple plug-in: its step is the only way in (one update, on a throwaway model)
            return workload.step(data)
        with torch.no_grad():
            return forward(data)

    result = judge(capture(run), window, options.global_every)
    result.update(
        {
            "workload": workload.name,
            "through": "forward" if workload.forward is not None else "step",
            "batch": batch,
            "seq_len": seq_len,
            "expected_layers": workload.layers,
            "options_ignored": sorted(workload.ignored),
        }
    )
    if workload.layers is not None and len(result["layers"]) != workload.layers:
        result["ok"] = False
        result["failures"].append(
            f"{len(result['layers'])} SDPA calls in one forward for {workload.layers} layers: the calls are not "
            "one per layer, so layer i cannot be told from call i"
        )
    return result
