"""H·v over an epoch of data batches on literal inputs: the probe's epoch statistics (measure.curvature), their
reading by render (derive and the ``hvp_epoch`` page function, its basis stated) and older hvp evidence, which has
none, still rendering."""

from __future__ import annotations

import math
from typing import Any

import pytest

from measure.curvature import EPOCH_BASIS, epoch_statistics, spread
from measure.errors import ProbebookError
from render.derive import correctness
from render.functions.correctness import hvp, hvp_epoch
from render.functions.derivations import Library
from render.functions.page import Page

ROWS = [
    {"vhv_nats": 1.0, "rel_l2_vs_float64": 0.25, "vhv_rel_error": 0.5, "vhv_sign_agrees": True},
    {"vhv_nats": 2.0, "rel_l2_vs_float64": 0.5, "vhv_rel_error": None, "vhv_sign_agrees": True},
    {"vhv_nats": 3.0, "rel_l2_vs_float64": 0.75, "vhv_rel_error": 0.25, "vhv_sign_agrees": False},
]
VERDICTS = ("within tolerance", "fails: direction", "within tolerance")


def _rows() -> list[dict[str, Any]]:
    return [{**r, "verdict": v} for r, v in zip(ROWS, VERDICTS, strict=True)]


def test_spread_of_literal_values():
    assert spread([1.0, 2.0, 3.0]) == {"n": 3, "mean": 2.0, "sd": 1.0, "min": 1.0, "max": 3.0}
    assert spread([4.0]) == {"n": 1, "mean": 4.0, "sd": None, "min": 4.0, "max": 4.0}
    assert spread([]) == {"n": 0, "mean": None, "sd": None, "min": None, "max": None}


def test_epoch_statistics_of_literal_rows():
    stats = epoch_statistics(_rows())
    assert stats["batches"] == 3 and stats["basis"] == EPOCH_BASIS
    assert stats["vhv_nats"] == {"n": 3, "mean": 2.0, "sd": 1.0, "min": 1.0, "max": 3.0}
    assert stats["rel_l2_vs_float64"] == {"n": 3, "mean": 0.5, "sd": 0.25, "min": 0.25, "max": 0.75}
    # a batch whose relative error of vᵀHv is undefined (a zero reference) is left out of that spread only
    assert stats["vhv_rel_error"] == {"n": 2, "mean": 0.375, "sd": math.sqrt(0.03125), "min": 0.25, "max": 0.5}
    assert stats["rel_l2_vs_fp32"]["n"] == 0
    # the first row is the timed batch: its verdict is the one the others agree with or not
    assert stats["verdict_agrees_share"] == 2 / 3
    assert stats["within_tolerance_share"] == 2 / 3
    assert stats["sign_agrees_share"] == 2 / 3
    with pytest.raises(ValueError):
        epoch_statistics([])


IDENT = "sha256:" + "7" * 64


def _doc(epoch: bool) -> dict[str, Any]:
    cand: dict[str, Any] = {
        "method": "double-backward",
        "mode": "eager",
        "dtype": "bf16",
        "batch": 1,
        "status": "ok",
        "first_call_s": 0.5,
        "warm_median_s": 0.1,
        "warm_times_s": [0.1, 0.1, 0.1],
        "tok_s": 160.0,
        "rel_l2_vs_float64": 0.25,
        "vhv_nats": 1.0,
        "verdict": "within tolerance",
    }
    if epoch:
        cand["epoch"] = epoch_statistics(_rows())
    return {
        "probe": "hvp",
        "probe_version": 4 if epoch else 3,
        "params": {"device": "cpu", "batches": [1], "seq_len": 16},
        "data": {"candidates": [cand], "references": [{"batch": 1, "fp32": {"vhv_nats": 1.0}}]},
    }


def test_the_derived_epoch_is_flat_and_named():
    which = correctness.Candidate("double-backward", "eager", "bf16", 1)
    flat = correctness.hvp_epoch(_doc(True)["data"], which)
    assert (flat["batches"], flat["vhv_mean"], flat["vhv_sd"], flat["vhv_min"], flat["vhv_max"]) == (3, 2.0, 1.0, 1, 3)
    assert (flat["error_mean"], flat["vhv_error_mean"], flat["error_fp32_mean"]) == (0.5, 0.375, None)
    assert (flat["agree"], flat["within"], flat["sign"]) == (2 / 3, 2 / 3, 2 / 3)
    with pytest.raises(ProbebookError, match="no epoch statistics: it was measured on one batch"):
        correctness.hvp_epoch(_doc(False)["data"], which)


def test_the_page_function_states_its_basis_and_older_evidence_still_renders():
    page = Page(Library({IDENT: _doc(True)}), {"h": IDENT})
    view = hvp_epoch(page, "h")
    assert (view.batches.value, view.vhv_mean.value, view.vhv_sd.value, view.agree.value) == (3, 2.0, 1.0, 2 / 3)
    assert view.agree.text == "67%" and view.vhv_mean.unit == "nats"
    assert "not across sessions" in view.vhv_sd.derivation and "3 data batches" in view.vhv_sd.derivation
    assert view.vhv_sd.uncertainty is None and view.vhv_sd.basis == "observed"
    assert view.error_fp32_mean.value is None and view.error_fp32_mean.note == "no batch of the epoch recorded it"
    assert view.vhv_mean.evidence == (IDENT,)
    old = Page(Library({IDENT: _doc(False)}), {"h": IDENT})
    assert hvp(old, "h").vhv.value == 1.0  # a v3 candidate reads as before
    with pytest.raises(ProbebookError, match=r"hvp_epoch\(\): h .*no epoch statistics"):
        hvp_epoch(old, "h")
