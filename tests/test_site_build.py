"""Real `mkdocs build --strict` of the fixture site: ledger rows, supersession banner, erratum, evidence pages, the
Changes page and a diff after a changed derivation, lint and missing-evidence refusals, the XSS corpus, a
byte-identical rebuild, and a render that never imports torch."""

from __future__ import annotations

import calendar
import datetime
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HANG_S

from measure.cli import declarations
from measure.errors import ProbebookError
from render.assemble.stages import BuildPaths, build
from render.errors import BuildError
from render.numbers.ledger import read as read_ledger
from render.numbers.links import title_text

REPO = Path(__file__).resolve().parent.parent
SITE_FIXTURE = REPO / "tests" / "fixtures" / "site"
ARCHIVE = SITE_FIXTURE / "archive"
V1_SWEEP = "1c7ccb3872425db2920e21502e3e4b21d4403902bc5f4d787b830cdeee1999fa"
V2_SWEEP = "08e78675deb8fd5dd2f23023a7b01a3f923ee546a24aba8d2990210900bc4c1d"
XSS_EVIDENCE = "0cc0ffa9a68717aa328f1922b08f14d5f3b6c410166f5fe1f23a07e0f25611eb"


def _paths(root: Path, docs: Path = SITE_FIXTURE / "docs", published: Path | None = None) -> BuildPaths:
    return BuildPaths(
        docs=docs,
        archive=ARCHIVE,
        build=root / "build",
        site=root / "site",
        config=REPO / "mkdocs.yml",
        published=published or root / "no-published-ledger.json",
        declarations=declarations(),  # as conftest.fixture_site builds it, so the two builds compare
    )


def _copy_docs(tmp: Path) -> Path:
    docs = tmp / "docs"
    shutil.copytree(SITE_FIXTURE / "docs", docs)
    return docs


@pytest.fixture
def built(fixture_site: BuildPaths) -> BuildPaths:
    """The fixture site, built once per session (``conftest.fixture_site``); tests only read it."""
    return fixture_site


def _html(paths: BuildPaths, page: str) -> str:
    path = paths.site / f"{page}.html"  # use_directory_urls: false
    return (path if path.exists() else paths.site / page / "index.html").read_text(encoding="utf-8")


def _article(text: str) -> str:
    return re.search(r"<article.*?</article>", text, re.DOTALL).group(0)  # type: ignore[union-attr]


