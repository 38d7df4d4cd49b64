"""Records that answer first (issue 28, items 1, 6 and 8): the Answer built from checked claims and refused when its
direction is not resolved, the required Follow-ups and Not measured sections, one record order, each version's
``changes``, and the small wording fixes, on literal inputs, real sources and the built fixture site."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import SITE_FIXTURE, fixture_site_paths

from measure.errors import ProbebookError
from render.assemble.stages import BuildPaths, render_tree
from render.derive.reading import counted
from render.numbers import directions, legend
from render.numbers.quantity import Comparison, Quantity
from render.pages import answers, benchfiles, layout, notices
from render.pages.sandbox import is_input
from render.pages.sources import SourceError, load
from render.site.sanitize import searchable

REPO = Path(__file__).resolve().parent.parent
V2 = SITE_FIXTURE / "docs" / "records" / "step-time" / "v2.md"


def _q(value: float, interval: tuple[float, float] | None = None, key: str = "a") -> Quantity:
    return Quantity(value, "", fmt=".1%", uncertainty=interval, key=key)


# -- the direction check, on literal numbers -------------------------------------------------------------------------


def test_a_difference_whose_interval_includes_zero_does_not_resolve_a_direction() -> None:
    assert directions.unresolved(Comparison.of(">", _q(0.05, (-0.01, 0.11)), 0)) is not None
    assert "not resolved" in directions.unresolved(Comparison.of(">", _q(0.05, (-0.01, 0.11)), 0))  # type: ignore[operator]
    # a saving whose interval excludes zero but whose size is within the practical band (5%) is not a direction
    assert "band" in directions.unresolved(Comparison.of(">", _q(0.05, (0.02, 0.11)), 0))  # type: ignore[operator]
    assert directions.unresolved(Comparison.of(">", _q(0.08, (0.06, 0.11)), 0)) is None
    # both sides with intervals: the difference's interval (half-widths in quadrature), not their overlap:
    # 0.30 − 0.20 = 0.10, low end 0.10 − hypot(0.05, 0.06) = 0.022 > 0, and 0.10 is beyond the band
    a, b = _q(0.30, (0.25, 0.35), "a"), _q(0.20, (0.15, 0.26), "b")
    assert directions.unresolved(Comparison.of(">", a, b)) is None
    assert directions.unresolved(Comparison.of(">", a, _q(0.20, (0.10, 0.30), "b"))) is not None  # 0.10 − 0.112 < 0
    assert directions.unresolved(Comparison.of("<", b, a)) is None
    assert "equivalent" in directions.unresolved(
        Comparison.of(">", _q(0.31, (0.30, 0.32)), _q(0.30, (0.29, 0.31), "b"))
    )  # type: ignore[operator]
    # no interval on either side: the values decide (an agreement error against its stated limit)
    assert directions.unresolved(Comparison.of("<", _q(0.01), _q(0.02, key="b"))) is None


def test_the_words_that_state_a_direction_are_found_outside_placeholders() -> None:
    assert directions.verdict_direction("Skipping the optimizer saves time.") == "saves"
    assert directions.verdict_direction("bf16 autocast fails the tolerance") == "fails"
    assert directions.verdict_direction("The variants compute the same loss within the tolerance.") is None
    assert answers.plain('It takes {{ value(a, "x.faster") }} of the step.') == "It takes … of the step."
    assert directions.verdict_direction(answers.plain('It takes {{ value(a, "x.faster") }}.')) is None


# -- the Answer in a real build of the fixture site ------------------------------------------------------------------


def _article(paths: BuildPaths, page: str) -> str:
    text = (paths.site / f"{page}.html").read_text(encoding="utf-8")
    return re.search(r"<article.*?</article>", text, re.DOTALL).group(0)  # type: ignore[union-attr]


def test_a_current_record_opens_with_its_answer_and_status_before_anything_else(fixture_site: BuildPaths) -> None:
    article = _article(fixture_site, "records/step-time/v2")
    after_title = article[article.index("</h1>") + len("</h1>") :].lstrip()
    assert after_title.startswith('<div class="admonition info answer">'), after_title[:200]
    box = re.search(r'<div class="admonition info answer">.*?</div>', article, re.DOTALL).group(0)  # type: ignore[union-attr]
    assert '<p class="admonition-title">Answer</p>' in box
    assert "<strong>Status:</strong> current · version 2, 2026-12-01 · measured" in box
    assert "is below the first batch out of memory" in box and 'href="../../evidence/' in box
    assert article.index("admonition info") < article.index("admonition abstract") < article.index("<h2")
    for page in ("records/index", "index"):  # the answer is shown on the index and the home page too
        assert "is below the first batch out of memory" in _article(fixture_site, page), page
    index = _article(fixture_site, "records/index")
    assert re.search(r'<a href="\.\./evidence/[0-9a-f]{64}\.html#[\w.-]+"[^>]*>[^<]*ms', index)  # links rebased


def _docs_with(tmp: Path, old: str, new: str) -> Path:
    docs = tmp / "docs"
    shutil.copytree(SITE_FIXTURE / "docs", docs)
    page = docs / "records" / "step-time" / "v2.md"
    text = page.read_text(encoding="utf-8")
    assert old in text
    page.write_text(text.replace(old, new), encoding="utf-8")
    return docs


HOLDS = "    holds: 'batch_summary(batch).fastest_batch < batch_summary(batch).first_oom'"


@pytest.mark.parametrize(
    ("holds", "message"),
    [
        (  # true by value, but the saving's interval reaches below the number it is said to exceed
            '    holds: \'paired(ablation, "no-optimizer").saving > paired(ablation, "no-optimizer").low\'',
            "says 'below': paired(ablation, no-optimizer).saving",
        ),
        ("    holds: 'batch_summary(batch).fastest_batch > batch_summary(batch).first_oom'", "is false"),
    ],
)
def test_an_answer_the_evidence_does_not_support_is_refused_in_one_line_naming_the_file(
    tmp_path: Path, holds: str, message: str
) -> None:
    docs = _docs_with(tmp_path, HOLDS, holds)
    with pytest.raises(ProbebookError) as err:
        render_tree(fixture_site_paths(tmp_path, docs))
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith(f"{docs / 'records' / 'step-time' / 'v2.md'} line ") and "(answer[0])" in text
    assert message in text


def test_a_superseded_version_keeps_an_unresolved_verdict_marked_not_refused(tmp_path: Path) -> None:
    unresolved = '    holds: \'paired(ablation, "no-optimizer").saving > paired(ablation, "no-optimizer").low\''
    docs = _docs_with(tmp_path, HOLDS, unresolved)
    v2 = (docs / "records" / "step-time" / "v2.md").read_text(encoding="utf-8")
    later = v2.replace(unresolved, HOLDS).replace("version: 2\n", "version: 3\n", 1)
    (docs / "records" / "step-time" / "v3.md").write_text(later, encoding="utf-8")
    paths = fixture_site_paths(tmp_path, docs)
    render_tree(paths)  # v2 is superseded by v3: its words stay, marked
    page = (paths.tree / "records" / "step-time" / "v2.md").read_text(encoding="utf-8")
    assert page.count(legend.sign_markdown(legend.UNRESOLVED)) == 1  # a sign, its words in the page's legend
    assert f"**§** {legend.UNRESOLVED.name}: " in page
    assert "§" not in (paths.tree / "records" / "step-time" / "v3.md").read_text(encoding="utf-8")
    # the mark's interval level is a ledger row of the page that shows it (issue 23), and of no other
    rows = json.loads((paths.tree / "ledger.json").read_text(encoding="utf-8"))["rows"]
    level = [(r["page"], r["text"], r["value"]) for r in rows if r["key"] == "constant(ci_level)"]
    assert level == [("records/step-time/v2.md", "95%", 0.95)]


# -- what a record must say ------------------------------------------------------------------------------------------


RECORD = """---
title: T
version: {version}
date: {date}
{extra}evidence:
  sweep: sha256:08e78675deb8
