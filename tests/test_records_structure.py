"""Records as publications: the headline results box, the records index and home page, and the environment and
reproduce blocks generated from the cited evidence (real mkdocs builds of the fixture records)."""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import fixture_site_paths

from measure.cli import add_probe_commands, declarations
from measure.errors import ProbebookError
from measure.evidence.reruns import migrate
from render.assemble.stages import BuildPaths, build, render_tree
from render.pages import layout, provenance
from render.pages.sources import load

REPO = Path(__file__).resolve().parent.parent
SITE_FIXTURE = REPO / "tests" / "fixtures" / "site"


def _html(paths: BuildPaths, page: str) -> str:
    return (paths.site / f"{page}.html").read_text(encoding="utf-8")


def _article(text: str) -> str:
    return re.search(r"<article.*?</article>", text, re.DOTALL).group(0)  # type: ignore[union-attr]


def _tree_paths(tmp: Path, docs: Path) -> BuildPaths:
    paths: BuildPaths = fixture_site_paths(tmp, docs)
    return paths


def _copy_docs(tmp: Path) -> Path:
    docs = tmp / "docs"
    shutil.copytree(SITE_FIXTURE / "docs", docs)
    return docs


# -- the results box, the records index, the home page ---------------------------------------------


def test_every_record_version_opens_with_its_headline_results_linked_to_evidence(fixture_site: BuildPaths) -> None:
    for page, labels in (
        ("records/step-time/v2", ["Fixed part of the step, fitted from 512 tokens up", "Fastest batch"]),
        ("records/step-time/v1", ["Fixed part of the step", "Cost per token"]),  # archived versions too
    ):
        article = _article(_html(fixture_site, page))
        box = re.search(r'<div class="admonition abstract">.*?</div>', article, re.DOTALL)
        assert box is not None, page
        assert '<p class="admonition-title">Results</p>' in box.group(0)
        for label in labels:
            assert label in box.group(0).replace("&#39;", "'")
        link = r'<a href="\.\./\.\./evidence/[0-9a-f]{64}\.html(?:\?[^"#]*)?#[\w.-]+"'  # ?rows=: its rows
        assert len(re.findall(link, box.group(0))) == len(
            load(SITE_FIXTURE / "docs")
            .pages[[p.rel for p in load(SITE_FIXTURE / "docs").pages].index(page + ".md")]
            .summary
        )
        assert article.index("admonition abstract") < article.index("<h2")  # at the top, before any section


def test_records_index_is_one_row_per_record_title_answer_status_date_and_reproduced(
    fixture_site: BuildPaths,
) -> None:
    article = _article(_html(fixture_site, "records/index"))
    assert '<div class="admonition pb-records">' in article  # the class tables.css lays out as cards on a phone
    head = re.search(r"<thead>.*?</thead>", article, re.DOTALL).group(0)  # type: ignore[union-attr]
    assert list(re.findall(r"<th[^>]*>(.*?)</th>", head)) == ["record", "answer", "status", "date", "reproduced"]
    row = re.search(r'<a href="step-time/v2.html">.*?</tr>', article, re.DOTALL).group(0)  # type: ignore[union-attr]
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.DOTALL)
    assert len(cells) == 4  # after the title's: answer, status, date, reproduced
    assert "ktok/s" not in row  # headline results are on the record's page, not in its one row
    assert cells[1] == "version 2, NVIDIA H200" and cells[2] == "2026-12-01"
    assert cells[3] == "no"  # the fixture archive holds no reproduction (test_reproduction_site)


def test_the_records_index_gives_an_answer_one_line_its_first_verdict() -> None:
    assert layout.first_verdict("Faster by [2 ms](a.md).\nCosts more memory.") == "Faster by [2 ms](a.md). …"
    assert layout.first_verdict("Only one verdict.") == "Only one verdict."
    assert layout.first_verdict("") == ""


def test_home_page_shows_the_latest_headline_results_and_the_machine(fixture_site: BuildPaths) -> None:
    article = _article(_html(fixture_site, "index"))
    latest = article[article.index("Latest results") :]
    assert 'href="records/step-time/v2.html"' in latest and "on NVIDIA H200" in latest
    assert 'href="evidence/f581ac542e3b' in latest and "11.91% (11.78–12.04%)" in latest