class Elements(html.parser.HTMLParser):
    """Every start tag with its attributes, and the text of every <script>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self.text: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data
        else:
            self.text.append(data)


def _elements(text: str) -> Elements:
    parser = Elements()
    parser.feed(text)
    return parser


# -- the ledger ------------------------------------------------------------------------------


def test_ledger_has_one_row_per_published_number(built: BuildPaths) -> None:
    rows = read_ledger(built.site / "ledger.json")
    assert rows == read_ledger(built.tree / "ledger.json")  # the site's copy adds only the build stamp
    by_page: dict[str, list[str]] = {}
    shown: dict[str, list[str]] = {}  # the numbers tables, charts' alt text and the Environment block show
    for r in rows:
        block = r["key"].startswith(("table(", "chart(", "environment"))
        (shown if block else by_page).setdefault(r["page"], []).append(r["key"])
    sweep = "table('step-scaling', sweep)"
    mem = "table('loss-memory', mem)"
    assert shown == {
        "records/step-time/v1.md": [
            *(f"chart('step-scaling', sweep).alt[{i}]" for i in range(5)),
            *(
                f"{sweep}[batch=1, tokens={t}].{c}"
                for t in (1024, 128, 2048, 256, 4096, 512, 8192)
                for c in ("max_step_s", "median_step_s", "min_step_s", "tok_s", "tokens", "tokens_per_step")
            ),
            f"{sweep}[every row].batch",  # said once above the table: every row's batch and window count
            f"{sweep}[every row].windows",
        ],
        "records/step-time/v2.md": [
            *(f"chart('step-scaling', sweep, tokens='512:').alt[{i}]" for i in range(6)),
            # the imported documents record no GPU count and no clocks: only the measured ones say theirs
            "environment[ablation].gpu_count",
            "environment[ablation].sm_clock_mhz",
            "environment[ceiling].sm_clock_mhz",
            *(
                f"{mem}[arm={arm}, microbatch={m}].{c}"
                for arm in ("chunked", "eager")
                for m in (1, 2, 4)
                for c in ("microbatch", "peak_bytes", "tok_s", "tokens_per_step")
            ),
        ],
    }
    cell = next(r for r in rows if r["key"] == f"{mem}[arm=eager, microbatch=4].tokens_per_step")
    assert (cell["label"], cell["unit"], cell["text"]) == ("tokens/step", "", "16,384")
    assert by_page == {
        "playbook/fit-past-plateau.md": ["fit(sweep).c"],
        "records/step-time/v1.md": ["fit(sweep).a", "fit(sweep).c"],
        "records/step-time/v2.md": [
            "batch_summary(batch).fastest_batch",
            "batch_summary(batch).fastest_tok_s",
            "batch_summary(batch).first_oom",
            "claim: answer: Fitted from 512 tokens up, the step has a fixed part of …; the fastest batch that "
            "fits, …, is below the first batch out of memory.",
            "fit(sweep).a",
            "fit(sweep).b",
            "fit(sweep).c",
            "fit(sweep).share(4096)",
            "gemm_ceiling(ceiling)",
            "loss_memory(mem, chunked).per_microbatch",
            "loss_memory(mem, eager).per_microbatch",
            "median(ablation, step_s, arm=baseline)",
            "project(batch_summary(batch).fastest_tok_s, 250000000).time",
            "saving(ablation, no-optimizer)",
            "value(sweep, data.samples.15.tokens)",  # the width the prose says, templated from the evidence
        ],
    }
    v1 = {r["key"]: r for r in rows if r["page"] == "records/step-time/v1.md"}
    assert v1["fit(sweep).c"]["evidence"] == [f"sha256:{V1_SWEEP}"]
    assert v1["fit(sweep).c"]["unit"] == "s" and v1["fit(sweep).c"]["text"].endswith(" ms")


def test_every_ledger_number_is_a_link_to_its_evidence_titled_with_its_derivation(built: BuildPaths) -> None:
    rows = read_ledger(built.site / "ledger.json")
    for page in sorted({r["page"] for r in rows}):
        links = [
            (a.get("href", ""), a.get("title", "")) for tag, a in _elements(_html(built, page[:-3])).tags if tag == "a"
        ]
        alts = " ".join(a.get("alt", "") for tag, a in _elements(_html(built, page[:-3])).tags if tag == "img")
        for r in (r for r in rows if r["page"] == page and r["unit"] != "claim"):  # a claim is a sentence
            if ".alt[" in r["key"]:  # a number of a chart's alt text: in the image's alt, which cannot link
                assert r["text"] in alts, (page, r["key"])
                continue
            target = r["evidence"][0].split(":")[1]
            matching = [
                href.split("#")[1]
                for href, t in links
                if re.search(f"evidence/{target}\\.html(\\?[^#]*)?#", href)
                and t.startswith(title_text(r["derivation"]))  # the title as the page writes it
            ]
            assert matching, (page, r["key"])
            evidence = (built.site / "evidence" / f"{target}.html").read_text(encoding="utf-8")
            assert all(f'id="{anchor}"' in evidence for anchor in matching)  # it lands on the rows, not the top


# -- records, archive, errata ----------------------------------------------------------------------


def test_archived_version_has_the_banner_linking_to_the_current_one(built: BuildPaths) -> None:
    v1 = _article(_html(built, "records/step-time/v1"))
    assert re.search(r'Archived reference\. <a href="v2\.html">Read the current results →</a>', v1)
    v2 = _article(_html(built, "records/step-time/v2"))
    assert "Archived reference" not in v2
    assert 'supersedes <a href="v1.html">version 1</a>' in v2
    archive = _article(_html(built, "archive"))
    assert 'href="../records/step-time/v1.html"' in archive and 'href="../records/step-time/v2.html"' in archive
    records = _article(_html(built, "records"))
    assert 'href="step-time/v2.html"' in records and "step-time/v1.html" not in records


def test_archived_version_is_rendered_from_its_own_evidence(built: BuildPaths) -> None:
    v1 = _article(_html(built, "records/step-time/v1"))
    assert f"/evidence/{V1_SWEEP}.html" in v1 and V2_SWEEP not in v1


def test_erratum_shows_on_its_record(built: BuildPaths) -> None:
    v2 = _elements(_article(_html(built, "records/step-time/v2")))
    text = " ".join("".join(v2.text).split())
    assert (
        "Errata 2026-12-03: The fixed term is now fitted from 512 tokens up; below that the step is launch-bound."
        in text
    )
    assert "Errata" not in " ".join(_elements(_article(_html(built, "records/step-time/v1"))).text)


def test_navigation_search_dark_mode_and_no_network_assets(built: BuildPaths) -> None:
    page = _html(built, "records/step-time/v2")
    tabs = re.findall(r'class="md-tabs__link[^"]*">\s*([^<]+?)\s*<', page)
    assert tabs == ["Home", "Playbook", "Records", "Archive", "Evidence", "Changes"]
    assert 'data-md-color-scheme="slate"' in page and "Switch to dark mode" in page
    assert (built.site / "search" / "search_index.json").exists() and 'data-md-component="search"' in page
    for path in built.site.rglob("*.html"):
        for tag, attrs in _elements(path.read_text(encoding="utf-8")).tags:
            if tag in ("script", "link", "img", "iframe"):
                for name in ("src", "href"):
                    assert not (attrs.get(name) or "").startswith(("http:", "https:", "//")), (path, tag, attrs)


# -- evidence pages ------------------------------------------------------------------------------------


def test_every_evidence_id_has_a_page_with_downloads(built: BuildPaths) -> None:
    ids = sorted(p.parent.name + p.stem for p in ARCHIVE.glob("evidence/sha256/*/*.json"))
    assert len(ids) == 7
    for hexid in ids:
        page = _article(_html(built, f"evidence/{hexid}"))
        assert "Envelope" in page and "Machine" in page and "Params" in page and "Raw samples" in page
        archived = (ARCHIVE / "evidence" / "sha256" / hexid[:2] / f"{hexid[2:]}.json").read_bytes()
        assert (built.site / "evidence" / f"{hexid}.json").read_bytes() == archived
        assert f'href="{hexid}.json"' in page and f'href="{hexid}.csv"' in page
    csv = (built.site / "evidence" / f"{V2_SWEEP}.csv").read_text().splitlines()
    assert csv[0].split(",")[:2] == ["batch", "tokens"] or "tokens" in csv[0]
    assert len(csv) == 1 + 21  # header + 7 sequence lengths × 3 windows
    sweep_page = _article(_html(built, f"evidence/{V2_SWEEP}"))
    assert sweep_page.count("<tr>") >= 21
    assert 'href="../records/step-time/v2.html"' in sweep_page  # cited by


# -- changes -------------------------------------------------------------------------------------------


def test_changes_page_without_a_published_ledger_lists_every_number_as_added(built: BuildPaths) -> None:
    page = " ".join(_elements(_article(_html(built, "changes"))).text)
    assert "Nothing has been published yet" in page
    # 100 numbers, 11 of them read out of chart alt text, which no diff counts (issue 40)
    assert "89 added, 0 removed, 0 changed, 0 unchanged." in " ".join(page.split())


def test_diff_after_a_changed_derivation(built: BuildPaths, tmp_path: Path, cli_here) -> None:
    cli = cli_here  # build and diff in this process; test_site_cli runs both as real processes
    docs = _copy_docs(tmp_path)
    v2 = docs / "records" / "step-time" / "v2.md"
    v2.write_text(v2.read_text().replace('tokens="512:"', 'tokens="1024:"'))
    published = tmp_path / "published.json"
    shutil.copy(built.site / "ledger.json", published)
    out = cli(
        "build",
        "--docs",
        str(docs),
        "--archive",
        str(ARCHIVE),
        "--out",
        str(tmp_path / "site"),
        "--build-dir",
        str(tmp_path / "build"),
        "--published",
        str(published),
    )
    assert out.returncode == 0, out.stderr
    # the chart's key names its options, but its alt text's numbers are left out of the diff (issue 40): before,
    # its six numbers were new rows and the old six removed, padding the diff
    assert "changes since published: 0 added, 0 removed, 4 changed" in out.stdout
    diff = cli("diff", str(published), str(tmp_path / "site" / "ledger.json"), "--json")
    assert diff.returncode == 0
    d = json.loads(diff.stdout)
    assert d["added"] == d["removed"] == []
    assert [(c["page"], c["key"]) for c in d["changed"]] == [
        ("records/step-time/v2.md", k)
        for k in ("fit(sweep).a", "fit(sweep).b", "fit(sweep).c", "fit(sweep).share(4096)")
    ]
    for c in d["changed"]:
        assert "tokens 512:" in c["old"]["derivation"] and "tokens 1024:" in c["new"]["derivation"]
        old, new = c["old"]["value"], c["new"]["value"]
        assert c["relative_change"] == pytest.approx((new - old) / abs(old))
    # v1, the playbook, v2's other numbers (its tables too) and its answer did not move; v1's 5 alt numbers uncounted
    assert d["unchanged"] == 85
    fail = cli("diff", str(published), str(tmp_path / "site" / "ledger.json"), "--fail-on-change")
    assert fail.returncode == 1 and fail.stdout.splitlines()[-1] == "0 added, 0 removed, 4 changed, 85 unchanged"
    changes = " ".join(" ".join(_elements((tmp_path / "site" / "changes.html").read_text()).text).split())
    assert "0 added, 0 removed, 4 changed, 85 unchanged." in changes
    assert "was: step-scaling fit" in changes and "tokens 1024:" in changes


# -- refusals ------------------------------------------------------------------------------------------


def test_missing_evidence_fails_the_build_with_page_and_line(tmp_path: Path) -> None:
    docs = _copy_docs(tmp_path)
    v2 = docs / "records" / "step-time" / "v2.md"
    v2.write_text(v2.read_text().replace("sha256:0b64533f8163", "sha256:0b64533f8164"))
    with pytest.raises(ProbebookError) as err:
        build(_paths(tmp_path, docs))
    assert str(err.value).startswith(f"{v2} line 8: evidence alias 'ceiling': no evidence 'sha256:0b64533f8164")
    assert not (tmp_path / "site").exists() and not (tmp_path / "build" / "docs").exists()


def test_lint_fails_the_build_on_a_typed_number(tmp_path: Path) -> None:
    docs = _copy_docs(tmp_path)
    page = docs / "playbook" / "fit-past-plateau.md"
    page.write_text(page.read_text() + "\nOn our card the fixed part was 8.8 ms.\n")
    with pytest.raises(ProbebookError) as err:
        build(_paths(tmp_path, docs))
    assert str(err.value).startswith(f"{page} line 10 column 32: hand-typed measurement '8.8 ms' in prose")


def test_a_strict_mkdocs_warning_fails_the_build(tmp_path: Path) -> None:
    docs = _copy_docs(tmp_path)
    (docs / "playbook" / "index.md").write_text("# Playbook\n\n[broken](no-such-page.md)\n")
    with pytest.raises(BuildError) as err:
        build(_paths(tmp_path, docs))
    assert str(err.value).startswith("mkdocs build --strict failed: WARNING")
    assert "no-such-page.md" in str(err.value)
    assert not (tmp_path / "site").exists()  # a failed build leaves no site behind
    (docs / "playbook" / "index.md").write_text("# Playbook\n\n[fixed](fit-past-plateau.md)\n")
    build(_paths(tmp_path, docs))  # the failed build's leftovers are replaced, not refused
    assert (tmp_path / "site" / "playbook" / "index.html").exists()


# -- XSS corpus ----------------------------------------------------------------------------------------

XSS_RECORD = """---
title: <script>alert("title")</script> <img src=x onerror=alert(2)>
version: 1
date: 2026-12-02
evidence:
  xss: sha256:0cc0ffa9a687
