"""Kernel and operator names -> category (shared by ``kernels`` and ``mask``; not a probe).

Architecture tags are read from the archived kernel names at render time (``render/derive/kernels.py``).
"""

from __future__ import annotations

import re

from measure.workload.presets import EXPERT_GEMM

EXPERT_CATEGORY = "expert-gemm"
"""The expert GEMMs of a mixture of experts: kernels inside the MoE layer's ``EXPERT_GEMM`` annotation.

Their kernels carry ordinary GEMM names (a looped expert's matmul is the same cuBLAS kernel as a dense
linear's), so the category is read from the annotation's span, never from a kernel's name; it is a part
of ``gemm``, kept apart in ``data.expert_gemm`` so the six shares still sum to 1."""

CATEGORIES = ("attention", "gemm", "norm-elementwise", "loss", "optimizer", "other")
# (category, pattern) in match order; names are lower-cased first. Sources: kernel names seen in
# CUDA traces (cuBLAS "nvjet"/"sm90_xmma"/"cutlass", flash-attention "flash_fwd", xformers/
# mem-efficient "fmha", cuDNN SDPA, PyTorch "multi_tensor_apply"/"fused_adam", Inductor "triton_")
_RULES = (
    ("optimizer", r"adam|multi_tensor_apply|foreach|_fused_sgd|optimizer"),
    ("loss", r"cross_entropy|nll_?loss|log_?softmax|logsoftmax|softmax_warp_forward|softmax_warp_backward"),
    ("attention", r"flash|fmha|attention|sdpa|_efficient_attention|cudnn.*(attn|sdpa|fort_native)"),
    (
        "gemm",
        r"gemm|nvjet|xmma|cutlass|cublas|matmul|aten::mm|aten::addmm|aten::bmm|aten::linear|\bmm\b|sm\d\d_.*tensorop",
    ),
    (
        "norm-elementwise",
        r"norm|elementwise|vectorized|reduce|rsqrt|silu|mul|add|pow|mean|cat|copy|triton_|"
        r"fill|embedding|index|where|neg|cos|sin|to_copy|clone|sum|div|sub|exp|outer|arange",
    ),
)


def categorize(name: str) -> str:
    """The category of a kernel or operator name (one of ``CATEGORIES``)."""
    low = name.lower()
    for category, pattern in _RULES:
        if re.search(pattern, low):
            return category
    return "other"


def is_expert_annotation(name: str) -> bool:
    """Whether a profiler row is the MoE layer's expert-GEMM annotation (``EXPERT_GEMM``)."""
    return name == EXPERT_GEMM
