"""Templating: sandboxed StrictUndefined pages, page functions on real fixture evidence, refusals with file and line,
front matter validation, and the escaping that keeps prose inert."""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import pytest

from measure.evidence.store import Store
from render.derive import fit as fitmod
from render.evidence.archive import load_evidence
from render.functions.derivations import Library
from render.functions.general import field_unit
from render.functions.page import Page
from render.pages import sources
from render.pages.prose import check_links, inert_prose
from render.pages.sandbox import PageError, PageState, make_environment, render_body

SITE = Path(__file__).resolve().parent / "fixtures" / "site"
ARCHIVE = SITE / "archive"
SWEEP = "sha256:08e78675deb8fd5dd2f23023a7b01a3f923ee546a24aba8d2990210900bc4c1d"
ALIASES = {
    "sweep": SWEEP,
    "old": "sha256:1c7ccb3872425db2920e21502e3e4b21d4403902bc5f4d787b830cdeee1999fa",
    "ceiling": "sha256:0b64533f8163490ec04db0d6cbbf16414f7ed77275b02703e5f935e983692c78",
    "batch": "sha256:63cc7d4ea38d69bc16d9c3a3a61dd2237108e09c1abe06c3d5bda0b9def85b42",
    "mem": "sha256:5d0d0cac33d1c2f3177ecc91781f972a76c7534dc35d06e14ff4ce4f4adeef1a",
    "ablation": "sha256:f581ac542e3b3d0731cb6b164161aadc74d1783df44c49a8c4162546bed55c5c",
}


@pytest.fixture(scope="module")
def library() -> Library:
    return Library(load_evidence(ARCHIVE).docs)


def render(
    library: Library, body: str, tmp_path: Path, aliases: dict[str, str] | None = None, rel: str = "records/x/v1.md"
) -> tuple[str, PageState]:
    """Render one page body (no front matter) with the given aliases; return its Markdown and state."""
    path = tmp_path / rel
    page = sources.parse_page(path, rel, "page", body)
    fns = Page(library, ALIASES if aliases is None else aliases)
    state = PageState(rel)
    env = make_environment({rel: (page.body, str(path))})
    return render_body(env, page, fns.context(), state), state


# -- quantities and the ledger ----------------------------------------------------------------


def test_fit_quantities_match_the_derivation_and_are_recorded(library: Library, tmp_path: Path) -> None:
    text, state = render(
        library,
        'c={{ fit(sweep, tokens="512:").c }} a={{ fit(sweep, tokens="512:").a }}\n'
        'again={{ fit(sweep, tokens="512:").c }}\n',
        tmp_path,
    )
    expected = fitmod.fit_evidence(library.docs[SWEEP], tokens="512:", source="x")
    rows = dict(state.rows)
    assert list(rows) == ["fit(sweep).c", "fit(sweep).a"]  # the same number twice is one row
    assert rows["fit(sweep).c"].value == expected.c_s
    assert rows["fit(sweep).a"].value == expected.a_s_per_token
    assert rows["fit(sweep).c"].uncertainty == expected.ci["c_s"]
    assert "tokens 512:" in rows["fit(sweep).c"].derivation
    assert text.count("](../../evidence/08e78675") == 3
    assert state.cited == {SWEEP}


def test_the_same_key_with_another_derivation_gets_a_suffix(library: Library, tmp_path: Path) -> None:
    _, state = render(library, '{{ fit(sweep).c }} {{ fit(sweep, tokens="512:").c }} {{ fit(old).c }}', tmp_path)
    assert [k for k, _ in state.rows] == ["fit(sweep).c", "fit(sweep).c#2", "fit(old).c"]


def test_share_and_asymptote(library: Library, tmp_path: Path) -> None:
    _, state = render(
        library, '{{ fit(sweep, tokens="512:").share(4096) }} {{ fit(sweep, terms="c+a").asymptote }}', tmp_path
    )
    share, asym = (q for _, q in state.rows)
    quad = fitmod.fit_evidence(library.docs[SWEEP], tokens="512:", at=(4096,))
    assert share.value == quad.quadratic_share["4096"] and share.text.endswith("%")
    linear = fitmod.fit_evidence(library.docs[SWEEP], terms="c+a")
    assert asym.value == linear.asymptote_tok_s and asym.unit == "tok/s"


