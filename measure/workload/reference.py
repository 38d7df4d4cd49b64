"""Build the reference workload: decoder, fused AdamW, bf16 autocast, synthetic tokens on the device.

``--compile`` compiles each transformer block in place (regional compilation: the blocks share
one compiled graph, so compile time does not grow with depth); the embedding, final norm, head
and loss stay eager. Whether compilation engaged is observed at run time (``observe.py``).
"""

from __future__ import annotations

from typing import Any, cast

import torch
import torch.nn.functional as F

from measure.workload import Arm, LossPrecision, StreamParts, Workload, WorkloadOptions
from measure.workload.experts import GROUP_ALIGN_ROWS
from measure.workload.model import Attention, Decoder, rope_tables
from measure.workload.presets import Preset, active_param_count, get_preset

LEARNING_RATE = 3e-4  # any finite rate: the probes time the update, they do not train to a target


def build_reference(options: WorkloadOptions) -> Workload:
    """The reference decoder for ``options.preset`` on ``options.device``, with its step and ablation arms."""
    preset = get_preset(options.preset)
    device = torch.device(options.device)
    torch.manual_seed(options.seed)
    model = Decoder(
        preset,
        checkpointing=options.checkpointing,
        sliding_window=options.sliding_window,
        global_every=options.global_every,
        experts_impl=options.experts_impl,
    ).to(device)
    model.train()
    # fused AdamW: one kernel launch for the whole update (torch >= 2.4 on CUDA and CPU)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, fused=True)
    if options.compile:
        for block in model.blocks:
            block.compile(dynamic=False)
    autocast_on = options.dtype == "bf16"

    def forward_loss(batch: Any) -> torch.Tensor:
        # (inputs, targets) or (inputs, targets, mask request): the mask probe's batches carry
        # ``lengths`` / ``doc_ids`` / ``explicit_mask`` for Decoder.forward, or ``sliding_window`` /
        # ``global_every`` for its windowed layers; padded targets are -100
        inputs, targets = batch[0], batch[1]
        mask_request = dict(batch[2]) if len(batch) > 2 else {}
        window = mask_request.pop("sliding_window", None), mask_request.pop("global_every", None)
        before = model.sliding_window, model.global_every
        if window[0] is not None:
            model.sliding_window, model.global_every = window
        try:
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast_on):
                if model.hidden:
                    # ablate "no-loss-head": a cheap surrogate loss on the hidden state (timing-only)
                    return model(inputs, **mask_request).float().pow(2).mean()
                logits = model(inputs, **mask_request)
                return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))
        finally:
            model.sliding_window, model.global_every = before

    def hidden_and_head(batch: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        model.hidden = True  # the decoder's switch: final normed hidden state, no head
        try:
            return model(batch[0]), model.head.weight, batch[1]
        finally:
            model.hidden = False

    def stream_loss(h: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        logits = model.head(model.norm(h))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))

    def loss_and_logits(batch: Any) -> tuple[torch.Tensor, torch.Tensor]:
        inputs, targets = batch[0], batch[1]
        mask_request = dict(batch[2]) if len(batch) > 2 else {}
        window = mask_request.pop("sliding_window", None), mask_request.pop("global_every", None)
        before = model.sliding_window, model.global_every
        if window[0] is not None:  # a sliding request, as forward_loss takes it
            model.sliding_window, model.global_every = window
        try:
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast_on):
                logits = model(inputs, **mask_request)
                return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1)), logits
        finally:
            model.sliding_window, model.global_every = before

    def step(batch: Any) -> torch.Tensor:
        loss = forward_loss(batch)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss

    def make_batch(batch: int, seq_len: int) -> tuple[torch.Tensor, torch.Tensor]:
        # random token ids made on the device: no host work or host->device copy in the step
        gen = torch.Generator(device=device).manual_seed(options.seed)
        tokens = torch.randint(0, preset.vocab, (batch, seq_len + 1), device=device, generator=gen)
        return tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()

    def no_optimizer(batch: Any) -> torch.Tensor:
        loss = forward_loss(batch)
        loss.backward()
        optimizer.zero_grad(set_to_none=True)
        return loss

    def no_loss_head(batch: Any) -> torch.Tensor:
        model.hidden = True
        try:
            return step(batch)
        finally:
            model.hidden = False

    attentions = [cast(Attention, block.attn) for block in model.blocks]  # nn.Module attributes type as Tensor | Module

    def no_attention(batch: Any) -> torch.Tensor:
        for attention in attentions:
            attention.identity = True
        try:
            return step(batch)
        finally:
            for attention in attentions:
                attention.identity = False

    arms = {
        "no-optimizer": Arm(
            no_optimizer, timing_only=False, removes="optimizer.step (forward and backward are unchanged)"
        ),
        "no-loss-head": Arm(
            no_loss_head,
            timing_only=True,
            removes="output head and cross-entropy (a mean-square surrogate loss on the hidden state)",
        ),
        "no-attention": Arm(
            no_attention, timing_only=True, removes="scaled-dot-product attention (replaced by identity on the values)"
        ),
    }
    return Workload(
        name=f"reference:{preset.name}",
        model=model,
        make_batch=make_batch,
        step=step,
        optimizer=optimizer,
        forward=loss_and_logits,
        arms=arms,
        head=hidden_and_head,
        stream=StreamParts(
            blocks=list(model.blocks),
            embed=model.embed,
            extra=lambda inputs: rope_tables(inputs.shape[1], preset.head_dim, inputs.device),
            loss=stream_loss,
        ),
        mask_kinds=("explicit", "padded", "padded-causal", "sliding", "document"),
        layers=preset.layers,
        heads=preset.heads,
        head_dim=preset.head_dim,
        n_params_active=active_param_count(preset) if preset.experts else None,
        moe_shape=moe_shape(preset, options.experts_impl),
        vocab=preset.vocab,
        # cross_entropy is on autocast's float32 list: the loss is fp32 whatever the logits' dtype
        loss_precision=LossPrecision(loss="fp32", logits="bf16" if autocast_on else "fp32"),
    )


def moe_shape(preset: Preset, experts_impl: str) -> dict[str, int] | None:
    """``Workload.moe_shape`` of ``preset`` run with ``experts_impl`` (None for a dense preset)."""
    if not preset.experts:
        return None
    shape = {"n_experts": preset.experts, "experts_top_k": preset.top_k}
    if experts_impl == "grouped":
        shape["expert_pad_rows"] = GROUP_ALIGN_ROWS
    return shape