def test_a_headline_must_be_a_quantity_and_an_unknown_name_names_the_file_and_entry(tmp_path: Path) -> None:
    docs = _copy_docs(tmp_path)
    v2 = docs / "records" / "step-time" / "v2.md"
    text = v2.read_text()
    v2.write_text(text.replace('value: saving(ablation, "no-optimizer")', "value: ablation"))
    with pytest.raises(ProbebookError, match=r"v2\.md line \d+ \(summary\[2\]\): a headline must be a number"):
        render_tree(_tree_paths(tmp_path, docs))
    v2.write_text(text.replace('value: saving(ablation, "no-optimizer")', "value: nosuch(ablation)"))
    with pytest.raises(ProbebookError, match=r"\(summary\[2\]\): unknown name 'nosuch'"):
        render_tree(_tree_paths(tmp_path, docs))
    v2.write_text(text.replace("label: Cost per token", "label: x").replace("label: Fastest batch's", "label: 12 ms"))
    with pytest.raises(ProbebookError, match="hand-typed"):
        render_tree(_tree_paths(tmp_path, docs))


def test_summary_shape_is_checked_with_file_and_line(tmp_path: Path) -> None:
    docs = _copy_docs(tmp_path)
    v2 = docs / "records" / "step-time" / "v2.md"
    v2.write_text(v2.read_text().replace('value: fit(sweep, tokens="512:").c', "value: '{{ fit(sweep).c }}'"))
    with pytest.raises(ProbebookError, match=r"v2\.md line \d+ \(summary\[0\]\): 'value' is a page expression"):
        load(docs)
    v2.write_text(v2.read_text().replace("summary:", "summary: 3\nold_summary:"))
    with pytest.raises(ProbebookError, match="unknown front matter field 'old_summary'"):
        load(docs)


# -- the environment block -----------------------------------------------------------------------------


def test_environment_block_reads_the_fingerprints_and_says_where_the_evidence_disagrees(
    fixture_site: BuildPaths,
) -> None:
    text = (fixture_site.tree / "records" / "step-time" / "v2.md").read_text()
    env = text[text.index("## Environment") : text.index("## Reproduce")]
    assert "| GPU | NVIDIA H200 |" in env
    # the imported documents carry no GPU count; the measured gemm and ablate ones say 1
    row = next(line for line in env.splitlines() if line.startswith("| GPUs in the machine"))
    assert "not recorded (`batch`, `mem`, `sweep`)" in row
    assert re.search(
        r"\[1\]\(\.\./\.\./evidence/[0-9a-f]{64}\.md#machine-gpu_count \"[^\"]*\"\) \(`ablation`, `ceiling`\)", row
    )
    assert '!!! warning "The cited evidence disagrees"' in env and "GPUs in the machine" in env.split("disagrees")[1]
    clocks = next(line for line in env.splitlines() if line.startswith("| `ceiling`"))
    assert "1980 MHz" in clocks.replace("\u00a0", " ").replace("\u202f", " ")  # the recorded SM clock, a Quantity


def test_environment_block_of_agreeing_evidence_has_no_warning() -> None:
    doc = {
        "probe": "gemm",
        "created_at": "2026-11-29T09:59:06Z",
        "machine": {"gpu": "NVIDIA H200", "torch": "2.11.0", "power_limit_w": 700.0},
        "code": {"probebook": "0.1.0", "measure_source_sha256": "ab" * 32},
        "data": {"clocks": {"sm_mhz_before": 1980, "sm_mhz_after": 1425}},
    }
    docs = {"sha256:" + "1" * 64: doc, "sha256:" + "2" * 64: dict(doc)}
    text = provenance.environment_block("records/x/v1.md", {"a": "sha256:" + "1" * 64, "b": "sha256:" + "2" * 64}, docs)
    assert "disagrees" not in text
    assert "| measuring source (SHA-256 of the measure package) | " + "ab" * 32 + " |" in text
    assert re.search(r"\| power limit \| \[700\u202fW\]\(\.\./\.\./evidence/1{64}\.md#[\w.-]+ ", text)
    assert "[1425\u202fMHz]" in text
    other = {**doc, "machine": {**doc["machine"], "torch": "2.12.0"}}
    docs["sha256:" + "2" * 64] = other
    text = provenance.environment_block("records/x/v1.md", {"a": "sha256:" + "1" * 64, "b": "sha256:" + "2" * 64}, docs)
    assert "| torch | 2.11.0 (`a`); 2.12.0 (`b`) |" in text
    assert "differ in: torch." in text


