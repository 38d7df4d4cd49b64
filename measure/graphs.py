"""CUDA-graph timing: capture a whole training update once, then time its replays.

``capture(step, optimizer, device)`` follows the whole-network capture recipe of the PyTorch CUDA
graphs notes (torch.cuda.graph, "Whole-network capture"): warm the step up on a side stream (so
lazy state such as the optimizer's moments exists before capture), make the optimizer
``capturable`` (its step counter then lives on the device and advances inside the graph), capture
one call of the step (forward, backward, ``optimizer.step``, ``zero_grad``) with its inputs
already on the device, and return a function that replays the graph and returns the loss tensor
the capture produced (rewritten by every replay).

Where capture is impossible the reason is returned, never hidden: no CUDA device, an optimizer
without a ``capturable`` option, or the exception capture raised (a host synchronisation, a
dynamic shape, a CPU-side op inside the step...). A probe records that reason and times nothing
for the graph. Imports torch only when called.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

SCOPE = "forward, backward, optimizer.step and zero_grad of one training step"


def capture(
    step: Callable[[], Any], optimizer: Any, device: str, warmup: int = 3, scope: str = SCOPE
) -> tuple[Callable[[], Any] | None, dict[str, Any]]:
    """(replay, info) when the step was captured; (None, info with ``reason``) when it could not be.

    ``scope`` says what the captured step holds (the default: the whole update)."""
    info: dict[str, Any] = {"captured": False, "scope": scope, "reason": None, "capturable_set": False}
    if device != "cuda":
        info["reason"] = "CUDA graphs need a CUDA device"
        return None, info
    import torch

    if optimizer is None:  # nothing to make capturable: the workload hides it, or the step has no update
        if scope == SCOPE:
            info["scope"] = "the workload's step; its optimizer is not exposed, so its update count is not checked"
    else:
        groups = optimizer.param_groups
        if any("capturable" not in g for g in groups):
            info["reason"] = f"{type(optimizer).__name__} has no capturable option: its update cannot be captured"
            return None, info
        for g in groups:
            g["capturable"] = True
        info["capturable_set"] = True
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(max(1, warmup)):
                step()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = step()
        torch.cuda.synchronize()
    except Exception as exc:  # the reason capture failed is the result
        text = f"{type(exc).__name__}: {exc}".strip().splitlines()
        info["reason"] = (text[0] if text else type(exc).__name__)[:300]
        try:
            torch.cuda.synchronize()
        except Exception as sync_exc:  # a broken capture can poison the context: say so too
            info["reason"] += f" (then synchronize failed: {type(sync_exc).__name__})"
        return None, info
    info["captured"] = True

    def replay() -> Any:
        graph.replay()
        return out

    return replay, info
