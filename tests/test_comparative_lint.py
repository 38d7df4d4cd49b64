"""The comparative-sentence lint: what it flags, what it passes (claims, the visible context mark), the repo's docs."""

from __future__ import annotations

from pathlib import Path

import pytest

from measure.evidence.envelope import Evidence
from measure.evidence.store import Store
from render.assemble.stages import BuildPaths, build
from render.numbers import legend
from render.pages import comparative, lint, sources
from render.pages.sources import parse_page

REPO = Path(__file__).resolve().parents[1]


def _hits(text: str, kind: str = "record") -> list[tuple[int, str]]:
    page = parse_page(Path("docs/records/r/v1.md"), "records/r/v1.md", kind, text)
    return [(h.line, h.word) for h in lint.comparatives(page)]


def _record(body: str) -> str:
    return f"---\ntitle: R\nversion: 1\ndate: 2026-11-30\n---\n{body}\n"


@pytest.mark.parametrize(
    "prose,word",
    [
        ('The compiled step is {{ median(a, "step_s") }} faster than eager.', "faster"),
        ("A second run minutes later put it at {{ gemm_ceiling(g) }}.", "later"),
        ("The runs recorded four sessions with two versions of the code, after the sweeps.", "after"),
        ("The sag is small against a spread of {{ fit(s).noise }}.", "small"),
        ("The GEMM run was taken minutes after them, on 3 shapes.", "after"),
        ("Depth 2 is within {{ share_of(x, y) }} of depth 1.", "within"),
        ("It fell below {{ value(u, 'data.x') }}; the rest held.", "below"),
    ],
)
def test_flags_a_comparative_sentence_near_a_number(prose: str, word: str) -> None:
    assert _hits(_record(prose)) == [(6, word)]


@pytest.mark.parametrize(
    "prose",
    [
        '{{ claim(a < b, "The compiled step is the faster one") }} at {{ median(a, "step_s") }}.',
        'At {{ q }} against {{ r }}, {{ claim(q < r, "the first is smaller") }}.',
        "The order of steps: compile before timing, {{ constant('warmup') }} calls {{ context() }}.",
        "Compiling is faster, and the text says so without a number.",
        "The step takes {{ median(a, 'step_s') }} at 2048 tokens.",
        "Inline `faster than 12` code and\n\n```\nslower than 3\n```\n",
        "A [link faster than light](../x/v2.md) names no number.",
    ],
)
def test_passes_claims_context_marks_and_sentences_without_a_comparison_and_a_number(prose: str) -> None:
    assert _hits(_record(prose)) == []


def test_sentences_end_at_punctuation_so_one_claim_covers_only_its_own() -> None:
    text = _record(
        '{{ claim(a < b, "A is the smaller") }}. Then B is {{ q }} larger than C.\n\n- and D is below {{ r }}\n'
    )
    assert _hits(text) == [(6, "larger"), (8, "below")]


def test_the_line_is_where_the_sentence_starts_and_the_message_says_what_to_do() -> None:
    text = _record("Intro line.\n\nThe step ran\n{{ median(a, 'step_s') }} slower than before.")
    page = parse_page(Path("docs/records/r/v1.md"), "records/r/v1.md", "record", text)
    (hit,) = lint.comparatives(page)
    assert (hit.line, hit.word) == (8, "slower")
    assert str(hit) == (
        "docs/records/r/v1.md line 8: comparative sentence ('slower' near a number) is not checked: "
        "\"The step ran {{ median(a, 'step_s') }} slower than before.\"; make it a claim(...) the evidence "
        "checks, or end it with {{ context() }}"
    )
    with pytest.raises(lint.LintError) as err:
        lint.check([page])
    assert str(err.value) == str(hit)


def test_only_records_and_the_playbook_are_linted() -> None:
    prose = "A point below {{ constant('collapse') }} of the previous one has collapsed."
    assert _hits(_record(prose)) == [(6, "below")]
    assert _hits(prose, kind="playbook") == [(1, "below")]
    assert _hits(prose, kind="page") == []
    assert _hits(prose, kind="home") == []


def test_the_repositorys_records_and_playbook_pass() -> None:
    pages = sources.load(REPO / "docs").pages
    assert [str(h) for page in pages for h in lint.comparatives(page)] == []
    assert sum(1 for p in pages if p.kind in lint.COMPARATIVE_KINDS) > 20


def test_context_shows_its_mark_on_the_built_page(tmp_path: Path) -> None:
    ev = Evidence(
        probe="copy",
        probe_version=1,
        params={},
        data={"samples": [{"direction": "h2d", "window": w, "gb_s": 50.0} for w in range(3)]},
        machine={"gpu": None},
        code={},
        created_at="2026-11-29T08:00:00Z",
    )
    ident = Store(tmp_path / "archive").put(ev)
    (tmp_path / "docs" / "records" / "r").mkdir(parents=True)
    (tmp_path / "docs" / "index.md").write_text("# Home\n")
    body = (
        'Uploads ran at {{ median(copy, "gb_s", direction="h2d") }}, more than the link\'s rated speed {{ context() }}.'
    )
    (tmp_path / "docs" / "records" / "r" / "v1.md").write_text(
        f"---\ntitle: R\nversion: 1\ndate: 2026-11-30\nevidence:\n  copy: {ident}\n---\n{body}\n"
    )
    paths = BuildPaths(
        docs=tmp_path / "docs",
        archive=tmp_path / "archive",
        build=tmp_path / "build",
        site=tmp_path / "site",
        config=REPO / "mkdocs.yml",
        published=tmp_path / "none.json",
    )
    build(paths, site=False)
    page = (paths.tree / "records" / "r" / "v1.md").read_text()
    # a sign linked to the page's legend, its words the sign's title and the legend's line (issue 42)
    assert f"more than the link's rated speed {legend.sign_markdown(legend.CONTEXT)}." in page
    assert page.count("## Marks") == 1 and "- **‡** context, not checked: " in page
    assert comparative.CONTEXT_MARK == "(context, not checked)"
