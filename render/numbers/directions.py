"""Labels that state a direction (speed-up, saving, slower, faster) checked against their number, like a claim.

A headline's label is prose the build would otherwise never check, and a label can turn a true number
into a false statement: "forward-over-reverse against double backward (speed-up): 1.93" reads as
forward-over-reverse being the faster, when the number says double backward is (issue 23, item 4).
``check_label`` reads the direction a label states and refuses it when the number does not have it:

- a ratio of times (a unitless number not in a percent format) states a speed-up or a slowdown when it
  is above 1;
- a fractional change (a percent format: a saving, a slowdown) or a difference in a unit (seconds saved
  per epoch) states its direction when it is above 0;
- a number that names what it compares (``Quantity.order``: the faster, the slower) must be named in
  the label in the order the direction word reads: the faster first for a speed-up, a saving or
  "faster", the slower first for a slowdown or "slower".
"""

from __future__ import annotations

import contextvars
import json
import re
from collections.abc import Callable
from typing import Any

from render.derive import replication
from render.numbers.claims import checking
from render.numbers.quantity import COMPARE, ClaimError, Comparison, Quantity
from render.numbers.units import is_timed_unit, split_unit

WORDS: dict[str, str] = {
    "speed-up": "faster",
    "speedup": "faster",
    "faster": "faster",
    "saving": "faster",
    "saves": "faster",
    "slowdown": "slower",
    "slower": "slower",
}
"""Each direction word and what it says of the thing a label names first."""
_WORD = re.compile(r"(?<![a-z])(" + "|".join(re.escape(w) for w in WORDS) + r")(?![a-z])")


def stated_direction(label: str) -> str | None:
    """``"faster"`` or ``"slower"``: what a label's first direction word says of what it names first (None: no word)."""
    m = _WORD.search(label.lower())
    return WORDS[m.group(1)] if m else None


def _plain(text: str) -> str:
    return re.sub(r"[-_\s]+", " ", text.lower())


def check_label(label: str, q: Quantity, where: str) -> None:
    """Refuse (one line naming ``where``) a label whose direction word the number ``q`` does not bear out."""
    direction = stated_direction(label)
    if direction is None or q.value is None or not checking():  # a reproduction's render records, never refuses
        return
    change = q.fmt.endswith("%") or bool(q.unit)  # a fraction of a whole, or a difference in its unit
    holds = q.value > 0 if change else q.value > 1
    if not holds:
        bound = ("0%" if q.fmt.endswith("%") else "0") if change else "1"
        raise ClaimError(f"{where}: the label {label!r} says {direction}, but {q.key} = {q.text} is not above {bound}")
    if q.order is None:
        return
    text = _plain(label)
    first, second = q.order if direction == "faster" else q.order[::-1]
    at_first, at_second = text.find(_plain(first)), text.find(_plain(second))
    if at_first >= 0 and at_second >= 0 and at_second < at_first:
        raise ClaimError(
            f"{where}: the label {label!r} names {second} first and says {direction}, but {q.key} = {q.text} "
            f"says {q.order[0]} is the faster"
        )


UNRESOLVED = "within noise"
"""The mark a headline carries when its interval contains zero: it does not resolve a direction."""


def headline_mark(q: Quantity) -> str | None:
    """The visible mark a headline's number needs beyond its own: ``within noise`` when its 95% interval
    contains zero (a saving or a difference that the evidence does not tell from none), else None."""
    if q.uncertainty is None or q.value is None:
        return None
    lo, hi = q.uncertainty
    return UNRESOLVED if lo <= 0 <= hi else None


VERDICT_WORDS = (
    "faster", "slower", "quicker", "speed-up", "speedup", "speeds", "slowdown", "slows", "save", "saves", "saving",
    "saved", "cost", "costs", "costlier", "cheaper", "larger", "smaller", "bigger", "more", "less", "fewer", "higher",
    "lower", "above", "below", "exceed", "exceeds", "fails", "fail", "passes", "pass", "beats", "wins", "outruns",
    "grows", "shrinks", "gains", "loses", "raises", "lowers", "cuts", "bounds", "dominates",
)  # fmt: skip
"""Words by which an Answer's sentence states a direction (one thing above, below, faster than another)."""
_VERDICT = re.compile(r"(?<![a-z-])(" + "|".join(re.escape(w) for w in VERDICT_WORDS) + r")(?![a-z-])")


def verdict_direction(text: str) -> str | None:
    """The first word by which an Answer's sentence states a direction (None: it states none)."""
    m = _VERDICT.search(text.lower())
    return m.group(1) if m else None


