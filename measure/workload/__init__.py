"""What a probe times: a model, a batch maker and a training step (ARCHITECTURE.md §Workloads, issue 4).

``load_workload(options)`` returns a ``Workload``: the reference decoder for a preset, or a
user's own harness named ``package.module:factory``. The plug-in factory is called with a
``WorkloadOptions`` and returns either a ``Workload`` or a tuple ``(model, make_batch, step)``
(optionally a 4th item, the optimizer), so a probe times the user's harness, never a
re-implementation of it. Importing this package does not import torch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from measure.errors import ProbebookError
from measure.options import check_choices, option
from measure.workload.presets import PRESETS

DTYPES = ("bf16", "fp32")
EXPERTS_IMPLS = ("looped", "grouped")
DEVICES = ("cpu", "cuda")


@dataclass(frozen=True)
class WorkloadFields:
    """The workload fields a probe's config shares with ``WorkloadOptions`` (declared here only)."""

    preset: str = option("tiny", choices=tuple(PRESETS))
    """Reference preset (a plug-in may read it or ignore it)."""
    compile: bool = False
    """Compile the model's blocks with torch.compile (regional compilation)."""
    checkpointing: bool = False
    """Recompute each block's activations in backward (activation checkpointing)."""
    dtype: str = option("bf16", choices=DTYPES)
    """Compute dtype: ``bf16`` autocast or ``fp32`` (no autocast)."""
    seed: int = 0
    """Seed for weights, synthetic tokens and random operands."""
    sliding_window: int | None = None
    """Reference decoder: local layers attend to the last W keys (None: every layer global)."""
    global_every: int | None = None
    """Reference decoder with a window: every K-th layer stays global (None: every layer local)."""
    experts_impl: str = option("looped", choices=EXPERTS_IMPLS)
    """MoE presets: expert GEMMs as a per-expert loop (looped) or one grouped_mm per projection (grouped)."""


@dataclass(frozen=True)
class WorkloadOptions(WorkloadFields):
    """How to build a workload; passed unchanged to a plug-in factory."""

    device: str = option("cpu", choices=DEVICES)
    """``cpu`` or ``cuda`` (already resolved, never ``auto``)."""

    def __post_init__(self) -> None:
        check_window(self.sliding_window, self.global_every)
        check_choices(self)


def check_window(sliding_window: int | None, global_every: int | None) -> None:
    """Refuse a window below 1, or ``--global-every`` without a window, with one line naming the option."""
    if sliding_window is not None and sliding_window < 1:
        raise ProbebookError(f"--sliding-window must be >= 1, got {sliding_window}")
    if global_every is not None:
        if global_every < 1:
            raise ProbebookError(f"--global-every must be >= 1, got {global_every}")
        if sliding_window is None:
            raise ProbebookError("--global-every needs --sliding-window (it says which layers stay global)")


@dataclass
class Arm:
    """A variant of the training step for the ``ablate`` probe."""

    step: Callable[[Any], Any]
    """Runs one variant step on a batch."""
    timing_only: bool
    """True when the variant no longer computes the same mathematics (its numbers time, not train)."""
    removes: str
    """One line: which term of the step this arm removes."""


@dataclass(frozen=True)
class LossPrecision:
    """What precision a step's loss ran in: the loss's dtype and the logits' (``fp32``, ``bf16``)."""

    loss: str
    logits: str


