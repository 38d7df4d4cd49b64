"""How often a record's published intervals contain a re-measurement from another lease, before and after a change.

step-anatomy-250m v6 cites runs measured in one lease; v8 cites the same configurations re-measured in another
lease (its ``_again`` aliases). This copies those re-measured documents into an archive of their own and runs
``probebook reproduce step-anatomy-250m --version 6 --with THAT --partial --json`` with the code of each git
revision given (a worktree each), then counts, among the measured numbers with an interval, those whose interval
contains the re-measured value, and the claims held, flipped and not resolved. Nothing is written to the archive
(``--out`` is a temporary one).

    python bench/replication_check.py 12ffaf4 HEAD --json bench/results/replication-check.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def again_archive(into: Path) -> list[str]:
    """Copy v8's ``_again`` documents into an archive at ``into``; their aliases."""
    front = (REPO / "docs/records/step-anatomy-250m/v8.md").read_text(encoding="utf-8").split("---")[1]
    found = re.findall(r"^\s+(\w+_again):\s*sha256:([0-9a-f]{64})", front, re.M)
    for _alias, digest in found:
        folder = into / "evidence" / "sha256" / digest[:2]
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / "archive/evidence/sha256" / digest[:2] / f"{digest[2:]}.json", folder)
    return [alias for alias, _ in found]


def reproduce(revision: str, again: Path, work: Path) -> dict:
    tree = work / f"tree-{revision}"
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "-q", "--detach", str(tree), revision], check=True)
    try:
        out = subprocess.run(
            [sys.executable, "-m", "probebook", "--archive", str(REPO / "archive"), "reproduce", "step-anatomy-250m",
             "--docs", str(tree / "docs"), "--version", "6", "--with", str(again), "--partial", "--json",
             "--out", str(work / f"out-{revision}")],
            cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)}, capture_output=True, text=True, check=True,
        )  # fmt: skip
        return json.loads(out.stdout)
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)], check=True)


def counts(data: dict, measured: set[str]) -> dict:
    verdicts = Counter(n["verdict"] for n in data["numbers"] if n["key"] in measured)
    with_interval = verdicts["within"] + verdicts["outside"]
    claims = Counter(c["verdict"] for c in data["claims"])
    return {
        "within": verdicts["within"],
        "outside": verdicts["outside"],
        "share_within": verdicts["within"] / with_interval if with_interval else None,
        "claims": dict(claims),
        # which numbers and claims, so a change in the counts can be read number by number
        "outside_numbers": sorted(
            n["key"] for n in data["numbers"] if n["key"] in measured and n["verdict"] == "outside"
        ),
        "flipped_claims": sorted(
            str(c.get("text") or c.get("key")) for c in data["claims"] if c["verdict"] == "flipped"
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("revisions", nargs="+", help="git revisions to compare, e.g. 12ffaf4 HEAD")
    parser.add_argument("--json", type=Path, help="write the counts here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        again_archive(work / "again")
        results = {rev: reproduce(rev, work / "again", work) for rev in args.revisions}
    # measured numbers: the newest revision's own split (older ones did not tell recorded numbers apart)
    newest = results[args.revisions[-1]]
    measured = {n["key"] for n in newest["numbers"] if n.get("basis", "measured") == "measured"}
    table = {rev: counts(data, measured) for rev, data in results.items()}
    for rev, row in table.items():
        share = "n/a" if row["share_within"] is None else f"{row['share_within']:.1%}"
        print(f"{rev}: {row['within']} of {row['within'] + row['outside']} measured numbers within ({share}); "
              f"claims {row['claims']}")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