def unresolved(c: Comparison) -> str | None:
    """Why comparison ``c`` is not resolved (None: it is), by the one three-way rule of claims, Answers and
    reproductions (``render.derive.replication.verdict``, issue 38).

    Two measured sides: the relative difference ``a / b − 1`` (an amount's difference for fractions and signed
    numbers), its interval from both sides' intervals, must exclude zero in the stated direction and exceed the
    practical band of the runs' class; two numbers of one run are judged by this run's windows (``Quantity.within``:
    the session moves both alike), numbers of different runs by where a new session lands. A side that is a
    threshold (a number in the page, an exact param, an interval's end) is a line the other's interval must clear.
    A measured side without an interval cannot resolve a direction.
    """
    left, right = c.left, c.right
    if left.value is None or right.value is None:
        return f"{c.text} has a side with no value"
    for side in (left, right):
        if not _threshold(side) and side.uncertainty is None and _timed(side) and side.basis in ("", "few windows"):
            return f"{c.text}, but {side.key} is measured and states no interval, so it cannot resolve a direction"
    one_run = bool(left.evidence) and left.evidence == right.evidence
    one_run = one_run or replication.same_lease(left.lease, right.lease)
    if left.uncertainty is None or right.uncertainty is None or _threshold(left) or _threshold(right):
        if right.value == 0 and _change(left) and left.uncertainty is not None and not _threshold(left):
            pass  # a measured change against none: judged against the band below, like two measurements
        else:
            return _clears(c, one_run)
    a_int, b_int = _interval(left, one_run), _scaled(_interval(right, one_run), c.factor)
    a, b = left.value, right.value * c.factor
    band = max((q.band for q in (left, right) if q.band is not None), default=replication.DELTA["step"])
    positive = all(x > 0 for x in (a, b, *(a_int or ()), *(b_int or ())))
    if positive and not _change(left):
        effect, interval = replication.relative_difference(a, a_int, b, b_int)
    elif b > 0 and not _change(left):  # an interval that reaches zero: the difference, as a fraction of b
        amount, (lo, hi) = replication.absolute_difference(a, a_int, b, b_int)
        effect, interval = amount / b, (lo / b, hi / b)
    else:
        effect, interval = replication.absolute_difference(a, a_int, b, b_int)
    judged = replication.verdict(effect, interval, band)
    wanted = 1 if c.op in (">", ">=") else -1
    if judged.outcome == replication.RESOLVED and wanted * effect > 0:
        return None if one_run else _cycles(c, a_int, b_int, band, wanted)
    basis = "this lease's windows" if one_run else "across sessions"
    return f"{c.text}, but it is {judged.words()} ({basis}), so it is not resolved as stated"


REVERSED = {">": "<", ">=": "<", "<": ">", "<=": ">"}
"""Each comparison's opposite direction: what a comparison resolved the other way states."""


def claim_outcome(comparisons: tuple[Comparison, ...] | list[Comparison]) -> str:
    """A claim judged by ``unresolved``'s rule: ``resolved`` when every comparison is resolved as stated,
    ``against`` when one is resolved the other way (the evidence says the opposite), else ``not resolved``
    (``probebook reproduce``'s held, flipped and not resolved)."""
    if all(unresolved(c) is None for c in comparisons):
        return "resolved"
    for c in comparisons:
        if c.holds is False and unresolved(Comparison(REVERSED[c.op], c.left, c.right, c.factor)) is None:
            return "against"
    return "not resolved"


def _cycles(
    c: Comparison, a_int: tuple[float, float] | None, b_int: tuple[float, float] | None, band: float, wanted: int
) -> str | None:
    """Why a difference between two runs that resolves in time does not in cycles (None: it does, or a side's
    clock is unknown): each side's time times its run's median SM clock, a rate divided by it (nvbench_compare
    judges in cycle space), so a difference that is only the two runs' clocks is not taken for the work's."""
    left, right = c.left, c.right
    if left.clock_mhz is None or right.clock_mhz is None or not (_timed(left) and _timed(right)):
        return None
    if left.unit != right.unit or _change(left):
        return None
    assert left.value is not None and right.value is not None
    rate = (split_unit(left.unit) or ("", ""))[1] != "s"
    a, a_c = replication.in_cycles(left.value, a_int, left.clock_mhz, rate)
    b, b_c = replication.in_cycles(right.value * c.factor, b_int, right.clock_mhz, rate)
    if not (a > 0 and b > 0):
        return None
    effect, interval = replication.relative_difference(a, a_c, b, b_c)
    judged = replication.verdict(effect, interval, band)
    if judged.outcome == replication.RESOLVED and wanted * effect > 0:
        return None
    return (
        f"{c.text} resolves in time, but in cycles (time × SM clock: {left.clock_mhz:.0f} against "
        f"{right.clock_mhz:.0f} MHz) it is {judged.words()}, so it is not resolved: the clocks may be the difference"
    )


CONFIGS: contextvars.ContextVar[Callable[[str], dict[str, Any] | None]] = contextvars.ContextVar("probebook_configs")
"""While a page renders: the shaping params (``measure.evidence.configkey.config_key``) of an evidence id (None:
not in the archive), set by the build that holds the archive beside ``render.pages.sandbox.ACROSS``."""


