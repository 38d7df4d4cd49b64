"""The README's exit table, walked: every status it lists is ``measure.errors.EXIT``'s, and a real command ends
with each one (0 done, 1 a check that did not hold, 2 bad input, 3 a campaign's budget, 69 a missing package,
70 a bug, 130 SIGTERM), its stderr lines all prefixed ``probebook:``; ``probebook --version``."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import HANG_S, REPO, run_cli

from measure.errors import EXIT

ROW = re.compile(r"^\| `(\d+)` \| (.+) \|$")


def readme_table() -> dict[int, str]:
    """The README's *Exit status* table: status -> meaning."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("### Exit status", 1)[1].split("\n#", 1)[0]
    return {int(m.group(1)): m.group(2) for line in section.splitlines() if (m := ROW.match(line))}


def prefixed(stderr: str) -> None:
    """Every line the command wrote to stderr starts as the README promises."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines and all(line.startswith("probebook: ") for line in lines), stderr


def test_the_table_is_the_code_s():
    assert sorted(readme_table()) == sorted(EXIT.values())


def test_version_and_done_exit_0():
    out = run_cli("--version")
    assert out.returncode == 0 and re.fullmatch(r"probebook \S+\n", out.stdout), out


def test_a_finding_exits_1(tmp_path):
    (tmp_path / "evidence").mkdir()
    (tmp_path / "evidence" / "stray.txt").write_text("x")
    out = run_cli("--archive", str(tmp_path), "archive", "verify")
    assert out.returncode == 1
    prefixed(out.stderr)


def test_bad_input_exits_2(tmp_path):
    out = run_cli("--archive", str(tmp_path), "archive", "show", "sha256:not-hex")
    assert out.returncode == 2
    prefixed(out.stderr)
    assert len(out.stderr.splitlines()) == 1


def _campaign(tmp_path: Path) -> Path:
    spec = tmp_path / "spec.json"  # JSON is YAML
    spec.write_text(
        json.dumps(
            {
                "campaign": "exit-table",
                "probe": "batch-sweep",
                "config": {"device": "cpu", "warmup": 1, "windows": 2, "iters": 1},
                "grid": {"preset": ["tiny"], "context": [32]},
                "walk": {"start_batch": 1, "max_tokens": 64},
                "executor": {"max_concurrent": 1, "point_timeout_s": 240, "grace_s": 60},
            }
        )
    )
    folder = tmp_path / "campaign"
    assert run_cli("campaign", "plan", str(spec), "--output", str(folder)).returncode == 0
    return folder


def test_a_spent_budget_exits_3(tmp_path):
    pytest.importorskip("submitit")
    out = run_cli("campaign", "run", str(_campaign(tmp_path)), "--budget-s", "0")
    assert out.returncode == 3, out.stderr
    prefixed(out.stderr)
    assert "--resume" in out.stderr


def test_a_missing_package_exits_69(tmp_path):
    # a stand-in for pyarrow that is not there, whatever this machine has installed
    fake = tmp_path / "hide" / "pyarrow"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'pyarrow'\", name='pyarrow')\n")
    corpus = tmp_path / "corpus.parquet"
    corpus.write_bytes(b"")
    out = run_cli(
        "--archive", str(tmp_path / "archive"), "measure", "padding", "--corpus", str(corpus),
        env={"PYTHONPATH": f"{fake.parent}:{REPO}"},
    )  # fmt: skip
    assert out.returncode == 69, out.stderr
    prefixed(out.stderr)
    assert "'pyarrow'" in out.stderr and "pip install pyarrow" in out.stderr
    assert not (tmp_path / "archive" / "evidence").exists()


def test_a_bug_exits_70():
    # no input makes probebook fail so; the one handler every command goes through, in its own process (its log
    # handlers keep the stream they were first made with)
    code = "import sys; from measure.errors import run_action; sys.exit(run_action(lambda: 1 / 0, 'probebook'))"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env={"PYTHONPATH": str(REPO)}, capture_output=True,
                         text=True, timeout=HANG_S)  # fmt: skip
    assert out.returncode == 70
    assert "Traceback" in out.stderr and "ZeroDivisionError" in out.stderr
    assert out.stderr.strip().splitlines()[-1].startswith("probebook: internal error")


def catches_sigterm(pid: int) -> bool:
    """Whether process ``pid`` has a handler for SIGTERM (Linux: the caught-signals mask in /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)))
    return False


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads a process's signal handlers from /proc")
def test_sigterm_exits_130(tmp_path):
    pytest.importorskip("submitit")
    folder = _campaign(tmp_path)
    # `status --watch` refreshes until the curves end: this campaign never runs, so only a signal ends it
    proc = subprocess.Popen(
        [sys.executable, "-m", "probebook", "campaign", "status", str(folder), "--watch"],
        cwd=REPO,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while proc.poll() is None and not catches_sigterm(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)  # until its handler is set (off a terminal, --watch prints only at its end)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=HANG_S)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "probebook: interrupted"


@pytest.mark.slow
def test_sigterm_stops_a_probe_with_its_evidence_stored_and_130(tmp_path):
    pytest.importorskip("torch")
    archive = tmp_path / "archive"
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "probebook", "--archive", str(archive), "measure", "step-scaling", "--device", "cpu",
            "--preset", "tiny", "--seq-lens", "32,64,96,128,192,256", "--warmup", "1", "--windows", "20",
            "--iters", "5",
        ],
        cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        for line in proc.stderr:  # the first measured point: the probe is inside its runner
            if "median" in line:
                break
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=HANG_S)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert out.strip().startswith("sha256:")  # what was measured is stored, as partial
    assert "interrupted: step-scaling evidence stored as partial" in err


def test_a_sigterm_inside_an_import_is_sent_again_after_it_not_raised_in_it(tmp_path, monkeypatch):
    """An exception raised while an extension initialises can crash the process (orjson's import did, exit -11), so
    the handler tells an import's frames from the rest and waits them out."""
    import importlib
    import inspect

    from measure.errors import importing

    assert not importing(inspect.currentframe())
    (tmp_path / "probe_import_frames.py").write_text(
        "import inspect\nfrom measure.errors import importing\nSEEN = importing(inspect.currentframe())\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert importlib.import_module("probe_import_frames").SEEN is True
