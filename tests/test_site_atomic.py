"""site/ is always a complete good build: builds SIGKILLed at random points leave the previous site or the new
one, never a mix, and publish refuses anything but a complete build of the current inputs; two concurrent
builds of one project both succeed; publish refuses an unstamped, failed or stale site (real subprocesses)."""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import HANG_S

REPO = Path(__file__).resolve().parent.parent
KILLS = 8
"""Builds killed at random points (a random moment in 0 to 1.2 build times). Each kill costs a build's start and a
publish, about 15 s on the 2-core CI machine: twenty took 325 s of the slow tests' 860."""


def _project(root: Path, text: str = "Version A.") -> Path:
    (root / "docs").mkdir(parents=True, exist_ok=True)
    (root / "docs" / "index.md").write_text(f"# Home\n\n{text}\n")
    (root / "archive").mkdir(exist_ok=True)
    return root


def _argv(root: Path, *command: str, out: str = "site") -> list[str]:
    return [
        sys.executable,
        "-m",
        "probebook",
        "--archive",
        str(root / "archive"),
        *command,
        "--docs",
        str(root / "docs"),
        "--out",
        str(root / out),
        "--config",
        str(REPO / "mkdocs.yml"),
        *(
            ["--build-dir", str(root / "build"), "--published", str(root / "none.json")]
            if command == ("build",)
            else []
        ),
    ]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "SOURCE_DATE_EPOCH": "0"}


def _run(root: Path, *command: str, out: str = "site") -> subprocess.CompletedProcess[str]:
    return subprocess.run(_argv(root, *command, out=out), env=_env(), capture_output=True, text=True, timeout=HANG_S)


def _snapshot(site: Path) -> dict[str, str]:
    return {
        p.relative_to(site).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(site.rglob("*"))
        if p.is_file()
    }


def _publish_ok(root: Path) -> subprocess.CompletedProcess[str]:
    return _run(root, "publish")


@pytest.mark.slow
def test_killed_builds_leave_the_old_site_or_the_new_one(tmp_path: Path) -> None:
    root = _project(tmp_path)
    started = time.monotonic()
    assert _run(root, "build").returncode == 0
    duration = time.monotonic() - started
    good = {"A": _snapshot(root / "site")}
    (root / "docs" / "index.md").write_text("# Home\n\nVersion B.\n")
    assert _run(root, "build", out="reference-b").returncode == 0  # the same inputs give the same bytes
    good["B"] = _snapshot(root / "reference-b")
    assert good["A"] != good["B"]
    rng = random.Random(8)
    outcomes = {"A": 0, "B": 0}
    for i in range(KILLS):
        target = rng.choice("AB")
        (root / "docs" / "index.md").write_text(f"# Home\n\nVersion {target}.\n")
        proc = subprocess.Popen(
            _argv(root, "build"),
            env=_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: the kill reaches the mkdocs child too
        )
        time.sleep(rng.uniform(0, duration * 1.2))
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=HANG_S)
        now = _snapshot(root / "site")
        which = [name for name, snap in good.items() if snap == now]
        assert which, f"kill {i}: site/ is neither the previous build nor the new one"
        outcomes[which[0]] += 1
        published = _publish_ok(root)
        if which[0] == target:
            assert published.returncode == 0, published.stderr
        else:  # the old site, whose inputs are no longer the sources on disk
            assert published.returncode == 2 and published.stderr.count("\n") == 1, published.stderr
            assert "changed since this site was built" in published.stderr
    assert sum(outcomes.values()) == KILLS
    assert _run(root, "build").returncode == 0
    assert not list(tmp_path.glob(".site.probebook-tmp-*"))  # killed builds' leftovers are cleared


@pytest.mark.slow
def test_two_concurrent_builds_both_succeed(tmp_path: Path) -> None:
    root = _project(tmp_path)
    procs = [
        subprocess.Popen(_argv(root, "build"), env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    results = [p.communicate(timeout=HANG_S) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], results
    assert (root / "site" / "index.html").exists()
    assert _publish_ok(root).returncode == 0


# slow: end to end (real builds or probe runs in child processes), 2-7 s of CPU each; .ci/run runs -m slow
@pytest.mark.slow
def test_publish_refuses_unstamped_failed_and_stale_sites(tmp_path: Path) -> None:
    root = _project(tmp_path)
    assert _run(root, "build").returncode == 0
    ledger = root / "site" / "ledger.json"
    stamped = json.loads(ledger.read_text())
    assert stamped["build"]["status"] == "complete" and stamped["build"]["inputs"].startswith("sha256:")
    (root / "docs" / "index.md").write_text("# Home\n\nEdited after the build.\n")
    stale = _publish_ok(root)
    assert stale.returncode == 2 and stale.stderr == (
        f"probebook: error: {ledger}: the sources, evidence, config or render code changed since this site was "
        "built (or publish was given other --docs, --archive or --config than the build); run `probebook build` "
        "again\n"
    )
    (root / "docs" / "index.md").write_text("# Home\n\nVersion A.\n")
    assert _publish_ok(root).returncode == 0  # the same inputs again: the site is current
    unstamped = {k: v for k, v in stamped.items() if k != "build"}
    ledger.write_text(json.dumps(unstamped))
    refused = _publish_ok(root)
    assert refused.returncode == 2 and "no build stamp" in refused.stderr and refused.stderr.count("\n") == 1
    ledger.write_text(json.dumps({**stamped, "build": {"status": "failed", "inputs": stamped["build"]["inputs"]}}))
    refused = _publish_ok(root)
    assert refused.returncode == 2 and "did not complete" in refused.stderr


# slow: end to end (real builds or probe runs in child processes), 2-7 s of CPU each; .ci/run runs -m slow
@pytest.mark.slow
def test_a_failed_build_keeps_the_last_good_site(tmp_path: Path) -> None:
    root = _project(tmp_path)
    assert _run(root, "build").returncode == 0
    before = _snapshot(root / "site")
    (root / "docs" / "index.md").write_text("# Home\n\n[broken](no-such-page.md)\n")  # a strict-mode warning
    failed = _run(root, "build")
    assert failed.returncode == 2 and "mkdocs build --strict failed" in failed.stderr
    assert _snapshot(root / "site") == before
    assert not list(tmp_path.glob(".site.probebook-tmp-*"))
