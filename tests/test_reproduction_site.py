"""The site's display of ``reproduction`` documents (issue 24): the derivations on literal rows, the record's
*Reproductions* section, the comparison page's order, the Records index status, the evidence page, the ledger
rows, hostile text kept inert in the built HTML, and an incremental build that picks up a new reproduction."""

from __future__ import annotations

import dataclasses
import html
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from conftest import HANG_S, REPO, shared_folder

from measure.errors import ProbebookError
from measure.evidence.store import Store
from render.assemble.stages import BuildPaths, build
from render.derive import reproduction as derive
from render.errors import BuildError
from render.pages import reproductions

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "reproduction"
REPRO = "sha256:f91efc03dd8546d9d2cd3ca3b7007bdd240e91a4972d4fbf15faa332a9083468"
CROSS = "sha256:f9025875610eaff5be5fe82ac87679c170572ef53694be46bbf6b07f2b683902"
RECORD = "records/gemm-ceiling/v1"
IDS = {  # what the reproductions cite (make_archive.py prints them)
    "run": "sha256:ca711c1c5178c30270b510aad25358fc0989d2feb2b104a2b11b4115a765ce1d",
    "rerun": "sha256:d2275e55df42c75610a944400175c8e805108d21ba565f9ea3ed1e597b6c09ae",
}


