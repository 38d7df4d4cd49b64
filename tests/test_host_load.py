"""The host-load reading recorded with every probe run (measure/host_load.py): the pure verdict on literal loads,
and a reading of this machine (issue 29)."""

from __future__ import annotations

from measure.host_load import BUSY_LOAD_PER_CORE, judge, sample


def test_a_load_of_three_quarters_of_the_cores_or_more_is_busy() -> None:
    assert BUSY_LOAD_PER_CORE == 0.75
    assert judge((1.499, 4.0, 4.0), 2)["busy"] is False  # the 1-minute figure decides: it is the run's start
    assert judge((1.5, 0.0, 0.0), 2)["busy"] is True
    assert judge((41.0, 20.0, 8.0), 2) == {
        "load_1min": 41.0,
        "load_5min": 20.0,
        "load_15min": 8.0,
        "cores": 2,
        "busy_load_per_core": 0.75,
        "busy": True,
    }
    assert judge((0.123456, 0.0, 0.0), 16)["load_1min"] == 0.12


def test_this_host_gives_a_reading() -> None:
    got = sample()
    assert got["cores"] >= 1 and got["load_1min"] >= 0 and isinstance(got["busy"], bool)
