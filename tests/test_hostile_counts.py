"""The hostile-input suite's counts per class are kept in one table, ``tests/hostile_counts.csv`` (issue 25's closing
note reports it): this checks the table names exactly the classes the suite's files hold, each with its number of
collected cases, so a class added, removed or grown without the table fails here."""

from __future__ import annotations

import collections
import csv
import subprocess
import sys
from pathlib import Path

from conftest import REPO

TABLE = Path(__file__).with_name("hostile_counts.csv")
SUITE = ["test_hostile_archive.py", "test_hostile_bounds.py", "test_hostile_charts.py", "test_hostile_inputs.py",
         "test_hostile_pages.py", "test_hostile_paths.py", "test_hostile_publish.py", "test_hostile_specs.py",
         "test_hostile_tree.py", "test_whole_page.py"]  # fmt: skip


def collected() -> dict[tuple[str, str], int]:
    """Cases per (file, class) as pytest collects them; ``-`` for a file's module-level tests."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", "-m", "",
         *(f"tests/{name}" for name in SUITE)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    for line in proc.stdout.splitlines():
        parts = line.split("::")
        if len(parts) >= 2 and parts[0].startswith("tests/"):
            counts[(parts[0].removeprefix("tests/"), parts[1] if len(parts) == 3 else "-")] += 1
    return dict(counts)


def test_the_table_counts_every_class_of_the_suite() -> None:
    with TABLE.open(newline="", encoding="utf-8") as f:
        table = {(row["file"], row["class"]): int(row["cases"]) for row in csv.DictReader(f)}
    found = collected()
    assert {f for f, _ in found} == set(SUITE)
    assert table == found
    assert sum(table.values()) == sum(found.values()) > 100
