"""The idle, exclusive device check before timing (measure/device_check.py): the pure verdict, the CPU record,
every probe's evidence carrying it, and a campaign's jobs (real processes) neither counted as other work nor
checked before the lock; its NVML path runs on a GPU (tests/test_probes_gpu.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from measure.device_check import BUSY_UTIL_PCT, SIBLINGS_ENV, check, judge, sibling_pids

REPO = Path(__file__).resolve().parent.parent
IDLE = [{"sm_util_pct": 0, "mem_util_pct": 0}]


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
    before = time.time()
    found = check("cpu")
    assert found.pop("checked_unix") >= before
    assert found == {"checked": False, "busy": None, "reason": "not checked (cpu)"}


def _process(code: str, *args: str) -> subprocess.Popen:
    """A real process that prints ``ready`` once it is set up, then waits for its stdin to close."""
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


JOB = (
    "import sys; from pathlib import Path; from measure.device_check import sibling\n"
    "with sibling(Path(sys.argv[1])):\n    print('ready', flush=True); sys.stdin.read()"
)
OUTSIDER = "import sys; print('ready', flush=True); sys.stdin.read()"


def test_a_campaigns_sibling_jobs_are_not_other_work(tmp_path, monkeypatch):
    jobs = tmp_path / "jobs"
    first, second, outsider = _process(JOB, str(jobs)), _process(JOB, str(jobs)), _process(OUTSIDER)
    try:
        monkeypatch.delenv(SIBLINGS_ENV, raising=False)
        assert sibling_pids() == set()  # a process outside a campaign's job has no siblings
        monkeypatch.setenv(SIBLINGS_ENV, str(jobs))
        assert sibling_pids() == {first.pid, second.pid}
        # what NVML would list on the card the jobs take turns on: both siblings, an outsider and this process
        seen = [{"pid": p, "used_memory_bytes": 1, "kind": "compute"} for p in (first.pid, second.pid, outsider.pid)]
        found = judge(
            [*seen, {"pid": os.getpid(), "used_memory_bytes": 1, "kind": "compute"}],
            {os.getpid()},
            IDLE,
            sibling_pids(),
        )
        assert found["busy"] is True and found["reason"] == f"1 other process(es) on the card: pids {outsider.pid}"
        assert [p["pid"] for p in found["other_processes"]] == [outsider.pid]
        assert [p["pid"] for p in found["sibling_processes"]] == sorted((first.pid, second.pid))
        assert judge(seen[:2], {os.getpid()}, IDLE, sibling_pids())["busy"] is False
        first.communicate("", timeout=60)  # a job that ends takes its registration with it
        assert sibling_pids() == {second.pid} and not (jobs / str(first.pid)).exists()
        second.send_signal(signal.SIGKILL)  # one killed leaves its file, which names no live process
        second.wait(timeout=60)
        assert (jobs / str(second.pid)).exists() and sibling_pids() == set()
    finally:
        for proc in (first, second, outsider):
            proc.kill()
            proc.communicate(timeout=60)


HOLDER = (
    "import sys, time; from filelock import FileLock\n"
    "with FileLock(sys.argv[1]):\n    print('ready', flush=True); time.sleep(1.5); print(time.time(), flush=True)"
)


@pytest.mark.slow
def test_a_campaign_point_checks_the_device_after_it_holds_the_lock(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    from filelock import FileLock

    from measure import peakmem
    from measure.probes import batch_sweep

    for key, value in peakmem.cpu_env().items():
        monkeypatch.setenv(key, value)
    lock = tmp_path / "gpu.lock"
    holder = _process(HOLDER, str(lock))  # a sibling job holding the card
    try:
        config = batch_sweep.Config(device="cpu", dtype="fp32", warmup=0, windows=1, iters=1)
        evidence = batch_sweep.measure_here(config, 16, 1, device_lock=FileLock(str(lock)))
        released = float(holder.communicate(timeout=60)[0].strip())
    finally:
        holder.kill()
    (row,) = evidence.data["samples"]
    assert row["status"] == "ok" and row["device_wait_s"] > 0.5
    assert released <= row["device_acquired_unix"] <= evidence.data["device_check"]["checked_unix"]


@pytest.mark.slow
def test_a_probe_run_records_the_check(cli, archive):
    pytest.importorskip("torch")
    out = cli(
        "--archive", str(archive), "measure", "copy", "--device", "cpu", "--warmup", "0", "--windows", "1", "--quiet"
    )
    assert out.returncode == 0, out.stderr
    from measure.evidence.store import Store

    doc = Store(archive).get(out.stdout.strip().splitlines()[-1])
    found = doc["data"]["device_check"]
    assert found.pop("checked_unix") > 0 and found == {"checked": False, "busy": None, "reason": "not checked (cpu)"}
    load = doc["data"]["host_load"]  # the host's load before and after, with the verdict (measure.host_load)
    assert set(load) == {"before", "after", "steal_share"} and load["before"]["cores"] >= 1
    assert load["steal_share"] is None or 0 <= load["steal_share"] <= 1  # the CPUs' stolen share over the run
    assert isinstance(load["after"]["busy"], bool) and load["before"]["load_1min"] >= 0
