"""The host-load reading recorded with every probe run (measure/host_load.py): the pure verdict on literal loads,
the CPUs' stolen share and clock from literal /proc texts, and a reading of this machine (issues 29 and 38)."""

from __future__ import annotations

from measure.host_load import BUSY_LOAD_PER_CORE, cpu_mhz_from, cpu_times_from, judge, sample, steal_share


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
    assert got["cpu_times"] is None or got["cpu_times"]["total"] >= got["cpu_times"]["steal"] >= 0


STAT_BEFORE = "cpu  100 5 50 800 20 1 4 20 7 0\ncpu0 50 2 25 400 10 0 2 10 3 0\nintr 123\n"
STAT_AFTER = "cpu  160 5 70 900 20 1 4 40 9 0\ncpu0 80 2 35 450 10 0 2 20 4 0\n"


def test_the_stolen_share_is_the_steal_ticks_over_all_ticks_between_two_readings() -> None:
    before, after = cpu_times_from(STAT_BEFORE), cpu_times_from(STAT_AFTER)
    # user nice system idle iowait irq softirq steal: the guest columns after them are in user already
    assert before == {"total": 1000, "idle": 820, "steal": 20}
    assert after == {"total": 1200, "idle": 920, "steal": 40}
    assert steal_share(before, after) == 0.1  # 20 of the 200 ticks that elapsed
    assert steal_share(before, before) is None  # no tick elapsed
    assert steal_share(after, before) is None  # counters going backwards: another boot, not a share
    assert steal_share(None, after) is None and steal_share({"total": 1}, after) is None


def test_a_stat_without_a_whole_cpu_line_gives_no_counters() -> None:
    assert cpu_times_from("cpu0 1 2 3 4 5 6 7 8\n") is None  # only per-CPU lines
    assert cpu_times_from("cpu  1 2 3 4 5 6 7\n") is None  # a kernel too old for steal (before 2.6.11)
    assert cpu_times_from("cpu  1 2 x 4 5 6 7 8\n") is None
    assert cpu_times_from("") is None


def test_the_cpu_clock_is_the_mean_of_the_cpu_mhz_lines() -> None:
    text = "processor\t: 0\ncpu MHz\t\t: 2600.000\nprocessor\t: 1\ncpu MHz\t\t: 2000.250\n"
    assert cpu_mhz_from(text) == 2300.1
    assert cpu_mhz_from("processor\t: 0\nmodel name\t: ARM\n") is None
