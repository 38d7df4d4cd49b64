"""Why a number shows no interval: the one list of reasons a ledger row may give instead (issue 23).

Every derived number that depends on timings carries a 95% interval (``render.derive.intervals``). A number that
carries none says why, in its ledger row's ``basis`` and in its link's title, with one of ``BASES``: a row with an
interval says ``interval``, a recorded param or a count says ``exact``, and every other reason is named here, so
a test can walk a site's ledger and find each number that neither has an interval nor says why not.
"""

from __future__ import annotations

INTERVAL = "interval"
EXACT = "exact"
OBSERVED = "observed"
FEW = "few windows"
RECORDED = "as recorded"
WORDS = "in words"
TEST = "a test"
END = "an interval's end"

BASES: dict[str, str] = {
    INTERVAL: "a 95% interval is stated with it",
    EXACT: "exact by nature: a recorded param, a count the probe set, or arithmetic on them alone",
    OBSERVED: (
        "a reading as recorded, not an estimate from repeated windows: a clock, a power limit, a machine field, "
        "the fastest or slowest window, a peak, one run's numerical error"
    ),
    FEW: "fewer than 3 timed windows (render.derive.intervals.MIN_SAMPLES): too few to resample",
    RECORDED: "a value another document recorded, shown as that document recorded it",
    END: "the low or high end of another number's stated 95% interval: that interval is its uncertainty",
    TEST: "a test's own result (a p-value, a count of rounds or checks that passed): the test is its uncertainty",
    WORDS: "a number a generated sentence states (alt text, a warning); where it restates an estimate, that "
    "estimate's own row carries the interval",
}
"""Each basis a ledger row may state, and what it means (shown in a number's link title)."""


def check(basis: str) -> str:
    """``basis`` when it is one of ``BASES`` or empty (not stated); a ValueError names it otherwise."""
    if basis and basis not in BASES:
        raise ValueError(f"unknown basis {basis!r}: one of {', '.join(BASES)}")
    return basis


def combined(bases: list[str]) -> str:
    """The basis of a number combined from others that has no interval of its own: exact when every operand is,
    else the one other basis they share (exact operands aside); unstated ("") when they differ."""
    rest = {b for b in bases if b != EXACT}
    if not rest:
        return EXACT if bases else ""
    return rest.pop() if len(rest) == 1 and INTERVAL not in rest and "" not in rest else ""


def carried(bases: list[str]) -> str:
    """The basis of a number computed from operands that gives it no interval: ``few windows`` where an operand
    says it has too few windows to resample (so the result cannot be resampled either), else ``combined``."""
    return FEW if FEW in bases else combined(bases)
