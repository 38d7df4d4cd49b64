"""The prose lint: which hand-typed measurements it catches, what it leaves alone, and where it says they are."""

from __future__ import annotations

from pathlib import Path

import pytest

from render.pages import lint
from render.pages.sources import parse_page


def _texts(text: str) -> list[tuple[int, int, str]]:
    return [(h.line, h.column, h.text) for h in lint.find(text, "page.md")]


@pytest.mark.parametrize(
    "prose,found",
    [
        ("The step takes 12.3 ms here.", "12.3 ms"),
        ("It is 45% of the ceiling.", "45%"),
        ("About 12.5 % of it.", "12.5 %"),
        ("We saw 1,200 tok/s.", "1,200 tok/s"),
        ("Peak was 3GiB.", "3GiB"),
        ("It ran 2x faster.", "2x"),
        ("It took 3 seconds.", "3 seconds"),
        ("A run of 40 GPU-hours.", "40 GPU-hours"),
        ("At 700 W and 1980 MHz.", "700 W"),
        ("A ratio of 0.82 overall.", "0.82"),
        ("Reached 650 TFLOP/s.", "650 TFLOP/s"),
    ],
)
def test_finds_hand_typed_measurements(prose: str, found: str) -> None:
    assert [t for _, _, t in _texts(prose)][:1] == [found]


@pytest.mark.parametrize(
    "prose",
    [
        "The 90m preset has 20 layers and runs on an H200 in bf16 with fp16 fallbacks.",
        "Version v2 supersedes v1, dated 2026-12-01.",
        'The fixed part is {{ fit(sweep, tokens="512:").c }} and {{ fit(sweep).share(4096) }}.',
        "{% set note = 'x' %}{# a comment with 12.5 ms #}",
        "Inline `12.3 ms` code and ``a `12%` b`` too.",
        "A [link](../records/a/v1.2.md) and [ref][r].\n\n[r]: https://example.org/12.5%",
        "See https://example.org/results/1.5x and <https://example.org/2.5>.",
        "An entity &#49;&#46;5 is not typed as a number.",
        "8 GPUs, 3 runs, 250M parameters, 512 tokens.",
    ],
)
def test_leaves_counts_names_code_and_templates_alone(prose: str) -> None:
    assert _texts(prose) == []


def test_fenced_code_is_skipped_and_lines_and_columns_are_exact() -> None:
    text = "intro\n```python\nx = 12.5  # ms\n```\n~~~\n3 ms\n~~~\nafter 7.5 ms and 10%\n"
    assert _texts(text) == [(8, 7, "7.5 ms"), (8, 18, "10%")]


def test_jinja_spanning_lines_is_skipped_and_the_line_offset_applies() -> None:
    text = "{{ fit(sweep,\n  tokens='512:') }} then 3.5 s\n"
    assert [(h.line, h.column, h.text) for h in lint.find(text, "p.md", first_line=10)] == [(11, 26, "3.5 s")]


def test_is_measurement() -> None:
    assert lint.is_measurement("12.3 ms")
    assert lint.is_measurement("about 40%")
    assert not lint.is_measurement("sweep v2")


def test_page_title_errata_and_body_are_linted_with_file_lines(tmp_path: Path) -> None:
    path = tmp_path / "records" / "a" / "v1.md"
    text = (
        "---\ntitle: Step is 12.5 ms\nversion: 1\ndate: 2026-11-02\nerrata:\n"
        "  - date: 2026-11-03\n    text: It was 10% slower\n---\nBody line.\nA 3 s step.\n"
    )
    page = parse_page(path, "records/a/v1.md", "record", text)
    hits = lint.lint_page(page)
    assert [(h.line, h.text) for h in hits] == [(2, "12.5 ms"), (5, "10%"), (10, "3 s")]
    with pytest.raises(lint.LintError) as err:
        lint.check([page])
    message = str(err.value)
    assert message.startswith(f"{path} line 2 column ")
    assert "hand-typed measurement '12.5 ms' in prose" in message
    assert message.endswith("(2 more: `probebook lint` lists them)")
    assert "\n" not in message


def test_clean_pages_pass(tmp_path: Path) -> None:
    page = parse_page(tmp_path / "index.md", "index.md", "home", "# Home\n\nAll numbers are {{ templated }}.\n")
    lint.check([page])
    assert lint.lint_page(page) == []