def _generator() -> Any:
    """The fixture's generator, under a name of its own (tests/fixtures/site has a ``make_archive`` module too)."""
    spec = importlib.util.spec_from_file_location("reproduction_make_archive", FIXTURE / "make_archive.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_archive = _generator()


def _paths(root: Path, archive: Path = FIXTURE / "archive") -> BuildPaths:
    from measure.cli import declarations

    return BuildPaths(
        docs=FIXTURE / "docs",
        archive=archive,
        build=root / "build",
        site=root / "site",
        config=REPO / "mkdocs.yml",
        published=root / "no-published-ledger.json",
        declarations=declarations(),
    )


def built_site(tmp_path_factory: pytest.TempPathFactory) -> BuildPaths:
    """The reproduction fixture site, built once per session with the real pipeline and mkdocs; read it only
    (``test_reproduction_browser`` reads it too)."""

    def make(folder: Path) -> None:
        build(_paths(folder))

    return _paths(shared_folder(tmp_path_factory, "reproduction-site", make))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> BuildPaths:
    return built_site(tmp_path_factory)


def _text(page: str) -> str:
    """The visible text of a page's content area, one space between words."""
    body = page.split('<article class="md-content__inner', 1)[-1].split("</article>", 1)[0]
    plain = html.unescape(re.sub(r"<[^>]+>", " ", body.split(">", 1)[-1]))
    words = " ".join(plain.replace("\u00a0", " ").replace("\u202f", " ").replace(" ¶", "").split())
    return re.sub(r" ([:.,;])", r"\1", words)  # "link : text" as it reads


def _number(i: int, verdict: str, old: float | None, new: float | None) -> derive.NumberRow:
    return derive.NumberRow(i, f"k{i}", "", old, new, None, None, "s", "", "", verdict)


# -- the derivations, on literal rows -------------------------------------------------------------------------


def test_relative_change_is_new_minus_old_over_the_size_of_old() -> None:
    assert derive.relative_change(2.0, 2.5) == 0.25
    assert derive.relative_change(-4.0, -3.0) == 0.25  # |old|: a smaller negative is a rise
    assert derive.relative_change(0.0, 1.0) is None
    assert derive.relative_change(None, 1.0) is None
    assert derive.relative_change(1.0, None) is None


def test_numbers_sort_by_how_far_they_moved_with_missing_and_not_comparable_last() -> None:
    rows = (
        _number(0, "within", 1.0, 1.01),
        _number(1, "outside", 1.0, 0.5),
        _number(2, "not comparable", 1.0, 9.0),
        _number(3, "missing", 1.0, None),
        _number(4, "within", 1.0, 1.2),
        _number(5, "within", 0.0, 1.0),
    )
    assert [r.index for r in derive.moved_order(rows)] == [1, 4, 0, 2, 3, 5]


def test_verdict_counts_count_every_verdict_and_the_summary_is_checked_against_them() -> None:
    doc = Store(FIXTURE / "archive").get(REPRO)
    repro = derive.parse(REPRO, doc)
    assert derive.verdict_counts(repro.numbers, repro.claims) == {
        "numbers": 5,
        "claims": 2,
        "measured": 5,  # a document older than data.numbers[].basis: every number counted measured
        "within": 2,
        "outside": 1,
        "not_comparable": 1,
        "missing": 1,
        "recorded": 0,
        "recorded_same": 0,
        "held": 1,
        "flipped": 1,
        "claims_not_resolved": 0,
        "different": 0,  # a document older than data.numbers[].outcome: no three-way outcome to count
        "equivalent": 0,
        "not_resolved": 0,
    }
    assert derive.summary_mismatch(repro) == []
    doc["data"]["summary"]["within"] = 4
    assert derive.summary_mismatch(derive.parse(REPRO, doc)) == ["within"]


def test_recorded_numbers_are_counted_apart_from_the_measured_ones_and_their_verdicts() -> None:
    rows = (
        _number(0, "within", 1.0, 1.01),
        _number(1, "outside", 1.0, 0.5),
        dataclasses.replace(_number(2, "within", 4.0, 4.0), basis="recorded"),  # a param restated: not a reproduction
        dataclasses.replace(_number(3, "outside", 4.0, 8.0), basis="recorded"),
        dataclasses.replace(_number(4, "missing", 4.0, None), basis="recorded"),
    )
    counts = derive.verdict_counts(rows, ())
    assert {k: counts[k] for k in ("numbers", "measured", "within", "outside", "missing")} == {
        "numbers": 5, "measured": 2, "within": 1, "outside": 1, "missing": 0,
    }  # fmt: skip
    assert (counts["recorded"], counts["recorded_same"]) == (3, 1)


def test_three_way_outcomes_are_read_counted_and_shown_with_the_interval_judged_by() -> None:
    from render.pages import sources

    doc = Store(FIXTURE / "archive").get(REPRO)
    outcomes = [
        {"outcome": "resolved", "judged_by": "across sessions", "effect": -0.044, "effect_low": -0.08,
         "effect_high": -0.01, "delta": 0.02},
        {"outcome": "equivalent", "judged_by": "this run's windows", "effect": 0.04, "effect_low": 0.01,
         "effect_high": 0.045, "delta": 0.05},
        {"outcome": "not resolved", "judged_by": "across sessions", "delta": 0.05},
        {"outcome": "not resolved", "judged_by": "this run's windows"},
        {"judged_by": "across sessions"},  # missing: no outcome
    ]  # fmt: skip
    doc["data"]["numbers"] = [{**n, **o} for n, o in zip(doc["data"]["numbers"], outcomes, strict=True)]
    doc["data"]["claims"][0]["verdict"] = "not resolved"  # was flipped: within noise, by today's rule
    repro = derive.parse(REPRO, doc)
    first = repro.numbers[0]
    assert (first.outcome, first.judged_by, first.effect_interval, first.delta) == (
        "resolved", "across sessions", (-0.08, -0.01), 0.02,
    )  # fmt: skip
    counts = derive.verdict_counts(repro.numbers, repro.claims)
    named = ("different", "equivalent", "not_resolved", "claims_not_resolved", "flipped", "held")
    assert {k: counts[k] for k in named} == {
        "different": 1, "equivalent": 1, "not_resolved": 2, "claims_not_resolved": 1, "flipped": 0, "held": 1,
    }  # fmt: skip
    text, _rows = reproductions.comparison(repro, {REPRO: doc}, sources.load(FIXTURE / "docs"))
    assert "| three ways | judged by |" in text
    lines = {line.split(" | ")[0]: line for line in text.splitlines() if line.startswith("| ")}
    assert any(
        line.endswith("| outside | resolved different (band ±2%) | across sessions |") for line in lines.values()
    )
    assert any(line.endswith("| equivalent (band ±5%) | this run's windows |") for line in lines.values())
    assert any(line.endswith("| missing | – | across sessions |") for line in lines.values())
    assert "1 resolved different" in _plainer(text) and "1 not resolved. Three ways" in _plainer(text)
    doc["data"]["numbers"][0]["judged_by"] = "a guess"
    with pytest.raises(ProbebookError, match=r"data.numbers\[0\].judged_by must be one of across sessions"):
        derive.parse(REPRO, doc)


def _plainer(markdown: str) -> str:
    """Markdown with its links reduced to their text."""
    return re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", markdown)


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("mode", "reproduced", "data.mode must be one of reproduction, cross-machine"),
        ("version", "6", "data.version must be a whole number"),
        ("original", {"run": "sha256:abc"}, "data.original.run must be a full evidence id"),
        ("numbers", [{"key": "k", "old": "1.0", "verdict": "within"}], "data.numbers[0].old must be a finite number"),
        (
            "numbers",
            [{"key": "k", "verdict": "within", "basis": "guessed"}],
            "data.numbers[0].basis must be one of measured, recorded",
        ),
    ],
)
def test_a_malformed_reproduction_is_refused_in_one_line_naming_its_field(field: str, value: Any, said: str) -> None:
    doc = Store(FIXTURE / "archive").get(REPRO)
    doc["data"][field] = value
    with pytest.raises(ProbebookError) as err:
        derive.parse(REPRO, doc)
    assert str(err.value).startswith(f"evidence {REPRO}: reproduction field {said}")
    assert "\n" not in str(err.value)


