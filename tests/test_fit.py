"""Step-scaling fit: exact coefficients on literal samples, term choice, refusals, noise-floor warning, bootstrap."""

from __future__ import annotations

import re

import pytest
from conftest import FIT_JSON_KEYS

from measure.errors import ProbebookError
from render.derive.fit import fit_evidence, fit_step_scaling, quadratic_share
from render.derive.fit_inputs import parse_terms, parse_token_range, step_batch, step_samples, width_key

NOISE = 1e-4  # spread of the synthetic replicates below, seconds


def replicated(fn, sizes, offsets=(-NOISE, 0.0, NOISE)):
    """Samples at each S: fn(S) plus each offset (symmetric offsets keep each mean on fn)."""
    return [(float(s), fn(s) + e) for s in sizes for e in offsets]


def linear(s):
    return 0.01 + 2e-5 * s


def plateau(s):
    return max(0.02, 1e-5 * s)  # launch-bound below 2048 tokens, linear above


SIZES = (512, 1024, 2048, 4096)
PLATEAU_SIZES = (128, 256, 512, 1024, 2048, 4096, 8192)


# -- exact fits -------------------------------------------------------------------------


def test_three_points_on_a_s_plus_b_s2_choose_a_plus_b():
    samples = [(s, 1e-5 * s + 1e-9 * s * s) for s in (1024.0, 2048.0, 4096.0)]
    fit = fit_step_scaling(samples, at=[1024, 4096])
    assert fit.terms == ("a", "b")
    assert fit.c_s == 0.0
    assert fit.a_s_per_token == pytest.approx(1e-5, rel=1e-9)
    assert fit.b_s_per_token2 == pytest.approx(1e-9, rel=1e-9)
    assert fit.asymptote_tok_s is None  # b > 0: no asymptote
    assert fit.quadratic_share["1024"] == pytest.approx(1024 / 11024, rel=1e-9)
    assert fit.quadratic_share["4096"] == pytest.approx(4096 / 14096, rel=1e-9)
    assert fit.max_abs_residual_s == pytest.approx(0.0, abs=1e-15)
    assert fit.n_points == 3 and fit.noise_floor_s is None and fit.ci == {}
    assert any("single sample" in w for w in fit.warnings)


def test_linear_with_replicates_chooses_c_plus_a_exactly():
    fit = fit_step_scaling(replicated(linear, SIZES), at=[4096], batch=4)
    assert fit.terms == ("c", "a")
    assert fit.c_s == pytest.approx(0.01, rel=1e-9)
    assert fit.a_s_per_token == pytest.approx(2e-5, rel=1e-9)
    assert fit.b_s_per_token2 == 0.0
    assert fit.asymptote_tok_s == pytest.approx(4 / 2e-5, rel=1e-9)  # batch / a
    assert fit.quadratic_share == {"4096": 0.0}
    assert fit.noise_floor_s == pytest.approx(NOISE, rel=1e-9)  # pooled SD of (-e, 0, +e) is e
    assert fit.n_points == 4 and fit.n_samples == 12
    assert fit.tokens == (512.0, 1024.0, 2048.0, 4096.0)
    assert fit.warnings == ()
    assert fit.predict(1000.0) == pytest.approx(0.03, rel=1e-9)


def test_auto_does_not_add_a_term_within_the_noise():
    # point means wander by 2/3 of the replicate spread around a line: no curvature to find
    wobble = {512: (1, -1, 2), 1024: (-1, 1, -2), 2048: (2, -1, 1), 4096: (-2, 1, -1), 8192: (1, 0, 1)}
    samples = [(float(s), linear(s) + k * NOISE) for s, ks in wobble.items() for k in ks]
    fit = fit_step_scaling(samples)
    assert fit.terms == ("c", "a")
    assert fit.b_s_per_token2 == 0.0
    assert fit.warnings == ()


def test_quadratic_data_with_four_points_gets_all_three_terms():
    samples = replicated(lambda s: 0.005 + 1e-5 * s + 1e-9 * s * s, (1024, 4096, 16384, 65536, 131072))
    fit = fit_step_scaling(samples)
    assert fit.terms == ("c", "a", "b")
    assert fit.c_s == pytest.approx(0.005, rel=1e-6)
    assert fit.a_s_per_token == pytest.approx(1e-5, rel=1e-6)
    assert fit.b_s_per_token2 == pytest.approx(1e-9, rel=1e-6)


