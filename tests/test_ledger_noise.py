"""The ledger diff counts a relative change below ledger.NOISE_REL (1e-9) as floating-point noise, not a change."""

from __future__ import annotations

import math

from render.numbers.ledger import NOISE_REL, diff, same_value, without_noise


def _row(value: object, derivation: str = "median of 9 windows", text: str = "95.1 ms") -> dict[str, object]:
    return {
        "page": "records/a/v1.md",
        "key": "step",
        "value": value,
        "unit": "s",
        "text": text,
        "uncertainty": None,
        "evidence": ["sha256:ab"],
        "derivation": derivation,
    }


def test_noise_rel_is_one_in_a_billion() -> None:
    assert NOISE_REL == 1e-9


def test_same_value_within_noise() -> None:
    assert same_value(0.0951, 0.0951 * (1 + 1e-14))
    assert same_value(0.1 + 0.2, 0.3)
    assert same_value(None, None)
    assert same_value(math.nan, math.nan)
    assert same_value(10**400, 10**400 + 1)  # past a double's range: the same rule, exactly


def test_same_value_beyond_noise_or_of_another_kind() -> None:
    assert not same_value(0.0951, 0.0951 * (1 + 2e-9))
    assert not same_value(0.0, 1e-300)  # no relative size: any move from zero is a change
    assert not same_value(1.0, None)
    assert not same_value(1, True)
    assert not same_value(math.nan, 1.0)
    assert not same_value("1.0", 1.0)
    assert not same_value(1, 10**400)  # no OverflowError: an integer past a double's range is a value too
    assert not same_value(10**400, 10**400 + 10**392)
    assert not same_value(math.inf, -math.inf)
    assert not same_value(math.inf, 10**400)


def test_without_noise_rounds_decimals_to_nine_figures() -> None:
    assert without_noise("0.30000000000000004 s / 2") == "0.3 s / 2"
    assert without_noise("x = 1.2345678912e-05 of 9") == "x = 1.23456789e-05 of 9"
    assert without_noise("batch 4, 2048 tokens") == "batch 4, 2048 tokens"  # integers are not rounded


def test_diff_counts_noise_as_unchanged_and_real_moves_as_changed() -> None:
    old = [_row(0.30000000000000004, "0.30000000000000004 s")]
    assert diff(old, [_row(0.3, "0.3 s")]).changed == []
    assert diff(old, [_row(0.3, "0.3 s")]).unchanged == 1
    moved = diff(old, [_row(0.3000001, "0.3000001 s")])
    assert [c.key for c in moved.changed] == ["step"]
    assert diff(old, [_row(0.3, "0.3 s", text="96 ms")]).changed[0].new["text"] == "96 ms"
