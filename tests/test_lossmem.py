"""Loss-memory derivations: per-arm memory slopes, bytes per logit element, largest usable microbatch, refusals."""

from __future__ import annotations

import pytest

from measure.errors import ProbebookError
from render.derive.lossmem import (
    bytes_per_logit_element,
    fraction_of_asymptote,
    largest_usable_microbatch,
    linear_fit,
    marginal_bytes_per_microbatch,
    spilled,
    stable_prefix,
)

# synthetic rows: 'unfused' holds fp32 logits and their gradient (12.5 bytes per logit here)
TOKENS, VOCAB = 1000, 32000
ROWS = [
    {
        "arm": "unfused",
        "microbatch": mb,
        "tokens_per_step": TOKENS,
        "vocab": VOCAB,
        "peak_bytes": 1_000_000_000 + 500_000_000 * mb,
        "tok_s": tok,
    }
    for mb, tok in ((1, 1000.0), (2, 1800.0), (4, 2500.0), (8, 1100.0), (16, 3000.0))
] + [
    {
        "arm": "fused",
        "microbatch": mb,
        "tokens_per_step": TOKENS,
        "vocab": VOCAB,
        "peak_bytes": 1_000_000_000 + 100_000_000 * mb,
        "tok_s": None,
    }
    for mb in (1, 2, 4)
]


def test_linear_fit_exact_values():
    # (1, 1000), (2, 2000), (3, 3600): slope 1300, intercept -400, residuals 100, -200, 100
    assert linear_fit([1, 2, 3], [1000, 2000, 3600]) == (1300.0, -400.0, 200.0)


def test_marginal_bytes_per_microbatch_per_arm():
    slope = marginal_bytes_per_microbatch(ROWS, "unfused")
    assert slope.bytes_per_microbatch == pytest.approx(500_000_000.0, rel=1e-12)
    assert slope.intercept_bytes == pytest.approx(1_000_000_000.0, rel=1e-12)
    assert slope.max_abs_residual_bytes == pytest.approx(0.0, abs=1e-3)
    assert marginal_bytes_per_microbatch(ROWS, "fused").bytes_per_microbatch == pytest.approx(1e8, rel=1e-12)


def test_slope_residual_is_reported():
    rows = [{"arm": "x", "microbatch": m, "peak_bytes": b} for m, b in ((1, 1000), (2, 2000), (3, 3600))]
    assert marginal_bytes_per_microbatch(rows, "x").to_json() == {
        "bytes_per_microbatch": 1300.0,
        "intercept_bytes": -400.0,
        "max_abs_residual_bytes": 200.0,
    }


def test_bytes_per_logit_element_from_two_arms():
    # (5e8 - 1e8) / (1000 tokens x 32000 vocab) = 12.5 bytes per logit element
    assert bytes_per_logit_element(ROWS, "unfused", "fused") == pytest.approx(12.5, rel=1e-12)
    assert bytes_per_logit_element(ROWS, "fused", "unfused") == pytest.approx(-12.5, rel=1e-12)
    assert bytes_per_logit_element(ROWS, "unfused", "fused", vocab=64000) == pytest.approx(6.25, rel=1e-12)


def test_bytes_per_logit_element_refusals():
    no_vocab = [{k: v for k, v in r.items() if k != "vocab"} for r in ROWS]
    with pytest.raises(ProbebookError, match="no vocab column; give the vocabulary size"):
        bytes_per_logit_element(no_vocab, "unfused", "fused")
    mixed = [*ROWS[:-1], {**ROWS[-1], "tokens_per_step": 2000}]
    with pytest.raises(ProbebookError, match=r"different tokens_per_step values \(1000, 2000\)"):
        bytes_per_logit_element(mixed, "unfused", "fused")


def test_largest_usable_microbatch_stops_at_the_first_collapse():
    # 8 runs at 1100 tok/s < 0.5 x 2500 of its neighbour: collapsed, so 16 does not count either
    assert largest_usable_microbatch(ROWS, "unfused") == 4
    assert largest_usable_microbatch(ROWS, "unfused", collapse=0.4) == 16


def test_stable_prefix_uses_medians_and_stops_at_a_failure():
    points = [(1, 100.0), (2, 150.0), (2, 190.0), (2, 170.0), (4, None), (8, 400.0)]
    assert stable_prefix(points) == [(1, 100.0), (2, 170.0)]
    with pytest.raises(ProbebookError, match="between 0 and 1"):
        stable_prefix(points, collapse=1.5)


def test_fraction_of_asymptote():
    assert fraction_of_asymptote(40000.0, 50000.0) == 0.8
    with pytest.raises(ProbebookError, match="asymptote must be a positive tokens/s"):
        fraction_of_asymptote(40000.0, 0.0)


def test_refusals_name_the_arm():
    with pytest.raises(ProbebookError, match=r"no loss-memory rows for arm 'chunked' \(arms present: unfused, fused\)"):
        marginal_bytes_per_microbatch(ROWS, "chunked")
    with pytest.raises(ProbebookError, match="arm 'x' needs peak_bytes at 2 or more distinct microbatch sizes"):
        marginal_bytes_per_microbatch([{"arm": "x", "microbatch": 2, "peak_bytes": 10}] * 3, "x")
    with pytest.raises(ProbebookError, match="arm 'fused' has no tok_s values"):
        largest_usable_microbatch(ROWS, "fused")


def test_spill_ends_the_usable_microbatches_with_the_card_from_the_row_or_the_machine():
    # unfused peaks: 1.5e9, 2e9, 3e9, 5e9, 9e9 bytes at microbatch 1, 2, 4, 8, 16
    assert largest_usable_microbatch(ROWS, "unfused", collapse=0.4) == 16
    assert largest_usable_microbatch(ROWS, "unfused", collapse=0.4, device_bytes=4e9) == 4
    with_column = [{**r, "device_bytes": 2e9} for r in ROWS]  # an imported device_bytes column
    assert largest_usable_microbatch(with_column, "unfused", collapse=0.4, device_bytes=4e9) == 2
    too_small = [{**r, "device_bytes": 1e9} for r in ROWS]
    with pytest.raises(ProbebookError, match="'unfused' has no usable microbatch: the smallest one spilled"):
        largest_usable_microbatch(too_small, "unfused")
    assert (spilled(5e9, 4e9), spilled(4e9, 4e9), spilled(None, 4e9), spilled(5e9, None)) == (True, False, False, False)