def test_environment_numbers_are_ledger_rows_keyed_by_alias_where_the_evidence_disagrees() -> None:
    one, two = "sha256:" + "1" * 64, "sha256:" + "2" * 64
    doc = {
        "probe": "gemm",
        "machine": {"gpu": "NVIDIA H200", "gpu_count": 8, "power_limit_w": 700.0, "sm_clock_mhz": 345},
        "data": {"clocks": {"sm_mhz_before": 1980, "sm_mhz_after": 1425}},
    }
    other = {**doc, "machine": {**doc["machine"], "power_limit_w": 600.0}, "data": {}}
    ledger: list[tuple[str, Any]] = []
    text = provenance.environment_block("records/x/v1.md", {"a": one, "b": two}, {one: doc, two: other}, ledger)
    rows = {key: (q.value, q.unit, q.text, q.evidence) for key, q in ledger}
    assert rows == {
        "environment.gpu_count": (8, "", "8", (one,)),
        "environment[a].power_limit_w": (700.0, "W", "700 W", (one,)),
        "environment[b].power_limit_w": (600.0, "W", "600 W", (two,)),
        "environment[a].sm_clock_mhz": (345.0, "MHz", "345 MHz", (one,)),
        "environment[a].sm_mhz_before": (1980.0, "MHz", "1980 MHz", (one,)),
        "environment[a].sm_mhz_after": (1425.0, "MHz", "1425 MHz", (one,)),
        "environment[b].sm_clock_mhz": (345.0, "MHz", "345 MHz", (two,)),
    }
    # each power limit that differs is linked to the document that holds it
    assert "[600\u202fW](../../evidence/" + "2" * 64 + ".md#machine-power_limit_w" in text


# -- the reproduce block -------------------------------------------------------------------------------


def _measure_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="probebook measure", exit_on_error=False, allow_abbrev=False)
    add_probe_commands(parser.add_subparsers(dest="probe"))
    return parser


def test_reproduce_commands_parse_with_the_probes_real_options(fixture_site: BuildPaths) -> None:
    text = (fixture_site.tree / "records" / "step-time" / "v2.md").read_text()
    block = text[text.index("## Reproduce") :]
    commands = [line for line in block.splitlines() if line.startswith("probebook measure ")]
    assert commands == [
        "probebook measure ablate --batch 4 --seq-len 2048",
        "probebook measure gemm --dtype bfloat16 --windows 5",
    ]
    assert "# sweep (sha256:08e78675deb8): imported from: tests/fixtures/site" in block
    assert "# ablation (sha256:f581ac542e3b): measure source hash not recorded (older evidence)" in block
    assert "recorded by ablate version 1; today's probe is version" in block


def test_every_archived_run_gives_a_command_the_real_parser_accepts() -> None:
    from render.evidence.archive import load_evidence

    decl = declarations()
    parser = _measure_parser()
    checked = 0
    for ident, doc in load_evidence(REPO / "archive").docs.items():
        cmd, notes = provenance.command(doc, decl, public=False)  # the page's shows a host folder as <dir>
        if doc["probe"] not in decl:
            assert cmd is None and notes, ident
            continue
        assert cmd is not None, ident
        args = parser.parse_args(shlex.split(cmd)[2:])
        assert args.probe == doc["probe"]
        params, _notes = migrate(doc["probe"], doc["params"])  # as today's probe takes them (measure.evidence.reruns)
        for name, spec in decl[doc["probe"]]["options"].items():  # each recorded option comes back as recorded
            recorded = params.get("device_requested" if name == "device" else name, params.get(name))
            if name in params and recorded is not None and spec["kind"] != "flag":
                got = getattr(args, name)
                assert (list(got) if isinstance(got, tuple) else got) == recorded, (ident, name)
        checked += 1
    assert checked > 100


