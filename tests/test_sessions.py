"""Sessions (issue 38): a timing probe's windows measured in several fresh processes, stored as one document.

Covers the merge of the sessions' documents (rows tagged ``session``, ``window``/``round`` kept unique, other data
per session with the first at the top level), the status rule when a session fails, each window's SM clock, and
real CPU runs of the CLI: rows from every session, each session its own process, paired rounds unique and
paired within a session, a session killed mid-run leaving a ``partial`` document, and bad ``--sessions`` values.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import run_cli_here

from measure.run.sessions import Offsets, Session, merge_data, merged_status
from measure.timing import HostClock, WindowPlan, session_count, time_interleaved, time_windows

PLUGINS = str(Path(__file__).resolve().parent / "fixtures" / "measure_plugins")
REPO = str(Path(__file__).resolve().parents[1])
TINY = ("--device", "cpu", "--warmup", "1", "--windows", "3", "--iters", "1")


def doc(status: str, samples: list[dict], **data: object) -> dict:
    return {"status": status, "error": None, "data": {"samples": samples, "points": [], **data}}


def test_offsets_shift_window_and_round_past_every_earlier_session() -> None:
    offsets = Offsets()
    first = offsets.shift([{"window": 0}, {"window": 1, "round": 0}, {"round": 2}], 0)
    offsets.advance([first])
    second = offsets.shift([{"window": 0}, {"round": 0}, {"round": 1, "window": True}], 1)
    assert first == [{"window": 0, "session": 0}, {"window": 1, "round": 0, "session": 0}, {"round": 2, "session": 0}]
    flag = {"round": 4, "window": True, "session": 1}  # a bool is no window number: left as it is
    assert second == [{"window": 2, "session": 1}, {"round": 3, "session": 1}, flag]


def test_merge_concatenates_rows_and_keeps_other_data_per_session() -> None:
    a = doc("complete", [{"arm": "x", "round": 0, "step_s": 1.0}], clocks={"sm_mhz_before": 1}, failures=[])
    b = doc("complete", [{"arm": "x", "round": 0, "step_s": 2.0}], clocks={"sm_mhz_before": 2}, failures=[{"w": 1}])
    merged = merge_data([Session(0, 10, a, None, {"wall_s": 1.5}), Session(1, 11, b, None, {"wall_s": 2.5})])
    assert merged["samples"] == [
        {"arm": "x", "round": 0, "step_s": 1.0, "session": 0},
        {"arm": "x", "round": 1, "step_s": 2.0, "session": 1},
    ]
    assert merged["failures"] == [{"w": 1, "session": 1}]
    assert merged["clocks"] == {"sm_mhz_before": 1}  # the first session's, where one-process readers look
    assert [(s["session"], s["pid"], s["wall_s"], s["data"]["clocks"]) for s in merged["sessions"]] == [
        (0, 10, 1.5, {"sm_mhz_before": 1}),
        (1, 11, 2.5, {"sm_mhz_before": 2}),
    ]


def test_status_complete_unstable_partial_failed() -> None:
    ok = doc("complete", [{"step_s": 1.0}])
    noisy = {**doc("unstable", [{"step_s": 1.0}]), "error": "1 point(s) noisy"}
    assert merged_status([Session(0, 1, ok), Session(1, 2, ok)], 2) == ("complete", None)
    assert merged_status([Session(0, 1, ok), Session(1, 2, noisy)], 2) == ("unstable", "session 1: 1 point(s) noisy")
    died = Session(1, 2, None, "killed by signal 9")
    assert merged_status([Session(0, 1, ok), died], 2) == (
        "partial",
        "1 problem(s) among 2 sessions: session 1 failed: killed by signal 9",
    )
    assert merged_status([Session(0, 1, ok)], 3, "interrupted") == (
        "partial",
        "1 problem(s) among 3 sessions: 2 of 3 sessions not run (interrupted)",
    )
    assert merged_status([died], 1)[0] == "failed"


def test_session_defaults_three_on_cuda_one_on_cpu() -> None:
    assert (session_count(None, "cuda"), session_count(None, "cpu"), session_count(5, "cpu")) == (3, 1, 5)


class ClockedHost(HostClock):
    """A host clock that says which SM clock each window ended at, as ``CudaEventClock`` does after its events."""

    def __init__(self) -> None:
        super().__init__()
        self.ticks = 1000

    def time(self, fn, iters):  # type: ignore[no-untyped-def]
        self.ticks += 10
        self.last_sm_clock_mhz = self.ticks
        return super().time(fn, iters)


def test_every_window_and_round_keeps_the_clock_it_ended_at() -> None:
    plan = WindowPlan(warmup=0, windows=3, iters=1, extra=0)
    assert time_windows(lambda: None, ClockedHost(), plan).sm_clock_mhz == [1010, 1020, 1030]
    assert time_windows(lambda: None, HostClock(), plan).sm_clock_mhz == [None, None, None]
    seen: list[dict] = []
    result = time_interleaved(
        {"a": lambda: None, "b": lambda: None}, ClockedHost(), plan, on_round=lambda r, t, c, e: seen.append(c)
    )
    assert seen == [{"a": 1010, "b": 1020}, {"a": 1030, "b": 1040}, {"a": 1050, "b": 1060}]
    assert result.arms["b"].sm_clock_mhz == [1020, 1040, 1060]


def stored(archive: Path) -> dict:
    (path,) = list((archive / "evidence").rglob("*.json"))
    return json.loads(path.read_text())


@pytest.mark.slow  # real probe runs in session processes (about 7 s of CPU)
@pytest.mark.parametrize("probe", ["ablate"])
def test_sessions_run_in_their_own_processes_and_pair_within_one(cli, archive: Path, probe: str) -> None:
    pytest.importorskip("torch")
    from render.derive.paired import by_round, paired_change

    out = cli(
        "--archive", str(archive), "measure", probe, "--preset", "tiny", *TINY, "--batch", "1", "--seq-len", "16",
        "--arms", "no-optimizer", "--sessions", "2",
    )  # fmt: skip
    assert out.returncode in (0, 1), out.stderr  # 1: stored unstable on a loaded CPU
    d = stored(archive)
    assert d["params"]["sessions"] == 2 and d["status"] in ("complete", "unstable")
    sessions = d["data"]["sessions"]
    assert [s["session"] for s in sessions] == [0, 1]
    pids = [s["pid"] for s in sessions]
    assert len(set(pids)) == 2 and os.getpid() not in pids and all(s["returncode"] == 0 for s in sessions)
    rows = d["data"]["samples"]
    assert {r["session"] for r in rows} == {0, 1}
    assert all("sm_clock_mhz" in r for r in rows)
    rounds = {s: {r["round"] for r in rows if r["session"] == s} for s in (0, 1)}
    assert not rounds[0] & rounds[1] and max(rounds[0]) < min(rounds[1])  # unique, each round in one session
    base, arm = by_round(rows, "baseline", "step_s"), by_round(rows, "no-optimizer", "step_s")
    assert paired_change(base, arm).rounds == len(rows) // 2
    assert d["data"]["clocks"] == sessions[0]["data"]["clocks"]
    assert not list((archive / "journal").glob("*.jsonl"))  # the sessions' journals are gone once stored


@pytest.mark.slow  # a real probe run whose second session is killed (about 5 s of CPU)
def test_a_session_killed_mid_run_leaves_a_partial_document(cli, archive: Path, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    out = cli(
        "--archive", str(archive), "measure", "step-scaling", "--workload", "session_harness:factory", *TINY,
        "--seq-lens", "2,4,8", "--modes", "fixed_batch", "--sessions", "2",
        env={"PYTHONPATH": os.pathsep.join((REPO, PLUGINS)), "SESSION_MARK": str(tmp_path / "mark")},
    )  # fmt: skip
    assert out.returncode == 1, out.stderr
    d = stored(archive)
    assert d["status"] == "partial" and "session 1" in d["error"] and "signal 9" in d["error"]
    by_session = [s["status"] for s in d["data"]["sessions"]]
    assert by_session[0] in ("complete", "unstable") and by_session[1] == "partial"
    assert d["data"]["sessions"][1]["recovered"] is True
    rows = d["data"]["samples"]
    assert {r["tokens"] for r in rows if r["session"] == 0} == {2, 4, 8}
    assert {r["tokens"] for r in rows if r["session"] == 1} == {2}  # killed making its second point's batch
    assert not list((archive / "journal").glob("*.jsonl"))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["step-scaling", "--sessions", "0"], "--sessions must be between 1 and 20"),
        (["kernels", "--sessions", "2"], "this probe measures in one session"),
    ],
)
def test_bad_session_counts_are_one_line_errors(cli, archive: Path, args: list[str], message: str) -> None:
    run = cli if args[0] == "step-scaling" else run_cli_here  # the first in a real process, the second in this one
    out = run("--archive", str(archive), "measure", *args, "--device", "cpu", "--preset", "tiny")
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr


def test_session_journal_is_absolute_since_the_session_runs_in_the_repository_folder(tmp_path, monkeypatch) -> None:
    from measure.run.sessions import session_journal

    monkeypatch.chdir(tmp_path)
    path = session_journal(Path("rel/journal/run.jsonl"), 2, "/unused")
    assert path == tmp_path / "rel" / "journal" / "run-session2.jsonl"
