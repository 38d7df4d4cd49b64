"""The grouped MoE variant's padding (each expert group a multiple of 8 rows): the layout on literal routings, and
looped = grouped on loss and every gradient when no group is a multiple of 8, on CPU."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from measure.workload.experts import GROUP_ALIGN_ROWS, MoE, pad_layout  # noqa: E402
from measure.workload.presets import PRESETS  # noqa: E402


def test_pad_layout_on_a_literal_routing():
    # groups of 3, 9, 0 and 2 pairs: padded to 8, 16, 0 and the rest of round_up(14 + 4·7, 8) = 48
    choice = torch.tensor([1, 0, 1, 3, 1, 1, 0, 1, 1, 1, 0, 3, 1, 1])
    order, rows, offs, total = pad_layout(choice, 4)
    assert total == 48
    assert offs.dtype == torch.int32 and offs.tolist() == [8, 24, 24, 48]
    assert [int(choice[i]) for i in order] == [0] * 3 + [1] * 9 + [3] * 2
    assert rows.tolist() == [0, 1, 2, 8, 9, 10, 11, 12, 13, 14, 15, 16, 24, 25]


def test_pad_layout_keeps_a_routing_already_aligned_and_pads_only_the_last_group():
    choice = torch.tensor([0] * 8 + [1] * 16)
    _, rows, offs, total = pad_layout(choice, 2)
    assert total == 40  # round_up(24 + 2·7, 8)
    assert offs.tolist() == [8, 40] and rows.tolist() == list(range(24))


def test_every_padded_group_is_a_multiple_of_the_alignment():
    gen = torch.Generator().manual_seed(3)
    for _ in range(20):
        choice = torch.randint(0, 5, (int(torch.randint(1, 90, (1,), generator=gen)),), generator=gen)
        _, rows, offs, total = pad_layout(choice, 5)
        starts = [0, *offs.tolist()[:-1]]
        sizes = [end - start for start, end in zip(starts, offs.tolist(), strict=True)]
        assert all(size % GROUP_ALIGN_ROWS == 0 and size >= 0 for size in sizes)
        assert offs.tolist()[-1] == total and len(set(rows.tolist())) == choice.numel()


def test_looped_and_grouped_agree_on_loss_and_gradients_with_unaligned_groups():
    torch.manual_seed(0)
    preset = PRESETS["moe-tiny"]
    looped = MoE(preset, "looped")
    grouped = MoE(preset, "grouped")
    grouped.load_state_dict(looped.state_dict())
    x = torch.randn(3, 7, preset.width)  # 21 tokens x top-2 = 42 pairs: 42 is no multiple of 8
    counts = torch.bincount(looped.route(x.reshape(-1, preset.width))[1].reshape(-1), minlength=preset.experts)
    assert any(int(c) % GROUP_ALIGN_ROWS for c in counts), counts  # the case the padding is for
    results = {}
    for name, layer in (("looped", looped), ("grouped", grouped)):
        xi = x.clone().requires_grad_(True)
        loss = layer(xi).square().mean()
        loss.backward()
        results[name] = (loss.detach(), xi.grad, {k: p.grad for k, p in layer.named_parameters()})
    (loss_l, gx_l, gw_l), (loss_g, gx_g, gw_g) = results["looped"], results["grouped"]
    torch.testing.assert_close(loss_g, loss_l)
    torch.testing.assert_close(gx_g, gx_l, rtol=1e-4, atol=1e-6)
    assert set(gw_g) == set(gw_l) == {"router.weight", "w_gate", "w_up", "w_down"}
    for name in gw_l:
        torch.testing.assert_close(gw_g[name], gw_l[name], rtol=1e-4, atol=1e-6)
