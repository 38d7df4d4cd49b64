"""Inline claims held to their intervals (issue 23): a number's interval ends as numbers of their own
(``Quantity.low`` / ``.high``), a current page's claim that today's 95% intervals do not resolve refused in one
line naming the file, a superseded version's marked, and a claim that two numbers are not resolved apart."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import SITE_FIXTURE, fixture_site_paths

from measure.errors import ProbebookError
from render.assemble.stages import render_tree
from render.derive import basis
from render.numbers import legend
from render.numbers.quantity import Quantity


def _q(value: float, uncertainty: tuple[float, float] | None = None, **kw: object) -> Quantity:
    return Quantity(value=value, unit="s", uncertainty=uncertainty, key="median(run, step_s)", **kw)  # type: ignore[arg-type]


def test_an_interval_s_ends_are_numbers_of_their_own_in_its_unit() -> None:
    q = _q(0.1234, (0.12, 0.13), evidence=("sha256:" + "a" * 64,), derivation="median of 5 windows")
    low, high = q.low, q.high
    assert (low.value, high.value, low.unit, high.unit) == (0.12, 0.13, "s", "s")
    assert (low.key, high.key) == ("median(run, step_s).low", "median(run, step_s).high")
    assert low.uncertainty is None and low.stated_basis == basis.END and low.evidence == q.evidence
    assert low.derivation == "the low end of the 95% interval of median(run, step_s): median of 5 windows"
    assert (low <= high).holds is True and (high < low).holds is False  # ends compare as numbers of one unit


def test_an_exact_number_is_its_own_end_and_a_measured_one_without_an_interval_has_none() -> None:
    exact = _q(4.0, exact=True)
    assert (exact.low.value, exact.high.value, exact.low.stated_basis) == (4.0, 4.0, basis.EXACT)
    with pytest.raises(ProbebookError, match=r"median\(run, step_s\)\.low: .* no interval to take an end of"):
        _ = _q(0.5, basis=basis.FEW).low
    with pytest.raises(ProbebookError, match=r"has no value \(no windows\)"):
        _ = Quantity(value=None, unit="s", key="k", note="no windows").high


UNRESOLVED = (
    '{{ claim(paired(ablation, "no-optimizer").saving > paired(ablation, "no-optimizer").low, '
    '"the saving is above its own low end") }}'
)
"""True by value, but the left side's interval reaches down to the number it is said to exceed."""
OVERLAP = (
    '{{ claim(paired(ablation, "no-optimizer").saving.low <= paired(ablation, "no-optimizer").saving.high, '
    '"the saving is not resolved apart from itself") }}'
)


def _docs_with_paragraph(tmp: Path, paragraph: str) -> Path:
    docs = tmp / "docs"
    shutil.copytree(SITE_FIXTURE / "docs", docs)
    page = docs / "records" / "step-time" / "v2.md"
    page.write_text(page.read_text(encoding="utf-8") + f"\n{paragraph}\n", encoding="utf-8")
    return docs


def test_a_current_page_s_claim_its_intervals_do_not_resolve_is_refused_in_one_line(tmp_path: Path) -> None:
    docs = _docs_with_paragraph(tmp_path, UNRESOLVED)
    with pytest.raises(ProbebookError) as err:
        render_tree(fixture_site_paths(tmp_path, docs))
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith(f"{docs / 'records' / 'step-time' / 'v2.md'} line ")
    assert "claim 'the saving is above its own low end' is not resolved: " in text
    assert "its 95% interval reaches the line, so it is not resolved" in text


def test_a_superseded_page_s_unresolved_claim_is_shown_marked_and_a_not_resolved_claim_holds(tmp_path: Path) -> None:
    docs = _docs_with_paragraph(tmp_path, UNRESOLVED)
    v2 = (docs / "records" / "step-time" / "v2.md").read_text(encoding="utf-8")
    later = v2.replace(UNRESOLVED, OVERLAP).replace("version: 2\n", "version: 3\n", 1)
    (docs / "records" / "step-time" / "v3.md").write_text(later, encoding="utf-8")
    paths = fixture_site_paths(tmp_path, docs)
    render_tree(paths)
    old = (paths.tree / "records" / "step-time" / "v2.md").read_text(encoding="utf-8")
    new = (paths.tree / "records" / "step-time" / "v3.md").read_text(encoding="utf-8")
    assert f"the saving is above its own low end {legend.sign_markdown(legend.UNRESOLVED)}" in old
    assert "the saving is not resolved apart from itself" in new and legend.UNRESOLVED.symbol not in new
    rows = json.loads((paths.tree / "ledger.json").read_text(encoding="utf-8"))["rows"]
    claim = next(r for r in rows if r["key"] == "claim: the saving is not resolved apart from itself")
    assert claim["text"] == "true" and claim["page"] == "records/step-time/v3.md"
    level = [r["page"] for r in rows if r["key"] == "constant(ci_level)"]
    assert level == ["records/step-time/v2.md"]  # the mark names the level; only the page with a mark shows it
