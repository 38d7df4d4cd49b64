"""The verdict on one number and one claim of a reproduced record: pure functions on literal values.

``RULE`` is the rule in words; the archived reproduction carries it, and ``number_verdict`` is it in code.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from render.derive import basis, replication

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
    "evidence cannot produce is missing. A number only a generated sentence states (a chart's alt text, a "
    "warning, a note, a notice, an Answer's caveats) is not compared: it restates another number, which is "
    "compared on its own, or the runs' own condition. "
    "Each number is also judged three ways (render.derive.replication.verdict, the rule of claims and Answers): "
    "the relative difference new / old - 1 and its 95% interval, against the practical band of its probe class. "
    "A time or rate the record publishes across sessions (where a new session lands) is judged by that interval "
    "alone, as it already holds a new session's spread; a number the record publishes with this run's windows "
    "(a ratio or saving within one run) by both runs' intervals in quadrature. Resolved different when the interval "
    "excludes zero and the difference exceeds the band; equivalent when the interval lies within the band; "
    "otherwise not resolved. A claim held when the new evidence resolves it as stated, flipped when it resolves it "
    "the other way, not resolved otherwise, and not comparable when the new render cannot evaluate it."
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


CLAIM = "claim"
"""The unit of a claim's ledger row (``render.numbers.claims.KIND``): compared as a claim, not as a number."""


def compared(row: dict[str, Any]) -> bool:
    """Whether a ledger row of a rendered record is a number a reproduction compares: not a claim, and not a
    number stated in a generated sentence (basis ``in words``: alt text, a warning, a note, a notice, an Answer's
    caveats, ``render.numbers.said``). Such a number restates another row's estimate (compared on that row) or
    describes the runs themselves (how many points were flagged unstable, the windows a drift ran between); it is
    keyed by its place in the sentence, so one key can name another number when the new run's sentence reads
    otherwise, and a sentence the new runs do not call for (no drift, no warning) would read as missing numbers."""
    return row.get("unit") != CLAIM and row.get("basis") != basis.WORDS


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


ACROSS, WINDOWS, EXACT = "across sessions", "this run's windows", "exact"
"""Which interval a number was judged by: the record's across-sessions interval (an absolute time or rate whose
ledger row keeps this run's windows' interval apart, ``within``), this run's windows (a ratio, a saving, or a class
the archive never repeated), or none (a number exact by nature, or one without an interval)."""
DIFFERENT = "resolved different"
"""How a number's ``resolved`` outcome reads in a reproduction: the re-measurement differs, beyond the band."""


def judged_by(row: dict[str, Any]) -> str:
    """``ACROSS``, ``WINDOWS`` or ``EXACT`` for a ledger row of the original render."""
    if isinstance(row.get("within"), list):
        return ACROSS
    return WINDOWS if isinstance(row.get("uncertainty"), list) else EXACT


def band(probes: Iterable[str]) -> float:
    """The practical band of the probes a number comes from: the widest of their classes' (``replication.DELTA``)."""
    classes = {replication.probe_class(p) for p in probes} or {replication.DEFAULT_CLASS}
    return max(replication.DELTA[c] for c in classes)


def three_way(
    old: float | None,
    new: float | None,
    old_interval: tuple[float, float] | None,
    new_interval: tuple[float, float] | None,
    judged: str,
    delta: float,
    exact: bool = False,
    change: bool = False,
) -> replication.Verdict | None:
    """The three-way verdict of a number's re-measurement (``replication.verdict``); None when a value is missing.

    ``judged`` (``judged_by``) picks the intervals: across sessions, the original's alone (it already says where a
    new session lands); this run's windows, both runs' in quadrature (``replication.relative_difference``). Two
    positive values compare by their ratio; a ``change`` (a saving, a share shown in percent) or a signed number by
    their difference as an amount, as ``render.numbers.directions.unresolved`` compares them.
    A number without an interval is equivalent when it is exact by nature or reproduced to a double's rounding,
    resolved when exact by nature and different beyond the band, and otherwise not resolved (it cannot be judged)."""
    if old is None or new is None or not (math.isfinite(old) and math.isfinite(new)):
        return None
    if judged == ACROSS:
        new_interval = None
    elif judged == EXACT or old_interval is None or new_interval is None:
        same = abs(new - old) <= EXACT_REL_TOL * max(abs(old), abs(new))
        effect = 0.0 if same else (new / old - 1 if old > 0 and new > 0 else new - old)
        if same or exact:
            return replication.verdict(effect, (effect, effect), delta)
        return replication.Verdict(replication.NOT_RESOLVED, effect, (-math.inf, math.inf), delta)
    ends = [new, old, *(old_interval or ()), *(new_interval or ())]
    if not change and all(v > 0 for v in ends):
        effect, interval = replication.relative_difference(new, new_interval, old, old_interval)
    else:
        effect, interval = replication.absolute_difference(new, new_interval, old, old_interval)
    return replication.verdict(effect, interval, delta)


def claim_outcome(was: bool, now: bool | None, outcome: str | None) -> str:
    """A claim's verdict: ``held``, ``flipped``, ``not resolved`` or ``not comparable``, from its truth before and
    after and the new render's three-way ``outcome`` (``render.numbers.directions.claim_outcome``: ``resolved``,
    ``against``, ``not resolved``). A render that did not judge it (None) falls back to its truth."""
    if now is None:
        return "not comparable"
    if outcome is None or not was:
        return claim_verdict(was, now)
    return {"resolved": "held", "against": "flipped"}.get(outcome, "not resolved")
