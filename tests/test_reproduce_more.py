"""reproduce --sessions N's extra passes: the bound, the next session count, which runs an open verdict re-runs, the
loop's stop, the CLI's refusals, and (slow) the fixture record re-measured on the CPU with a pass to the bound."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli_here

from measure.constants import MAX_SESSIONS
from measure.errors import ProbebookError
from measure.evidence.store import Store
from probebook.reproduce import more

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "reproduce"
sys.path.insert(0, str(FIXTURE))
from make_fixtures import SHORT_SLEEP_S  # noqa: E402


def test_the_bound_is_twice_the_sessions_unless_given_and_never_past_max_sessions() -> None:
    assert more.bound_of(3, None) == 6
    assert more.bound_of(3, 5) == 5
    assert more.bound_of(3, 3) == 3
    assert more.bound_of(15, None) == MAX_SESSIONS == 20
    with pytest.raises(ProbebookError, match="--max-sessions 2: between --sessions"):
        more.bound_of(3, 2)
    with pytest.raises(ProbebookError, match="--max-sessions 21"):
        more.bound_of(3, 21)


def test_the_next_pass_doubles_the_sessions_and_stops_at_the_bound() -> None:
    assert more.next_sessions(1, 4) == 2
    assert more.next_sessions(2, 4) == 4
    assert more.next_sessions(3, 5) == 5  # 6 would pass the bound
    assert more.next_sessions(4, 4) is None
    assert more.next_sessions(5, 4) is None  # recorded past the bound: never more


EVIDENCE = {  # key -> the original ids its ledger row reads
    "fit(a).c": ["sha256:aa"],
    "fit(b).c": ["sha256:bb"],
    "claim: a beats c": ["sha256:aa", "sha256:cc"],
    "environment.gpu_count": ["sha256:cc"],
}
ALIASES = {"a": "sha256:aa", "b": "sha256:bb", "c": "sha256:cc", "c2": "sha256:cc"}


def test_an_open_verdict_reruns_every_alias_its_row_reads() -> None:
    assert more.aliases_read(["fit(a).c"], EVIDENCE, ALIASES) == ["a"]
    assert more.aliases_read(["claim: a beats c"], EVIDENCE, ALIASES) == ["a", "c", "c2"]  # two aliases of one id
    assert more.aliases_read(["not in the ledger"], EVIDENCE, ALIASES) == []
    sessions = {"a": 3, "b": 3, "c": 6}  # c2's probe measures in one session: absent
    assert more.to_rerun(["fit(a).c", "claim: a beats c"], EVIDENCE, ALIASES, sessions, 6) == {"a": 6}  # c at 6
    assert more.to_rerun(["fit(b).c"], EVIDENCE, ALIASES, {"b": 2}, 5) == {"b": 4}
    assert more.to_rerun([], EVIDENCE, ALIASES, sessions, 6) == {}


def test_open_verdicts_are_numbers_not_resolved_and_claims_not_resolved() -> None:
    result = {
        "numbers": [
            {"key": "fit(a).c", "outcome": "not resolved"},
            {"key": "fit(b).c", "outcome": "resolved"},
            {"key": "environment.gpu_count", "outcome": "equivalent"},
            {"key": "gone", "outcome": None},  # missing from the new render: more sessions cannot bring it back
        ],
        "claims": [{"key": "claim: a beats c", "verdict": "not resolved"}, {"key": "claim: b", "verdict": "held"}],
    }
    assert more.open_verdicts(result) == ["fit(a).c", "claim: a beats c"]


def _comparison(open_keys: list[str]) -> dict[str, Any]:
    return {"numbers": [{"key": k, "outcome": "not resolved"} for k in open_keys], "claims": []}


def test_the_loop_reruns_until_resolved_or_at_the_bound_and_records_each_pass() -> None:
    # fit(a).c resolves once a has 4 sessions; fit(b).c never does: b goes 1 -> 2 -> 4 -> 5 and stops at the bound
    asked: list[tuple[int, dict[str, int], tuple[str, ...]]] = []

    def measure(number: int, wanted: dict[str, int], asked_by: tuple[str, ...]) -> Any:
        asked.append((number, wanted, asked_by))
        new = {alias: f"sha256:{alias}{n}" for alias, n in wanted.items()}
        return 0, new, {i: {"probe": "step-scaling"} for i in new.values()}, [f"run {a} {n}" for a, n in wanted.items()]

    def judge(new: dict[str, str], _docs: dict[str, Any]) -> dict[str, Any]:
        return _comparison(
            [k for k, a, done in (("fit(a).c", "a", "sha256:a4"), ("fit(b).c", "b", "")) if new[a] != done]
        )

    start = _comparison(["fit(a).c", "fit(b).c"])
    first = {"a": "sha256:a1", "b": "sha256:b1"}
    got = more.add_sessions(start, first, {}, {"a": 1, "b": 1}, 5, EVIDENCE, ALIASES, measure, judge)
    assert [(n, w) for n, w, _ in asked] == [(1, {"a": 2, "b": 2}), (2, {"a": 4, "b": 4}), (3, {"b": 5})]
    assert asked[2][2] == ("fit(b).c",)
    assert got.code == 0 and got.new == {"a": "sha256:a4", "b": "sha256:b5"}
    fields = got.fields()
    assert fields["sessions_bound"] == 5 and fields["sessions"] == {"a": 4, "b": 5}
    assert fields["not_resolved_at_bound"] == ["fit(b).c"]
    assert [p["sessions"] for p in fields["passes"]] == [{"a": 2, "b": 2}, {"a": 4, "b": 4}, {"b": 5}]
    assert fields["passes"][2] == {
        "pass": 3,
        "asked_by": ["fit(b).c"],
        "sessions": {"b": 5},
        "new": {"b": "sha256:b5"},
        "commands": ["run b 5"],
    }


def test_a_pass_that_failed_stops_the_loop_with_its_status_and_a_failed_run_is_not_asked_again() -> None:
    def failing(_number: int, _wanted: dict[str, int], _asked_by: tuple[str, ...]) -> Any:
        return 3, {}, {}, []  # the budget was spent: resumed by the same command

    start = _comparison(["fit(a).c"])
    got = more.add_sessions(start, {"a": "sha256:a1"}, {}, {"a": 1}, 4, EVIDENCE, ALIASES, failing, _comparison)
    assert got.code == 3 and got.passes == []

    calls: list[dict[str, int]] = []

    def nothing_measured(_number: int, wanted: dict[str, int], _asked_by: tuple[str, ...]) -> Any:
        calls.append(wanted)
        return 0, {}, {}, []  # --partial: every run of the pass failed

    got = more.add_sessions(
        start, {"a": "sha256:a1"}, {}, {"a": 1}, 4, EVIDENCE, ALIASES, nothing_measured, _comparison
    )
    assert calls == [{"a": 2}, {"a": 4}]  # never the same sessions twice: the loop ends
    assert got.fields()["sessions"] == {"a": 1} and got.fields()["not_resolved_at_bound"] == ["fit(a).c"]


def test_pass_folders_sit_beside_the_first_runs_folder() -> None:
    assert more.pass_folder(Path("runs/reproduce-x-v1"), 2) == Path("runs/reproduce-x-v1-more-2")


def test_the_cli_refuses_max_sessions_it_cannot_hold_before_running_anything(cli, tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    shutil.copytree(FIXTURE / "archive", archive)
    base = ["--archive", str(archive), "reproduce", "sleepy-step", "--docs", str(FIXTURE / "docs")]
    base += ["--folder", str(tmp_path / "run")]
    for extra, said in (
        (["--max-sessions", "4"], "--max-sessions bounds the sessions --sessions N adds; give --sessions"),
        (["--sessions", "3", "--max-sessions", "2"], "--max-sessions 2: between --sessions (3) and 20"),
        (["--sessions", "3", "--max-sessions", "40"], "--max-sessions 40: between --sessions (3) and 20"),
    ):
        run = cli if extra[0] == "--max-sessions" else run_cli_here  # the first in a real process, the rest in this one
        done = run(*base, *extra)
        assert done.returncode == 2, done.stderr
        assert said in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_a_verdict_not_resolved_reruns_its_runs_with_more_sessions_up_to_the_bound(cli, tmp_path: Path) -> None:
    archive, folder = tmp_path / "archive", tmp_path / "run"
    shutil.copytree(FIXTURE / "archive", archive)
    env = {
        "PYTHONPATH": os.pathsep.join([str(REPO), str(FIXTURE / "plugins")]),
        "PROBEBOOK_TEST_SLEEP_S": SHORT_SLEEP_S,
    }
    args = ["--archive", str(archive), "reproduce", "sleepy-step", "--docs", str(FIXTURE / "docs")]
    args += ["--workload", "sleepy:factory", "--workload", "sleepy:fixed", "--folder", str(folder), "--json"]
    done = cli(*args, "--sessions", "1", "--max-sessions", "2", env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    # the CPU's one-session runs leave the fixed parts not resolved against the original's across-sessions interval
    # (wide: the fixture holds one session of each), so the first pass re-runs what they read, with 2 sessions
    [extra] = data["passes"]  # 2 is the bound: one pass, then it stops
    reads = {"fit(sweep).c": {"sweep"}, "fit(reference).c": {"reference"}}
    reads["claim: the sleeping step takes longer than the reference step"] = {"sweep", "reference"}
    assert extra["asked_by"] and set(extra["asked_by"]) <= set(reads)
    rerun = set().union(*(reads[k] for k in extra["asked_by"]))
    assert extra["sessions"] == dict.fromkeys(sorted(rerun), 2) and set(extra["new"]) == rerun
    assert len(extra["commands"]) == len(rerun) and all(c.endswith("--sessions 2") for c in extra["commands"])
    assert data["sessions_bound"] == 2 and data["sessions"] == {"reference": 1, "sweep": 1, **extra["sessions"]}
    # the comparison stored is the one on the pass's runs, and names what stayed open at the bound
    assert {a: data["new"][a] for a in rerun} == extra["new"]
    numbers_open = [n["key"] for n in data["numbers"] if n["outcome"] == "not resolved"]
    claims_open = [c["key"] for c in data["claims"] if c["verdict"] == "not resolved"]
    assert data["not_resolved_at_bound"] == numbers_open + claims_open
    # each pass is printed before it runs, and runs as its own campaign folder beside the first
    shown = done.stderr.index(f"# more sessions, pass 1 (at most 2): not resolved: {', '.join(extra['asked_by'])}")
    assert shown < done.stderr.index(extra["commands"][0]) < done.stderr.rindex(f"{sorted(rerun)[0]}: ok")
    receipts = {p.stem: json.loads(p.read_text()) for p in (tmp_path / "run-more-1" / "receipts").glob("*.json")}
    assert {k: r["evidence"] for k, r in receipts.items()} == extra["new"]
    assert not (tmp_path / "run-more-2").exists()
    for ident in extra["new"].values():  # the pass's runs measured in 2 sessions and are evidence of the archive
        assert Store(archive).get(ident)["params"]["sessions"] == 2
    verify = cli("--archive", str(archive), "archive", "verify")
    assert verify.returncode == 0, verify.stdout + verify.stderr