@dataclass
class Workload:
    """A model, a batch maker and a training step, plus what probes need to describe them."""

    name: str
    """``reference:<preset>`` or the plug-in spec ``package.module:factory``."""
    model: Any
    """The ``torch.nn.Module`` being trained (its Linear layers give the GEMM shapes)."""
    make_batch: Callable[[int, int], Any]
    """``make_batch(batch, seq_len)`` -> one batch on the device (tensors, or tuples/dicts of them)."""
    step: Callable[[Any], Any]
    """One full training step (forward, backward, optimizer) on a batch; may return without syncing."""
    optimizer: Any = None
    """The ``torch.optim.Optimizer`` the step uses, if exposed (the ``optimizer`` probe needs it)."""
    forward: Callable[[Any], Any] | None = None
    """``forward(batch) -> (loss, logits or None)``: the step's forward pass alone (``agreement``, ``hvp``)."""
    arms: dict[str, Arm] = field(default_factory=dict)
    """Named step variants for ``ablate`` (the user-defined arms of a plug-in go here)."""
    layers: int | None = None
    """Transformer layers, for the attention term of model FLOPs (None: attention term unknown)."""
    heads: int | None = None
    """Attention heads per layer, for model FLOPs."""
    head_dim: int | None = None
    """Head width, for model FLOPs."""
    n_params: int = 0
    """Unique trainable parameters, counted from the model (filled in by ``load_workload``)."""
    n_params_total: int = 0
    """Unique parameters, frozen ones included (filled in by ``load_workload``; a LoRA base counts here)."""
    n_params_active: int | None = None
    """Parameters a token's forward uses, where fewer than all (a mixture of experts: only routed experts count)."""
    moe_shape: dict[str, int] | None = None
    """A mixture of experts' shape, recorded in params so a page templates it from evidence, not from code:
    ``n_experts`` per block, ``experts_top_k`` a token is routed to, and for grouped experts ``expert_pad_rows``
    (each group padded to a multiple of it, ``measure.workload.experts.GROUP_ALIGN_ROWS``). None: dense."""
    head: Callable[[Any], tuple[Any, Any, Any]] | None = None
    """``head(batch) -> (hidden, head_weight, targets)``: the final hidden state before the output head, the head's
    weight (vocab x width) and the targets, for the chunked-loss arms of ``agreement`` and ``loss-memory``."""
    stream: StreamParts | None = None
    """How the ``stream`` probe may visit the model block by block (None: the probe refuses this workload)."""
    mask_kinds: tuple[str, ...] = ()
    """Mask requests the step honours as a batch's third item (``mask``'s kinds beyond ``causal``)."""
    uses_preset: bool = False
    """Whether ``--preset`` shaped this workload (a plug-in's factory read ``options.preset``)."""
    source: dict[str, Any] | None = None
    """A plug-in's source fingerprint (``plugin.source_fingerprint``); None for the reference decoder."""
    ignored: dict[str, Any] = field(default_factory=dict)
    """Options set on the command line that a plug-in's factory never read, with their values (``load_plugin``)."""
    vocab: int | None = None
    """The output head's vocabulary (logits per token), recorded with every run (issue 43); None: not stated."""
    loss_precision: LossPrecision | None = None
    """The dtype the loss is computed in and the logits' dtype (issue 43); None: not stated (a plug-in's own)."""


@dataclass
class StreamParts:
    """The parts of a model the ``stream`` probe visits: embedding, blocks, head and loss (a plug-in fills them)."""

    blocks: list[Any]
    """The blocks, in forward order; each is called ``block(h, *extra)`` and has the same parameter names."""
    embed: Callable[[Any], Any]
    """``embed(inputs) -> h``: the hidden state entering the first block."""
    extra: Callable[[Any], tuple[Any, ...]]
    """``extra(inputs) -> tuple``: the further arguments every block takes (the reference's RoPE tables)."""
    loss: Callable[[Any, Any], Any]
    """``loss(h, targets) -> loss``: the final norm, head and loss on the last block's output."""


def n_params(model: Any) -> int:
    """Unique trainable parameters of a module (a tied weight is counted once)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def n_params_total(model: Any) -> int:
    """Unique parameters of a module, frozen ones included (a tied weight is counted once)."""
    return sum(p.numel() for p in model.parameters())


def load_workload(options: WorkloadOptions, spec: str | None = None) -> Workload:
    """The reference decoder for ``options.preset``, or the plug-in ``spec`` (``package.module:factory``)."""
    if spec:
        from measure.workload.plugin import load_plugin

        workload = load_plugin(spec, options)
    else:
        if options.preset not in PRESETS:
            raise ProbebookError(f"unknown preset {options.preset!r}; choose one of {', '.join(PRESETS)}")
        from measure.workload.reference import build_reference

        workload = build_reference(options)
        workload.uses_preset = True
    workload.n_params = n_params(workload.model)
    workload.n_params_total = n_params_total(workload.model)
    return workload
