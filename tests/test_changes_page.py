"""The Changes page: only numbers whose shown text moved, largest first, named by their derivation; the rest counted."""

from __future__ import annotations

from typing import Any

from render.numbers import ledger
from render.pages import changes

EV = "sha256:" + "e" * 64


def _row(
    key: str, value: float | None, text: str, derivation: str = "", page: str = "records/a/v1.md"
) -> dict[str, Any]:
    return {
        "page": page,
        "key": key,
        "value": value,
        "unit": "s",
        "text": text,
        "uncertainty": None,
        "evidence": [EV],
        "derivation": derivation or f"median of {key}",
    }


def test_classify_separates_moves_from_display_changes_and_jitter() -> None:
    assert changes.classify("10 ms", "12 ms", 0.2) == changes.MOVED
    assert changes.classify("n/a", "12 ms", None) == changes.MOVED
    assert changes.classify("0.0120 s", "12.0 ms", 0.0) == changes.DISPLAY
    assert changes.classify("12 ms", "12 ms", 9.16e-15) == changes.JITTER
    assert changes.classify("12 ms", "12 ms", 0.0) == changes.JITTER  # only the derivation's wording changed


def test_by_size_puts_the_largest_change_first_and_unsized_last() -> None:
    rels = [0.01, None, -0.5, 0.2]
    assert sorted(rels, key=changes.by_size) == [-0.5, 0.2, 0.01, None]


def test_number_label_is_the_derivation_not_the_key() -> None:
    row = {"derivation": "GEMM square-8192 (8192×8192×8192): 2·m·n·k / median of 5 windows; evidence x"}
    assert (
        changes.number_label(row, "gemm_ceiling(g)")
        == "GEMM square-8192 (8192×8192×8192): 2·m·n·k / median of 5 windows"
    )
    assert changes.number_label({"derivation": "a / b"}, "a / b") == "a / b"
    assert changes.number_label(None, "k") == "k"
    assert changes.number_label({"derivation": "x" * 200}, "k") == "x" * 119 + "…"


def test_publish_headings_are_distinct() -> None:
    seeded = {"date": "2026-11-29", "ledger_sha256": "8" * 64, "numbers": 83, "added": 83, "changed": [],
              "source": "Seeded from git: commit 52300cb372ec accepted this ledger"}  # fmt: skip
    plain = {
        "date": "2026-11-29",
        "ledger_sha256": "a1af5841" + "0" * 56,
        "numbers": 1086,
        "added": 3,
        "changed": [{}],
    }  # a change with no texts: not a move
    assert (
        changes.publish_heading(1, seeded)
        == "Publish 1: 2026-11-29, commit 52300cb372ec, 83 numbers (0 moved, 83 added)"
    )
    assert changes.publish_heading(2, plain) == (
        "Publish 2: 2026-11-29, ledger a1af58410000, 1,086 numbers (0 moved, 3 added)"
    )


def test_the_page_lists_real_moves_by_size_and_counts_display_changes_and_jitter() -> None:
    old = [
        _row("fit(s).c", 0.010, "10.0 ms", "step-scaling fit intercept c"),
        _row("gemm(g)", 600e12, "600 TFLOP/s", "GEMM square-8192: 2·m·n·k / median of 5 windows"),
        _row("jitter(a)", 0.5, "500 ms"),
        _row("noise(n)", 0.5, "500 ms"),
        _row("shown(b)", 0.012, "0.012 s"),
        _row("same(c)", 1.0, "1.00 s"),
    ]
    new = [
        _row("fit(s).c", 0.011, "11.0 ms", "step-scaling fit intercept c"),
        _row("gemm(g)", 640.7e12, "640.7 TFLOP/s", "GEMM square-8192: 2·m·n·k / median of 5 windows"),
        _row("jitter(a)", 0.5 + 1e-6, "500 ms"),  # moved 2e-6, below the figures shown: counted, not listed
        _row("noise(n)", 0.5 + 4.6e-13, "500 ms"),  # below ledger.NOISE_REL: not a change at all
        _row("shown(b)", 0.012, "12.0 ms"),
        _row("same(c)", 1.0, "1.00 s"),
    ]
    d = ledger.diff(old, new)
    text = changes.page_markdown(d, True, {"records/a/v1.md"}, {"records/a/v1.md": "Record A"}, [], [], None, new)
    section = text[text.index("### Changed") : text.index("## History")]
    lines = [line for line in section.splitlines() if line.startswith("| [")]
    assert len(lines) == 2  # the fit's 10% move and the GEMM's 6.8%; not the jitter, not the display-only change
    assert lines[0].startswith(
        "| [step-scaling fit intercept c](records/a/v1.md) | [Record A](records/a/v1.md) | 10.0 ms |"
    )
    assert f"| [11.0 ms](evidence/{'e' * 64}.md) | +10% |" in lines[0]
    assert lines[1].startswith("| [GEMM square-8192: 2·m·n·k / median of 5 windows](records/a/v1.md) |")
    assert "+6.78%" in lines[1]
    assert "jitter(a)" not in section and "shown(b)" not in section and "<code>" not in section
    assert "noise(n)" not in section
    assert "Not listed: 1 display-only (the shown text changed, the value did not) and 1 whose shown text" in section
    assert "0 added, 0 removed, 4 changed, 2 unchanged." in text  # the noise row among the unchanged


def test_history_lists_moves_only_under_distinct_headings() -> None:
    moves = [
        {"page": "records/a/v1.md", "key": "k1", "old": "1 s", "new": "1 s", "relative": 9.16e-15},
        {"page": "records/a/v1.md", "key": "k2", "old": "1 s", "new": "3 s", "relative": 2.0},
        {"page": "records/a/v1.md", "key": "k3", "old": "1 s", "new": "1.5 s", "relative": 0.5},
        {"page": "records/a/v1.md", "key": "k4", "old": "1000 ms", "new": "1 s", "relative": 0.0},
    ]
    past = [
        {"date": "2026-11-29", "ledger_sha256": "a" * 64, "numbers": 4, "added": 4, "changed": []},
        {"date": "2026-11-29", "ledger_sha256": "b" * 64, "numbers": 4, "added": 0, "changed": moves},
    ]
    current = [_row("k2", 3.0, "3 s", "the second step time")]
    text = changes.page_markdown(ledger.diff([], []), True, {"records/a/v1.md"}, {}, [], past, None, current)
    headings = [line for line in text.splitlines() if line.startswith("### Publish")]
    assert headings == [
        "### Publish 2: 2026-11-29, ledger bbbbbbbbbbbb, 4 numbers (2 moved, 0 added)",
        "### Publish 1: 2026-11-29, ledger aaaaaaaaaaaa, 4 numbers (0 moved, 4 added)",
    ]
    rows = [line for line in text.splitlines() if line.startswith(("| [", "| k"))]
    assert [r.split(" | ")[0] for r in rows] == ["| [the second step time](records/a/v1.md)", "| [k3](records/a/v1.md)"]
    assert "Not listed: 1 display-only" in text and "and 1 whose shown text did not change" in text
