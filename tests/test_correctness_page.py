"""agreement(), hvp(), hvp_speedup() and stream() on real tiny CPU evidence: values as the probes recorded them."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import render_page

from render.derive import correctness
from render.evidence.archive import load_evidence
from render.functions.derivations import Library
from render.pages.sandbox import PageError, PageState

ARCHIVE = Path(__file__).resolve().parent / "fixtures" / "correctness" / "archive"
AGREE = "sha256:8470ea3a14dd877844c3923cec44e13db6d59e0bfe1578c9b0e2502b8e6f5059"
STREAM = "sha256:9119ce668cc38cf436f577fa22eaa81f2b10e3927a522bc8fbfa3090cb9d57ea"
HVP = "sha256:3bd8e982da7d260dbc176450d87e2281caf8e6cfbda962de1d44090429cd0a0f"


@pytest.fixture(scope="module")
def library() -> Library:
    return Library(load_evidence(ARCHIVE).docs)


def render(library: Library, body: str, tmp_path: Path) -> tuple[str, PageState]:
    return render_page(library, {"agr": AGREE, "st": STREAM, "h": HVP}, body, tmp_path)


def test_pure_ratios():
    assert correctness.times_noise(3e-3, 1e-3) == 3.0
    assert correctness.times_noise(3e-3, 0.0) is None
    assert correctness.speedup(3.0, 1.5) == 2.0
    assert correctness.first_call_extra(2.5, 0.5) == 2.0


def test_agreement_values_are_the_recorded_ones(library: Library, tmp_path: Path) -> None:
    body = " ".join(
        f"{{{{ agreement(agr, {arm!r}).{name} }}}}"
        for arm in ("bf16", "identical", "perturbed")
        for name in ("grads", "noise_grads", "limit_grads", "passed", "logits")
    )
    _, state = render(library, body, tmp_path)
    rows = dict(state.rows)
    samples = {(r["arm"], r["quantity"]): r for r in library.docs[AGREE]["data"]["samples"]}
    for arm in ("bf16", "identical", "perturbed"):
        assert rows[f"agreement(agr, {arm}).grads"].value == samples[(arm, "grads")]["rel_l2"]
        assert rows[f"agreement(agr, {arm}).limit_grads"].value == samples[(arm, "grads")]["limit"]
        assert rows[f"agreement(agr, {arm}).noise_grads"].value == samples[(arm, "grads")]["noise_floor"]
    assert rows["agreement(agr, identical).grads"].value == 0.0
    assert rows["agreement(agr, identical).passed"].value == 1
    assert rows["agreement(agr, perturbed).passed"].value == 0


def test_agreement_claims_and_missing_logits(library: Library, tmp_path: Path) -> None:
    text, state = render(
        library,
        '{{ claim(agreement(agr, "bf16").grads <= agreement(agr, "bf16").limit_grads, "bf16 agrees.") }} '
        '{{ agreement(agr, "chunked").logits }}',
        tmp_path,
    )
    assert "bf16 agrees" in text
    chunked = dict(state.rows)["agreement(agr, chunked).logits"]
    assert chunked.value is None and "no full logits" in chunked.note
    with pytest.raises(PageError, match="no arm 'fast'"):
        render(library, '{{ agreement(agr, "fast").grads }}', tmp_path)


def test_stream_values(library: Library, tmp_path: Path) -> None:
    _, state = render(
        library,
        '{{ stream(st, "streamed-d1").stall_share }} {{ stream(st, "resident").tok_s }} '
        '{{ stream(st, "resident").stall }} {{ share_of(stream(st, "resident").tok_s, stream(st).tok_s) }}',
        tmp_path,
    )
    rows = dict(state.rows)
    arms = {a["arm"]: a for a in library.docs[STREAM]["data"]["arms"]}
    assert rows["stream(st, streamed-d1).stall_share"].value == arms["streamed-d1"]["stall_share"]
    assert rows["stream(st, resident).tok_s"].value == arms["resident"]["tok_s"]
    assert rows["stream(st, resident).stall"].value is None  # the resident arm has no per-layer events
    ratio = rows["share_of(stream(st, resident).tok_s, stream(st, streamed-d1).tok_s)"].value
    assert ratio == arms["resident"]["tok_s"] / arms["streamed-d1"]["tok_s"]


def test_hvp_values_speedup_and_selection(library: Library, tmp_path: Path) -> None:
    _, state = render(
        library,
        '{{ hvp(h, "double-backward", "eager", "fp32", 1).warm }} '
        '{{ hvp(h, "double-backward", "eager", "fp32", 1).error }} '
        '{{ hvp_speedup(h, "double-backward", "forward-over-reverse", dtype="fp32") }} '
        '{{ hvp(h, dtype="fp32", selected=True).tok_s }}',
        tmp_path,
    )
    rows = dict(state.rows)
    cands = {(c["method"], c["dtype"]): c for c in library.docs[HVP]["data"]["candidates"]}
    db, fr = cands[("double-backward", "fp32")], cands[("forward-over-reverse", "fp32")]
    assert rows["hvp(h, double-backward, eager, fp32, 1).warm"].value == db["warm_median_s"]
    assert rows["hvp(h, double-backward, eager, fp32, 1).error"].value == db["rel_l2_vs_float64"]
    speedup = rows["hvp_speedup(h, double-backward, forward-over-reverse, fp32, 1)"].value
    assert speedup == db["warm_median_s"] / fr["warm_median_s"]
    best = max((db, fr), key=lambda c: c["tok_s"])
    assert rows["hvp(h, selected, fp32).tok_s"].value == best["tok_s"]
    with pytest.raises(PageError, match="failed"):  # forward-over-reverse under bf16 autocast could not run
        render(library, '{{ hvp(h, "forward-over-reverse", "eager", "bf16", 1).warm }}', tmp_path)
