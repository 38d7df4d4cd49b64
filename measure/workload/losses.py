"""Loss implementations shared by probes: the chunked, recomputed cross-entropy (``loss-memory``, ``agreement``).

Imports torch only inside the function, so probes can import this module at load.
"""

from __future__ import annotations

from typing import Any


def chunked_cross_entropy(hidden: Any, targets: Any, weight: Any, chunk_tokens: int) -> Any:
    """Mean cross-entropy of ``hidden @ weight.T`` against ``targets``, one checkpointed chunk of tokens at a time."""
    import torch.nn.functional as F
    from torch.utils.checkpoint import checkpoint

    def chunk_sum(h: Any, t: Any, w: Any) -> Any:
        return F.cross_entropy(F.linear(h, w), t, reduction="sum")

    flat_h, flat_t = hidden.reshape(-1, hidden.shape[-1]), targets.reshape(-1)
    total = None
    for start in range(0, flat_t.shape[0], chunk_tokens):
        part = checkpoint(
            chunk_sum,
            flat_h[start : start + chunk_tokens],
            flat_t[start : start + chunk_tokens],
            weight,
            use_reentrant=False,
        )
        total = part if total is None else total + part
    return total / flat_t.shape[0]