def test_negative_slope_is_clamped_to_zero_with_a_warning():
    fit = fit_step_scaling([(1000.0, 0.05), (2000.0, 0.04), (3000.0, 0.03)], terms="c+a")
    assert fit.terms == ("c", "a")
    assert fit.a_s_per_token == 0.0
    assert fit.c_s == pytest.approx(0.04, rel=1e-12)
    assert fit.residuals_s == pytest.approx((0.01, 0.0, -0.01), abs=1e-15)
    assert fit.max_abs_residual_s == pytest.approx(0.01, rel=1e-9)
    assert fit.asymptote_tok_s is None  # a = 0: no finite asymptote
    assert any("term a fitted as 0" in w for w in fit.warnings)


def test_quadratic_share_formula():
    assert quadratic_share(1e-5, 1e-9, 10000) == pytest.approx(0.5, rel=1e-12)
    assert quadratic_share(0.0, 0.0, 4096) is None


# -- the noise floor ------------------------------------------------------------------


def test_linear_fit_through_a_plateau_warns_residuals_above_noise():
    fit = fit_step_scaling(replicated(plateau, PLATEAU_SIZES), terms="c+a")
    assert fit.noise_floor_s == pytest.approx(NOISE, rel=1e-9)
    assert fit.max_abs_residual_s > 10 * NOISE
    assert len(fit.warnings) == 1
    assert "the point means lie further from the" in fit.warnings[0]
    assert "plateau" in fit.warnings[0]


def test_dropping_the_plateau_with_a_token_range_fits_exactly_without_warning():
    fit = fit_step_scaling(replicated(plateau, PLATEAU_SIZES), tokens=(2048, None))
    assert fit.terms == ("a",)  # the fixed cost is not supported above the plateau
    assert fit.a_s_per_token == pytest.approx(1e-5, rel=1e-9)
    assert fit.c_s == 0.0
    assert fit.n_points == 3
    assert fit.asymptote_tok_s == pytest.approx(1e5, rel=1e-9)
    assert fit.warnings == ()


# -- refusals ---------------------------------------------------------------------------


def test_too_few_points_for_the_named_terms_is_refused_with_the_count_needed():
    samples = [(s, 1e-5 * s) for s in (1024.0, 2048.0, 4096.0)] * 5
    with pytest.raises(ProbebookError) as err:
        fit_step_scaling(samples, terms="c+a+b", source="evidence sha256:abc")
    assert str(err.value) == "fit c+a+b needs at least 4 distinct token counts; evidence sha256:abc has 3"


def test_auto_needs_two_points_and_range_is_named():
    expected = r"fit auto needs at least 2 distinct token counts; the input has 1 in 2048:"
    with pytest.raises(ProbebookError, match=expected):
        fit_step_scaling([(1024.0, 0.01), (2048.0, 0.02)], tokens=(2048, None))


def test_bad_samples_and_arguments_are_refused():
    with pytest.raises(ProbebookError, match=re.escape("the input: sample 1 has tokens=2048, step_s=-0.1")):
        fit_step_scaling([(1024.0, 0.1), (2048.0, -0.1), (4096.0, 0.2)])
    with pytest.raises(ProbebookError, match="lower bound is above the upper"):
        fit_step_scaling(replicated(linear, SIZES), tokens=(4096, 512))
    with pytest.raises(ProbebookError, match="--at widths must be positive"):
        fit_step_scaling(replicated(linear, SIZES), at=[0])
    with pytest.raises(ProbebookError, match="unknown term 'd'"):
        fit_step_scaling(replicated(linear, SIZES), terms="c+d")


# -- parsing ----------------------------------------------------------------------------


def test_parse_token_range():
    assert parse_token_range("512:") == (512, None)
    assert parse_token_range(":4096") == (None, 4096)
    assert parse_token_range("512:4096") == (512, 4096)
    for bad, why in (
        ("512", "give a range"),
        ("a:1", "'a' is not a number"),
        ("4096:512", "lower bound"),
        ("-1:5", "non-negative"),
    ):
        with pytest.raises(ProbebookError, match=why):
            parse_token_range(bad)


