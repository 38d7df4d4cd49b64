"""The reference decoder in plain torch: RMSNorm, RoPE, SwiGLU, grouped-query SDPA, tied embeddings.

Imported only when a probe runs (it imports torch at module level). Two switches exist for the
``ablate`` probe and are documented as timing-only there: ``Attention.identity`` replaces the SDPA
call by its value input, and ``Decoder.hidden`` returns the final hidden state without the head.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from measure.workload.presets import Preset

ROPE_BASE = 10_000.0  # Su et al. 2021, "RoFormer", section 3.4.2: theta_i = 10000^(-2i/d)
NORM_EPS = 1e-6


class RMSNorm(nn.Module):
    """Zhang & Sennrich 2019: x / rms(x) * g, computed in float32 and cast back."""

    def __init__(self, width: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        out = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + NORM_EPS)
        return (out * self.weight.float()).to(x.dtype)


def rope_tables(seq_len: int, head_dim: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of shape (seq_len, head_dim/2), made on the device each call (cheap, shape-only)."""
    inv = ROPE_BASE ** (-torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim)
    angles = torch.outer(torch.arange(seq_len, device=device, dtype=torch.float32), inv)
    return angles.cos(), angles.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate pairs (x[..., :d/2], x[..., d/2:]) of x (B, H, S, D) by the position angles."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half].float(), x[..., half:].float()
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

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q = self.wq(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        if self.identity:
            out = v.repeat_interleave(self.heads // self.kv_heads, dim=1)
        else:
            q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
            gqa = self.kv_heads != self.heads
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)
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
    def __init__(self, p: Preset):
        super().__init__()
        self.norm1, self.attn = RMSNorm(p.width), Attention(p)
        self.norm2, self.mlp = RMSNorm(p.width), SwiGLU(p)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x), cos, sin)
        return x + self.mlp(self.norm2(x))


class Decoder(nn.Module):
    """tokens (B, S) -> logits (B, S, V); the head's weight is the embedding's (tied)."""

    def __init__(self, p: Preset, checkpointing: bool = False):
        super().__init__()
        self.preset = p
        self.checkpointing = checkpointing
        self.embed = nn.Embedding(p.vocab, p.width)
        self.blocks = nn.ModuleList(Block(p) for _ in range(p.layers))
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

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        cos, sin = rope_tables(tokens.shape[1], self.preset.head_dim, tokens.device)
        x = self.embed(tokens)
        for block in self.blocks:
            if self.checkpointing and self.training:
                x = checkpoint(block, x, cos, sin, use_reentrant=False)
            else:
                x = block(x, cos, sin)
        x = self.norm(x)
        return x if self.hidden else self.head(x)
