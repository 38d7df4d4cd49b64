"""Which interval a number combined from others carries: one lease's windows, or where a new session lands.

Every absolute time or rate a page reads states where a new session lands (``render.evidence.series.across``), and
keeps its run's windows' interval as ``Quantity.within``. A session moves every run of one host and one device
lease alike (its clocks, its host, its allocator), so in a ratio of two numbers of one lease (a speed-up, an MFU
against a ceiling measured in the same lease) that movement cancels: propagating the operands' across-sessions
intervals would count it twice and show a speed-up of 1.80 as 0.22–3.39. So, by the verdict's own rule of what is
one lease (one run, or runs of one host written within ``replication.LEASE_S``: ``render.numbers.directions``):

- a combination of one lease's numbers propagates their ``within`` intervals (first order, or the windows resampled
  jointly where they share a run), and an absolute result (a time or a rate, ``units.is_timed_unit``) is then
  widened across sessions once, by the class's between-session SD (``replication.prediction``, as a run's own
  figure is); a ratio or a share of numbers of one probe class keeps this lease's interval, and its derivation says
  so; a ratio of numbers of different classes (an eager step's rate against a GEMM ceiling: MFU) is widened too, by
  the widest class's SD, since a session moves a host-bound step and a kernel by different amounts and the movement
  does not cancel (a re-measurement in another lease put step-anatomy v6's eager MFU outside its one-lease interval);
- numbers of different leases keep their across-sessions intervals, propagated as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import combinations
from typing import Any

from render.derive import replication
from render.numbers.units import is_timed_unit

RATIO = "this lease's windows (ratio within one lease)"
"""What a ratio or share of one lease's numbers says its interval comes from."""
DIFFERENCE = "this lease's windows (a difference within one lease)"
"""What a time or rate of one lease's numbers that is not positive (no session's figure) says its interval comes
from."""
WIDENED = "this lease's windows, then widened once; "
MIXED = "a ratio of numbers of different probe classes, whose session movement does not cancel; "
"""What a ratio of one lease's numbers of different classes adds before its across-sessions interval."""
"""What an absolute number combined from one lease's numbers says before its across-sessions interval."""


@dataclass(frozen=True)
class Shared:
    """What the operands of one lease share."""

    lease: tuple[str, float] | None
    """(host, unix time written) of a run among them (``Quantity.lease``); None for one run of unknown host."""
    pool: tuple[str, replication.Spread]
    """(probe class, between-session SD) to widen an absolute result by: the widest among the operands'."""
    mixed: bool = False
    """The operands' probe classes differ, so a session's movement does not cancel in their ratio."""


def shared(operands: Sequence[Any]) -> Shared | None:
    """The lease every measured operand comes from (one run: the same evidence; or runs of one host within one
    lease: ``replication.same_lease``), with the widest class pool among them; None where they come from different
    leases (or one's is unknown), or where none states an across-sessions interval (no pool: nothing to undo).
    A number exact by nature (a param, a count) is no session's and does not count. ``operands``: Quantities
    (``render.numbers.quantity``, which imports this module; so they are not named by type here)."""
    measured = [q for q in operands if not q.exact and q.value is not None]
    pools = [q.pool for q in measured if q.pool is not None]
    if not measured or not pools:
        return None
    one_run = bool(measured[0].evidence) and all(q.evidence == measured[0].evidence for q in measured)
    if not one_run and not all(replication.same_lease(a.lease, b.lease) for a, b in combinations(measured, 2)):
        return None
    lease = next((q.lease for q in measured if q.lease is not None), None)
    return Shared(lease, max(pools, key=lambda p: p[1].sd_log), mixed=len({name for name, _ in pools}) > 1)


def within_view(q: Any) -> Any:
    """``q`` as this lease's windows know it: its ``within`` interval in place of the across-sessions one (a plain
    number, or a Quantity without one, as it is)."""
    within = getattr(q, "within", None)
    return q if within is None else replace(q, uncertainty=within)


def carried(
    one: Shared, unit: str, value: float | None, within: tuple[float, float] | None, how: str
) -> tuple[tuple[float, float] | None, tuple[float, float] | None, str]:
    """(the interval a combination of one lease's numbers shows, the ``within`` it keeps, its derivation's words on
    its interval) from this lease's interval ``within``, got as ``how`` says (``; 95% interval propagated ...``): an
    absolute time or rate (positive) is widened across sessions by ``one``'s pool (``replication.prediction`` of the
    result as one session's figure); anything else (a ratio, a share, a signed difference) keeps ``within``."""
    if within is None or value is None:
        return None, None, how
    if (is_timed_unit(unit) or one.mixed) and value > 0:
        name, pool = one.pool
        predicted = replication.prediction([value], pool)
        assert predicted is not None  # one positive figure and a pool
        across = replication.describe(pool, name, "this result of one lease's numbers")
        why = "" if is_timed_unit(unit) else MIXED
        return (predicted.low, predicted.high), within, f"{how}, from {WIDENED}{why}{across}"
    return within, None, f"{how}, from {RATIO if not is_timed_unit(unit) else DIFFERENCE}"