def test_parse_terms():
    assert parse_terms("a+b") == ("a", "b")
    assert parse_terms("b+c") == ("c", "b")  # canonical order
    assert parse_terms(" AUTO ") == "auto"
    with pytest.raises(ProbebookError, match="unknown term 'x'"):
        parse_terms("c+x")
    with pytest.raises(ProbebookError, match="repeated"):
        parse_terms("a+a")
    assert width_key(4096.0) == "4096" and width_key(1536.5) == "1536.5"


# -- evidence rows ----------------------------------------------------------------------


def _doc(rows):
    return {"probe": "step-scaling", "data": {"samples": rows}}


def test_step_samples_default_to_fixed_batch_rows_and_skip_missing_times():
    rows = [
        {"tokens": 512, "step_s": 0.02, "batch": 8, "mode": "fixed_batch"},
        {"tokens": 1024, "step_s": None, "batch": 8, "mode": "fixed_batch"},
        {"tokens": 1024, "step_s": 0.03, "batch": 8, "mode": "fixed_batch"},
        {"tokens": 1024, "step_s": 0.05, "batch": 4, "mode": "fixed_tokens"},
    ]
    assert step_samples(_doc(rows)) == [(512.0, 0.02), (1024.0, 0.03)]
    assert step_batch(_doc(rows)) == 8.0
    assert step_samples(_doc(rows), mode="fixed_tokens") == [(1024.0, 0.05)]
    assert step_batch(_doc([{"tokens": 512, "step_s": 0.02}])) == 1.0


def test_step_samples_refuse_mixed_batches_and_missing_modes():
    rows = [{"tokens": 512, "step_s": 0.02, "batch": 8}, {"tokens": 1024, "step_s": 0.03, "batch": 4}]
    with pytest.raises(ProbebookError, match="samples have batch 4, 8; the fit needs a single batch value"):
        step_samples(_doc(rows))
    with pytest.raises(ProbebookError, match="no samples with mode 'fixed_tokens'"):
        step_samples(_doc([{"tokens": 512, "step_s": 0.02, "mode": "fixed_batch"}]), mode="fixed_tokens")
    with pytest.raises(ProbebookError, match=re.escape("no data.samples")):
        step_samples({"probe": "step-scaling", "data": {}})


def test_fit_evidence_uses_the_rows_batch_and_text_range():
    rows = [{"tokens": s, "step_s": v, "batch": 2} for s, v in replicated(plateau, PLATEAU_SIZES)]
    fit = fit_evidence(_doc(rows), tokens="2048:", terms="a")
    assert fit.asymptote_tok_s == pytest.approx(2e5, rel=1e-9)  # batch 2 / a


# -- JSON and bootstrap -----------------------------------------------------------------


def test_to_json_is_exactly_the_design_object():
    fit = fit_step_scaling(replicated(linear, SIZES), at=[1024])
    out = fit.to_json()
    assert list(out) == FIT_JSON_KEYS
    assert out["terms"] == ["c", "a"]
    assert out["b_s_per_token2"] == 0.0
    assert out["quadratic_share"] == {"1024": 0.0}
    assert out["n_points"] == 4
    assert out["residuals_s"] == pytest.approx([0.0] * 4, abs=1e-15)


def test_bootstrap_is_deterministic_and_brackets_the_estimate():
    samples = replicated(linear, SIZES, offsets=(-NOISE, 0.0, 3 * NOISE, NOISE))
    one = fit_step_scaling(samples, bootstrap=100, seed=7)
    two = fit_step_scaling(samples, bootstrap=100, seed=7)
    other = fit_step_scaling(samples, bootstrap=100, seed=8)
    assert one.ci == two.ci
    assert one.ci != other.ci
    assert set(one.ci) == {"c_s", "a_s_per_token", "asymptote_tok_s"}
    for key, value in (
        ("c_s", one.c_s),
        ("a_s_per_token", one.a_s_per_token),
        ("asymptote_tok_s", one.asymptote_tok_s),
    ):
        lo, hi = one.ci[key]
        assert lo < value < hi