summary:
  - label: Fixed part
    value: fit(sweep).c
---
## Question

What?
{body}
"""
ANSWER = "answer:\n  - text: It holds.\n    holds: fit(sweep).c > 0\n"
SECTIONS = "\n## Not measured\n\n- one thing\n\n## Follow-ups\n\n- another\n"


def _write(docs: Path, slug: str, version: int, date: str, extra: str = ANSWER, body: str = SECTIONS) -> Path:
    path = docs / "records" / slug / f"v{version}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(RECORD.format(version=version, date=date, extra=extra, body=body), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("extra", "body", "message"),
    [
        ("", SECTIONS, "a current record needs a front matter field 'answer'"),
        (ANSWER, "\n## Follow-ups\n\n- x\n", "a current record needs a '## Not measured' section"),
        (ANSWER, "\n## Not measured\n\nProse.\n\n## Follow-ups\n\n- x\n", "must be a list"),
        (ANSWER, "\n## Not measured\n\n- x\n", "a current record needs a '## Follow-ups' section"),
        ("answer:\n  - text: It holds.\n", SECTIONS, "needs exactly the fields 'text' (the sentence) and 'holds'"),
        ("answer: []\n", SECTIONS, "field 'answer' must list 1 to 2 verdicts"),
    ],
)
def test_a_current_record_needs_its_answer_follow_ups_and_an_itemised_not_measured(
    tmp_path: Path, extra: str, body: str, message: str
) -> None:
    path = _write(tmp_path, "r", 1, "2026-12-01", extra, body)
    with pytest.raises(SourceError) as err:
        load(tmp_path)
    assert str(err.value).startswith(str(path)) and message in str(err.value) and "\n" not in str(err.value)


def test_superseded_versions_are_exempt_but_every_later_version_says_what_it_changed(tmp_path: Path) -> None:
    _write(tmp_path, "r", 1, "2026-11-01", "", "")  # no answer, no sections: superseded, kept as published
    v2 = _write(tmp_path, "r", 2, "2026-12-01")
    with pytest.raises(SourceError) as err:
        load(tmp_path)
    assert str(err.value) == (
        f"{v2}: version 2 needs a front matter field 'changes': one line saying what it changed against the "
        "version before"
    )
    _write(tmp_path, "r", 2, "2026-12-01", "changes: Re-measured on a second card.\n" + ANSWER)
    record = load(tmp_path).records[0]
    assert record.current.changes == "Re-measured on a second card." and record.versions[0].changes is None


def test_the_versions_list_and_the_archived_banner_say_what_changed(fixture_site: BuildPaths) -> None:
    v1 = _article(fixture_site, "records/step-time/v1")
    assert re.search(
        r'Archived reference\. <a href="v2\.html">Read the current results →</a> Superseded by version 2 '
        r"\(2026-12-01\)\. What it changed: Re-measures the step on the fixture preset",
        v1,
    )
    v2 = _article(fixture_site, "records/step-time/v2")
    versions = v2[v2.index('id="versions"') :]
    assert "2026-12-01: Re-measures the step on the fixture preset" in versions
    assert "2026-11-02: first version: Where a training step" in versions


def test_one_order_newest_first_for_the_nav_the_records_index_and_the_home_page(tmp_path: Path) -> None:
    dates = {"alpha": "2026-11-01", "beta": "2026-12-02", "gamma": "2026-11-20", "delta": "2026-12-02"}
    for slug, date in dates.items():
        _write(tmp_path, slug, 1, date)
    src = load(tmp_path)
    assert [r.slug for r in src.records] == ["alpha", "beta", "delta", "gamma"]  # sources stay by slug
    order = [r.slug for r in layout.ordered(src.records)]
    assert order == ["beta", "delta", "gamma", "alpha"]  # newest first; a tie by slug
    records_nav = next(e["Records"] for e in layout.nav(src) if "Records" in e)
    assert [next(iter(i.values())).split("/")[1] for i in records_nav[1:]] == order
    index = layout.records_index(src)
    assert re.findall(r"\]\((\w+)/v1\.md\)", index) == order
    fake = {f"records/{s}/v1.md": [("x", Quantity(1.0, "s", key="x"))] for s in order}
    home = layout.latest_results(src, fake, {})
    assert re.findall(r"\]\(records/(\w+)/v1\.md\)", home) == order


def test_every_current_record_in_docs_answers_and_every_later_version_says_what_it_changed() -> None:
    src = load(REPO / "docs")  # load() refuses a record that does not; this names what it holds
    for record in src.records:
        assert record.current.answer, record.slug
        for page in record.versions[1:]:
            assert page.changes, page.rel


# -- small things (issue 28, item 8) ---------------------------------------------------------------------------------


def test_counts_read_in_proper_plurals() -> None:
    assert counted(2, "GPU") == "2 GPUs" and counted(1, "GPU") == "1 GPU" and counted(8.0, "GPU") == "8 GPUs"


def test_an_interrupted_runs_reason_loses_its_stray_colon() -> None:
    assert notices.stop_reason("KeyboardInterrupt:") == "KeyboardInterrupt"
    assert notices.stop_reason("RuntimeError: CUDA out of memory.") == "RuntimeError: CUDA out of memory"
    assert notices.stop_reason(None) == "stopped early"


def test_a_runs_inputs_take_no_partial_mark() -> None:
    assert is_input(Quantity(1024.0, "", derivation="evidence field params.seq_len"))
    assert not is_input(Quantity(0.1, "s", derivation="evidence field data.summary.step_s"))


def test_no_record_repeats_hours_for_one_card_or_uses_tracker_words() -> None:
    for page in load(REPO / "docs").pages:
        assert "| GPU-hours |" not in page.body, page.rel
        assert not re.search(r"\bthe issue'?s?\b", page.body, re.IGNORECASE), page.rel
        method = re.search(r"^## Method\n\n(.+?)\n\n", page.body, re.MULTILINE | re.DOTALL)
        question = re.search(r"^## Question\n\n(.+?)\n\n", page.body, re.MULTILINE | re.DOTALL)
        if method and question:  # a Method opens with what was done, not with the Question again
            first = lambda text: " ".join(text.split()[:4]).lower()  # noqa: E731
            assert first(method.group(1)) != first(question.group(1)), page.rel
            assert not method.group(1).lower().startswith(("what ", "how much ", "how ")), page.rel


def test_no_claim_opens_a_paragraph_of_its_own_in_lower_case() -> None:
    """A checked sentence that continues the one before it stays in its paragraph (a blank line before it made
    "the window costs the kernels more ..." a paragraph of its own, starting in lower case)."""
    opening = re.compile(r"(?:\A|\n\n)\{\{ claim\([^\n]*, \"([^\"]+)\"\) \}\}")
    for page in load(REPO / "docs").pages:
        for m in opening.finditer(page.body):
            assert not m.group(1)[0].islower() or m.group(1).startswith("bf16"), (page.rel, m.group(1))


def test_bench_paths_link_to_the_benchmarks_page_which_shows_the_file(tmp_path: Path) -> None:
    (tmp_path / "bench" / "results").mkdir(parents=True)
    (tmp_path / "bench" / "ddp.py").write_text("print('a ``` fence')\n", encoding="utf-8")
    (tmp_path / "bench" / "results" / "run.json").write_bytes(b'{"x": 1}')
    outside = tmp_path / "secret.txt"
    outside.write_text("host file", encoding="utf-8")
    (tmp_path / "bench" / "leak.txt").symlink_to(outside)
    _write(
        tmp_path / "docs",
        "r",
        1,
        "2026-12-01",
        body="\nSee `bench/ddp.py`, `bench/results/run.json`, "
        "`bench/leak.txt`, `bench/gone.py` and `bench/../secret.txt`.\n" + SECTIONS,
    )
    src = load(tmp_path / "docs")
    files = benchfiles.found(src)
    assert list(files) == ["bench/ddp.py", "bench/results/run.json"]  # no link, no missing file, no way out
    text = benchfiles.link(src.pages[0].body, "records/r/v1.md", files)
    assert "[`bench/ddp.py`](../../bench.md#benchddppy)" in text
    assert "[`bench/results/run.json`](../../bench.md#benchresultsrunjson)" in text
    assert "`bench/leak.txt`," in text and "[`bench/leak.txt`]" not in text and "[`bench/gone.py`]" not in text
    page = benchfiles.page(files, "0123abcd")
    assert "## bench/ddp.py" in page and "````text\nprint('a ``` fence')\n````" in page  # a fence it cannot close
    assert "8 bytes, SHA-256 `" in page and "host file" not in page


def test_evidence_pages_data_sections_leave_the_search_index_but_their_ids_stay(fixture_site: BuildPaths) -> None:
    import json

    index = json.loads((fixture_site.site / "search" / "search_index.json").read_text(encoding="utf-8"))
    locations = [d["location"] for d in index["docs"]]
    evidence = [loc for loc in locations if loc.startswith("evidence/") and re.match(r"evidence/[0-9a-f]{64}", loc)]
    assert evidence and all("#" not in loc for loc in evidence)
    assert any(loc.startswith("records/step-time/v2.html#") for loc in locations)  # records keep their sections
    assert not searchable({"location": "evidence/" + "a" * 64 + ".html#raw-samples-1"})
    assert searchable({"location": "evidence/" + "a" * 64 + ".html"}) and searchable({"location": "changes.html#x"})