def test_other_page_functions_compute_from_evidence(library: Library, tmp_path: Path) -> None:
    body = (
        "{{ gemm_ceiling(ceiling) }} {{ batch_summary(batch).fastest_tok_s }} "
        "{{ project(batch_summary(batch).fastest_tok_s, '250M').time }} "
        "{{ mfu(batch_summary(batch).fastest_tok_s, 1971859200, peak=gemm_ceiling(ceiling)) }} "
        "{{ loss_memory(mem, 'eager').per_microbatch }} {{ value(ceiling, 'params.windows', fmt='d') }} "
        "{{ share_of(loss_memory(mem, 'chunked').per_microbatch, loss_memory(mem, 'eager').per_microbatch) }}"
    )
    _, state = render(library, body, tmp_path)
    q = dict(state.rows)
    median_s = statistics.median([0.000196, 0.000198, 0.000197, 0.000201, 0.000199])  # the fixture's windows
    ceiling = 2 * 4096**3 / median_s
    assert q["gemm_ceiling(ceiling)"].value == pytest.approx(ceiling, rel=1e-12)
    assert q["gemm_ceiling(ceiling)"].text.endswith("TFLOP/s")
    rate = q["batch_summary(batch).fastest_tok_s"].value
    assert rate == 97000.0  # the fastest fitting row of tests/fixtures/site/inputs/batch.csv
    assert q["project(batch_summary(batch).fastest_tok_s, 250000000).time"].value == pytest.approx(20 * 250e6 / 97000)
    mfu = q["mfu(batch_summary(batch).fastest_tok_s)"]
    assert mfu.value == pytest.approx(97000 * 1971859200 / ceiling, rel=1e-12)
    assert set(mfu.evidence) == {ALIASES["batch"], ALIASES["ceiling"]}
    # tests/fixtures/site/inputs/loss-memory.csv: eager peaks rise 1572864000 B per microbatch, chunked 300000000 B
    assert q["loss_memory(mem, eager).per_microbatch"].value == pytest.approx(1572864000, rel=1e-9)
    assert q["value(ceiling, params.windows)"].text == "5"
    share = q["share_of(loss_memory(mem, chunked).per_microbatch, loss_memory(mem, eager).per_microbatch)"]
    assert share.value == pytest.approx(300000000 / 1572864000, rel=1e-9)


def test_median_and_saving_of_interleaved_arms(library: Library, tmp_path: Path) -> None:
    body = (
        '{{ median(ablation, "step_s", arm="baseline") }} {{ saving(ablation, "no-attention") }} '
        '{{ median(ceiling, "time_s").to("us") }}'
    )
    _, state = render(library, body, tmp_path)
    q = dict(state.rows)
    rows = library.docs[ALIASES["ablation"]]["data"]["samples"]
    base = statistics.median(r["step_s"] for r in rows if r["arm"] == "baseline")
    arm = statistics.median(r["step_s"] for r in rows if r["arm"] == "no-attention")
    median = q["median(ablation, step_s, arm=baseline)"]
    assert (
        median.value == base
        and median.text.endswith(" ms")
        and "5 samples of step_s where arm='baseline'" in median.derivation
    )
    assert q["saving(ablation, no-attention)"].value == 1 - arm / base
    assert q["saving(ablation, no-attention)"].uncertainty is not None  # the arms' windows, resampled apart
    ceiling = q["median(ceiling, time_s)"]
    # the interval (bootstrap of the windows) decides the digits: two figures of the smaller half-width
    assert (ceiling.value, ceiling.text, ceiling.interval_text) == (0.000198, "198.0 µs", "(196.0–201.0)")


def test_field_units() -> None:
    assert field_unit("step_s") == ("s", "ms", ".3g")
    assert field_unit("wall_ms") == ("ms", None, ".3g")
    assert field_unit("gb_s") == ("GB/s", None, ".3g")
    assert field_unit("tok_s") == ("tok/s", None, ".3g")
    assert field_unit("peak_bytes") == ("B", "GiB", ".3g")
    assert field_unit("calls") == ("", None, ".4g")


