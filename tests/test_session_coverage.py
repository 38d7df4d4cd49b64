"""Coverage of the project's own interval and verdict functions on simulated sessions with known effects (issue 38).

The across-sessions interval (``render.derive.replication.prediction`` with a class pool, as
``render.evidence.series`` builds it) must cover a new session's figure 93–98% of the time at the default design;
this run's windows' interval (``render.derive.intervals.median_interval``) covers its own session's median but not
the next session; the paired verdict's false-positive rate with no true effect is at most 5%. Fixed seeds.
"""

from __future__ import annotations

import numpy as np
import pytest

from render.derive import intervals, replication
from tests import sessions_sim

BETWEEN, WITHIN = 0.20, 0.03
"""The archive's own figures (issue 38): eager 250m steps move about 20% between sessions, 3% within one."""
TRIALS = 1500


@pytest.mark.parametrize(
    ("sessions_per", "windows", "configurations", "between"),
    [(3, 9, 10, 0.20), (1, 9, 10, 0.20), (3, 5, 4, 0.20), (2, 9, 10, 0.01), (3, 9, 30, 0.05)],
)
def test_the_across_sessions_interval_covers_a_new_session_93_to_98_percent(
    sessions_per: int, windows: int, configurations: int, between: float
) -> None:
    # the pool needs two or more sessions a configuration: a design of one session per run pools over pairs
    pooled_per = max(sessions_per, 2)
    rng_seed = 38 + sessions_per * 100 + windows + configurations
    covered = _coverage_with_pool(sessions_per, pooled_per, windows, configurations, between, rng_seed)
    assert 0.93 <= covered <= 0.98, covered


def _coverage_with_pool(
    own: int, pooled_per: int, windows: int, configurations: int, between: float, seed: int
) -> float:
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(TRIALS):
        pool = replication.pooled_log_sd(
            sessions_sim.archive(rng, configurations, pooled_per, windows, between, WITHIN)
        )
        figures = sessions_sim.sessions(rng, own + 1, windows, between, WITHIN)
        predicted = replication.prediction(list(figures[:-1]), pool)
        assert predicted is not None
        hits += predicted.low <= figures[-1] <= predicted.high
    return hits / TRIALS


def test_this_run_s_windows_cover_its_own_median_but_not_the_next_session() -> None:
    rng = np.random.default_rng(7)
    own, next_session = 0, 0
    for _ in range(TRIALS):
        shift = rng.normal(0.0, BETWEEN)
        windows = np.exp(shift + rng.normal(0.0, WITHIN, size=9))
        low, high = intervals.median_interval(list(windows)) or (np.nan, np.nan)
        own += low <= np.exp(shift) <= high  # the session's true median: what the windows estimate
        later = np.median(np.exp(rng.normal(0.0, BETWEEN) + rng.normal(0.0, WITHIN, size=9)))
        next_session += low <= later <= high
    assert own / TRIALS >= 0.95 * 0.98  # exact: 96.1% at nine windows, within Monte-Carlo error
    assert next_session / TRIALS < 0.30  # the reading the issue names: "measure again and you land here" fails


def test_the_paired_verdict_s_false_positive_rate_at_no_effect_is_at_most_5_percent() -> None:
    rng = np.random.default_rng(11)
    for rounds in (7, 9, 15):
        resolved = excluded = 0
        for _ in range(TRIALS):
            savings = sessions_sim.paired_rounds(rng, rounds, drift=0.05, within=0.02, effect=0.0)
            ci = intervals.median_interval(list(savings))
            assert ci is not None
            effect = float(np.median(savings))
            resolved += replication.verdict(effect, ci, replication.DELTA["step"]).outcome == replication.RESOLVED
            excluded += ci[0] > 0 or ci[1] < 0
        assert resolved / TRIALS <= 0.05
        assert excluded / TRIALS <= 0.05 + 0.015  # the interval alone, no band: its exact level, within MC error


def test_a_real_effect_beyond_the_band_is_resolved_by_the_paired_rounds() -> None:
    rng = np.random.default_rng(12)
    savings = sessions_sim.paired_rounds(rng, 9, drift=0.05, within=0.02, effect=0.30)
    ci = intervals.median_interval(list(savings))
    assert ci is not None
    assert replication.verdict(float(np.median(savings)), ci, replication.DELTA["step"]).outcome == "resolved"
