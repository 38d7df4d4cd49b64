"""The reference decoder in plain torch: RMSNorm, RoPE, SwiGLU, grouped-query SDPA, tied embeddings.

Imported only when a probe runs (it imports torch at module level). Two switches exist for the
``ablate`` probe and are documented as timing-only there: ``Attention.identity`` replaces the SDPA
call by its value input, and ``Decoder.hidden`` returns the final hidden state without the head.

Masks: with no mask request a layer calls SDPA with ``is_causal=True`` (the fused fast path).
``layer_masks`` builds the boolean mask each layer gets otherwise (``True`` = may attend): an
explicit causal mask, right-padding (keys past a row's length hidden), packed documents (keys of
other documents hidden), and a sliding window on local layers (``sliding_window`` W: a query sees
itself and the W-1 keys before it; with ``global_every`` K every K-th layer stays global, the
local/global pattern of Gemma 2, Team et al. 2024, section 2). ``forward`` uses exactly this
function, so a check on its output is a check on what the model runs.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from measure.evidence.flops import is_local  # the local/global rule, which the FLOPs count reads too
from measure.workload.presets import Preset

ROPE_BASE = 10_000.0  # Su et al. 2021, "RoFormer", section 3.4.2: theta_i = 10000^(-2i/d)
NORM_EPS = 1e-6


def attention_mask(
    seq_len: int,
    device: torch.device | str,
    window: int | None = None,
    lengths: torch.Tensor | None = None,
    doc_ids: torch.Tensor | None = None,
) -> torch.Tensor:
    """Boolean mask (B or 1, 1, S, S), ``True`` where query i may attend to key j: causal (j <= i),
    within the window (i - j < W), inside the row's length (j < L), inside the same document.

    A right-padded query row keeps key 0, so no row is all-masked (which would give NaN)."""
    pos = torch.arange(seq_len, device=device)
    q, k = pos[:, None], pos[None, :]
    allowed = k <= q
    if window is not None:
        allowed = allowed & (q - k < window)
    allowed = allowed[None]
    if lengths is not None:
        allowed = allowed & (k[None] < lengths.to(device)[:, None, None])
    if doc_ids is not None:
        allowed = allowed & (doc_ids[:, :, None] == doc_ids[:, None, :])
    return allowed[:, None]


def layer_masks(
    layers: int,
    seq_len: int,
    device: torch.device | str,
    window: int | None = None,
    global_every: int | None = None,
    lengths: torch.Tensor | None = None,
    doc_ids: torch.Tensor | None = None,
    explicit: bool = False,
) -> list[torch.Tensor | None]:
    """The mask each layer passes to SDPA; ``None`` means ``is_causal=True`` (no mask tensor at all).

    Needs no weights: the band check (``measure.probes.mask``) runs it on a CPU. Layers of one kind
    share one tensor."""
    needs_mask = explicit or lengths is not None or doc_ids is not None
    shared: dict[bool, torch.Tensor | None] = {}
    out = []
    for layer in range(layers):
        local = is_local(layer, window, global_every)
        if local not in shared:
            if local or needs_mask:
                shared[local] = attention_mask(seq_len, device, window if local else None, lengths, doc_ids)
            else:
                shared[local] = None
        out.append(shared[local])
    return out


def at_least_fp32(dtype: torch.dtype) -> torch.dtype:
    """float32 for bf16/fp16/fp32 inputs, float64 for float64: the norm and RoPE never compute below fp32,
    and a float64 model (the ``hvp`` probe's reference) stays float64 throughout."""
    return torch.promote_types(dtype, torch.float32)


class RMSNorm(nn.Module):
    """Zhang & Sennrich 2019: x / rms(x) * g, computed in at least float32 and cast back."""

    def __init__(self, width: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.to(at_least_fp32(x.dtype))
        out = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + NORM_EPS)
        return (out * self.weight.to(xf.dtype)).to(x.dtype)


def rope_tables(
    seq_len: int, head_dim: int, device: torch.device, dtype: torch.dtype = torch.float32
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of shape (seq_len, head_dim/2), made on the device each call (cheap, shape-only)."""
    inv = ROPE_BASE ** (-torch.arange(0, head_dim, 2, device=device, dtype=dtype) / head_dim)
    angles = torch.outer(torch.arange(seq_len, device=device, dtype=dtype), inv)
    return angles.cos(), angles.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate pairs (x[..., :d/2], x[..., d/2:]) of x (B, H, S, D) by the position angles."""
    half = x.shape[-1] // 2
    wide = at_least_fp32(x.dtype)
    x1, x2 = x[..., :half].to(wide), x[..., half:].to(wide)
    out = torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)
    return out.to(x.dtype)


class Attention(nn.Module):
    def __init__(self, p: Preset):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = p.heads, p.kv_heads, p.head_dim
        self.wq = nn.Linear(p.width, p.heads * p.head_dim, bias=False)
        self.wk = nn.Linear(p.width, p.kv_heads * p.head_dim, bias=False)
        self.wv = nn.Linear(p.width, p.kv_heads * p.head_dim, bias=False)
        self.wo = nn.Linear(p.heads * p.head_dim, p.width, bias=False)
        self.identity = False  # ablate: skip SDPA, pass the values through (timing-only)

    def forward(
        self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        b, s, _ = x.shape
        q = self.wq(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        if self.identity:
            out = v.repeat_interleave(self.heads // self.kv_heads, dim=1)
        else:
            q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
            gqa = self.kv_heads != self.heads
            if mask is None:
                out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)
            else:
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=gqa)
        return self.wo(out.transpose(1, 2).reshape(b, s, self.heads * self.head_dim))


class SwiGLU(nn.Module):
    """Shazeer 2020, "GLU variants improve transformer": down(silu(gate(x)) * up(x))."""

    def __init__(self, p: Preset):
        super().__init__()
        self.w_gate = nn.Linear(p.width, p.ffn, bias=False)
        self.w_up = nn.Linear(p.width, p.ffn, bias=False)
        self.w_down = nn.Linear(p.ffn, p.width, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w_down(F.silu(self.w_gate(x)) * self.w_up(x))


class Block(nn.Module):
    def __init__(self, p: Preset, experts_impl: str = "looped"):
        super().__init__()
        self.norm1, self.attn = RMSNorm(p.width), Attention(p)
        self.norm2 = RMSNorm(p.width)
        self.mlp: nn.Module
        if p.experts:  # a routed mixture of experts (measure/workload/experts.py)
            from measure.workload.experts import MoE

            self.mlp = MoE(p, experts_impl)
        else:
            self.mlp = SwiGLU(p)

    def forward(
        self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        x = x + self.attn(self.norm1(x), cos, sin, mask)
        return x + self.mlp(self.norm2(x))


class Decoder(nn.Module):
    """tokens (B, S) -> logits (B, S, V); the head's weight is the embedding's (tied)."""

    def __init__(
        self,
        p: Preset,
        checkpointing: bool = False,
        sliding_window: int | None = None,
        global_every: int | None = None,
        experts_impl: str = "looped",
    ):
        super().__init__()
        self.preset = p
        self.checkpointing = checkpointing
        self.sliding_window = sliding_window  # None: every layer global (full causal attention)
        self.global_every = global_every  # with a window: every K-th layer global, the rest local
        self.embed = nn.Embedding(p.vocab, p.width)
        self.blocks = nn.ModuleList(Block(p, experts_impl) for _ in range(p.layers))
        self.norm = RMSNorm(p.width)
        self.head = nn.Linear(p.width, p.vocab, bias=False)
        self.head.weight = self.embed.weight
        self.hidden = False  # ablate: return the final hidden state, no head (timing-only)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # GPT-2 style N(0, 0.02) init; the values matter only in that they are random, not zero
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=0.02)

    def forward(
        self,
        tokens: torch.Tensor,
        lengths: torch.Tensor | None = None,
        doc_ids: torch.Tensor | None = None,
        explicit_mask: bool = False,
    ) -> torch.Tensor:
        """``lengths`` (B,): right-padded rows' real lengths; ``doc_ids`` (B, S): packed documents' ids."""
        cos, sin = rope_tables(
            tokens.shape[1], self.preset.head_dim, tokens.device, at_least_fp32(self.embed.weight.dtype)
        )
        masks = layer_masks(
            len(self.blocks),
            tokens.shape[1],
            tokens.device,
            window=self.sliding_window,
            global_every=self.global_every,
            lengths=lengths,
            doc_ids=doc_ids,
            explicit=explicit_mask,
        )
        x = self.embed(tokens)
        for block, mask in zip(self.blocks, masks, strict=True):
            if self.checkpointing and self.training:
                x = checkpoint(block, x, cos, sin, mask, use_reentrant=False)
            else:
                x = block(x, cos, sin, mask)
        x = self.norm(x)
        return x if self.hidden else self.head(x)
