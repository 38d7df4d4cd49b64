"""Interleaved arms analysed as pairs by round: the saving, its bootstrap interval, a signed-rank test.

An interleaved probe (``ablate``, ``optimizer`` with graph replay, ``mask``, ``stream``, agreement timings)
times every arm once per round, back to back, so slow drift of the clock or the host moves both members of
a round alike and cancels in their difference. Comparing the two arms' medians, or a difference against
one arm's per-window CV, throws that pairing away: a saving smaller than the baseline's CV can still be
resolved by the rounds (issue 23: the optimizer arm of step-anatomy, p ≈ 0.007, had been called
unresolvable). So, as criterion.rs reports a change (a bootstrap interval plus a test):

- the saving is the median over rounds of the per-round relative difference ``1 − arm_i / baseline_i``
  (fraction; the difference ``baseline_i − arm_i`` in seconds likewise);
- its interval is the exact order-statistic interval of that median over rounds
  (``render.derive.intervals.median_interval``, issue 38: the percentile bootstrap it replaced covered less
  than it said at seven rounds);
- "within noise" means that interval contains zero, nothing else;
- where a verdict needs a test, ``scipy.stats.wilcoxon`` (two-sided signed-rank) over the paired rounds.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from measure.errors import ProbebookError
from render.derive.intervals import median_interval

ALPHA = 0.05
"""Level of the signed-rank test where a verdict needs one: a p below it rejects "no change"."""


@dataclass(frozen=True)
class PairedChange:
    """An arm against its baseline over interleaved rounds (fractions of the baseline; seconds)."""

    rounds: int
    """Rounds that timed both arms."""
    saving: float
    """Median over rounds of ``1 − arm_i / baseline_i`` (fraction; negative: the arm costs time)."""
    saving_ci: tuple[float, float] | None
    """95% bootstrap interval of ``saving`` over rounds; None with fewer than 3 rounds."""
    difference_s: float
    """Median over rounds of ``baseline_i − arm_i`` (seconds)."""
    difference_ci: tuple[float, float] | None
    """95% bootstrap interval of ``difference_s`` (seconds)."""
    p_value: float | None
    """Two-sided Wilcoxon signed-rank p over the rounds' differences; None with fewer than 6 rounds or no
    difference at all."""

    @property
    def within_noise(self) -> bool | None:
        """Whether the saving's interval contains zero (None without an interval)."""
        if self.saving_ci is None:
            return None
        return self.saving_ci[0] <= 0.0 <= self.saving_ci[1]


def by_round(rows: Sequence[dict[str, Any]], arm: str, field: str, by: str = "arm") -> dict[int, float]:
    """``round -> field`` of one arm's rows (the rows whose ``by`` field is ``arm``: ``kind`` for the mask
    probe); refuses a round timed twice (the pairing would be ambiguous)."""
    out: dict[int, float] = {}
    for r in rows:
        if r.get(by) != arm or not isinstance(r.get(field), (int, float)) or isinstance(r.get(field), bool):
            continue
        k = r.get("round")
        if isinstance(k, bool) or not isinstance(k, int):
            raise ProbebookError(f"paired rounds: a row of arm {arm!r} has no whole 'round' ({k!r})")
        if k in out:
            raise ProbebookError(f"paired rounds: arm {arm!r} has two rows in round {k}")
        out[k] = float(r[field])
    return out


def paired_change(baseline: dict[int, float], arm: dict[int, float]) -> PairedChange:
    """The saving of ``arm`` against ``baseline`` (each ``round -> seconds``) over the rounds both timed."""
    common = sorted(set(baseline) & set(arm))
    if not common:
        raise ProbebookError("paired rounds: the two arms share no round")
    base = np.array([baseline[k] for k in common], dtype=float)
    other = np.array([arm[k] for k in common], dtype=float)
    if not np.all(base > 0):
        raise ProbebookError("paired rounds: a baseline time is not positive")
    relative = 1.0 - other / base
    diff = base - other
    p = None
    if len(common) >= 6 and np.any(diff != 0):
        # scipy.stats here, not at the top: it costs about 0.9 s of CPU to import, and most processes that load this
        # module (a CLI run refusing its input, a page with no paired claim) never run a test
        from scipy import stats

        p = float(stats.wilcoxon(base, other, alternative="two-sided").pvalue)
    return PairedChange(
        rounds=len(common),
        saving=float(statistics.median(relative.tolist())),
        saving_ci=median_interval(relative.tolist()),
        difference_s=float(statistics.median(diff.tolist())),
        difference_ci=median_interval(diff.tolist()),
        p_value=p,
    )