def unnamed_difference(c: Comparison, sentence: str) -> str | None:
    """Why a claim or an Answer comparing numbers of two different runs does not hold as stated (None: it does):
    the runs' configurations differ in a param that shapes the work (8 against 16 eval batches), and the sentence
    names no differing param (its name, ``_`` as a space) nor either of its values, so a reader takes the difference
    for the compared thing's alone (issue 38, item 4). Params one side lacks, list- or table-valued params, and
    sides that are lines (exact numbers: counts, times written, params) say nothing."""
    configs = CONFIGS.get(None)
    left, right = c.left.evidence, c.right.evidence
    if configs is None or not left or not right or set(left) & set(right) or _threshold(c.left) or _threshold(c.right):
        return None
    sides = [_one_config(configs, ids) for ids in (left, right)]
    if sides[0] is None or sides[1] is None or sides[0].get("probe") != sides[1].get("probe"):
        return None  # two probes measure two things: their params are not one configuration's
    # a list or a table of values is which points a sweep walked, or a fact per point: the compared numbers' own
    # points are named by their rows, not by the run's list
    differ = [
        (name, sides[0][name], sides[1][name])
        for name in sorted(set(sides[0]) & set(sides[1]) - {"probe"})
        if sides[0][name] != sides[1][name] and not isinstance(sides[0][name], (list, dict))
        and not isinstance(sides[1][name], (list, dict))
    ]  # fmt: skip
    text = " ".join(sentence.lower().replace("_", " ").split())
    # one difference named is enough: a preset that differs moves its parameter count and FLOPs with it
    words = [w for n, va, vb in differ for w in (_stem(n.replace("_", " ")), _value_text(va), _value_text(vb))]
    if not differ or any(w and w in text for w in words):
        return None
    name, va, vb = differ[0]
    more = f" (and {len(differ) - 1} more)" if len(differ) > 1 else ""
    return (
        f"{c.text} compares runs whose {name} differs ({_value_text(va)} against {_value_text(vb)}){more}, and the "
        f"sentence names neither the param nor its values"
    )


def _one_config(configs: Callable[[str], dict[str, Any] | None], ids: tuple[str, ...]) -> dict[str, Any] | None:
    """The shaping params the runs ``ids`` share (None: any is unknown, or they differ among themselves)."""
    found = [configs(i) for i in ids]
    if not found or any(f is None for f in found) or any(f != found[0] for f in found[1:]):
        return None
    return found[0]


def _stem(name: str) -> str:
    """A param's name as a sentence may inflect it: ``compile`` is named by "compiling", ``eval batches`` by "eval
    batch"."""
    name = name[:-1] if name.endswith("s") else name
    return name[:-1] if name.endswith("e") else name


def _value_text(value: Any) -> str:
    return (value if isinstance(value, str) else json.dumps(value, sort_keys=True)).lower().replace("_", " ")


def _timed(q: Quantity) -> bool:
    """A time or a rate: measured over windows, so its interval is what a direction stands on (a count, a batch
    or a share read from a profile is judged as its value)."""
    return is_timed_unit(q.unit)


def _threshold(q: Quantity) -> bool:
    """A side that is a line rather than a measurement: exact, a number in the page, or an interval's end."""
    return q.exact or q.basis in ("exact", "an interval's end") or (q.expr is not None and q.expr[0] == "num")


def _change(q: Quantity) -> bool:
    """A signed change (a saving, a slowdown, a difference): compared by amount, not by ratio."""
    return q.bounded or (q.fmt.endswith("%") and not q.unit)


def _interval(q: Quantity, one_run: bool) -> tuple[float, float] | None:
    return q.within if one_run and q.within is not None else q.uncertainty


def _scaled(interval: tuple[float, float] | None, factor: float) -> tuple[float, float] | None:
    return None if interval is None else (interval[0] * factor, interval[1] * factor)


def _clears(c: Comparison, one_run: bool = False) -> str | None:
    """``a op b`` where a side is a line (a threshold, a reading without an interval): resolved when the other
    side's whole interval is on the stated side of it (two lines: their values, which hold)."""
    left, right = c.left, c.right
    assert left.value is not None and right.value is not None
    lo_a, hi_a = _interval(left, one_run) or (left.value, left.value)
    lo_b, hi_b = (x * c.factor for x in (_interval(right, one_run) or (right.value, right.value)))
    if c.op in (">", ">="):
        held = COMPARE[c.op](lo_a, hi_b)
        ends = f"the low end of {left.key} ({lo_a:.4g}) is not above the high end of {right.key} ({hi_b:.4g})"
    else:
        held = COMPARE[c.op](hi_a, lo_b)
        ends = f"the high end of {left.key} ({hi_a:.4g}) is not below the low end of {right.key} ({lo_b:.4g})"
    return None if held else f"{c.text}, but {ends}: its 95% interval reaches the line, so it is not resolved"