def test_identical_replicates_give_zero_width_intervals():
    fit = fit_step_scaling(replicated(linear, SIZES, offsets=(0.0, 0.0)), bootstrap=20)
    assert fit.ci["c_s"] == pytest.approx((0.01, 0.01), rel=1e-9)
    assert fit.ci["a_s_per_token"] == pytest.approx((2e-5, 2e-5), rel=1e-9)
    assert fit.noise_floor_s == 0.0
    assert fit.warnings == ()


# -- the automatic choice keeps a real fixed term (issue 7, defect 4) ---------------------

# One sample at each of four lengths: c + a·S with a fixed part of about a third of the shortest
# step, and ±3% noise. The a-only fit leaves residuals that fall steadily from +55% of the step
# at 1024 tokens to -6% at 8192; the 1% F-test on two degrees of freedom still chose a alone.
FIXED_COST = [(1024.0, 0.006229), (2048.0, 0.007853), (4096.0, 0.011826), (8192.0, 0.020996)]


def test_auto_keeps_a_fixed_term_whose_absence_leaves_a_residual_trend():
    fit = fit_step_scaling(FIXED_COST)
    assert fit.terms == ("c", "a")
    # ordinary least squares through the four points, in exact fractions
    assert fit.c_s == pytest.approx(85747 / 23000000, rel=1e-12)
    assert fit.a_s_per_token == pytest.approx(61317 / 29440000000, rel=1e-12)
    assert not any("steadily" in w for w in fit.warnings)


def test_a_residual_trend_always_warns_without_repeats():
    fit = fit_step_scaling(FIXED_COST, terms="a")
    assert fit.a_s_per_token == pytest.approx(2.7252642463235294e-06, rel=1e-12)  # Σ S·y / Σ S²
    assert fit.warnings[-1] == (
        "the residuals fall steadily from the shortest to the longest sequence (largest 0.00344 s): "
        "the a model has the wrong shape; fit more terms"
    )


def test_a_residual_trend_always_warns_with_repeats():
    fit = fit_step_scaling(replicated(linear, SIZES), terms="a")
    assert len(fit.warnings) == 1
    assert fit.warnings[0].startswith("the residuals fall steadily from the shortest to the longest sequence")


def test_three_exact_points_on_a_line_through_zero_keep_one_term():
    fit = fit_step_scaling([(1024.0, 0.01024), (2048.0, 0.02048), (4096.0, 0.04096)])
    assert fit.terms == ("a",)
    assert fit.a_s_per_token == pytest.approx(1e-5, rel=1e-12)


# -- robustness (issue 7, defect 7) -----------------------------------------------------


def test_one_wild_sample_among_thirteen_is_named_and_left_out():
    samples = [*replicated(linear, SIZES), (2048.0, 1000000.0)]
    fit = fit_step_scaling(samples)
    assert fit.terms == ("c", "a")
    assert fit.c_s == pytest.approx(0.01, rel=1e-9)
    assert fit.a_s_per_token == pytest.approx(2e-5, rel=1e-9)
    assert fit.n_samples == 12 and fit.outliers == ((2048.0, 1e6),)
    assert fit.warnings[0].startswith(
        "outlier left out of the fit: the sample at S=2048 took 1e+06 s where the other samples predict 0.05096 s ("
    )


def test_one_wild_single_sample_among_thirteen_lengths_is_named_and_left_out():
    samples = [(float(s), linear(s)) for s in range(256, 256 * 14, 256)]
    samples[5] = (1536.0, 1e6)
    fit = fit_step_scaling(samples)
    assert (fit.terms, fit.n_points, fit.outliers) == (("c", "a"), 12, ((1536.0, 1e6),))
    assert fit.c_s == pytest.approx(0.01, rel=1e-9)
    assert fit.a_s_per_token == pytest.approx(2e-5, rel=1e-9)
    assert fit.warnings[0] == (
        "outlier left out of the fit: the sample at S=1536 took 1e+06 s where the other samples "
        "predict 0.04072 s (the others fit exactly)"
    )


def test_ordinary_noise_is_not_an_outlier():
    fit = fit_step_scaling(replicated(linear, SIZES, offsets=(-NOISE, 0.0, 3 * NOISE, NOISE)))
    assert fit.outliers == () and fit.n_samples == 16


def test_tiny_magnitudes_fit_in_units_of_the_largest_sample():
    fit = fit_step_scaling([(1.0, 1e-300), (2.0, 2e-300), (3.0, 3e-300)])
    assert fit.terms == ("a",)
    assert fit.a_s_per_token == pytest.approx(1e-300, rel=1e-12)


