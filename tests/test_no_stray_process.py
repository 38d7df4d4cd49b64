"""No process outlives the build or the verify that forked it: a real `probebook build` (forked page workers) and a
real `archive verify` (forked copies), each killed by SIGKILL and by SIGTERM mid-run, leave no process behind and
nothing holding the output pipe of the test that started them (issue 25, 11; issue 29). Linux only: it reads /proc."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import REPO, bench_module

from measure.lifetime import die_with_parent

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc (Linux)")

GONE_S = 60
"""How long the killed process's children get to disappear. They die at once (a signal from the kernel); the
bound only keeps a regression from hanging the suite, and is generous so that a loaded machine cannot trip it."""


def _parent_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # gone between the listing and the read
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])  # the field after the state; comm may hold spaces and ')'


def _descendants(pid: int) -> set[int]:
    """Every live process under ``pid`` (children, their children, ...)."""
    parents = {int(p.name): _parent_of(int(p.name)) for p in Path("/proc").iterdir() if p.name.isdigit()}
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has ended; only its parent's wait is missing


def _start_and_kill(argv: list[str], env: dict[str, str], sig: signal.Signals, forks: int) -> tuple[set[int], bool]:
    """Start ``argv`` with its output on pipes, wait until it has forked ``forks`` processes, send ``sig`` to it
    alone (not its group), and return (its processes still alive after ``GONE_S``, whether its pipes closed)."""
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen: set[int] = set()
    try:
        while len(seen) < forks and proc.poll() is None:
            seen |= _descendants(proc.pid)
            time.sleep(0.02)
        assert proc.poll() is None, f"{argv[3:]} ended before it forked {forks} processes: nothing was killed"
        seen |= _descendants(proc.pid)
        proc.send_signal(sig)
        # the pipes close only once every process holding them has ended: read them to the end in a thread
        drained = threading.Thread(target=proc.communicate, daemon=True)
        drained.start()
        drained.join(GONE_S)
        deadline = time.monotonic() + GONE_S
        while any(_alive(p) for p in seen) and time.monotonic() < deadline:
            time.sleep(0.05)
        return {p for p in seen if _alive(p)}, not drained.is_alive()
    finally:
        for pid in seen | {proc.pid}:  # a failing run must not leave its strays to the rest of the suite
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait()


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "SOURCE_DATE_EPOCH": "0", **extra}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A synthetic archive of 120 documents (bench/render.py's, through the real Store.put) and a record."""
    root = tmp_path_factory.mktemp("killed")
    bench_render = bench_module("render")
    ids = bench_render.make_archive(root / "archive", 120)
    bench_render.make_docs(root / "docs", ids, 1)
    return root


# slow: a real `probebook build --full` killed twice mid-run (about 4 s of CPU): a killed build, end to end (README);
# .ci/run runs it with -m slow
@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_killed_build_leaves_no_worker_and_no_holder_of_its_output(project: Path, sig: signal.Signals) -> None:
    root = project / sig.name
    argv = [sys.executable, "-m", "probebook", "--archive", str(project / "archive"), "build", "--full"]
    argv += ["--docs", str(project / "docs"), "--out", str(root / "site"), "--build-dir", str(root / "build")]
    argv += ["--config", str(REPO / "mkdocs.yml"), "--published", str(root / "none.json")]
    # two page workers forked; the engine's process (started ahead) is a third child
    left, closed = _start_and_kill(argv, _env(PROBEBOOK_JOBS="2"), sig, forks=3)
    assert left == set(), f"{sig.name}: processes of the killed build still run: {sorted(left)}"
    assert closed, f"{sig.name}: something still holds the killed build's stdout or stderr"


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_killed_verify_leaves_no_forked_copy(project: Path, sig: signal.Signals) -> None:
    # every share of the work sleeps instead of hashing (in the copies and in the parent), so the kill lands while
    # the copies run; check() forks them as `archive verify` does
    script = (
        "import sys, time\n"
        "from measure.evidence import archive_check\n"
        "from measure.evidence.store import Store\n"
        "archive_check.check_shards = lambda *share: time.sleep(300)\n"
        "archive_check.check(Store(sys.argv[1]), workers=3)\n"
    )
    argv = [sys.executable, "-c", script, str(project / "archive")]
    left, closed = _start_and_kill(argv, _env(), sig, forks=2)
    assert left == set(), f"{sig.name}: verify's forked copies still run: {sorted(left)}"
    assert closed, f"{sig.name}: something still holds the killed verify's stdout or stderr"


def test_a_process_whose_parent_is_already_gone_ends_at_once() -> None:
    # the parent may die between the fork and the prctl: the child must notice (its parent pid is no longer it)
    pid = os.fork()
    if pid == 0:
        try:
            die_with_parent(os.getppid() + 1_000_000)  # a pid that is not this child's parent
        finally:
            os._exit(0)  # reached only if it failed to end the process
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 1