def test_chart_and_table_write_files_beside_the_page(library: Library, tmp_path: Path) -> None:
    text, state = render(library, '{{ chart("step-scaling", sweep) }}\n{{ table("loss-memory", mem) }}', tmp_path)
    assert sorted(state.files) == [
        "records/x/v1-loss-memory-1.csv",
        "records/x/v1-loss-memory-1.json",
        "records/x/v1-step-scaling-1.dark.svg",
        "records/x/v1-step-scaling-1.dark.vl.json",
        "records/x/v1-step-scaling-1.svg",
        "records/x/v1-step-scaling-1.vl.json",
    ]
    assert state.files["records/x/v1-step-scaling-1.svg"].startswith(b"<svg")
    assert state.files["records/x/v1-step-scaling-1.dark.svg"].startswith(b"<svg")
    assert "](v1-step-scaling-1.svg#only-light)" in text and "](v1-step-scaling-1.dark.svg#only-dark)" in text
    assert "[CSV](v1-loss-memory-1.csv)" in text
    assert state.cited == {SWEEP, ALIASES["mem"]}


def test_an_alias_renders_as_a_link_to_its_evidence_page(library: Library, tmp_path: Path) -> None:
    text, state = render(library, "{{ sweep }}", tmp_path, rel="index.md")
    assert text == f'[`sha256:08e78675deb8`](evidence/{SWEEP[7:]}.md "step-scaling evidence")'
    assert state.rows == [] and state.cited == {SWEEP}


# -- refusals with file and line -------------------------------------------------------------------


@pytest.mark.parametrize(
    "body,line,message",
    [
        ("ok\n{{ fit(nosuch).c }}", 2, "unknown name 'nosuch' (this page knows: "),
        ("{{ fit('nope').c }}", 1, "fit(): no evidence alias 'nope' on this page"),
        ("\n\n{{ ''.__class__.__mro__ }}", 3, "not allowed in a page"),
        ("{{ fit(sweep).c.value }}", 1, "not allowed in a page"),
        ("{{ fit(sweep).c.__class__ }}", 1, "not allowed in a page"),
        ("{{ 12 }}", 1, "placeholder yields the bare number 12"),
        ("{{ fit(sweep).n_points.to('ms') }}", 1, "cannot show a value"),
        ("a\n{{ '12.3 ms' }}", 2, "placeholder yields the text '12.3 ms', a hand-typed measurement"),
        ("{{ none }}", 1, "placeholder yields nothing"),
        ("{{ fit }}", 1, "placeholder yields a method"),
        ("{{ fit(batch).c }}", 1, "fit() needs step-scaling evidence; batch (sha256:63cc7d4ea38d) is batch-sweep"),
        ("x\n\n{{ fit(sweep, tokens='8000:').c }}", 3, "needs at least 2 distinct token counts"),
        ("{{ fit(sweep, tokens='x').c }}", 1, "--tokens 'x': give a range"),
        ("{{ fit(sweep, tokns='1:').c }}", 1, "unexpected keyword argument 'tokns'"),
        ("{{ chart('pie', sweep) }}", 1, "unknown chart kind 'pie'"),
        (
            "{{ median(ablation, 'step_s', arm='nope') }}",
            1,
            "no 'step_s' values in rows matching arm='nope' (0 rows match)",
        ),
        ("{{ saving(ablation, nosuch) }}", 1, "unknown name 'nosuch'"),
        ("line\n{{ fit(sweep .c }}", 2, "template syntax:"),
        ("{% for x in range(3) %}{{ x }}{% endfor %}", 1, "unknown name 'range'"),
    ],
)
def test_template_errors_name_file_and_line(
    library: Library, tmp_path: Path, body: str, line: int, message: str
) -> None:
    with pytest.raises(PageError) as err:
        render(library, body, tmp_path)
    text = str(err.value)
    assert text.startswith(f"{tmp_path / 'records/x/v1.md'} line {line}: "), text
    assert message in text
    assert "\n" not in text


def test_template_text_is_escaped(library: Library, tmp_path: Path) -> None:
    text, state = render(library, "{{ '<script>alert(1)</script>' }} {{ sweep.probe }}", tmp_path)
    assert text == "&lt;script&gt;alert(1)&lt;/script&gt; step-scaling"
    assert state.rows == []


def test_alias_named_like_a_function_is_refused(library: Library) -> None:
    with pytest.raises(Exception, match="evidence alias 'fit' has the name of a page function"):
        Page(library, {"fit": SWEEP}).context()


# -- inert prose ------------------------------------------------------------------------------------


