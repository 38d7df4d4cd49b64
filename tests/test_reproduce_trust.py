"""probebook reproduce shows and asks (issue 41, item 2): it prints every command before running one; a --workload or
a path from evidence runs only when given on reproduce's command line or with --trust-evidence (one line naming the
option, the value and the evidence, exit 2, nothing planned); a host folder named in evidence (eval-boundary's
--checkpoint-dir) is never used; counts past a re-run's bounds are refused, dry run or not, trusted or not; and
Ctrl-C, SIGTERM or even SIGKILL of reproduce leaves none of its jobs running."""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from measure.evidence.envelope import Evidence
from measure.evidence.reruns import BOUNDS, LIST_ITEMS_MOST, out_of_bounds
from measure.evidence.store import Store
from probebook.reproduce.trust import open_fields

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "reproduce"
HOSTILE = "no_such_pkg.evil:factory"
"""A plug-in an evidence document names (one that does not exist: nothing may import it before the user agrees)."""


def _record(tmp_path: Path, probe: str, **config: Any) -> list[str]:
    """An archive with one ``probe`` run whose params are today's Config with ``config`` (made-up data, a test's
    params), a record citing it as ``run``; the reproduce arguments up to the record's name."""
    from measure.cli import probe_module

    module = probe_module(probe)
    params = dataclasses.asdict(module.Config(**config))
    params.update({k: v for k, v in config.items() if k not in params})
    ident = Store(tmp_path / "archive").put(
        Evidence(probe, module.VERSION, params, {"samples": []}, notes="a test's params, not a measurement")
    )
    page = tmp_path / "docs" / "records" / "rec" / "v1.md"
    page.parent.mkdir(parents=True)
    page.write_text(
        f"---\ntitle: rec\nversion: 1\ndate: 2026-12-02\nevidence:\n  run: {ident}\n---\nA run.\n", encoding="utf-8"
    )
    (tmp_path / "docs" / "index.md").write_text("---\ntitle: t\n---\nA test site.\n", encoding="utf-8")
    return ["--archive", str(tmp_path / "archive"), "reproduce", "rec", "--docs", str(tmp_path / "docs")]


def _stopped_after_consent(tmp_path: Path) -> list[str]:
    """Options that stop reproduce right after the consent check (a refused executor section), before any job."""
    spec = tmp_path / "executor.yaml"
    spec.write_text("executor:\n  max_concurrent: 0\n", encoding="utf-8")
    return ["--folder", str(tmp_path / "run"), "--executor-spec", str(spec)]


def _one_line(r: Any) -> str:
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    return lines[0]


def test_a_workload_from_evidence_is_shown_and_refused_until_the_user_names_it(cli_here, tmp_path: Path) -> None:
    args = _record(tmp_path, "step-scaling", device="cpu", workload=HOSTILE)
    stop = _stopped_after_consent(tmp_path)
    r = cli_here(*args, *stop)
    line = _one_line(r)
    assert f"--workload '{HOSTILE}' (evidence run (sha256:" in line and "--trust-evidence" in line
    [command] = [ln for ln in r.stdout.splitlines() if ln.startswith("probebook measure ")]
    assert f"--workload {HOSTILE}" in command  # printed before the refusal: what would have run
    assert not (tmp_path / "run").exists()  # nothing planned, nothing run
    other = cli_here(*args, *stop, "--workload", "some.other:factory")
    assert "executor.max_concurrent must be an integer from 1" in _one_line(other)  # the user's value stands in
    assert f"--workload {HOSTILE}" not in other.stdout and "--workload some.other:factory" in other.stdout
    for word in (["--workload", HOSTILE], ["--trust-evidence"]):  # the user's word: it goes on (to the bad executor)
        given = cli_here(*args, *stop, *word)
        assert "executor.max_concurrent must be an integer from 1" in _one_line(given)


def test_dry_run_shows_what_needs_the_users_word_and_runs_nothing(cli_here, tmp_path: Path) -> None:
    args = _record(tmp_path, "step-scaling", device="cpu", workload=HOSTILE)
    r = cli_here(*args, "--dry-run")
    assert r.returncode == 0, r.stderr
    assert f"# needs your word (pass it to reproduce yourself, or --trust-evidence): --workload '{HOSTILE}'" in (
        r.stdout
    )


