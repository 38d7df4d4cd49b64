"""Reference-decoder presets and the pure arithmetic on them (no torch).

Every preset is a plain decoder: RMSNorm, RoPE, SwiGLU, grouped-query SDPA attention, tied
embeddings, vocab 32,000, head dim 64. The parameter count is computed from the shapes here
(``param_count``) and checked against a built model in ``tests/test_workload.py``; it is never
typed in. The 250m and 500m shapes are fixed by issue 4 (20 layers / width 960 / 15 heads / FFN
2560 and 24 / 1280 / 20 / 3456); the others are chosen to land near their names.
"""

from __future__ import annotations

from dataclasses import dataclass

from measure.errors import ProbebookError

VOCAB = 32_000
HEAD_DIM = 64


@dataclass(frozen=True)
class Preset:
    """Shape of one reference decoder."""

    name: str
    """Preset name used on the command line (``--preset``)."""
    layers: int
    """Number of transformer blocks."""
    width: int
    """Model (residual stream) width; equals heads x head_dim."""
    heads: int
    """Query heads per block."""
    kv_heads: int
    """Key/value heads per block (grouped-query attention when fewer than ``heads``)."""
    ffn: int
    """Hidden width of the SwiGLU feed-forward (each of gate, up)."""
    vocab: int = VOCAB
    """Vocabulary size; the embedding is tied to the output head."""
    head_dim: int = HEAD_DIM
    """Width of one attention head."""
    experts: int = 0
    """Routed SwiGLU experts per block, each of hidden width ``ffn`` (0: a dense SwiGLU)."""
    top_k: int = 0
    """Experts each token is routed to (0 for a dense preset)."""

    def __post_init__(self) -> None:
        for name in ("layers", "width", "heads", "kv_heads", "ffn", "vocab", "head_dim"):
            if getattr(self, name) < 1:
                raise ProbebookError(f"preset {self.name!r}: field '{name}' must be >= 1")
        if (self.experts == 0) != (self.top_k == 0) or not 0 <= self.top_k <= self.experts:
            raise ProbebookError(f"preset {self.name!r}: top_k ({self.top_k}) must be in 1..experts ({self.experts})")
        if self.heads * self.head_dim != self.width:
            raise ProbebookError(
                f"preset {self.name!r}: heads x head_dim ({self.heads}x{self.head_dim}) must equal width {self.width}"
            )
        if self.heads % self.kv_heads:
            raise ProbebookError(
                f"preset {self.name!r}: heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})"
            )


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        # tiny exercises the grouped-query path (kv_heads < heads) cheaply on CPU
        Preset("tiny", layers=2, width=128, heads=2, kv_heads=1, ffn=256, vocab=512),
        Preset("20m", layers=8, width=320, heads=5, kv_heads=5, ffn=864),
        Preset("90m", layers=14, width=640, heads=10, kv_heads=10, ffn=1728),
        Preset("250m", layers=20, width=960, heads=15, kv_heads=15, ffn=2560),
        Preset("500m", layers=24, width=1280, heads=20, kv_heads=20, ffn=3456),
        Preset("1b", layers=24, width=1792, heads=28, kv_heads=28, ffn=4864),
        # mixture of experts (issue 27): moe-tiny for CPU tests; moe-250m is 250m's attention with 8 experts of
        # half its FFN width, top-2, so a token's active FFN work equals the dense 250m's
        Preset("moe-tiny", layers=2, width=128, heads=2, kv_heads=1, ffn=128, vocab=512, experts=4, top_k=2),
        Preset("moe-250m", layers=20, width=960, heads=15, kv_heads=15, ffn=1280, experts=8, top_k=2),
    )
}


def get_preset(name: str) -> Preset:
    """The preset called ``name``; a one-line error listing the choices otherwise."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ProbebookError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}") from None


def param_count(p: Preset) -> int:
    """Trainable parameters (count): tied embedding once, per block q/k/v/o + SwiGLU + 2 RMSNorm, final norm.

    No biases anywhere. The tied embedding is counted once; it is also the output head.
    """
    kv = p.kv_heads * p.head_dim
    attention = p.width * p.width * 2 + p.width * kv * 2  # wq, wo + wk, wv
    mlp = expert_params(p) * p.experts + p.width * p.experts if p.experts else expert_params(p)  # + the router
    norms = 2 * p.width
    return p.vocab * p.width + p.layers * (attention + mlp + norms) + p.width


def expert_params(p: Preset) -> int:
    """Parameters (count) of one SwiGLU feed-forward of hidden width ``ffn``: gate, up, down (a dense block's MLP)."""
    return 3 * p.width * p.ffn


def active_param_count(p: Preset) -> int:
    """Parameters (count) a token's forward uses: all but the ``experts - top_k`` experts it is not routed to.

    Equals ``param_count`` for a dense preset; the input to model FLOPs, where only active experts count.
    """
    from measure.evidence.flops import moe_active_params

    return moe_active_params(param_count(p), p.layers, p.experts, p.top_k, expert_params(p))


def model_flops_per_token(n_params: int, layers: int, heads: int, head_dim: int, seq_len: int) -> float:
    """Model FLOPs per token of one training step (forward + backward), PaLM appendix B: 6N + 12·L·H·Q·T.

    Chowdhery et al. 2022, "PaLM", appendix B. ``N`` counts every parameter used in a matmul; with a tied
    embedding that is the whole count (the lookup is free, the head matmul is 2·V·d per token forward).
    The attention term uses the full T x T score matrix, as the paper does (no causal halving).
    """
    return 6.0 * n_params + 12.0 * layers * heads * head_dim * seq_len


def linear_shapes(p: Preset, tokens: int) -> list[dict]:
    """Every matmul of one training step on ``tokens`` tokens as ``{name, m, n, k, count}`` (no torch).

    A linear y = x W^T with x (M x K), W (N x K) runs three GEMMs per step: forward (M,N,K),
    gradient of the input (M,K,N) and gradient of the weight (N,K,M). ``count`` is how many times
    the shape occurs per step (once per layer for the block matmuls).
    """
    kv = p.kv_heads * p.head_dim
    linears = [
        ("wq", p.width, p.width, p.layers),
        ("wkv", kv, p.width, 2 * p.layers),
        ("wo", p.width, p.width, p.layers),
        ("w_gate_up", p.ffn, p.width, 2 * p.layers),
        ("w_down", p.width, p.ffn, p.layers),
        ("head", p.vocab, p.width, 1),
    ]
    out = []
    for name, n_out, n_in, count in linears:
        out.append({"name": f"{name}.fwd", "m": tokens, "n": n_out, "k": n_in, "count": count})
        out.append({"name": f"{name}.dgrad", "m": tokens, "n": n_in, "k": n_out, "count": count})
        out.append({"name": f"{name}.wgrad", "m": n_out, "n": n_in, "k": tokens, "count": count})
    return out