@pytest.mark.parametrize(
    "samples,message",
    [
        (
            [(1e200, 1e-200), (2e200, 2e-200), (4e200, 4e-200)],
            "the input: term a of the fit is beyond double precision in seconds and tokens "
            "(the samples reach 4e+200 tokens and 4e-200 s)",
        ),
        (
            [(1e-300, 1.0), (2e-300, 2.0), (3e-300, 3.1)],
            "the input: the samples cannot be fitted in double precision (overflow encountered in scalar divide)",
        ),
    ],
)
def test_magnitudes_beyond_double_precision_are_one_line_refusals(samples, message):
    with pytest.raises(ProbebookError) as err:
        fit_step_scaling(samples)
    assert str(err.value) == message


# -- the term rule without replicate noise (issue 23) -------------------------------------------


def test_four_single_samples_on_a_line_give_c_plus_a_not_a_curvature():
    # c + a·S over 128-512 tokens with wiggles of +100, -50, -80, +60 µs: c+a+b would leave one residual
    # degree of freedom and fit the wiggles; the least-squares line is c = 0.01 + 7.5e-6 + 320·1.171875e-7,
    # a = 2e-5 − 0.0096 / 81920
    wiggles = (1e-4, -5e-5, -8e-5, 6e-5)
    fit = fit_step_scaling(
        [(float(s), 0.01 + 2e-5 * s + w) for s, w in zip((128, 256, 384, 512), wiggles, strict=True)]
    )
    assert fit.terms == ("c", "a")
    assert fit.c_s == pytest.approx(0.010045, rel=1e-12)
    assert fit.a_s_per_token == pytest.approx(1.98828125e-5, rel=1e-12)


def test_three_repeated_points_on_a_and_b_still_give_a_plus_b():
    fit = fit_step_scaling(replicated(lambda s: 1e-5 * s + 1e-9 * s * s, (1024, 2048, 4096), (-1e-4, 0.0, 1e-4)))
    assert fit.terms == ("a", "b")
    assert fit.a_s_per_token == pytest.approx(1e-5, rel=1e-9) and fit.b_s_per_token2 == pytest.approx(1e-9, rel=1e-9)


def test_points_flagged_unstable_are_left_out_and_named():
    # the 2048-token point is flagged unstable and lies off the line; the other four are on 0.01 + 1e-5·S
    samples = [{"tokens": s, "step_s": 0.01 + 1e-5 * s + e} for s in (512, 1024, 4096, 8192) for e in (-1e-4, 1e-4)]
    samples += [{"tokens": 2048, "step_s": 0.5}, {"tokens": 2048, "step_s": 0.6}]
    points = [{"tokens": s, "unstable": s == 2048} for s in (512, 1024, 2048, 4096, 8192)]
    doc = {"probe": "step-scaling", "data": {"samples": samples, "points": points}}
    fit = fit_evidence(doc, terms="c+a", bootstrap=50)
    assert (fit.n_points, fit.c_s, fit.a_s_per_token) == (
        4,
        pytest.approx(0.01, rel=1e-9),
        pytest.approx(1e-5, rel=1e-9),
    )
    assert (
        fit.warnings[0] == "points flagged unstable in the evidence (CV over 5%) are left out of the fit: 2048 tokens"
    )
    assert fit_evidence(doc, terms="c+a", bootstrap=50, include_unstable=True).n_points == 5


def test_a_spread_at_rounding_level_is_an_exact_fit_on_every_cpu():
    # residuals of ±1e-16 s (rounding: one CPU's arithmetic leaves 0, another's about 1e-29) still "fit exactly";
    # ±1e-6 s, a thousand timer ticks, is a spread, and the message gives the ratio to it
    for offset, spread in ((1e-16, "the others fit exactly"), (1e-6, "times their spread")):
        samples = [(float(s), linear(s) + offset * (-1) ** i) for i, s in enumerate(range(256, 256 * 14, 256))]
        samples[5] = (1536.0, 1e6)
        fit = fit_step_scaling(samples)
        assert fit.outliers == ((1536.0, 1e6),)
        assert fit.warnings[0].endswith(f"{spread})"), fit.warnings[0]