errata:
  - date: 2026-12-03
    text: <svg onload=alert(3)> [click](javascript:alert(4)) {{ ''.__class__ }}
---
<script>alert(5)</script>

<img src=x onerror="alert(6)"> <a href="javascript:alert(7)">a</a> <iframe src="javascript:alert(8)"></iframe>

Text{: onclick="alert(9)" } and *emphasis*{ onmouseover=alert(10) }

<details open ontoggle=alert(11)><summary>x</summary></details>

&lt;script&gt;alert(12)&lt;/script&gt; and `<script>alert(13)</script>` in code.

```html
<script>alert(14)</script>
```

{{ "<script>alert(15)</script>" }} {{ xss }} {{ xss.probe }}

{{ table("step-scaling", xss) }}

{{ chart("step-scaling", xss) }}
"""


def test_xss_corpus_cannot_inject_script(tmp_path: Path) -> None:
    docs = _copy_docs(tmp_path)
    (docs / "records" / "xss").mkdir()
    (docs / "records" / "xss" / "v1.md").write_text(XSS_RECORD)
    paths = _paths(tmp_path, docs)
    build(paths)
    clean = _elements(_html(paths, "records/step-time/v2"))
    theme_scripts = list(clean.scripts)
    for path in sorted(paths.site.rglob("*.html")):
        page = _elements(path.read_text(encoding="utf-8"))
        for tag, attrs in page.tags:
            for name, value in attrs.items():
                assert not name.startswith("on"), (path, tag, name)
                assert not (value or "").strip().lower().startswith(("javascript:", "vbscript:", "data:")), (path, tag)
            assert tag not in ("iframe", "object", "embed"), (path, tag)
        for script in page.scripts:
            assert "alert" not in script, (path, script[:80])
        if path.parent.name in ("v1", XSS_EVIDENCE) and path.parent.parent.name in ("xss", "evidence"):
            assert len(page.scripts) == len(theme_scripts), path
    record = _elements(_html(paths, "records/xss/v1"))
    shown = " ".join(record.text)
    for literal in (
        '<script>alert("title")</script>',
        "<script>alert(5)</script>",
        "<svg onload=alert(3)>",
        "{{ ''.__class__ }}",
        "<script>alert(15)</script>",
        "<script>alert(13)</script>",
    ):
        assert literal in shown, literal  # kept as visible text, not markup
    evidence = " ".join(_elements(_html(paths, f"evidence/{XSS_EVIDENCE}")).text)
    assert '<script>alert("xss")</script>' in evidence and "{{ 7*7 }}" in evidence
    svgs = sorted((paths.site / "records" / "xss").glob("*.svg"))
    assert svgs
    for svg in svgs:
        text = svg.read_text()
        assert "<script" not in text and not re.search(r"\son\w+\s*=", text) and "javascript:" not in text
    index = (paths.site / "search" / "search_index.json").read_text()
    assert "<script" not in index and "<img" not in index and "<svg" not in index


@pytest.mark.parametrize(
    "body,line,message",
    [
        ("Fine.\n\n[click](javascript:alert(1))\n", 10, "link target 'javascript:alert(1' is not allowed"),
        ("{{ ''.__class__.__mro__[1].__subclasses__() }}\n", 8, "not allowed in a page"),
        ("{{ xss.__init__.__globals__ }}\n", 8, "not allowed in a page"),
        ("{{ cycler.__init__.__globals__.os.popen('id').read() }}\n", 8, "unknown name 'cycler'"),
    ],
)
def test_xss_template_and_link_escapes_fail_the_build(tmp_path: Path, body: str, line: int, message: str) -> None:
    docs = _copy_docs(tmp_path)
    (docs / "records" / "xss").mkdir()
    page = docs / "records" / "xss" / "v1.md"
    page.write_text(
        "---\ntitle: XSS\nversion: 1\ndate: 2026-12-02\nevidence:\n  xss: sha256:0cc0ffa9a687\n---\n" + body
    )
    with pytest.raises(ProbebookError) as err:
        build(_paths(tmp_path, docs))
    assert str(err.value).startswith(f"{page} line {line}: "), str(err.value)
    assert message in str(err.value)


# -- determinism and isolation -------------------------------------------------------------------------


def _tree_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_two_builds_are_byte_identical(built: BuildPaths, tmp_path: Path) -> None:
    again = _paths(tmp_path)
    build(again)
    first, second = _tree_bytes(built.site), _tree_bytes(again.site)
    assert sorted(first) == sorted(second)
    assert [p for p in first if first[p] != second[p]] == []
    assert _tree_bytes(built.tree) == _tree_bytes(again.tree)
    # no SOURCE_DATE_EPOCH given: the newest evidence or record date stands in for "now" (the gzip header's mtime)
    assert _gzip_mtime(built.site / "sitemap.xml.gz") == _midnight("2026-12-02")


def _gzip_mtime(path: Path) -> int:
    return int.from_bytes(path.read_bytes()[4:8], "little")  # RFC 1952 §2.3: MTIME, 4 bytes little-endian


def _midnight(day: str) -> int:
    return calendar.timegm(datetime.date.fromisoformat(day).timetuple())


def test_source_date_epoch_is_honoured(tmp_path: Path, cli_here) -> None:
    out = cli_here(  # in this process, with the variable set while it runs (conftest.run_cli_here)
        "build",
        "--docs",
        str(SITE_FIXTURE / "docs"),
        "--archive",
        str(ARCHIVE),
        "--out",
        str(tmp_path / "s"),
        "--build-dir",
        str(tmp_path / "b"),
        "--published",
        str(tmp_path / "none.json"),
        env={"SOURCE_DATE_EPOCH": "1790000000"},
    )
    assert out.returncode == 0, out.stderr
    # mkdocs stamps the build date (from SOURCE_DATE_EPOCH) at midnight UTC into sitemap.xml.gz
    day = datetime.datetime.fromtimestamp(1790000000, datetime.timezone.utc).date().isoformat()
    assert _gzip_mtime(tmp_path / "s" / "sitemap.xml.gz") == _midnight(day)


# slow: end to end (real builds or probe runs in child processes), 2-7 s of CPU each; .ci/run runs -m slow
@pytest.mark.slow
def test_render_never_imports_torch(tmp_path: Path) -> None:
    code = (
        "import sys; from pathlib import Path; from render.assemble.stages import BuildPaths, build; "
        f"build(BuildPaths(docs=Path({str(SITE_FIXTURE / 'docs')!r}), archive=Path({str(ARCHIVE)!r}), "
        f"build=Path({str(tmp_path / 'build')!r}), site=Path({str(tmp_path / 'site')!r}), "
        f"config=Path({str(REPO / 'mkdocs.yml')!r})), site=False); "
        "import render.assemble.serve; "
        # render's own reach into measure, before the CLI (which may see both floors) is imported
        "ms = sorted(m for m in sys.modules if m.startswith('measure.')); "
        "import probebook.cli.site; "
        "print('torch' in sys.modules, ms)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=HANG_S,
    )
    assert out.returncode == 0, out.stderr
    torch_loaded, measure_modules = out.stdout.strip().split(" ", 1)
    assert torch_loaded == "False"
    assert set(eval(measure_modules)) <= {
        "measure.errors",
        "measure.evidence",
        "measure.evidence.envelope",
        "measure.evidence.store",
        "measure.evidence.files",  # the store's safe single-file writes
        "measure.evidence.reading",  # a stored file read, and older probe versions read as today's
        "measure.evidence.contracts",
        "measure.evidence.kernel_names",
        "measure.evidence.flops",  # torch-free: model FLOPs with frozen weights (render.derive.workload)
        "measure.evidence.reruns",  # torch-free: old params migrated for the Reproduce block (render.pages.provenance)
        "measure.evidence.clocks",  # torch-free: the SM clock of gemm windows (render.derive.gemm)
        "measure.evidence.configkey",  # torch-free: a run's configuration key (render.evidence.series)
        "measure.progress",
        "measure.constants",
        "measure.lifetime",
    }
    assert (tmp_path / "build" / "docs" / "ledger.json").exists()


def test_build_refuses_to_clear_a_folder_it_did_not_write(tmp_path: Path) -> None:
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "precious.txt").write_text("keep me")
    with pytest.raises(BuildError, match="holds files render did not write"):
        build(_paths(tmp_path))
    assert (tmp_path / "site" / "precious.txt").read_text() == "keep me"


def test_fixture_archive_regenerates_byte_for_byte(tmp_path: Path) -> None:
    sys.path.insert(0, str(SITE_FIXTURE))
    try:
        import make_archive
    finally:
        sys.path.remove(str(SITE_FIXTURE))
    ids = make_archive.write(tmp_path)
    assert _tree_bytes(tmp_path / "archive") == _tree_bytes(ARCHIVE)
    assert _tree_bytes(tmp_path / "inputs") == _tree_bytes(SITE_FIXTURE / "inputs")
    assert ids["sweep_v2"] == f"sha256:{V2_SWEEP}" and ids["xss"] == f"sha256:{XSS_EVIDENCE}"
