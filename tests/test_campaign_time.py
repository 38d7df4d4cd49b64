"""A campaign's wall-time breakdown (render.derive.campaign) on literal receipts and rows, exact values."""

from __future__ import annotations

from render.derive.campaign import per_point, union_s, wall_time


def attempt(submitted: float, ended: float, started: float | None, imports: float | None, run: float | None) -> dict:
    result = None if started is None else {"job_started_unix": started, "imports_s": imports}
    return {"submitted_unix": submitted, "ended_unix": ended, "result": result, "run_started_unix": run}


POINTS = [
    {"point": "a-b1", "attempts": [attempt(100.0, 110.0, 100.5, 6.0, 90.0)]},
    # failed once in the first runner call, measured in the second
    {"point": "a-b2", "attempts": [attempt(110.0, 111.0, None, None, 90.0), attempt(200.0, 212.0, 201.0, 7.0, 195.0)]},
]
ROWS = [
    {"point": "a-b1", "device_acquired_unix": 107.0, "device_released_unix": 109.0, "setup_s": 0.25, "timed_s": 1.0},
    {"point": "a-b2", "device_acquired_unix": 208.0, "device_released_unix": 211.5, "setup_s": 0.75, "timed_s": 2.0},
]


def test_union_of_spans():
    assert union_s([(0.0, 2.0), (1.0, 3.0), (5.0, 6.0)]) == 4.0
    assert union_s([(5.0, 6.0), (0.0, 1.0), (0.5, 0.75)]) == 2.0
    assert union_s([]) == 0.0


def test_wall_time_of_two_runner_calls():
    t = wall_time(POINTS, ROWS)
    assert (t.wall_s, t.device_busy_s, t.points, t.attempts, t.runs) == (112.0, 5.5, 2, 3, 2)
    assert (t.job_start_s, t.imports_s) == (1.5, 13.0)  # the measured attempts: 0.5 + 1.0 s and 6 + 7 s
    assert t.phases == {"setup_s": 1.0, "timed_s": 3.0}  # phases no row records are absent, not zero
    assert per_point(t) == {
        "job_start_s": 0.75,
        "imports_s": 6.5,
        "device_wait_s": None,
        "setup_s": 0.5,
        "warmup_s": None,
        "timed_s": 1.5,
        "observe_s": None,
        "trace_s": None,
    }


def test_receipts_without_the_runners_start_do_not_count_runs():
    old = [{"point": "a-b1", "attempts": [{**attempt(100.0, 110.0, 100.5, 6.0, None)}]}]
    assert wall_time(old, ROWS[:1]).runs is None
    assert wall_time([], []).wall_s is None and per_point(wall_time([], []))["timed_s"] is None
