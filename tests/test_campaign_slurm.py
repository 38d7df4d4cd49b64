"""Campaigns through a real single-node Slurm (`.ci/slurm up`): a default run audited clean, queue time, run
time after a resume, a job found by name across midnight and with accounting down, a job adopted after a kill
inside sbatch, scancel and --retry-failed, sacct polling, requests the cluster cannot meet, an optimizer-timing
follow-up, a grid of another probe's points, and the audit of each job's accounting (time limit, memory) against
the spec."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, run_cli

from measure.evidence.store import Store
from probebook.campaign import receipts, slurm

pytestmark = pytest.mark.slurm
CI_SLURM = REPO / ".ci" / "slurm"
SOCK = "/run/mysqld/mysqld.sock"
PLUGINS = str(Path(__file__).resolve().parent / "fixtures" / "measure_plugins")
# what the tiny CPU points ask of the one-node CI cluster (it has no GPUs and a few cores)
FITS = {"gpus": 0, "cpus": 1, "mem_gb": 2, "time_min": 5}


def _idle() -> bool:
    try:
        out = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and bool({"idle", "mixed", "allocated"} & set(out.stdout.split()))


@pytest.fixture(scope="module", autouse=True)
def cluster():
    """A Slurm that answers; the tests skip cleanly without one (`.ci/slurm up` starts one, as root)."""
    if not _idle() or subprocess.run(["sacct", "-n", "-X"], capture_output=True).returncode != 0:
        pytest.skip("no Slurm cluster with accounting here (sudo .ci/slurm up starts one)")


def write_spec(
    path: Path,
    contexts: list[int],
    max_tokens: int,
    slurm_settings: dict | None = None,
    config: dict | None = None,
    **executor,
):
    doc = {
        "campaign": "tiny-slurm",
        "probe": "batch-sweep",
        "config": {"device": "cpu", "warmup": 1, "windows": 2, "iters": 1, **(config or {})},
        "grid": {"preset": ["tiny"], "context": contexts},
        "walk": {"start_batch": 1, "max_tokens": max_tokens},
        "executor": {
            "point_timeout_s": 120,
            "grace_s": 60,
            "poll_s": 2,
            **executor,
            "slurm": FITS if slurm_settings is None else slurm_settings,
        },
    }
    path.write_text(json.dumps(doc))  # JSON is YAML
    return path


def planned(tmp_path: Path, *args, **kwargs) -> Path:
    tmp_path.mkdir(exist_ok=True)
    spec = write_spec(tmp_path / "spec.yaml", *args, **kwargs)
    folder = tmp_path / "c"
    out = run_cli("campaign", "plan", str(spec), "--output", str(folder))
    assert out.returncode == 0, out.stderr
    return folder


def ok(out: subprocess.CompletedProcess[str], rc: int = 0) -> str:
    assert out.returncode == rc, out.stdout + out.stderr
    return out.stdout


def audit(folder: Path, tmp_path: Path) -> list[str]:
    out = run_cli("--archive", str(tmp_path / "a"), "campaign", "audit", str(folder))
    return out.stdout.splitlines()


def sacct_jobs(job_ids: list[str]) -> dict[str, slurm.JobInfo]:
    return slurm.query(job_ids, time.time() - 3 * 86400)


def runner(folder: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "probebook", "campaign", "run", str(folder), "--executor", "slurm", *extra],
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def wait_for(what: str, check, limit_s: float = 180.0):
    deadline = time.time() + limit_s
    while time.time() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(f"waited {limit_s:g} s for {what}")


def wrapper(tmp_path: Path, name: str, body: str) -> dict[str, str]:
    """A PATH entry whose ``name`` runs ``body`` around the real command (a log, a kill)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    real = subprocess.run(["which", name], capture_output=True, text=True, check=True).stdout.strip()
    script = bin_dir / name
    script.write_text(f"#!/bin/sh\n{body.replace('REAL', real)}\n")
    script.chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}"}


