"""The idle, exclusive device check before timing (measure/device_check.py): the pure verdict, the CPU record,
and every probe's evidence carrying it; its NVML path runs on a GPU (tests/test_probes_gpu.py)."""

from __future__ import annotations

import pytest

from measure.device_check import BUSY_UTIL_PCT, check, judge


def test_an_idle_card_is_idle():
    found = judge(
        [{"pid": 7, "used_memory_bytes": 500, "kind": "compute"}], {7}, [{"sm_util_pct": 0, "mem_util_pct": 0}]
    )
    assert found["busy"] is False and found["other_processes"] == []
    assert found["reason"] == "idle: no other process, no utilisation"


def test_another_process_makes_it_busy():
    procs = [
        {"pid": 9, "used_memory_bytes": 2**30, "kind": "compute"},
        {"pid": 7, "used_memory_bytes": 1, "kind": "compute"},
    ]
    found = judge(procs, {7}, [{"sm_util_pct": 0, "mem_util_pct": 0}] * 3)
    assert found["busy"] is True
    assert found["other_processes"] == [{"pid": 9, "used_memory_bytes": 2**30, "kind": "compute"}]
    assert found["reason"] == "1 other process(es) on the card: pids 9"


def test_utilisation_at_the_threshold_makes_it_busy():
    util = [{"sm_util_pct": 0, "mem_util_pct": 0}, {"sm_util_pct": BUSY_UTIL_PCT, "mem_util_pct": 1}]
    found = judge([], set(), util)
    assert found["busy"] is True and found["max_sm_util_pct"] == BUSY_UTIL_PCT and found["max_mem_util_pct"] == 1
    assert found["reason"] == f"SM utilisation {BUSY_UTIL_PCT}% before the run"
    assert found["samples"] == 2


def test_a_cpu_run_is_not_checked():
    assert check("cpu") == {"checked": False, "busy": None, "reason": "not checked (cpu)"}


@pytest.mark.slow
def test_a_probe_run_records_the_check(cli, archive):
    pytest.importorskip("torch")
    out = cli(
        "--archive", str(archive), "measure", "copy", "--device", "cpu", "--warmup", "0", "--windows", "1", "--quiet"
    )
    assert out.returncode == 0, out.stderr
    from measure.evidence.store import Store

    doc = Store(archive).get(out.stdout.strip().splitlines()[-1])
    assert doc["data"]["device_check"] == {"checked": False, "busy": None, "reason": "not checked (cpu)"}
    load = doc["data"]["host_load"]  # the host's load before and after, with the verdict (measure.host_load)
    assert set(load) == {"before", "after"} and load["before"]["cores"] >= 1
    assert isinstance(load["after"]["busy"], bool) and load["before"]["load_1min"] >= 0
