"""The lease as the replicate of the pooled between-session SD (render.evidence.series): runs of one host within
a lease's length are one lease, a lease's figure is the geometric mean of its runs', and a configuration measured in
one lease only adds nothing to its class's pool, with literal documents and exact values."""

from __future__ import annotations

import math
from typing import Any

import pytest

from render.derive import replication
from render.evidence import series


def run(step_s: list[float], host: str | None, at: str, batch: int = 4) -> dict[str, Any]:
    """A measured optimizer run of one configuration: one ``baseline`` row per window."""
    return {
        "probe": "optimizer",
        "status": "complete",
        "origin": {"kind": "measured"},
        "created_at": at,
        "machine": {"gpu": "NVIDIA H100 80GB HBM3", **({"hostname_hash": host} if host else {})},
        "params": {"preset": "250m", "batch": batch, "seq_len": 2048},
        "data": {"samples": [{"arm": "baseline", "step_s": s} for s in step_s]},
    }


def test_runs_of_one_host_within_a_lease_are_one_lease_and_others_are_their_own() -> None:
    runs = [
        ("a", run([1.0], "h1", "2026-12-07T10:00:00Z")),
        ("b", run([1.0], "h1", "2026-12-07T10:29:00Z")),  # 29 minutes after a: the same lease
        ("c", run([1.0], "h1", "2026-12-07T10:31:00Z")),  # 31 minutes after a: a lease of its own
        ("d", run([1.0], "h2", "2026-12-07T10:01:00Z")),  # another host
        ("e", run([1.0], None, "2026-12-07T10:02:00Z")),  # no host recorded: its own lease
    ]
    assert series.leases(runs) == [["a", "b"], ["d"], ["c"], ["e"]]


def test_one_lease_adds_nothing_to_the_pool() -> None:
    docs = [run([1.0, 1.0, 1.0], "h1", "2026-12-07T10:00:00Z"), run([2.0, 2.0, 2.0], "h1", "2026-12-07T10:10:00Z")]
    assert series.repeated_points(docs) == {}
    assert series.class_pools(docs) == {}
    assert series.pooled_ids(dict(zip(("x", "y"), docs, strict=True)), "step") == ()


def test_a_lease_figure_is_the_geometric_mean_of_its_runs_and_the_pool_spans_leases() -> None:
    docs = {
        "x": run([1.0, 1.0, 1.0], "h1", "2026-12-07T10:00:00Z"),
        "y": run([4.0, 4.0, 4.0], "h1", "2026-12-07T10:10:00Z"),  # same lease as x: figure sqrt(1 * 4) = 2
        "z": run([2.0 * math.e**2] * 3, "h2", "2026-12-08T10:00:00Z"),
    }
    groups = series.repeated_points(docs.values())
    assert groups == {"step": [[pytest.approx(2.0), pytest.approx(2.0 * math.e**2)]]}
    # two lease figures e^2 apart on the log scale: deviations of 1 around their mean, one degree of freedom
    spread = series.class_pools(docs.values())["step"]
    assert (spread.sd_log, spread.df, spread.configurations) == (pytest.approx(math.sqrt(2)), 1, 1)
    assert series.pooled_ids(docs, "step") == ("x", "y", "z")
    assert replication.LEASE_S == 30 * 60  # the test's 29 and 31 minutes stand either side of it
