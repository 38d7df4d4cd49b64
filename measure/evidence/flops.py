"""Model FLOPs per token of one training step, frozen weights accounted for (torch-free; render reads it too).

For a weight matrix used once per token (a linear y = x·Wᵀ), a training step does three matmuls
of ``2·(its elements)`` FLOPs per token each: the forward, the gradient of the input and the
gradient of the weight (Kaplan et al. 2020, "Scaling Laws for Neural Language Models", §2.1, the
``C ≈ 6N`` rule and its 2N forward / 4N backward split; Narayanan et al. 2021, "Efficient
Large-Scale Language Model Training on GPU Clusters", §5.1, the same three GEMMs per linear).
A frozen weight still takes part in the forward and passes the gradient on to its input, but its
own weight gradient is never formed. So the dense matmul part is

    2·P_all (forward) + 2·P_all (input gradients) + 2·P_trainable (weight gradients)   FLOPs/token,

which is PaLM's ``6N`` (Chowdhery et al. 2022, "PaLM", appendix B) when every weight trains, and
``4·P_all + 2·P_lora`` for a frozen base with LoRA adapters (Hu et al. 2021, "LoRA", §4.2: the
backward pass skips the frozen weights' gradients). The attention score and value matmuls have
no weights and run forward and backward over activations alike: PaLM's ``12·L·H·Q·T`` (full T x T
score matrix, no causal halving). A local layer of a sliding-window model (``--sliding-window`` W) scores
each query against at most W keys, so it counts ``12·H·Q·min(W, T)``, and only the layers that stay
global count T (as nanochat's ``gpt.py`` counts a local layer over its window; issue 23, item 11:
counting T on every layer overstated a windowed run's MFU). Like PaLM, the count is of model FLOPs: recomputation
(activation checkpointing) is not counted, and the input-gradient work below the lowest trainable
weight, which an implementation may skip, is counted (it is what the model needs when anything
below trains).
"""

from __future__ import annotations

from measure.errors import ProbebookError


def moe_active_params(params_all: int, layers: int, experts: int, top_k: int, params_per_expert: int) -> int:
    """Parameters (count) one token's forward uses in a routed mixture of experts: ``P_all - L·(E - k)·P_expert``.

    Each of the ``layers`` MoE blocks holds ``experts`` feed-forwards of ``params_per_expert`` weights and
    sends a token through ``top_k`` of them, so the other ``E - k`` do no work for it (Fedus et al. 2022,
    "Switch Transformers", §2: FLOPs per token follow the active experts, not the total). The router's
    ``width x E`` matmul runs for every token and stays counted. This count replaces ``P_all`` (and, every
    weight training, ``P_trainable``) in ``training_flops_per_token``.
    """
    for name, value in (
        ("layers", layers),
        ("experts", experts),
        ("top_k", top_k),
        ("params_per_expert", params_per_expert),
    ):
        _count(name, value)
    if top_k > experts:
        raise ProbebookError(f"top_k ({top_k}) exceeds experts ({experts})")
    inactive = layers * (experts - top_k) * params_per_expert
    if inactive > _count("params_all", params_all):
        raise ProbebookError(f"the inactive experts' {inactive} parameters exceed params_all ({params_all})")
    return params_all - inactive


def _count(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ProbebookError(f"{name} must be a non-negative integer, got {value!r}")
    return value


def dense_flops_per_token(params_all: int, params_trainable: int) -> int:
    """FLOPs per token of the dense matmuls of a training step: ``4·P_all + 2·P_trainable`` (module docstring).

    ``params_all`` counts every parameter used in a matmul (a tied embedding once: its lookup is
    free, its use as the head is the matmul); ``params_trainable`` those of them that train.
    """
    total = _count("params_all", params_all)
    trainable = _count("params_trainable", params_trainable)
    if trainable > total:
        raise ProbebookError(f"params_trainable ({trainable}) exceeds params_all ({total})")
    return 2 * total + 2 * total + 2 * trainable


def is_local(layer: int, window: int | None, global_every: int | None) -> bool:
    """Whether layer ``layer`` (0-based) attends through the sliding window: every layer when a window
    is set, except each ``global_every``-th (layers K-1, 2K-1, ...), which stays global (the reference
    decoder's rule, ``measure.workload.model``, which reads it from here)."""
    if window is None:
        return False
    return not (global_every and (layer + 1) % global_every == 0)


def attention_flops_per_token(
    layers: int, heads: int, head_dim: int, seq_len: int, window: int | None = None, global_every: int | None = None
) -> int:
    """FLOPs per token of attention's score and value matmuls, forward and backward: PaLM's ``12·L·H·Q·T``,
    a local layer counting ``min(window, T)`` keys instead of T (module docstring)."""
    n_layers, t = _count("layers", layers), _count("seq_len", seq_len)
    per_key = 12 * _count("heads", heads) * _count("head_dim", head_dim)
    if window is not None and (isinstance(window, bool) or not isinstance(window, int) or window < 1):
        raise ProbebookError(f"the sliding window must be a whole number of keys >= 1, got {window!r}")
    keys = sum(min(window, t) if window and is_local(i, window, global_every) else t for i in range(n_layers))
    return per_key * keys


def training_flops_per_token(
    params_all: int,
    params_trainable: int,
    layers: int,
    heads: int,
    head_dim: int,
    seq_len: int,
    window: int | None = None,
    global_every: int | None = None,
) -> int:
    """Model FLOPs per token (FLOPs/token) of one training step: dense part plus attention (module docstring)."""
    return dense_flops_per_token(params_all, params_trainable) + attention_flops_per_token(
        layers, heads, head_dim, seq_len, window, global_every
    )