def test_a_grid_of_another_probe_runs_through_sbatch_and_audits_clean(tmp_path):
    # gemm points, one job per grid value, submitted and settled as a batch sweep's points are
    doc = {
        "campaign": "gemm-slurm",
        "probe": "gemm",
        "config": {"device": "cpu", "preset": "tiny", "warmup": 0, "windows": 1, "tokens": 16, "window_s": 0.001},
        "grid": {"square": [16, 32]},
        "executor": {"point_timeout_s": 120, "grace_s": 60, "poll_s": 2, "slurm": FITS},
    }
    (tmp_path / "grid.yaml").write_text(json.dumps(doc))
    folder = tmp_path / "c"
    ok(run_cli("campaign", "plan", str(tmp_path / "grid.yaml"), "--output", str(folder)))
    ok(run_cli("campaign", "run", str(folder), "--executor", "slurm"))
    got = receipts.load_all(folder)
    assert {k: r["state"] for k, r in got.items()} == {"p0-16": "ok", "p1-32": "ok"}
    assert all(r["attempts"][0]["executor"] == "slurm" and r["attempts"][0]["job_id"] for r in got.values())
    assert audit(folder, tmp_path) == []


def test_a_default_campaign_runs_and_audits_clean_with_batched_polling(tmp_path):
    # the spec's defaults (gpu_lock: true, max_concurrent 2) with resources this cluster has
    folder = planned(tmp_path, [32, 64], 64)
    calls = tmp_path / "sacct.calls"
    env = wrapper(tmp_path, "sacct", f'echo "$(date +%s.%N)" >> {calls}; exec REAL "$@"')
    started = time.time()
    out = run_cli("campaign", "run", str(folder), "--executor", "slurm", env=env)
    wall = time.time() - started
    assert out.returncode == 0, out.stderr
    got = receipts.load_all(folder)
    assert {k: r["state"] for k, r in got.items()} == {"tiny-s32-b1": "ok", "tiny-s32-b2": "ok", "tiny-s64-b1": "ok"}
    for r in got.values():
        (a,) = r["attempts"]
        assert a["job_id"] and a["started_unix"] >= a["submitted_unix"] - 2
        assert 0 < a["wall_s"] < a["ended_unix"] - a["submitted_unix"] + 2
    assert audit(folder, tmp_path) == []  # the GPU lock is the local executor's: two Slurm jobs may overlap
    # one batched sacct call per poll_s (2 s) at most, not one per live job every 0.2 s
    n = len(calls.read_text().splitlines())
    assert 1 <= n <= wall / 2 + 2, f"{n} sacct calls in {wall:.1f} s"
    status = ok(run_cli("campaign", "status", str(folder)))
    assert "2/2 curves done, 3 points measured" in status
    # the planner: the same recipes are estimated from this run; a context it never measured is refused
    lines = ok(run_cli("campaign", "plan", str(tmp_path / "spec.yaml"), "--estimate", "--from", str(folder)))
    walls = {k: r["attempts"][0]["wall_s"] for k, r in got.items()}
    assert f"tiny-s32-b2: {walls['tiny-s32-b2']:.1f} s (measured)" in lines.splitlines()
    assert "executor.slurm.time_min: 5 (longest job" in lines  # tiny jobs: the spec's 3 min watchdog, rounded to 5
    wider = write_spec(tmp_path / "wider.yaml", [32, 128], 128)
    refused = run_cli("campaign", "plan", str(wider), "--estimate", "--from", str(folder))
    assert refused.returncode == 2 and "no measurement of tiny at context 128" in refused.stderr
    assert "give --time-min explicitly" in refused.stderr
    given = ok(run_cli("campaign", "plan", str(wider), "--estimate", "--from", str(folder), "--time-min", "6"))
    assert (
        "tiny-s128-b1: 240.0 s (--time-min)" in given and "tiny-s32-b4: " in given and "(scaled from batch 2)" in given
    )


