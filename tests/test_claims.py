"""Checked claims: quantities compare and combine only where their units allow; a true claim shows its sentence
and is recorded in the ledger; a false one fails the build with file, line, sentence and both values; the
Changes page lists claims whose truth differs under the published numbers."""

from __future__ import annotations

import html
from pathlib import Path

import pytest

from measure.evidence.envelope import Evidence
from measure.evidence.store import Store
from render.assemble.stages import BuildPaths, build
from render.numbers import claims
from render.numbers.ledger import read, write
from render.numbers.quantity import ClaimError, Quantity
from render.pages.sandbox import PageError

REPO = Path(__file__).resolve().parent.parent


def q(value: float, unit: str, key: str, ev: str = "sha256:" + "a" * 64) -> Quantity:
    return Quantity(value=value, unit=unit, key=key, evidence=(ev,), derivation=key)


def test_comparisons_convert_prefixes_and_refuse_other_units():
    fast, slow = q(0.002, "s", "fast"), q(3.0, "ms", "slow")
    assert (fast < slow).holds is True and (fast >= slow).holds is False
    assert (q(2.0, "ms", "a") <= q(0.002, "s", "b")).holds is True
    assert (q(0.25, "", "share") < 0.5).holds is True  # a ratio against a plain number
    with pytest.raises(ClaimError, match="units 'B' and 's' do not agree"):
        fast < q(1.0, "B", "bytes")  # noqa: B015
    with pytest.raises(ClaimError, match=r"fast < 0\.5: a number in s must come from evidence"):
        fast < 0.5  # noqa: B015
    with pytest.raises(ClaimError, match="is checked by claim"):
        bool(fast < slow)


def test_combinations_scale_and_divide_where_units_allow():
    a, b = q(0.003, "s", "a"), q(1.5, "ms", "b")
    assert ((a * 2).value, (a * 2).unit, (2 * a).key) == (0.006, "s", "a * 2")
    ratio = a / b  # prefixes agree: a dimensionless ratio
    assert (ratio.value, ratio.unit, ratio.key) == (2.0, "", "a / b")
    per_token = a / q(4.0, "tok", "tokens")
    assert (per_token.value, per_token.unit) == (0.00075, "s/tok")
    assert ((a - b).value, (a + b).unit) == (0.0015, "s")
    per_step = a / q(3.0, "", "value(k, params.steps)")  # divided by a count: still seconds
    assert (per_step.value, per_step.unit, per_step.display) == (0.001, "s", None)
    assert (a > b * 2).holds is False and (a >= b * 2).holds is True
    with pytest.raises(ClaimError, match="multiplying s by ms"):
        a * b
    with pytest.raises(ClaimError, match="add or subtract quantities"):
        a + 1


def test_a_false_claim_names_the_sentence_and_both_values():
    a, b = q(0.003, "s", "fit(sweep).c"), q(0.002, "s", "fit(other).c")
    with pytest.raises(ClaimError) as info:
        claims.make((a < b,), "the sweep has the smaller fixed part")
    assert str(info.value) == (
        "claim 'the sweep has the smaller fixed part' is false: fit(sweep).c = 3.00 ms < fit(other).c = 2.00 ms"
    )
    assert claims.make((b < a, b * 2 > a), "ok").sentence == "ok"


def test_truth_changes_re_evaluate_a_claim_with_the_published_values():
    share, bound = q(0.029, "", "kernel_share(k, optimizer)"), q(0.04, "", "share_of(opt, step)")
    row = claims.ledger_row("records/r/v2.md", [share < bound], "the kernel share agrees")
    assert row["key"] == "claim: the kernel share agrees" and row["unit"] == "claim" and row["value"] == 1
    published = [
        {**row, "claim": None},
        {"page": "records/r/v1.md", "key": share.key, "value": 0.059, "evidence": list(share.evidence)},
        {"page": "records/r/v2.md", "key": bound.key, "value": 0.04, "evidence": list(bound.evidence)},
    ]
    (moved,) = claims.truth_changes(published, [row])
    assert (moved.was, moved.old_values) == (False, [0.059, 0.04])
    published[1]["value"] = 0.03
    assert claims.truth_changes(published, [row]) == []  # true then, true now


