"""Model FLOPs per token with frozen weights (measure/evidence/flops.py): literal inputs, exact values, refusals."""

from __future__ import annotations

import pytest

from measure.errors import ProbebookError
from measure.evidence.flops import attention_flops_per_token, dense_flops_per_token, training_flops_per_token
from measure.workload.presets import PRESETS, model_flops_per_token, param_count


def test_dense_part_is_4_all_plus_2_trainable():
    assert dense_flops_per_token(1000, 1000) == 6000  # every weight trains: PaLM's 6N
    assert dense_flops_per_token(1000, 0) == 4000  # frozen: forward and input gradients only
    assert dense_flops_per_token(1000, 10) == 4020  # LoRA: 4·1000 + 2·10


def test_attention_part_is_palms_12_l_h_q_t():
    assert attention_flops_per_token(2, 3, 4, 5) == 12 * 2 * 3 * 4 * 5 == 1440
    assert attention_flops_per_token(0, 3, 4, 5) == 0  # no attention layers


def test_training_flops_equal_palm_when_every_weight_trains():
    p = PRESETS["tiny"]
    n = param_count(p)
    assert training_flops_per_token(n, n, p.layers, p.heads, p.head_dim, 64) == model_flops_per_token(
        n, p.layers, p.heads, p.head_dim, 64
    )
    assert training_flops_per_token(n, n, p.layers, p.heads, p.head_dim, 64) == 6 * 361088 + 12 * 2 * 2 * 64 * 64


def test_a_frozen_base_with_adapters():
    # a 7e9 base, frozen, with 4e6 LoRA weights, 32 layers of 32 heads of 128 at 4096 tokens
    got = training_flops_per_token(7_000_000_000, 4_000_000, 32, 32, 128, 4096)
    assert got == 4 * 7_000_000_000 + 2 * 4_000_000 + 12 * 32 * 32 * 128 * 4096 == 34_450_450_944


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((10, 11), "params_trainable \\(11\\) exceeds params_all \\(10\\)"),
        ((-1, 0), "params_all must be a non-negative integer"),
        ((10, 2.5), "params_trainable must be a non-negative integer"),
        ((True, 0), "params_all must be a non-negative integer"),
    ],
)
def test_bad_counts_are_refused_in_one_line(args, message):
    with pytest.raises(ProbebookError, match=message):
        dense_flops_per_token(*args)
