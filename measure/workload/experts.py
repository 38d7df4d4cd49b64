"""A routed mixture-of-experts feed-forward for the reference decoder (issue 27), in plain torch.

Each token's router logits (a bias-free linear, width -> experts) choose its ``top_k`` experts; their
softmax probabilities over the chosen ones weight the experts' SwiGLU outputs (the top-k routing of
Shazeer et al. 2017, "Outrageously large neural networks", §2.1, with the renormalised top-k weights of
Fedus et al. 2022, "Switch Transformers", and Jiang et al. 2024, "Mixtral", §2.1). No capacity limit and
no auxiliary loss: the probes time the layer, they do not train it to a target.

The expert GEMMs run in one of two ways (``experts_impl``):

* ``looped``: one matmul per expert over the tokens routed to it (the index of a boolean mask, a
  host sync per expert), the plain loop most research code starts from;
* ``grouped``: the routed tokens sorted by expert and every expert's matmul in one call of
  ``torch.nn.functional.grouped_mm`` with the groups' end offsets (forward, input and weight gradients).
  Each expert's group is padded with zero rows to a multiple of ``GROUP_ALIGN_ROWS`` (8) rows, and the
  padding rows are dropped after (``pad_layout``): on CUDA, grouped_mm asserts that every group's extent
  along the offsets' dimension is a multiple of 16 bytes (GroupMMCommon.cuh, ``prepare_grouped_gemm_data``:
  "expected input tensor dynamic dimension byte size to be non-negative multiple of 16"), which is 8 rows of
  bf16. The moe-250m grouped run on the H200 failed on exactly that assertion before this padding
  (bench/results/moe-grouped-h200.log); the padded variant has not been measured on a GPU yet.

Both run their matmuls, forward and backward, inside ``torch.profiler.record_function(EXPERT_GEMM)``
(an explicit ``autograd.Function`` per variant, so the backward GEMMs are annotated too), so the
``kernels`` probe can take the expert GEMMs' share of the step from the annotation's device time.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.profiler import record_function

from measure.evidence.kernel_names import EXPERT_GEMM
from measure.workload.presets import Preset

IMPLS = ("looped", "grouped")

GROUP_ALIGN_ROWS = 8
"""Rows (count) each expert group of a grouped_mm is padded to a multiple of: 16 bytes of bf16 (2 bytes a row
element along the offsets' dimension), the alignment GroupMMCommon.cuh asserts. It is also a multiple of the 4
rows fp32 would need, so one rule serves both."""


def pad_layout(
    choice: torch.Tensor, experts: int, align: int = GROUP_ALIGN_ROWS
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """(order, rows, offsets, total) of the padded grouped layout, without a host sync.

    ``choice`` is each routed (token, slot) pair's expert. ``order`` sorts the pairs by expert (stable); ``rows``
    is each sorted pair's row in the padded buffer; ``offsets`` are the groups' int32 end rows, every group a
    multiple of ``align`` rows; ``total`` is the buffer's rows. The total is the static bound
    ``round_up(pairs + experts·(align-1), align)`` (no group needs more than ``align - 1`` padding rows), so the
    shapes never depend on the routing; what the bound leaves over pads the last group, still a multiple of
    ``align`` because the bound and every other group's end are.
    """
    pairs = choice.numel()
    order = choice.argsort(stable=True)
    counts = torch.bincount(choice, minlength=experts)
    padded = (counts + align - 1) // align * align
    total = -(-(pairs + experts * (align - 1)) // align) * align
    starts = padded.cumsum(0) - padded
    ends = starts + padded
    ends[-1] = total
    shift = starts - (counts.cumsum(0) - counts)  # padded start minus packed start, per expert
    rows = torch.arange(pairs, device=choice.device) + shift[choice[order]]
    return order, rows, ends.to(torch.int32), total


class _ExpertMM(torch.autograd.Function):
    """``x @ w.T`` for one expert (x: tokens x in, w: out x in), forward and backward annotated."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, w)
        with record_function(EXPERT_GEMM):
            return x @ w.t()  # under autocast both cast to its dtype, as a Linear's would

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, w = ctx.saved_tensors
        with record_function(EXPERT_GEMM):
            gx = grad @ w.to(grad.dtype)
            gw = grad.t() @ x.to(grad.dtype)
        return gx.to(x.dtype), gw.to(w.dtype)


class _GroupedMM(torch.autograd.Function):
    """Every expert's ``x_g @ w_g.T`` in one ``grouped_mm`` (x: sorted tokens x in, w: experts x out x in)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
        dtype = torch.get_autocast_dtype(x.device.type) if torch.is_autocast_enabled(x.device.type) else x.dtype
        xc, wc = x.to(dtype).contiguous(), w.to(dtype)
        ctx.save_for_backward(xc, wc, offs)
        ctx.dtypes = (x.dtype, w.dtype)
        with record_function(EXPERT_GEMM):
            return F.grouped_mm(xc, wc.transpose(-2, -1), offs=offs)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, None]:
        x, w, offs = ctx.saved_tensors
        grad = grad.to(x.dtype).contiguous()
        with record_function(EXPERT_GEMM):
            gx = F.grouped_mm(grad, w, offs=offs)  # (T, out) x (E, out, in) -> (T, in)
            gw = F.grouped_mm(grad.t().contiguous(), x, offs=offs)  # (out, T) x (T, in) -> (E, out, in)
        return gx.to(ctx.dtypes[0]), gw.to(ctx.dtypes[1]), None


class MoE(nn.Module):
    """Routed top-k SwiGLU experts: (B, S, width) -> (B, S, width)."""

    def __init__(self, p: Preset, impl: str = "looped"):
        super().__init__()
        if impl not in IMPLS:
            raise ValueError(f"experts_impl must be one of {IMPLS}, got {impl!r}")
        self.experts, self.top_k, self.impl = p.experts, p.top_k, impl
        self.router = nn.Linear(p.width, p.experts, bias=False)
        self.w_gate = nn.Parameter(torch.empty(p.experts, p.ffn, p.width))
        self.w_up = nn.Parameter(torch.empty(p.experts, p.ffn, p.width))
        self.w_down = nn.Parameter(torch.empty(p.experts, p.width, p.ffn))
        for w in (self.w_gate, self.w_up, self.w_down):
            nn.init.normal_(w, std=0.02)

    def route(self, flat: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(weights, experts), each (tokens, top_k): the chosen experts and their renormalised probabilities."""
        probs = F.softmax(self.router(flat).float(), dim=-1)
        weights, experts = probs.topk(self.top_k, dim=-1)
        return weights / weights.sum(-1, keepdim=True), experts

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        flat = x.reshape(b * s, d)
        weights, experts = self.route(flat)
        out = self._looped(flat, weights, experts) if self.impl == "looped" else self._grouped(flat, weights, experts)
        return out.view(b, s, d)

    def _looped(self, flat: torch.Tensor, weights: torch.Tensor, experts: torch.Tensor) -> torch.Tensor:
        out = torch.zeros_like(flat)
        for e in range(self.experts):
            token, slot = (experts == e).nonzero(as_tuple=True)
            if token.numel() == 0:
                continue
            xe = flat[token]
            h = F.silu(_ExpertMM.apply(xe, self.w_gate[e])) * _ExpertMM.apply(xe, self.w_up[e])
            ye = _ExpertMM.apply(h, self.w_down[e])
            out = out.index_add(0, token, (ye * weights[token, slot, None]).to(out.dtype))
        return out

    def _grouped(self, flat: torch.Tensor, weights: torch.Tensor, experts: torch.Tensor) -> torch.Tensor:
        order, rows, offs, total = pad_layout(experts.reshape(-1), self.experts)
        token = order // self.top_k  # the token each sorted (token, slot) pair came from
        # zero rows pad every group; silu(0)·0 = 0 keeps them zero through the down projection, their rows of
        # the output are never read, and their zero inputs add nothing to the weight gradients
        xs = flat.new_zeros(total, flat.shape[1]).index_copy(0, rows, flat[token])
        h = F.silu(_GroupedMM.apply(xs, self.w_gate, offs)) * _GroupedMM.apply(xs, self.w_up, offs)
        ys = _GroupedMM.apply(h, self.w_down, offs)[rows] * weights.reshape(-1)[order, None]
        return torch.zeros_like(flat).index_add(0, token, ys.to(flat.dtype))
