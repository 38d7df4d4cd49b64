"""The ``host_wait`` and ``trace_diff`` page functions rendered on a page from archived kernels evidence (issue 43),
and the host-bound mark reading a profile's host-wait share where the evidence records one."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from measure.evidence.attribution import attribute
from render.derive import conditions
from render.evidence.archive import load_evidence
from render.functions.derivations import Library
from render.functions.page import Page
from render.pages import sources
from render.pages.sandbox import PageState, make_environment, render_body

ARCHIVE = Path(__file__).resolve().parent.parent / "archive"
EAGER = "sha256:051dc10c7475de09384f2958954f21bb66fc7af2fe04ace7dee9e3362c2c0199"  # H200 250m eager, kernels v2
LOOPED = "sha256:23cd57e1a6a9ed9dafa8e6cc3d7ca89e729431d7539a7e7ac1a259c3adfa4418"  # H200 moe-250m, kernels v5
GROUPED = "sha256:62fc33c39b32e1553301061952c3e20e5c207667625a488fbc90e81e10c106de"  # same session, grouped experts
ATTRIBUTED = "sha256:" + "a7" * 32
K = [{"correlation": c, "name": "k", "start_us": s, "end_us": e} for c, s, e in ((1, 0, 40), (2, 100, 105))]
L = [{"correlation": 1, "name": "cudaLaunchKernel", "start_us": -3, "end_us": -1},
     {"correlation": 2, "name": "cudaLaunchKernel", "start_us": 70, "end_us": 72}]  # fmt: skip


@pytest.fixture(scope="module")
def docs() -> dict[str, dict]:
    """The archive's documents, and the eager profile with the attribution of a hand-made trace added (not stored)."""
    found = dict(load_evidence(ARCHIVE).docs)
    doc = copy.deepcopy(found[EAGER])
    doc["data"]["attribution"] = attribute(K, L, steps=1)  # busy 45 of 105 µs; waited 60 (launched at 70 > 40)
    found[ATTRIBUTED] = doc
    return found


def shown(docs: dict[str, dict], aliases: dict[str, str], expression: str, tmp_path: Path) -> tuple[str, dict]:
    """The page's Markdown for ``{{ expression }}`` and its ledger rows (key -> Quantity)."""
    rel = "records/x/v1.md"
    page = sources.parse_page(tmp_path / rel, rel, "page", "{{ " + expression + " }}")
    state = PageState(rel)
    body = render_body(
        make_environment({rel: (page.body, str(tmp_path / rel))}), page, Page(Library(docs), aliases).context(), state
    )
    return str(body), dict(state.rows)


def test_host_wait_shows_the_attribution_shares_delay_and_short_kernels(docs, tmp_path) -> None:
    for attr, value in (
        ("busy_share", 45 / 105),
        ("host_wait_share", 60 / 105),
        ("other_idle_share", 0.0),
        ("launch_delay", 16.5e-6),  # delays 3 and 30 µs
        ("short_kernels", 1),  # the 5 µs kernel
    ):
        _, rows = shown(docs, {"k": ATTRIBUTED}, f"host_wait(k).{attr}", tmp_path)
        (q,) = rows.values()
        assert q.value == pytest.approx(value), attr
        assert q.evidence == (ATTRIBUTED,)
    text, _ = shown(docs, {"k": ATTRIBUTED}, "host_wait(k).host_wait_share", tmp_path)
    assert "57.1%" in text


def test_host_wait_of_a_profile_without_attribution_says_why(docs, tmp_path) -> None:
    _, rows = shown(docs, {"k": EAGER}, "host_wait(k).busy_share", tmp_path)
    (q,) = rows.values()
    assert q.value is None and "kernels v7 on a GPU records it" in (q.note or "")


def test_trace_diff_tables_each_category_and_the_kernels_that_moved(docs, tmp_path) -> None:
    text, _ = shown(docs, {"a": LOOPED, "b": GROUPED}, "trace_diff(a, b, top=3)", tmp_path)
    assert "a (ms/step)" in text and "change (ms/step)" in text
    looped, grouped = docs[LOOPED], docs[GROUPED]
    # the 'all' row: each side's summed kernel time over its own profiled steps, as kernel_time() reads it
    from render.derive import kernels

    a = kernels.kernel_seconds_per_step(looped["data"]["samples"], looped["params"]["steps"])
    b = kernels.kernel_seconds_per_step(grouped["data"]["samples"], grouped["params"]["steps"])
    diff = kernels.trace_diff(looped["data"]["samples"], looped["params"]["steps"], grouped["data"]["samples"],
                              grouped["params"]["steps"], top=3)  # fmt: skip
    (whole,) = [r for r in diff if r["category"] == "all"]
    assert (whole["a_s"], whole["b_s"]) == (pytest.approx(a), pytest.approx(b))
    assert len([r for r in diff if r["kernel"]]) == 3


def test_the_host_bound_mark_reads_the_host_wait_share_first(docs) -> None:
    doc = docs[ATTRIBUTED]
    assert conditions.host_wait_share(doc) == pytest.approx(60 / 105)
    marks = dict(conditions.run_marks(doc))
    assert marks["host-bound"].startswith("host-bound: the GPU sat idle waiting for the host's next launch 57%")
    calm = copy.deepcopy(doc)
    calm["data"]["attribution"]["host_wait_share"] = 0.1  # busy share (consistency ratio) no longer decides
    calm["data"]["consistency"] = {"ratio": 0.3}
    assert "host-bound" not in dict(conditions.run_marks(calm))