def test_inert_prose_escapes_html_outside_code_only() -> None:
    text = (
        "<script>alert(1)</script> and <img src=x onerror=alert(1)>\n"
        '`<b>kept</b>` in code\n```html\n<script>shown as code</script>\n```\n<a href="javascript:x">a</a>'
    )
    assert inert_prose(text) == (
        "&lt;script>alert(1)&lt;/script> and &lt;img src=x onerror=alert(1)>\n"
        '`<b>kept</b>` in code\n```html\n<script>shown as code</script>\n```\n&lt;a href="javascript:x">a&lt;/a>'
    )


def test_inert_prose_keeps_http_and_mailto_autolinks_only() -> None:
    assert (
        inert_prose('<https://example.org/a?b=1> <mailto:a@b.c> <javascript:alert(1)> <https://x.org/"on=x>')
        == '<https://example.org/a?b=1> <mailto:a@b.c> &lt;javascript:alert(1)> &lt;https://x.org/"on=x>'
    )


def test_inert_prose_keeps_a_plain_titled_abbreviation_only() -> None:
    # a table's kernel name: short in the cell, whole (escaped) in the title
    kept = '<abbr title="void k&lt;4&gt;(float)">…k&lt;4&gt;</abbr>'
    assert inert_prose(kept) == kept
    assert inert_prose('<abbr title="x" onclick="y">a</abbr>') == '&lt;abbr title="x" onclick="y">a</abbr>'
    assert inert_prose('<abbr title="a>b">c</abbr>') == '&lt;abbr title="a>b">c</abbr>'
    assert inert_prose("<abbr>c</abbr> <abbrx>") == "&lt;abbr>c</abbr> &lt;abbrx>"


def test_fit_warnings_render_as_an_escaped_admonition(library: Library, tmp_path: Path) -> None:
    expected = fitmod.fit_evidence(library.docs[ALIASES["old"]], terms="c+a").warnings
    assert expected  # a straight line through the launch-bound plateau misses structure
    text, state = render(library, '{{ fit(old, terms="c+a").warnings }}', tmp_path)
    lines = text.split("\n")
    assert lines[0] == '!!! warning "Fit warnings"' and len([ln for ln in lines if ln.startswith("    - ")]) == len(
        expected
    )
    assert "<" not in text and state.rows == []


@pytest.mark.parametrize(
    "text,line",
    [
        ("[x](javascript:alert(1))", 1),
        ("ok\n[x]( JaVaScRiPt:alert(1))", 2),
        ("![i](data:image/svg+xml,<svg>)", 1),
        ("[x][r]\n\n[r]: vbscript:msgbox", 3),
        ("[x](<javascript:alert(1)>)", 1),
    ],
)
def test_links_to_script_schemes_are_refused(text: str, line: int) -> None:
    with pytest.raises(PageError) as err:
        check_links(text, "docs/p.md")
    assert str(err.value).startswith(f"docs/p.md line {line}: link target ")
    assert "links go to http(s), mailto or a relative path" in str(err.value)


def test_ordinary_links_pass() -> None:
    check_links("[a](https://example.org) [b](../records/x/v1.md#fit) [c](mailto:a@b.c) [d](#top) [e](v1.md)", "p.md")


# -- front matter -----------------------------------------------------------------------------------


def _record(tmp_path: Path, front: str, name: str = "v2.md") -> sources.SourcePage:
    path = tmp_path / "records" / "step" / name
    return sources.parse_page(path, f"records/step/{name}", "record", f"---\n{front}---\nBody.\n")


@pytest.mark.parametrize(
    "front,message",
    [
        ("title: T\nversion: 2\ndate: 2026-12-01\ncolour: red\n", "line 5: unknown front matter field 'colour'"),
        ("title: T\nversion: 3\ndate: 2026-12-01\n", "line 3: field 'version' is 3 but the file is named v2.md"),
        ("title: T\nversion: 2\ndate: 2026-13-01\n", "line 4: field 'date' must be a date like 2026-12-01"),
        ("title: T\nversion: 2\ndate: 2026-12-01\nsupersedes: 2\n", "line 5: field 'supersedes' must be an older"),
        ("title: T\nversion: 2\n", "record front matter lacks field 'date'"),
        (
            "title: T\nversion: 2\ndate: 2026-12-01\nevidence:\n  Bad-Name: sha256:ab\n",
            "line 6: evidence alias 'Bad-Name' must be a lower-case name",
        ),
        ("title: T\nversion: 2\ndate: 2026-12-01\nerrata:\n  - text: no date\n", "each erratum needs exactly"),
        ("title: T\nversion: 2\ndate: 2026-12-01\ntitle: again\n", "line 5: front matter is not valid YAML: "),
        ("title: [unclosed\n", "front matter is not valid YAML"),
    ],
)
def test_front_matter_errors_name_file_line_and_field(tmp_path: Path, front: str, message: str) -> None:
    with pytest.raises(sources.SourceError) as err:
        _record(tmp_path, front)
    assert str(err.value).startswith(str(tmp_path / "records" / "step" / "v2.md"))
    assert message in str(err.value)