def test_reproduce_command_from_literal_params() -> None:
    decl = declarations()
    doc = {
        "probe": "step-scaling",
        "probe_version": decl["step-scaling"]["version"],
        "origin": {"kind": "measured"},
        "params": {
            "preset": "250m",
            "compile": True,
            "seq_lens": [512, 1024, 2048],
            "device": "cuda:0",
            "device_requested": "cuda",
            "sliding_window": None,
            "n_params": 251943360,  # not an option: never printed
        },
    }
    cmd, notes = provenance.command(doc, decl)
    assert cmd == "probebook measure step-scaling --preset 250m --compile --device cuda --seq-lens 512,1024,2048"
    assert notes == []
    assert _measure_parser().parse_args(shlex.split(cmd)[2:]).seq_lens == (512, 1024, 2048)
    cmd, notes = provenance.command({**doc, "probe": "campaign"}, decl)
    assert cmd is None and "probebook campaign" in notes[0]
    odd = {**doc, "params": {"preset": "250m; rm -rf /", "compile": False}}
    assert provenance.command(odd, decl)[0] == "probebook measure step-scaling --preset '250m; rm -rf /'"


def test_a_build_without_the_probes_options_says_so(tmp_path: Path) -> None:
    paths = _tree_paths(tmp_path, SITE_FIXTURE / "docs")
    paths = BuildPaths(**{**paths.__dict__, "declarations": None})
    build(paths, site=False)
    text = (paths.tree / "records" / "step-time" / "v2.md").read_text()
    assert "This build was not given the probes' options" in text and "probebook measure" not in text


# -- the footer ------------------------------------------------------------------------------------------


def test_footer_names_build_date_source_commit_and_ledger_hash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import hashlib

    from render.pages import colophon

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1764547200")  # 2025-12-01 00:00 UTC
    docs = _copy_docs(tmp_path)  # outside any git checkout
    paths = _tree_paths(tmp_path, docs)
    build(paths)
    digest = hashlib.sha256((paths.tree / "ledger.json").read_bytes()).hexdigest()[:12]
    expected = f"Built 2025-12-01 from sources {colophon.UNKNOWN_COMMIT} · ledger sha256:{digest}"
    for page in ("index", "records/step-time/v2", "changes"):
        assert expected in _html(paths, page), page
    assert (
        colophon.source_commit(REPO / "docs")[:12]
        == __import__("subprocess")
        .run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True)
        .stdout.strip()[:12]
    )
    assert colophon.text(0, "abc123def456", b"") == (
        "Built 1970-01-01 from source commit abc123def456 · ledger sha256:e3b0c44298fc"
    )


# -- the methodology page ----------------------------------------------------------------------------------


def test_methodology_page_prints_the_codes_constants(tmp_path: Path) -> None:
    from measure import constants
    from render.pages.methodology import CONSTANTS, constant

    assert constant("cv_threshold").text == "5%" and constant("cv_threshold").value == constants.CV_THRESHOLD
    assert constant("windows").text == "9" and constant("extra_windows").value == constants.EXTRA_WINDOWS
    assert constant("bootstrap").text == "4000" and constant("ci_level").text == "95%"
    with pytest.raises(ProbebookError, match=r"constant\('nope'\): no such constant"):
        constant("nope")
    docs = _copy_docs(tmp_path)
    shutil.copy(REPO / "docs" / "methodology.md", docs / "methodology.md")
    tree, _evidence, _src, _run = render_tree(_tree_paths(tmp_path, docs))
    text = (tree.files["methodology.md"]).decode()
    rows = {r["key"]: r for r in tree.ledger if r["page"] == "methodology.md" and r["key"].startswith("constant(")}
    used = {k.removeprefix("constant(").removesuffix(")") for k in rows}
    spread = {r["key"] for r in tree.ledger if r["page"] == "methodology.md" and r["key"].startswith("session_")}
    assert spread == {"session_spread(step)", "session_spread(kernel)"}  # the archive's own, from evidence
    assert used == set(CONSTANTS)  # every constant the page may print, printed; none typed by hand
    assert all(r["evidence"] == [] and r["derivation"].startswith("the code's constant ") for r in rows.values())
    assert f"above\n  {constant('cv_threshold').text}, {constant('extra_windows').text} more windows" in text


# -- this repository's records ------------------------------------------------------------------------------


def test_every_record_here_has_three_to_five_headlines_and_current_ones_the_six_sections() -> None:
    src = load(REPO / "docs")
    assert src.records
    for record in src.records:
        for page in record.versions:
            assert 3 <= len(page.summary) <= 5, page.rel
        headings = [line for line in record.current.body.splitlines() if line.startswith("## ")]
        assert headings[:2] == ["## Question", "## Method"], record.current.rel
        assert "## Results" in headings, record.current.rel
        assert headings[-3:] == ["## Limits", "## Not measured", "## Follow-ups"], record.current.rel