def test_time_waiting_in_the_queue_is_not_run_time(tmp_path):
    folder = planned(tmp_path, [32], 32, point_timeout_s=25, grace_s=20)
    cpus = subprocess.run(["sinfo", "-h", "-o", "%c"], capture_output=True, text=True).stdout.split()[0]
    # a job holding every core of the node for longer than the point's watchdog: the point waits
    blocker = subprocess.run(
        ["sbatch", "--parsable", "-c", cpus, "--mem=1G", "-o", "/dev/null", "--wrap", "sleep 40"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    try:
        ok(run_cli("campaign", "run", str(folder), "--executor", "slurm"))
    finally:
        subprocess.run(["scancel", blocker])
    (a,) = receipts.load_all(folder)["tiny-s32-b1"]["attempts"]
    assert a["state"] == "ok" and a["queued_s"] > 25, a
    assert audit(folder, tmp_path) == []


def test_a_resumed_runner_records_the_jobs_own_run_time(tmp_path):
    folder = planned(tmp_path, [32], 32, point_timeout_s=20, grace_s=10)
    first = runner(folder)
    receipt = wait_for("the submission", lambda: receipts.load_all(folder).get("tiny-s32-b1", {}).get("attempts"))
    wait_for("a job id", lambda: receipts.load_all(folder)["tiny-s32-b1"]["attempts"][0]["job_id"])
    first.send_signal(signal.SIGKILL)
    first.wait()
    (a,) = receipts.load_all(folder)["tiny-s32-b1"]["attempts"]
    wait_for("the job's end", lambda: (j := sacct_jobs([a["job_id"]]).get(a["job_id"])) and j.ended)
    time.sleep(max(0.0, a["submitted_unix"] + 35 - time.time()))  # noticed later than its 30 s job limit
    ok(run_cli("campaign", "run", str(folder), "--executor", "slurm", "--resume"))
    (a,) = receipts.load_all(folder)["tiny-s32-b1"]["attempts"]
    job = sacct_jobs([a["job_id"]])[a["job_id"]]
    assert a["state"] == "ok" and a["wall_s"] < 30 and receipt
    assert job.start_unix is not None and job.end_unix is not None
    assert abs(a["wall_s"] - (job.end_unix - job.start_unix)) <= 1.0  # Slurm's own seconds
    assert audit(folder, tmp_path) == []


def _as_if_killed_inside_sbatch(folder: Path, key: str) -> str:
    """Make a finished point look as a runner killed inside ``sbatch`` leaves it: no job id anywhere."""
    receipt = receipts.load_all(folder)[key]
    attempt = receipt["attempts"][-1]
    job_id = attempt["job_id"]
    for name in ("job_id", "started_unix", "ended_unix", "wall_s", "queued_s", "slurm_state", "result", "evidence"):
        attempt.pop(name, None)
    attempt.update({"state": "submitting", "job_id": None})
    receipt.update({"state": "submitting", "result": None, "evidence": None})
    receipts.write(folder, receipt)
    attempt_folder = folder / "jobs" / key / f"a{attempt['n']}"
    for path in attempt_folder.iterdir():
        if path.name.endswith(("_submitted.pkl", "_submission.sh")):
            path.unlink()
    return job_id


def _shift_a_day(folder: Path, key: str, job_id: str) -> None:
    """Move a job (in Slurm's accounting database) and its receipt to the day before: it ended before midnight."""
    # a time Slurm has not set is 0 (time_eligible can be, by the time the job ends), and the columns are unsigned:
    # only set times move, else the subtraction is out of range (MariaDB error 1690)
    moved = ", ".join(
        f"{c} = IF({c} > 86400, {c} - 86400, {c})" for c in ("time_submit", "time_eligible", "time_start", "time_end")
    )
    sql = f"UPDATE `probebook-ci_job_table` SET {moved} WHERE id_job = {int(job_id)}"
    done = subprocess.run(["mariadb", f"--socket={SOCK}", "slurm_acct_db", "-e", sql], capture_output=True, text=True)
    if done.returncode != 0 and "connect" in done.stderr.lower():
        pytest.skip(f"cannot reach Slurm's accounting database to age a job ({done.stderr.strip()})")
    assert done.returncode == 0, done.stderr
    receipt = receipts.load_all(folder)[key]
    receipt["attempts"][-1]["submitted_unix"] -= 86400
    receipts.write(folder, receipt)


def test_a_job_from_an_earlier_day_is_found_by_name_and_never_resubmitted(tmp_path):
    folder = planned(tmp_path, [32], 32)
    ok(run_cli("campaign", "run", str(folder), "--executor", "slurm"))
    job_id = _as_if_killed_inside_sbatch(folder, "tiny-s32-b1")
    wait_for("the job's end", lambda: (j := sacct_jobs([job_id]).get(job_id)) and j.ended)
    _shift_a_day(folder, "tiny-s32-b1", job_id)
    # sacct's default window starts at midnight: without -S the job is not there
    name = sacct_jobs([job_id])[job_id].name
    plain = subprocess.run(["sacct", "-n", "-X", "-P", "-o", "JobID", "--name", name], capture_output=True, text=True)
    assert job_id not in plain.stdout.split()
    # with the accounting daemon down, sacct fails: the runner refuses rather than resubmit
    pid = Path("/var/lib/probebook-slurm/slurmdbd.pid").read_text().strip()
    os.kill(int(pid), signal.SIGTERM)
    wait_for("slurmdbd to stop", lambda: subprocess.run(["sacct", "-n", "-X"], capture_output=True).returncode != 0, 30)
    try:
        down = run_cli("campaign", "run", str(folder), "--executor", "slurm", "--resume")
    finally:
        subprocess.run([str(CI_SLURM), "up"], check=True, capture_output=True)
    assert down.returncode == 2 and "sacct failed" in down.stderr and "Traceback" not in down.stderr, down.stderr
    assert receipts.load_all(folder)["tiny-s32-b1"]["state"] == "submitting"
    out = run_cli("campaign", "run", str(folder), "--executor", "slurm", "--resume")
    assert out.returncode == 0, out.stderr
    (a,) = receipts.load_all(folder)["tiny-s32-b1"]["attempts"]
    assert a["job_id"] == job_id and a["state"] == "ok"  # the earlier day's job, adopted; nothing resubmitted
    assert "submitted as job" not in out.stderr


def test_a_job_adopted_after_a_kill_inside_sbatch_runs(tmp_path):
    folder = planned(tmp_path, [32], 32)
    # sbatch submits, then the runner that called it is killed before it hears the job id
    env = wrapper(tmp_path, "sbatch", 'REAL "$@"; rc=$?; [ "$1" = --test-only ] && exit $rc; kill -9 $PPID; exit $rc')
    killed = run_cli("campaign", "run", str(folder), "--executor", "slurm", env=env)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    receipt = receipts.load_all(folder)["tiny-s32-b1"]
    assert receipt["state"] == "submitting" and receipt["attempts"][0]["job_id"] is None
    out = run_cli("campaign", "run", str(folder), "--executor", "slurm", "--resume")
    assert out.returncode == 0, out.stderr
    (a,) = receipts.load_all(folder)["tiny-s32-b1"]["attempts"]
    assert a["state"] == "ok" and a["job_id"] and "found by name" in out.stderr
    assert audit(folder, tmp_path) == []


def test_scancel_is_recorded_with_its_cause_at_once_and_retry_failed_reruns(tmp_path):
    folder = planned(tmp_path, [32, 64], 64)
    running = runner(folder)
    try:
        job = wait_for(
            "job of tiny-s64-b1",
            lambda: (receipts.load_all(folder).get("tiny-s64-b1", {}).get("attempts") or [{}])[0].get("job_id"),
        )
        subprocess.run(["scancel", job], check=True)
        cancelled = time.time()
        receipt = wait_for(
            "the cancelled point's receipt",
            lambda: (r := receipts.load_all(folder)["tiny-s64-b1"])["state"] != "submitted" and r,
        )
        noticed = time.time() - cancelled
        assert running.wait(timeout=300) == 1  # blocked: tiny-s64 failed, tiny-s32 ran to its cap
    finally:
        running.kill()
    (a,) = receipt["attempts"]
    assert a["state"] == "failed" and a["slurm_state"].startswith("CANCELLED by"), a
    assert a["error"].startswith("Slurm: CANCELLED by"), a["error"]
    assert noticed < 2 + 5, f"the runner took {noticed:.1f} s to record a job that ended without a result"
    assert receipts.load_all(folder)["tiny-s32-b2"]["state"] == "ok"
    out = run_cli("campaign", "run", str(folder), "--executor", "slurm", "--resume", "--retry-failed")
    assert out.returncode == 0, out.stderr
    assert [a["state"] for a in receipts.load_all(folder)["tiny-s64-b1"]["attempts"]] == ["failed", "ok"]
    assert audit(folder, tmp_path) == []


@pytest.mark.parametrize(
    ("request_", "refusal"),
    [
        ({}, "Invalid generic resource"),  # the spec's defaults: gpus 1 on a partition without GPUs
        ({**FITS, "mem_gb": 4096}, "Requested node configuration is not available"),  # it would pend forever
    ],
)
def test_a_request_the_cluster_cannot_meet_is_refused_in_one_line(tmp_path, request_, refusal):
    folder = planned(tmp_path, [32], 32, slurm_settings=request_)
    dry = run_cli("campaign", "run", str(folder), "--executor", "slurm", "--dry-run")
    assert dry.returncode == 2 and refusal in dry.stderr and "--test-only" in dry.stderr, dry.stderr
    out = run_cli("campaign", "run", str(folder), "--executor", "slurm")
    assert out.returncode == 2 and refusal in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
    assert receipts.load_all(folder) == {}  # nothing was submitted, so nothing is in flight
    again = run_cli("campaign", "run", str(folder), "--executor", "slurm")  # not "already run": nothing ran
    assert again.returncode == 2 and refusal in again.stderr
    fine = planned(tmp_path / "fine", [32], 32)
    assert "# sbatch --test-only: accepted" in ok(
        run_cli("campaign", "run", str(fine), "--executor", "slurm", "--dry-run")
    )


def test_an_edit_of_the_frozen_source_after_plan_is_caught_by_the_audit(tmp_path):
    folder = planned(tmp_path, [32], 32)
    edited = folder / "source" / "measure" / "probes" / "batch_sweep.py"
    edited.chmod(0o644)
    edited.write_text(edited.read_text() + "\n# an edit after plan\n")
    ok(run_cli("campaign", "run", str(folder), "--executor", "slurm"))
    lines = audit(folder, tmp_path)
    # the job ran the snapshot (its evidence hashes the edited measure package), not the working tree
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"campaign: {folder / 'source'} hashes to ") and "changed after plan" in lines[0]
    assert lines[1].startswith("point tiny-s32-b1: measured by measure source ") and "(edited?)" in lines[1]


def test_a_job_slurm_killed_at_its_time_limit_is_recorded_with_the_cause(tmp_path):
    # a point far longer than its one-minute Slurm limit (its harness hangs), and no runner to cancel it first
    env = {"PYTHONPATH": f"{PLUGINS}:{REPO}"}
    spec = write_spec(
        tmp_path / "spec.yaml",
        [32],
        32,
        {**FITS, "time_min": 1},
        {"workload": "toy_harness:hangs"},
        point_timeout_s=40,
        grace_s=20,
    )
    folder = tmp_path / "c"
    ok(run_cli("campaign", "plan", str(spec), "--output", str(folder), env=env))
    first = runner(folder, env=env)
    job = wait_for(
        "a job id", lambda: (receipts.load_all(folder).get("tiny-s32-b1", {}).get("attempts") or [{}])[0].get("job_id")
    )
    first.send_signal(signal.SIGKILL)
    first.wait()
    ended = wait_for("Slurm's kill", lambda: (j := sacct_jobs([job]).get(job)) and j.ended and j, limit_s=240)
    # submitit is warned (SIGUSR2, grace_s before the limit) and, allowed no requeue, fails the job itself
    assert ended.state in ("TIMEOUT", "FAILED"), ended
    out = run_cli("campaign", "run", str(folder), "--executor", "slurm", "--resume", env=env)
    assert out.returncode == 1 and "blocked by a failed point (tiny-s32)" in out.stderr, out.stderr
    (a,) = receipts.load_all(folder)["tiny-s32-b1"]["attempts"]
    assert a["state"] == "failed" and a["slurm_state"] == ended.state, a
    assert "timed-out too many times" in a["error"] or a["error"].startswith("Slurm: TIMEOUT"), a["error"]
    assert a["wall_s"] == ended.end_unix - ended.start_unix  # Slurm's own start to end


def test_an_optimizer_followup_runs_through_slurm_audits_its_accounting_and_joins_a_report(tmp_path):
    sweep = planned(tmp_path, [32], 64)
    ok(run_cli("campaign", "run", str(sweep), "--executor", "slurm"))
    assert audit(sweep, tmp_path) == []
    follow = tmp_path / "opt"
    ok(run_cli("campaign", "plan", "--optimizer-timing-from", str(sweep), "--output", str(follow)))
    started = time.time()
    ok(run_cli("campaign", "run", str(follow), "--executor", "slurm"))
    print(f"optimizer follow-up of 2 points through Slurm: {time.time() - started:.1f} s")  # noqa: T201 (the figure -s shows)
    got = receipts.load_all(follow)
    assert {k: r["state"] for k, r in got.items()} == {"tiny-s32-b1": "ok", "tiny-s32-b2": "ok"}
    assert all(r["result"]["instrumented_evidence"] for r in got.values())
    out = run_cli("--archive", str(tmp_path / "a"), "campaign", "audit", str(follow))
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout == ""
    # both points of the curve ran at once under Slurm (it had fit both already), within max_concurrent 2
    verdict = Store(tmp_path / "a").read_bytes(out.stderr.strip().rsplit(" ", 1)[-1])
    assert json.loads(verdict)["data"]["peak_concurrent_slurm_jobs"] in (1, 2)
    report = tmp_path / "report.json"
    args = ["--throughput", str(sweep), "--optimizer", str(follow), "--output", str(report)]
    ok(run_cli("--archive", str(tmp_path / "a"), "campaign", "report", *args))
    rows = json.loads(report.read_text())["data"]["samples"]
    assert [(r["curve"], r["batch"]) for r in rows] == [("tiny-s32", 1), ("tiny-s32", 2)]


def test_the_audit_catches_a_job_whose_allocation_is_not_the_specs(tmp_path):
    folder = planned(tmp_path, [32], 32)
    ok(run_cli("campaign", "run", str(folder), "--executor", "slurm"))
    # a job the spec did not ask for (1 GB, a 1 min limit) named by the point's receipt
    sub = subprocess.run(
        ["sbatch", "--parsable", "--mem=1G", "--time=1", "-c", "1", "-o", str(tmp_path / "wrap.out"), "--wrap", "true"],
        capture_output=True,
        text=True,
        check=True,
    )
    job = sub.stdout.strip().split(";")[0]
    wait_for("the job to end", lambda: sacct_jobs([job]).get(job) and sacct_jobs([job])[job].ended)
    path = receipts.path(folder, "tiny-s32-b1")
    receipt = json.loads(path.read_text())
    receipt["attempts"][-1]["job_id"] = job
    path.write_text(json.dumps(receipt))
    assert audit(folder, tmp_path) == [
        f"point tiny-s32-b1 attempt 1 (job {job}): time limit 1 min, the spec asked for 5",
        f"point tiny-s32-b1 attempt 1 (job {job}): allocated 1G of memory, the spec asked for 2 GB",
    ]