# -- the fixture ----------------------------------------------------------------------------------------------


def test_fixture_archive_regenerates_byte_for_byte(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(FIXTURE / "make_archive.py"), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )
    assert out.returncode == 0, out.stderr
    assert f"repro: {REPRO}" in out.stdout and f"cross: {CROSS}" in out.stdout

    def tree(root: Path) -> dict[str, bytes]:
        return {str(p.relative_to(root)): p.read_bytes() for p in sorted((root / "archive").rglob("*")) if p.is_file()}

    assert tree(tmp_path) == tree(FIXTURE)


# -- the built site -------------------------------------------------------------------------------------------


def test_the_record_shows_each_reproduction_with_its_counts_and_flipped_claims(site: BuildPaths) -> None:
    text = _text((site.site / f"{RECORD}.html").read_text(encoding="utf-8"))
    section = text.split("Reproductions", 1)[1].split("Environment", 1)[0]
    said = "Reproduction of 2026-12-02 On 1 × NVIDIA H200: 2 of 5 measured numbers within their uncertainty, "
    assert said + "1 outside it, 1 not comparable, 1 missing; 0 of 0 recorded numbers " in section
    assert "(params, constants, readings of the machine) the same; 1 of 2 claims flipped" in section
    # the one measured on another GPU model is a comparison across machines, never a reproduction
    assert "Comparison across machines of 2026-12-02 On 2 × NVIDIA H100 80GB HBM3: 0 of 1 measured numbers" in section
    assert "Flipped claims: **bold** <img src=x onerror=alert(1)> [link](javascript:alert(2)) `code` | a pipe" in (
        section
    )
    assert section.count("The full comparison table") == 2
    html = (site.site / f"{RECORD}.html").read_text(encoding="utf-8")
    for ident in (REPRO, CROSS):
        assert f'href="../../evidence/comparison/{ident[7:]}/"' in html or f"comparison/{ident[7:]}" in html


def test_the_comparison_page_sorts_by_how_far_each_number_moved(site: BuildPaths) -> None:
    page = site.site / "evidence" / "comparison" / f"{REPRO[7:]}.html"
    text = _text(page.read_text(encoding="utf-8"))
    # a number is named by its label alone: its key is on the evidence page it links to, one click away (issue 42)
    labels = ["GEMM ceiling ", "Share of the step ", '<script>alert("label")</script> ', "Spread of the windows ",
              "A number the new run lacks "]  # fmt: skip
    found = [text.index(label) for label in labels]
    assert found == sorted(found)  # −4.4%, +4.0%, +0.5%; then not comparable (+400%) and missing
    assert "698 TFLOP/s (684–712) 667 TFLOP/s (654–680) −4.4% outside" in text
    assert "3.00 s n/a n/a missing" in text
    assert "The rule A number is within when the intervals of both runs overlap" in text
    assert "Original evidence run: sha256:ca711c1c5178 New evidence run: sha256:d2275e55df42" in text
    cross = _text((site.site / "evidence" / "comparison" / f"{CROSS[7:]}.html").read_text(encoding="utf-8"))
    assert cross.startswith("Comparison across machines of GEMM ceiling (fixture), version 1, 2026-12-02")
    assert "Not a reproduction" in cross


def test_the_records_index_shows_each_records_newest_reproduction(site: BuildPaths) -> None:
    text = _text((site.site / "records" / "index.html").read_text(encoding="utf-8"))
    assert "yes, 2026-12-02: 2 of 5 numbers within, 1 of 2 claims flipped" in text


def test_the_evidence_page_reads_as_data_and_links_the_comparison(site: BuildPaths) -> None:
    html = (site.site / "evidence" / f"{REPRO[7:]}.html").read_text(encoding="utf-8")
    text = _text(html)
    assert "What this reproduction found A reproduction of record gemm-ceiling version 1" in text
    assert "Other data" not in text
    assert 'id="reproduction-counts"' in html and 'id="number-4"' in html
    # each count's own row, which the record's count links land on (issue 28, item 3)
    assert re.search(r'<tr>\s*<td><span id="count-within"></span>within</td>\s*<td[^>]*>2</td>', html)
    assert f"comparison/{REPRO[7:]}" in html and "#original-evidence" in html and "#new-evidence" in html


