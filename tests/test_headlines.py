"""Headline derivations: the GEMM ceiling of a step's workload mix (literal inputs, exact values) and the page
function that gives it from archived gemm evidence, beside the probe's own figure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from measure.errors import ProbebookError
from render.derive.gemm import GemmShape, workload_ceiling_flop_s
from render.functions.derivations import Library
from render.functions.kernels import gemm_ceiling
from render.functions.page import Page

REPO = Path(__file__).resolve().parent.parent
H200_GEMM = "sha256:d6470145f6e2e759da5f2c87d6be7b09d2b02674632592ce7394cb6d5eb50918"


def _shape(name: str, m: int, n: int, k: int, median_s: float) -> GemmShape:
    return GemmShape(name, m, n, k, 5, median_s, 0.0, 0.0)


def test_workload_ceiling_weighs_each_shape_by_its_count() -> None:
    shapes = [_shape("a", 1000, 1000, 500, 0.001), _shape("b", 2000, 1000, 1000, 0.002), _shape("sq", 10, 10, 10, 1.0)]
    # a: 2·1000·1000·500 = 1e9 FLOPs in 1 ms; b: 4e9 FLOPs in 2 ms; the square reference (count 0) weighs nothing
    assert workload_ceiling_flop_s(shapes, {"a": 2, "b": 1, "sq": 0}) == (2 * 1e9 + 4e9) / (2 * 0.001 + 0.002)
    assert workload_ceiling_flop_s(shapes, {"b": 3}) == 4e9 / 0.002
    with pytest.raises(ProbebookError, match="no shape the step runs"):
        workload_ceiling_flop_s(shapes, {"sq": 0})
    with pytest.raises(ProbebookError, match="shape 'a': its count must be a whole number"):
        workload_ceiling_flop_s(shapes, {"a": -1})


def test_page_function_recomputes_the_probes_own_weighted_ceiling_from_the_windows() -> None:
    path = REPO / "archive" / "evidence" / "sha256" / H200_GEMM[7:9] / f"{H200_GEMM[9:]}.json"
    doc = json.loads(path.read_bytes())
    page = Page(Library({H200_GEMM: doc}), {"gemm": H200_GEMM})
    q = gemm_ceiling(page, page.refs["gemm"], shape="workload")
    assert q.unit == "FLOP/s" and q.key == "gemm_ceiling(gemm, shape='workload')"
    # the probe stored its own figure from its per-shape medians; render's, from the raw windows, agrees
    assert q.value == pytest.approx(doc["data"]["ceiling"]["flop_weighted_tflop_s"] * 1e12, rel=1e-3)
    assert "over the 18 shapes a step runs" in q.derivation
