"""The Hessian-vector statistics (measure.curvature): vᵀHv and its sign, the split of H·v's error into curvature
(norm ratio) and direction (cosine) against a reference, and the tolerance verdict, on literal inputs."""

from __future__ import annotations

import math

import pytest

from measure.curvature import error_split, quadratic_error, quadratic_form, verdict


def test_quadratic_form_and_its_sign() -> None:
    assert quadratic_form(6.0, 2.0) == {"vhv_nats": 6.0, "vhv_sign": 1, "rayleigh_nats": 3.0}
    assert quadratic_form(-1.5, 0.5) == {"vhv_nats": -1.5, "vhv_sign": -1, "rayleigh_nats": -3.0}
    assert quadratic_form(0.0, 0.0) == {"vhv_nats": 0.0, "vhv_sign": 0, "rayleigh_nats": None}


def test_the_error_splits_exactly_into_curvature_and_direction() -> None:
    # b = 2a: twice as long, same direction -> rel L2 1, all of it curvature
    same_way = error_split(ref_sq=1.0, other_sq=4.0, dot=2.0)
    assert same_way["norm_ratio"] == 2.0 and same_way["cosine"] == 1.0 and same_way["angle_deg"] == 0.0
    assert same_way["rel_l2"] == 1.0
    assert same_way["curvature_share"] == 1.0 and same_way["direction_share"] == 0.0
    # b ⟂ a, same length -> rel L2 √2, all of it direction
    across = error_split(ref_sq=1.0, other_sq=1.0, dot=0.0)
    assert across["norm_ratio"] == 1.0 and across["angle_deg"] == 90.0
    assert across["rel_l2"] == math.sqrt(2.0)
    assert across["curvature_share"] == 0.0 and across["direction_share"] == 1.0
    # a = (1, 0), b = (0, 2): ‖b − a‖² / ‖a‖² = 5 = (2 − 1)² + 2·2·(1 − 0)
    both = error_split(ref_sq=1.0, other_sq=4.0, dot=0.0)
    assert both["rel_l2"] == math.sqrt(5.0)
    assert both["curvature_share"] == pytest.approx(0.2, abs=1e-15) and both["direction_share"] == 0.8
    assert error_split(0.0, 1.0, 0.0)["rel_l2"] is None


def test_verdicts_against_a_stated_tolerance() -> None:
    close = error_split(ref_sq=1.0, other_sq=1.0, dot=0.9995)  # rel L2 √0.001 ≈ 0.0316
    assert verdict(close, 10.0, 10.2, 0.05) == {
        "verdict": "within tolerance",
        "tolerance": 0.05,
        "vhv_rel_error": quadratic_error(10.0, 10.2),
        "vhv_sign_agrees": True,
    }
    assert verdict(close, 10.0, -10.0, 0.05)["verdict"] == "fails: the sign of vᵀHv"
    assert verdict(close, 10.0, 11.0, 0.05)["verdict"] == "fails: curvature (vᵀHv)"
    across = error_split(ref_sq=1.0, other_sq=1.0, dot=0.0)
    assert verdict(across, 1.0, 1.0, 0.05)["verdict"] == "fails: direction"
    longer = error_split(ref_sq=1.0, other_sq=4.0, dot=2.0)
    assert verdict(longer, 1.0, 1.0, 0.05)["verdict"] == "fails: curvature"
    assert verdict(close, 0.0, 1.0, 0.05)["verdict"] == "undefined: a zero reference"
    assert quadratic_error(4.0, 5.0) == 0.25 and quadratic_error(0.0, 1.0) is None