def test_front_matter_fields_and_line_preserving_body(tmp_path: Path) -> None:
    page = _record(
        tmp_path,
        "title: T\nversion: 2\ndate: 2026-12-01\nsupersedes: 1\nevidence:\n  sweep: sha256:08e7\n"
        "errata:\n  - date: 2026-12-03\n    text: Fixed the range.\n",
    )
    assert (page.title, page.version, page.date, page.supersedes, page.slug) == ("T", 2, "2026-12-01", 1, "step")
    assert page.evidence == {"sweep": "sha256:08e7"} and page.lines["evidence.sweep"] == 7
    assert [(e.date, e.text) for e in page.errata] == [("2026-12-03", "Fixed the range.")]
    assert page.body.split("\n")[11] == "Body."  # file line 12


def test_missing_evidence_names_file_line_and_alias(tmp_path: Path) -> None:
    page = _record(tmp_path, "title: T\nversion: 2\ndate: 2026-12-01\nevidence:\n  sweep: sha256:" + "0" * 64 + "\n")
    with pytest.raises(sources.SourceError) as err:
        sources.resolve_evidence(page, Store(ARCHIVE).resolve)
    assert str(err.value).startswith(f"{page.path} line 6: evidence alias 'sweep': no evidence 'sha256:0000")


def test_sources_load_finds_records_and_refuses_bad_layout(tmp_path: Path) -> None:
    src = sources.load(SITE / "docs")
    assert [r.slug for r in src.records] == ["step-time"]
    assert [p.version for p in src.records[0].versions] == [1, 2]
    assert src.records[0].current.rel == "records/step-time/v2.md"
    bad = tmp_path / "docs" / "records" / "x"
    bad.mkdir(parents=True)
    (bad / "draft.md").write_text("# draft\n")
    with pytest.raises(sources.SourceError, match=re.escape("a record version must be records/<slug>/v<N>.md")):
        sources.load(tmp_path / "docs")
    (bad / "draft.md").unlink()
    (tmp_path / "docs" / "changes.md").write_text("# mine\n")
    with pytest.raises(sources.SourceError, match=re.escape("changes.md is generated by render")):
        sources.load(tmp_path / "docs")


# -- the error policy: the author's mistakes are one line, a bug in probebook's code keeps its traceback -------


def _render_with(context: dict, body: str, tmp_path: Path) -> str:
    rel = "records/x/v1.md"
    path = tmp_path / rel
    page = sources.parse_page(path, rel, "page", body)
    env = make_environment({rel: (page.body, str(path))})
    return render_body(env, page, context, PageState(rel))


@pytest.mark.parametrize(
    "body, message",
    [
        ("x\n{{ [1, 2][5] }}", "line 2: list object has no element 5"),
        ("{{ 1 // 0 }}", "line 1: integer division or modulo by zero"),
        ("{{ ratio(1) }}", "missing 1 required positional argument"),
    ],
)
def test_a_mistake_in_the_page_itself_is_one_line_naming_file_and_line(tmp_path, body, message):
    with pytest.raises(PageError) as err:
        _render_with({"ratio": lambda a, b: f"{a / b}"}, body, tmp_path)
    assert "records/x/v1.md" in str(err.value) and message in str(err.value)


def test_a_bug_inside_a_function_the_page_calls_keeps_its_exception(tmp_path):
    def lookup(name: str) -> str:
        return {"known": "value"}[name]  # a KeyError here is the code's bug, not the author's

    assert _render_with({"lookup": lookup}, '{{ lookup("known") }}', tmp_path) == "value"
    with pytest.raises(KeyError, match="unknown"):
        _render_with({"lookup": lookup}, '{{ lookup("unknown") }}', tmp_path)