def test_every_count_and_change_is_a_ledger_row_linked_to_the_reproduction(site: BuildPaths) -> None:
    rows = json.loads((site.site / "ledger.json").read_bytes())["rows"]
    record = {r["key"]: r for r in rows if r["page"] == f"{RECORD}.md" and r["key"].startswith("reproduction ")}
    short = REPRO[:19]
    assert record[f"reproduction {short}.within"]["value"] == 2
    assert record[f"reproduction {short}.flipped"]["evidence"] == [REPRO]
    assert record[f"reproduction {short}.numbers"]["uncertainty"] is None  # a count is exact
    compared = {r["key"]: r for r in rows if r["page"] == reproductions.comparison_page(REPRO)}
    assert compared["numbers[0].change"]["value"] == pytest.approx((6.67e14 - 6.98e14) / 6.98e14, rel=1e-12)
    assert compared["numbers[0].change"]["text"] == "−4.4%"
    assert compared["numbers[4].change"]["value"] is None


def test_every_number_link_lands_on_an_element_of_its_evidence_page(site: BuildPaths) -> None:
    pages = [f"{RECORD}.html", "records/index.html", f"evidence/comparison/{REPRO[7:]}.html"]
    seen = 0
    for rel in pages:
        source = site.site / rel
        for target, fragment in re.findall(r'href="([^"#]*[0-9a-f]{64}\.html)#([^"]+)"', source.read_text()):
            landed = (source.parent / target).resolve()
            assert re.search(rf'\bid="{re.escape(fragment)}"', landed.read_text(encoding="utf-8")), (rel, fragment)
            seen += 1
    assert seen >= 30  # the counts on three pages and three numbers per compared row


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self._script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, dict(attrs)))
        self._script = tag == "script"

    def handle_data(self, data: str) -> None:
        if self._script:
            self.scripts.append(data)

    def handle_endtag(self, tag: str) -> None:
        self._script = False


def test_hostile_labels_claims_and_commands_reach_no_page_as_markup(site: BuildPaths) -> None:
    pages = [site.site / f"{RECORD}.html", site.site / "records" / "index.html"]
    pages += [site.site / "evidence" / f"{REPRO[7:]}.html", site.site / "evidence" / "comparison" / f"{REPRO[7:]}.html"]
    for page in pages:
        parsed = _Elements()
        parsed.feed(page.read_text(encoding="utf-8"))
        assert not [t for t, _ in parsed.found if t == "img"], page
        assert not [a for _, a in parsed.found if any(k.startswith("on") for k in a)], page
        assert not [a for t, a in parsed.found if t == "a" and "javascript" in str(a.get("href"))], page
        assert not [s for s in parsed.scripts if "alert" in s], page
    comparison = _text(pages[3].read_text(encoding="utf-8"))
    assert '<script>alert("label")</script>' in comparison  # shown as text, escaped
    assert "**bold** <img src=x onerror=alert(1)>" in comparison
    assert "echo '<script>alert(\"label\")</script>'" in comparison


def test_a_malformed_reproduction_fails_the_build_in_one_line(tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    shutil.copytree(FIXTURE / "archive", archive)
    bad = make_archive.later(IDS)
    bad = dataclasses.replace(bad, data={**bad.data, "mode": "<b>again</b>"})
    ident = Store(archive).put(bad)
    with pytest.raises(BuildError) as err:
        build(_paths(tmp_path, archive), site=False)
    assert str(err.value).startswith(f"evidence {ident}: reproduction field data.mode must be one of")
    assert not (tmp_path / "build" / "docs").exists()  # refused before the tree is written


@pytest.mark.slow
def test_a_new_reproduction_rebuilds_its_record_page_incrementally(tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    shutil.copytree(FIXTURE / "archive", archive)
    inc = _paths(tmp_path / "inc", archive)
    build(inc)
    page = inc.site / f"{RECORD}.html"
    before = page.stat().st_mtime_ns
    assert "2026-12-03" not in page.read_text(encoding="utf-8")
    added = Store(archive).put(make_archive.later(IDS))
    build(inc)
    assert page.stat().st_mtime_ns != before
    text = _text(page.read_text(encoding="utf-8"))
    assert "Reproduction of 2026-12-03 On 1 × NVIDIA H200: 1 of 1 measured numbers within their uncertainty" in text
    index = _text((inc.site / "records" / "index.html").read_text(encoding="utf-8"))
    assert "yes, 2026-12-03: 1 of 1 numbers within, 0 of 0 claims flipped" in index  # the compact index's cell
    assert (inc.site / "evidence" / "comparison" / f"{added[7:]}.html").is_file()
    # the same inputs built afresh in their own folders give the same pages
    full = _paths(tmp_path / "full", archive)
    build(full, full=True)
    for rel in (f"{RECORD}.html", "records/index.html", f"evidence/comparison/{added[7:]}.html"):
        assert (inc.site / rel).read_bytes() == (full.site / rel).read_bytes(), rel