def test_a_corpus_path_from_evidence_runs_only_when_given(cli_here, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    args = _record(tmp_path, "padding", corpus=str(corpus), glob="*.txt")
    stop = _stopped_after_consent(tmp_path)
    line = _one_line(cli_here(*args, *stop))
    assert f"--corpus '{corpus}' (evidence run (sha256:" in line and "; --glob '*.txt' (evidence run" in line
    only_glob = _one_line(cli_here(*args, *stop, "--corpus", str(corpus)))  # one given, one not
    assert "--glob '*.txt'" in only_glob and "--corpus" not in only_glob
    given = cli_here(*args, *stop, "--corpus", str(corpus), "--glob", "*.txt")
    assert "executor.max_concurrent must be an integer from 1" in _one_line(given)


def test_a_checkpoint_folder_named_in_evidence_is_never_used(cli_here, tmp_path: Path) -> None:
    host = tmp_path / "host-folder"
    host.mkdir()  # it exists here too: still never written to
    args = _record(tmp_path, "eval-boundary", device="cpu", checkpoint_dir=str(host))
    r = cli_here(*args, "--dry-run")
    assert r.returncode == 0, r.stderr
    [command] = [ln for ln in r.stdout.splitlines() if ln.startswith("probebook measure ")]
    assert "--checkpoint-dir" not in command and str(host) not in command
    assert f"# checkpoint_dir {host} names a folder of the machine that measured; never used" in r.stdout


@pytest.mark.parametrize(
    ("config", "said"),
    [
        ({"windows": 1_000_000_000}, "--windows 1000000000 (a re-run takes at most 1000)"),
        ({"iters": 10**12}, "--iters 1000000000000 (a re-run takes at most 100000)"),
        (
            {"seq_lens": tuple(range(8, 8 + 100))},
            f"--seq-lens with 100 items (a re-run takes at most {LIST_ITEMS_MOST})",
        ),
        ({"seq_lens": (8, 16, 1 << 30)}, "--seq-lens 1073741824 (a re-run takes at most 1048576)"),
    ],
)
def test_absurd_counts_from_evidence_are_refused_in_one_line(cli_here, tmp_path: Path, config: dict, said: str) -> None:
    args = _record(tmp_path, "step-scaling", device="cpu", **config)
    for more in (["--dry-run"], ["--trust-evidence", "--folder", str(tmp_path / "run")]):
        line = _one_line(cli_here(*args, *more))
        assert "evidence run (sha256:" in line and said in line and "nothing was run" in line
    assert not (tmp_path / "run").exists()


def test_out_of_bounds_names_each_param_past_its_bound_on_literal_params() -> None:
    flags = {"windows": "--windows", "seq_lens": "--seq-lens", "seed": "--seed", "clip": "--clip"}
    assert out_of_bounds({"windows": 1000, "seq_lens": [8, 16], "seed": 2**40, "clip": 1.0}, flags) == []
    assert out_of_bounds({"windows": 1001}, flags) == ["--windows 1001 (a re-run takes at most 1000)"]
    assert out_of_bounds({"windows": -5000}, flags) == ["--windows -5000 (a re-run takes at most 1000)"]
    assert out_of_bounds({"clip": float("inf")}, flags) == ["--clip inf (not a finite number)"]
    assert out_of_bounds({"seq_lens": [8] * 65}, flags) == ["--seq-lens with 65 items (a re-run takes at most 64)"]
    assert out_of_bounds({"windows": 10**9}, {}) == []  # a param of no option today is not run, so not checked
    assert BOUNDS["windows"] == 1000 and BOUNDS["warmup"] == 1000


# -- jobs end with reproduce -------------------------------------------------------------------------------------


def _processes_naming(text: str) -> list[int]:
    """The pids of this machine's processes whose command line holds ``text``."""
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if text.encode() in (proc / "cmdline").read_bytes():
                out.append(int(proc.name))
        except OSError:
            continue
    return out


def _start_long_reproduction(tmp_path: Path) -> tuple[subprocess.Popen[str], Path]:
    """A real reproduce process whose second job (``sweep``, a harness sleeping 1 s a step) is timing, returned once
    that job has journalled a point: its process runs, and watches the runner."""
    archive, folder = tmp_path / "archive", tmp_path / "run"
    shutil.copytree(FIXTURE / "archive", archive)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), str(FIXTURE / "plugins")]),
        "PROBEBOOK_TEST_SLEEP_S": "1.0",
    }
    cmd = [sys.executable, "-m", "probebook", "--archive", str(archive), "reproduce", "sleepy-step"]
    cmd += ["--docs", str(FIXTURE / "docs"), "--folder", str(folder), "--trust-evidence", "--json"]
    # as a foreground command gets Ctrl-C: a shell starts a background job (`.ci/run &`) with SIGINT ignored and
    # the ignoring is inherited, so Python installs no KeyboardInterrupt handler and SIGINT would never arrive
    proc = subprocess.Popen(
        cmd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        reference = folder / "receipts" / "reference.json"
        journals = list((folder / "archive" / "journal").glob("step-scaling-*.jsonl"))
        if reference.exists() and '"state": "ok"' in reference.read_text() and journals:
            return proc, folder
        if proc.poll() is not None:
            pytest.fail(f"reproduce ended early: {proc.returncode} {proc.stderr.read() if proc.stderr else ''}")
        time.sleep(0.2)
    proc.kill()
    pytest.fail("the sweep job never started timing")


@pytest.mark.slow
@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_reproduce_cancels_its_jobs_and_leaves_none_running(tmp_path: Path, how: signal.Signals) -> None:
    proc, folder = _start_long_reproduction(tmp_path)
    assert _processes_naming(str(folder / "jobs" / "sweep"))  # the job runs
    proc.send_signal(how)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "job(s) cancelled and ended" in err and "Traceback" not in err
    receipt = (folder / "receipts" / "sweep.json").read_text()
    assert '"state": "failed"' in receipt and "cancelled: reproduce was stopped" in receipt
    assert _processes_naming(str(folder)) == []  # no controller, no job: gone when reproduce exits


@pytest.mark.slow
def test_a_killed_reproduce_leaves_no_job_running(tmp_path: Path) -> None:
    proc, folder = _start_long_reproduction(tmp_path)
    proc.kill()  # SIGKILL: reproduce cancels nothing; its job watches it and ends itself
    proc.communicate(timeout=60)
    deadline = time.monotonic() + 30
    while _processes_naming(str(folder)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _processes_naming(str(folder)) == []


def test_a_mask_runs_kinds_are_closed_values_taken_from_evidence() -> None:
    # the mask probe checks --kinds against its six kinds (declared choices), so a run's kinds are never an open value
    # that waits for the user's word; --workload still is
    assert set(open_fields("mask")) == {"workload"}
