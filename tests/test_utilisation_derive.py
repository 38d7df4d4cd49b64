"""render.derive.utilisation: per-window NVML summaries reduced to one line per shape, with literal inputs."""

import pytest

from measure.errors import ProbebookError
from render.derive.utilisation import clock_sag, window_summary


def window(tokens, clock_min, clock_med, power_max, power_med, util, readings=10, temp=50):
    return {
        "tokens": tokens,
        "sm_clock_mhz_min": clock_min,
        "sm_clock_mhz_median": clock_med,
        "power_w_max": power_max,
        "power_w_median": power_med,
        "sm_util_pct_median": util,
        "mem_util_pct_median": 40.0,
        "mem_clock_mhz_median": 3201.0,
        "temperature_c_max": temp,
        "nvml_readings": readings,
    }


SAMPLES = [
    window(2048, 1980, 1980.0, 640.0, 600.0, 99.0),
    window(4096, 1980, 1980.0, 545.0, 433.0, 100.0, readings=21, temp=59),
    window(4096, 1935, 1950.0, 695.0, 691.0, 100.0, readings=22, temp=60),
    window(4096, 1950, 1965.0, 693.0, 692.0, 98.0, readings=21, temp=60),
]


def test_the_lowest_clock_the_highest_power_and_the_median_of_medians():
    got = window_summary(SAMPLES, 4096)
    assert got == {
        "windows": 3,
        "readings": 64,
        "sm_clock_mhz_min": 1935.0,
        "power_w_max": 695.0,
        "temperature_c_max": 60.0,
        "sm_clock_mhz_median": 1965.0,
        "mem_clock_mhz_median": 3201.0,
        "power_w_median": 691.0,
        "sm_util_pct_median": 100.0,
        "mem_util_pct_median": 40.0,
    }


def test_clock_sag_is_the_fall_below_the_maximum_and_zero_when_none():
    assert clock_sag({"sm_clock_mhz_min": 1935.0}, 1980.0) == pytest.approx(45 / 1980, abs=1e-15)
    assert clock_sag({"sm_clock_mhz_min": 1980.0}, 1980.0) == 0.0
    assert clock_sag({"sm_clock_mhz_min": None}, 1980.0) is None
    with pytest.raises(ProbebookError, match="nominal clock must be positive"):
        clock_sag({"sm_clock_mhz_min": 1900.0}, 0)


def test_a_missing_shape_or_a_run_without_readings_is_refused():
    with pytest.raises(ProbebookError, match=r"no timed window at 8192 tokens \(windows at \[2048, 4096\]\)"):
        window_summary(SAMPLES, 8192)
    cpu = [{"tokens": 32, "nvml_readings": None, "sm_clock_mhz_min": None}]
    with pytest.raises(ProbebookError, match="carry no NVML readings"):
        window_summary(cpu, 32)


def test_a_field_no_window_recorded_is_none():
    rows = [{"tokens": 64, "nvml_readings": 3, "sm_clock_mhz_min": 1700}]
    got = window_summary(rows, 64)
    assert got["sm_clock_mhz_min"] == 1700.0
    assert got["power_w_max"] is None and got["sm_util_pct_median"] is None
