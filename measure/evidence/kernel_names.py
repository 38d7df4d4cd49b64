"""Kernel and operator names -> category: the one place the categories are decided.

The ``kernels`` and ``mask`` probes record ``categorize(name)`` in each row when they measure; render
reads the category from the archived kernel name through the same function (``render/derive/kernels.py``),
so a rule fixed here corrects evidence archived before the fix, from its own raw names. Torch-free, so it
lives in the evidence layer render may read. Architecture tags are read from the archived kernel names
at render time too.
"""

from __future__ import annotations

import re

EXPERT_GEMM = "expert_gemm"
"""The ``record_function`` label the MoE layer puts around its expert matmuls (``measure/workload/experts.py``).

It lives here, in the torch-free evidence layer, so the probe that reads it and render need no workload import."""

EXPERT_CATEGORY = "expert-gemm"
"""The expert GEMMs of a mixture of experts: kernels inside the MoE layer's ``EXPERT_GEMM`` annotation.

Their kernels carry ordinary GEMM names (a looped expert's matmul is the same cuBLAS kernel as a dense
linear's), so the category is read from the kernels launched inside the annotation, never from a kernel's
name; it is a part of ``gemm``, kept apart in ``data.expert_gemm`` so the six shares still sum to 1."""

CATEGORIES = ("attention", "gemm", "norm-elementwise", "loss", "optimizer", "other")
# (category, pattern) in match order; names are lower-cased first. Sources: kernel names seen in
# CUDA traces (cuBLAS "nvjet"/"sm90_xmma"/"cutlass", flash-attention "flash_fwd", xformers/
# mem-efficient "fmha", cuDNN SDPA, PyTorch "multi_tensor_apply"/"fused_adam", Inductor "triton_")
_RULES = (
    ("optimizer", r"adam|multi_tensor_apply|foreach|_fused_sgd|optimizer"),
    ("loss", r"cross_entropy|nll_?loss|log_?softmax|logsoftmax|softmax_warp_forward|softmax_warp_backward"),
    # cuDNN's SDPA backward runs two helper kernels of its own beside the fused one: the row-wise
    # dot(dO, O) it needs before the pass (``cudnn::fusion::compute_dot_do_o_specialized``) and the cast
    # of the fp32 dQ accumulator to bf16 after it (``cudnn::fusion::convert_dq_to_16bits``); both are
    # attention's work (issue 23, item 9; names from the H200 traces of the step-anatomy record).
    (
        "attention",
        r"flash|fmha|attention|sdpa|_efficient_attention|cudnn.*(attn|sdpa|fort_native)|"
        r"cudnn::fusion::(compute_dot_do_o|convert_dq_to_16bits)",
    ),
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


OPTIMIZER_RANGE = re.compile(r"^Optimizer\.step#")
"""The profiler range ``torch.optim`` opens around every ``optimizer.step`` (``Optimizer.step#AdamW.step``)."""
ATTENTION_OPS = re.compile(
    r"^aten::(_?scaled_dot_product|_efficient_attention|_flash_attention|_cudnn_attention)"
    r"|^autograd::engine::evaluate_function: _?ScaledDotProduct\w*Backward"
)
"""The aten operators of SDPA and autograd's node of their backward: every kernel or operator they run is
attention's, a math backend's bmm included."""


def enclosing(ancestors: list[str]) -> str | None:
    """The range a kernel or operator ran inside that decides its category (pure): the innermost of the optimizer's
    step range or an SDPA operator among ``ancestors`` (its enclosing profiler ranges, innermost first); None."""
    return next((a for a in ancestors if OPTIMIZER_RANGE.match(a) or ATTENTION_OPS.match(a)), None)


def categorize_in(name: str, ancestors: list[str]) -> str:
    """The category of a kernel or operator where the trace says where it ran (issue 40): inside the optimizer's
    step range, ``optimizer`` (AdamW's elementwise kernels on the CPU are ``aten::mul_``, ``aten::add_``); inside
    an SDPA operator, ``attention`` (the math backend's ``aten::bmm`` and softmax); else ``categorize(name)``."""
    if any(OPTIMIZER_RANGE.match(a) for a in ancestors):
        return "optimizer"
    if any(ATTENTION_OPS.match(a) for a in ancestors):
        return "attention"
    return categorize(name)


def is_expert_annotation(name: str) -> bool:
    """Whether a profiler row is the MoE layer's expert-GEMM annotation (``EXPERT_GEMM``)."""
    return name == EXPERT_GEMM
