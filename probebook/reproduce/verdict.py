"""The verdict on one number and one claim of a reproduced record: pure functions on literal values.

``RULE`` is the rule in words; the archived reproduction carries it, and ``number_verdict`` is it in code.
"""

from __future__ import annotations

import math
from typing import Any

EXACT_REL_TOL = 1e-9
"""Relative tolerance for a number exact by nature (a recorded param, a code constant): a double's rounding."""

RULE = (
    "A number with a 95% interval on both runs is within when |new - old| <= sqrt(h_old^2 + h_new^2), where "
    "h_old and h_new are each interval's half width on the side facing the other value (the old run's upper "
    "half when the new value is higher, the new run's lower half); for two independent estimates with roughly "
    "normal errors that is the 95% interval of their difference, where overlapping intervals (|new - old| <= "
    "h_old + h_new) would pass differences up to about 2.8 standard errors. A number without an interval on "
    "either run is compared only when it is exact by nature (a recorded param or a code constant): within "
    f"when the values agree to a relative {EXACT_REL_TOL:g}, else outside; any other number without intervals "
    "is not comparable, unless the two runs gave the same value to that relative tolerance (a deterministic "
    "computation reproduced exactly, such as a numerical error on a seeded batch): within. A number the new "
    "evidence cannot produce is missing. A claim held when it is true on "
    "both runs, flipped when the new evidence makes it false, and not comparable when the new render cannot "
    "evaluate it."
)
"""The verdict rule as the archived reproduction states it."""


def _half(value: float, interval: tuple[float, float], upward: bool) -> float:
    low, high = interval
    return max(0.0, high - value) if upward else max(0.0, value - low)


def number_verdict(
    old: float | None,
    new: float | None,
    old_interval: tuple[float, float] | None,
    new_interval: tuple[float, float] | None,
    exact: bool,
    new_present: bool = True,
) -> str:
    """``within``, ``outside``, ``not comparable`` or ``missing`` for one number (values in one unit), by ``RULE``.

    ``exact``: the number is exact by nature (``exact_by_nature``). ``new_present``: the new render produced
    the number at all (False: ``missing``).
    """
    if not new_present or new is None:
        return "missing"
    if old is None or not (math.isfinite(old) and math.isfinite(new)):
        return "not comparable"
    diff = new - old
    if old_interval is not None and new_interval is not None:
        upward = diff > 0
        bound = math.hypot(_half(old, old_interval, upward), _half(new, new_interval, not upward))
        return "within" if abs(diff) <= bound else "outside"
    same = abs(diff) <= EXACT_REL_TOL * max(abs(old), abs(new))
    if exact:
        return "within" if same else "outside"
    return "within" if same else "not comparable"


def exact_by_nature(row: dict[str, Any]) -> bool:
    """Whether a ledger row's number is exact by nature: a recorded param or a code constant, not a measurement.

    Read from its derivation: ``value(ref, "params.…")`` says ``evidence field params.…`` and ``constant(…)``
    says ``the code's constant …`` (``render.functions.general``).
    """
    derivation = str(row.get("derivation") or "")
    return derivation.startswith(("evidence field params.", "the code's constant"))


MEASURED = "measured"
RECORDED = "recorded"
"""A number's basis in a reproduction: counted apart (``compare.summary``), as a recorded number that agrees is the
evidence restated, not a measurement that reproduced."""


def number_basis(row: dict[str, Any]) -> str:
    """``recorded`` for a ledger row whose number the evidence recorded rather than measured: a param or a code
    constant (``exact_by_nature``), or a reading of the machine (the record's Environment block, keyed
    ``environment…``: GPU count, power limit, clocks; or a ``machine.`` field); else ``measured``."""
    key, derivation = str(row.get("key") or ""), str(row.get("derivation") or "")
    machine = key.startswith("environment") or derivation.startswith("evidence field machine.")
    return RECORDED if exact_by_nature(row) or machine else MEASURED


def claim_verdict(old: bool, new: bool | None) -> str:
    """``held``, ``flipped`` or ``not comparable`` for a claim true (``old``) or false on the original evidence.

    A claim the original makes false (only a record rendered outside a build can have one) and finds true is
    ``flipped`` too: its truth changed.
    """
    if new is None:
        return "not comparable"
    return "held" if new == old else "flipped"


def relative_change(old: float | None, new: float | None) -> float | None:
    """(new - old) / |old|, dimensionless; None when either is missing or old is zero (``render.numbers.ledger``)."""
    from render.numbers.ledger import relative_change as change

    return change(old, new)
