"""A run whose windows stay noisy is stored as ``unstable``, not ``complete`` (issue 29): the count of flagged
points on literal inputs, the envelope accepting the status, and a real CPU probe run exiting 1 for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from measure.errors import EXIT
from measure.evidence.envelope import MEASURED, STATUSES, parse
from measure.evidence.store import Store
from measure.run.runner import unstable_points

PLUGINS = str(Path(__file__).resolve().parent / "fixtures" / "measure_plugins")


def test_flagged_points_are_counted_once_each():
    points = [{"unstable": True}, {"unstable": False}, {"unstable": None}, {"unstable": {"a": False, "b": True}}]
    assert unstable_points([{"unstable": True}] * 5, points) == 2  # the point summaries say: rows not counted
    assert unstable_points([{"unstable": True}, {"unstable": False}, {"step_s": 1.0}], [{"median_s": 1.0}]) == 1
    assert unstable_points([{"step_s": 1.0}], []) == 0
    assert unstable_points([{"unstable": 1}], []) == 0  # only a true flag, as measure.timing writes it
    assert "unstable" in STATUSES and MEASURED == ("complete", "unstable")


@pytest.mark.slow
def test_a_noisy_run_is_stored_unstable_and_exits_1(cli, archive):
    pytest.importorskip("torch")
    out = cli(
        "--archive", str(archive), "measure", "step-scaling", "--device", "cpu", "--workload", "toy_harness:jittery",
        "--seq-lens", "2,4,8", "--modes", "fixed_batch", "--warmup", "0", "--windows", "4", "--iters", "1", "--quiet",
        env={"PYTHONPATH": PLUGINS},
    )  # fmt: skip
    assert out.returncode == EXIT["check failed"] == 1, out.stderr
    ident = out.stdout.strip().splitlines()[-1]
    doc = parse(Store(archive).read_bytes(ident), ident)  # the envelope's own check accepts the status
    assert doc["status"] == "unstable"
    assert doc["error"].startswith("3 point(s) with a CV of their windows above 5% after the extra windows")
    assert "stored as unstable" in out.stderr