def _site(tmp: Path, body: str) -> BuildPaths:
    rows = [{"direction": d, "window": w, "gb_s": g} for d, g in (("h2d", 50.0), ("d2h", 40.0)) for w in range(3)]
    ev = Evidence(
        probe="copy",
        probe_version=1,
        params={},
        data={"samples": rows},
        machine={"gpu": None},
        code={},
        created_at="2026-11-29T08:00:00Z",
    )
    ident = Store(tmp / "archive").put(ev)
    (tmp / "docs" / "records" / "r").mkdir(parents=True)
    (tmp / "docs" / "index.md").write_text("# Home\n")
    (tmp / "docs" / "records" / "r" / "v1.md").write_text(
        f"---\ntitle: R\nversion: 1\ndate: 2026-11-30\nevidence:\n  copy: {ident}\n---\n{body}\n"
    )
    return BuildPaths(
        docs=tmp / "docs",
        archive=tmp / "archive",
        build=tmp / "build",
        site=tmp / "site",
        config=REPO / "mkdocs.yml",
        published=tmp / "none.json",
    )


H2D = 'median(copy, "gb_s", direction="h2d")'
D2H = 'median(copy, "gb_s", direction="d2h")'


def test_a_true_claim_renders_its_sentence_and_enters_the_ledger(tmp_path):
    paths = _site(tmp_path, f'Uploads: {{{{ claim({H2D} > {D2H}, "host to device is the faster direction") }}}}.')
    build(paths, site=False)
    page = (paths.tree / "records" / "r" / "v1.md").read_text()
    assert "Uploads: host to device is the faster direction." in page
    (row,) = [r for r in read(paths.tree / "ledger.json") if r["unit"] == "claim"]
    assert row["key"] == "claim: host to device is the faster direction"
    assert row["derivation"] == "median(copy, gb_s, direction=h2d) > median(copy, gb_s, direction=d2h)"
    assert [leaf["value"] for leaf in row["claim"]["leaves"]] == [50.0, 40.0]


def test_a_false_claim_fails_the_build_with_file_line_sentence_and_values(tmp_path):
    paths = _site(tmp_path, f'Fine.\n\n{{{{ claim({H2D} < {D2H} * 1.2, "uploads are slower") }}}}')
    with pytest.raises(PageError) as info:
        build(paths, site=False)
    assert str(info.value) == (
        f"{paths.docs}/records/r/v1.md line 10: claim 'uploads are slower' is false: "
        "median(copy, gb_s, direction=h2d) = 50.0 GB/s < median(copy, gb_s, direction=d2h) * 1.2 = 48.0 GB/s"
    )


def test_changes_page_lists_a_claim_the_published_numbers_made_false(tmp_path):
    body = (
        f'{{{{ {H2D} }}}}, {{{{ {D2H} }}}}: {{{{ claim({H2D} > {D2H}, "host to device is the faster direction") }}}}.'
    )
    paths = _site(tmp_path, body)
    build(paths, site=False)
    rows = read(paths.tree / "ledger.json")
    for row in rows:  # the published ledger had a slower upload: the claim was false then
        if row["key"] == "median(copy, gb_s, direction=h2d)":
            row["value"], row["text"] = 30.0, "30 GB/s"
    write(paths.published_ledger, [r for r in rows if r["unit"] != "claim"])
    build(paths, site=False)
    changes = (paths.tree / "changes.md").read_text()
    assert "## Claims whose truth changed" in changes
    line = html.unescape(next(ln for ln in changes.splitlines() if "host to device is the faster direction" in ln))
    assert "| false: median(copy, gb_s, direction=h2d) = 30, median(copy, gb_s, direction=d2h) = 40 |" in line
    assert "| true: median(copy, gb_s, direction=h2d) = 50, median(copy, gb_s, direction=d2h) = 40 |" in line
