"""What ``probebook reproduce`` costs beyond running the same commands by hand, on the CPU fixture record.

Run ``python bench/reproduce.py`` from the repository root. On a copy of ``tests/fixtures/reproduce``'s archive
it times, one run each, side by side:

- by hand: each command of ``reproduce sleepy-step --dry-run``, run one after another as ``python -m probebook
  measure ...`` (what a person would type, with nothing compared);
- ``reproduce``: the same runs as campaign jobs (submitit's local executor, the frozen source snapshot), the
  record rendered on both id sets, the comparison and its archiving.

Both use the fixture's short sleep (``make_fixtures.SHORT_SLEEP_S``), so the runs themselves take alike.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "reproduce"
sys.path.insert(0, str(FIXTURE))
from make_fixtures import SHORT_SLEEP_S  # noqa: E402


def probebook(*args: str, env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "probebook", *args], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"probebook {' '.join(args[:4])} ...: exit {out.returncode}: {out.stderr.strip()[-300:]}")
    return time.perf_counter() - started, out.stdout


def main() -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), str(FIXTURE / "plugins")]),
        "PROBEBOOK_TEST_SLEEP_S": SHORT_SLEEP_S,
    }
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "archive"
        shutil.copytree(FIXTURE / "archive", archive)
        record = ["reproduce", "sleepy-step", "--docs", str(FIXTURE / "docs")]
        _s, dry = probebook("--archive", str(archive), *record, "--dry-run", env=env)
        commands = [line for line in dry.splitlines() if line.startswith("probebook measure ")]
        by_hand = []
        for command in commands:
            seconds, _out = probebook("--archive", str(Path(tmp) / "by-hand"), *shlex.split(command)[1:], env=env)
            by_hand.append(seconds)
        tool, _out = probebook("--archive", str(archive), *record, "--folder", str(Path(tmp) / "run"), env=env)
    total = sum(by_hand)
    print(f"{len(commands)} runs of the CPU fixture record sleepy-step, one each")
    print(f"{'by hand (probebook measure, one after another)':<50} {total:7.1f} s")
    print(f"{'probebook reproduce (jobs, render, compare, store)':<50} {tool:7.1f} s")
    print(f"{'overhead':<50} {tool - total:7.1f} s ({tool / total - 1:+.0%})")


if __name__ == "__main__":
    main()
