"""What ``probebook reproduce`` costs beyond running the same commands by hand, on one record.

Run ``python bench/reproduce.py`` from the repository root for the CPU fixture record (a copy of
``tests/fixtures/reproduce``'s archive), or ``python bench/reproduce.py --record h200-ceilings --out DIR`` on a
GPU for a record of this repository's site (its cited runs read from ``archive/``; the new runs of both arms,
and the reproduction document, stored under ``DIR`` to be imported). It times, one run each, side by side:

- by hand: each command of ``reproduce sleepy-step --dry-run``, run one after another as ``python -m probebook
  measure ...`` (what a person would type, with nothing compared);
- ``reproduce``: the same runs as campaign jobs (submitit's local executor, the frozen source snapshot), the
  record rendered on both id sets, the comparison and its archiving.

On the fixture both use its short sleep (``make_fixtures.SHORT_SLEEP_S``), so the runs themselves take alike.
"""

from __future__ import annotations

import argparse
import json
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


def probebook(*args: str, env: dict[str, str], unstable_ok: bool = False) -> tuple[float, str]:
    """Run ``probebook ARGS``; exit 1 is accepted from a measure run that stored its evidence as unstable."""
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "probebook", *args], env=env, capture_output=True, text=True)
    stored_unstable = unstable_ok and out.returncode == 1 and "stored as unstable" in out.stderr
    if out.returncode != 0 and not stored_unstable:
        raise SystemExit(f"probebook {' '.join(args[:4])} ...: exit {out.returncode}: {out.stderr.strip()[-300:]}")
    return time.perf_counter() - started, out.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", help="a record of this repository's site (default: the CPU fixture record)")
    parser.add_argument("--out", help="with --record: where both arms' new evidence goes (kept, to be imported)")
    args = parser.parse_args()
    if args.record and not args.out:
        parser.error("--record needs --out DIR, where the new evidence is kept")
    # what PYTHONPATH already holds (packages installed to a folder, as on a bare GPU host) stays on it
    path = [str(REPO), str(FIXTURE / "plugins"), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    with tempfile.TemporaryDirectory() as tmp:
        if args.record:
            out = Path(args.out)
            archive, docs, slug = REPO / "archive", REPO / "docs", args.record
            hand, store, folder = out / "by-hand", ["--out", str(out / "reproduce")], out / "run"
        else:
            env["PROBEBOOK_TEST_SLEEP_S"] = SHORT_SLEEP_S
            archive, docs, slug = Path(tmp) / "archive", FIXTURE / "docs", "sleepy-step"
            shutil.copytree(FIXTURE / "archive", archive)
            hand, store, folder = Path(tmp) / "by-hand", [], Path(tmp) / "run"
        record = ["reproduce", slug, "--docs", str(docs)]
        _s, dry = probebook("--archive", str(archive), *record, "--dry-run", env=env)
        commands = [line for line in dry.splitlines() if line.startswith("probebook measure ")]
        by_hand = []
        for command in commands:
            seconds, _out = probebook("--archive", str(hand), *shlex.split(command)[1:], env=env, unstable_ok=True)
            by_hand.append(seconds)
        tool, _out = probebook("--archive", str(archive), *record, "--folder", str(folder), *store, env=env)
    total = sum(by_hand)
    print(f"{len(commands)} runs of the record {slug}, one each")
    print(f"{'by hand (probebook measure, one after another)':<50} {total:7.1f} s")
    print(f"{'probebook reproduce (jobs, render, compare, store)':<50} {tool:7.1f} s")
    print(f"{'overhead':<50} {tool - total:7.1f} s ({tool / total - 1:+.0%})")
    if args.record:
        result = {"record": slug, "runs": len(commands), "by_hand_s": by_hand, "reproduce_s": tool}
        (Path(args.out) / "overhead.json").write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
