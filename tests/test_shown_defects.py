"""Regression tests for numbers that were wrong as shown (issue 23, items 1-11), on literal inputs with exact values."""

from __future__ import annotations

import pytest
from conftest import synthetic_doc as doc

from measure.errors import ProbebookError
from measure.evidence.flops import attention_flops_per_token, training_flops_per_token
from measure.evidence.kernel_names import categorize
from render.derive import batchsweep, campaign, fit, kernels, lossmem, scaling
from render.numbers import directions
from render.numbers.quantity import Quantity
from render.tables import kinds

ID = "sha256:" + "ab" * 32


def _saving(value: float) -> Quantity:
    return Quantity(value=value, unit="", fmt=".1%", key="saving(abl, no-optimizer)", bounded=True, evidence=(ID,))


# -- item 1: a product's format follows its unit; a saving beyond ±100% is refused -----------------


def test_a_saving_times_a_time_is_a_time_not_a_percent():
    base = Quantity(value=0.25, unit="s", fmt=".3g", display="ms", key="median(abl)", evidence=(ID,))
    saved = (_saving(0.0041) * base).to("ms")
    assert (saved.unit, saved.fmt, saved.text) == ("s", ".3g", "1.03 ms")
    assert (base * _saving(0.0041)).to("ms").text == "1.03 ms"  # either order


def test_a_ratio_over_a_time_takes_no_percent_format():
    per = _saving(0.5) / Quantity(value=2.0, unit="s", key="t")
    assert (per.unit, per.fmt, per.text) == ("1/s", ".3g", "0.250 1/s")


def test_two_unitless_sides_keep_the_left_format():
    assert (_saving(0.5) * Quantity(value=0.5, unit="", fmt=".2f", key="r")).text == "25.0%"


@pytest.mark.parametrize("value", [1.029, -1.5])
def test_a_saving_beyond_a_hundred_percent_is_refused(value: float):
    with pytest.raises(ProbebookError, match=r"saving\(abl, no-optimizer\) is (102\.9|-150\.0)%: a saving or share"):
        _saving(value)


def test_a_saving_of_exactly_a_hundred_percent_is_allowed():
    assert _saving(-1.0).text == "\u2212100.0%"


# -- item 2: the loss-memory table's tokens per step ---------------------------------------------


def test_step_tokens_is_microbatch_times_context():
    assert lossmem.step_tokens(4, 2048) == 8192
    with pytest.raises(ProbebookError, match="whole microbatch >= 1, got 0"):
        lossmem.step_tokens(0, 2048)


def test_loss_memory_table_shows_the_tokens_a_step_processes():
    rows = [
        {"arm": "materialized", "microbatch": m, "tokens_per_step": 2048, "peak_bytes": 2**30, "tok_s": 1000.0}
        for m in (1, 2, 8)
    ]
    out = kinds.render("loss-memory", [doc("loss-memory", rows)])
    table = [line for line in out.markdown.splitlines() if line.startswith("|")]  # below the constant columns' note
    at = [cell.strip() for cell in table[0].split("|")].index("tokens/step")
    assert [line.split("|")[at].strip() for line in table[2:]] == ["2,048", "4,096", "16,384"]


# -- item 3: throughput of all GPUs together -----------------------------------------------------


def test_all_gpus_throughput_is_gpus_times_per_gpu():
    assert scaling.all_gpus_tok_s(85_300.0, 2) == 170_600.0
    with pytest.raises(ProbebookError, match="whole number of GPUs >= 1, got 0"):
        scaling.all_gpus_tok_s(85_300.0, 0)


def test_ddp_summary_carries_both_throughputs():
    rows = [{"phase": "step", "gpus": 1, "step_s": 0.5}, {"phase": "step", "gpus": 2, "step_s": 0.625}]
    rows += [{"phase": "comm", "gpus": 2, "step_s": 0.75, "comm_s": 0.25, "exposed_s": 0.0625}]
    s = scaling.summarize({"params": {"gpus": 2, "tokens_per_rank": 1000}, "data": {"samples": rows, "grad_bytes": 8}})
    assert (s.tok_s_1, s.tok_s_n, s.tok_s_all) == (2000.0, 1600.0, 3200.0)


# -- item 4: a label that states a direction is checked -----------------------------------------


def _speedup(value: float, order: tuple[str, str] | None = None) -> Quantity:
    return Quantity(value=value, unit="", fmt=".3g", key="hvp_speedup(small)", order=order)


def test_a_label_naming_the_slower_method_first_as_a_speed_up_is_refused():
    q = _speedup(1.93, ("double-backward", "forward-over-reverse"))
    with pytest.raises(ProbebookError, match="names forward-over-reverse first and says faster"):
        directions.check_label("forward-over-reverse against double backward (speed-up)", q, "v2.md")
    directions.check_label("double backward against forward-over-reverse (speed-up)", q, "v2.md")


def test_a_speed_up_below_one_and_a_negative_saving_are_refused():
    with pytest.raises(ProbebookError, match=r"says faster, but hvp_speedup\(small\) = 0.800 is not above 1"):
        directions.check_label("compiled against eager (speed-up)", _speedup(0.8), "v6.md")
    with pytest.raises(ProbebookError, match=r"says faster, but .* = \u22122.0% is not above 0%"):
        directions.check_label("what the graph saves (saving)", _saving(-0.02), "v6.md")
    with pytest.raises(ProbebookError, match=r"says faster, but saved = \u22122.00 s is not above 0"):
        directions.check_label("what bucketing saves", Quantity(value=-2.0, unit="s", key="saved"), "v1.md")
    directions.check_label("what bucketing saves", Quantity(value=2.0, unit="s", key="saved"), "v1.md")


def test_a_slowdown_label_names_the_slower_first_and_labels_without_direction_pass():
    q = _speedup(1.5, ("eager", "compiled"))
    directions.check_label("compiled against eager (slowdown)", q, "x.md")
    with pytest.raises(ProbebookError, match="names eager first and says slower"):
        directions.check_label("eager against compiled (slowdown)", q, "x.md")
    assert directions.stated_direction("throughput of all GPUs together") is None
    directions.check_label("fixed part of the step", _speedup(0.5), "x.md")


# -- item 9: cuDNN's attention helper kernels ----------------------------------------------------

COMPUTE_DOT = "void cudnn::fusion::compute_dot_do_o_specialized<true, 64>(void const*, void const*, void*)"
CONVERT_DQ = "void cudnn::fusion::convert_dq_to_16bits<true>(void const*, void*, unsigned int)"


def test_cudnn_attention_helpers_are_attention():
    assert (categorize(COMPUTE_DOT), categorize(CONVERT_DQ)) == ("attention", "attention")
    assert categorize("Memset (Device)") == "other"


def test_archived_categories_are_read_again_from_the_kernel_names():
    rows = [
        {"kernel": COMPUTE_DOT, "category": "other", "device_time_s": 0.25},
        {"kernel": CONVERT_DQ, "category": "other", "device_time_s": 0.25},
        {"kernel": "cudnn_generated_fort_native_sdpa_sm90", "category": "attention", "device_time_s": 1.0},
        {"kernel": "Memset (Device)", "category": "other", "device_time_s": 0.5},
    ]
    assert kernels.category_time_s(rows) == {"attention": 1.5, "other": 0.5}
    assert kernels.category_shares(rows) == {"attention": 0.75, "other": 0.25}


# -- item 8: "no batch fits" only when none does -------------------------------------------------


def _group(largest: int | None, unstable: tuple[int, ...]) -> batchsweep.BatchSummary:
    return batchsweep.BatchSummary(
        model="250m",
        params=250_000_000,
        context=2048,
        fastest_stable_batch=None,
        fastest_tok_s=None,
        largest_fitting_batch=largest,
        first_oom_batch=16,
        unstable_batches=unstable,
    )


def test_no_fastest_batch_says_why():
    assert batchsweep.no_fastest_reason(_group(None, ())) == "no batch fits"
    assert batchsweep.no_fastest_reason(_group(8, (1, 2, 4, 8))) == (
        "every batch that fits is unstable (CV over 5%): 1, 2, 4, 8"
    )


# -- item 10: campaign phase averages over the points that ran the phase ---------------------------


def test_phase_means_leave_out_points_that_never_reached_the_phase():
    points = [
        {"point": p, "attempts": [{"submitted_unix": 0.0, "ended_unix": 1.0, "result": {"imports_s": 4.0}}]}
        for p in ("b1", "b2", "b4")
    ]
    rows = [
        {"point": "b1", "status": "ok", "setup_s": 0.25, "timed_s": 2.0},
        {"point": "b2", "status": "ok", "setup_s": 0.25, "timed_s": 3.0},
        {"point": "b4", "status": "oom", "setup_s": 0.5, "timed_s": None},
    ]
    means = campaign.per_point(campaign.wall_time(points, rows))
    assert (means["setup_s"], means["timed_s"], means["imports_s"]) == (1.0 / 3, 2.5, 4.0)  # not 5.0 / 3


# -- item 11: a sliding window's local layers count attention over the window ----------------------


def test_windowed_attention_flops_count_local_layers_over_the_window():
    assert attention_flops_per_token(4, 2, 8, 2048) == 12 * 2 * 8 * 4 * 2048 == 1_572_864
    # every layer local, window 512: a quarter of the full count
    assert attention_flops_per_token(4, 2, 8, 2048, window=512) == 12 * 2 * 8 * 4 * 512 == 393_216
    # every second layer global: two layers over 2048 keys, two over 512
    assert attention_flops_per_token(4, 2, 8, 2048, window=512, global_every=2) == 192 * (512 + 2048) * 2 == 983_040
    # a window longer than the sequence sees the whole sequence
    assert attention_flops_per_token(4, 2, 8, 256, window=512) == attention_flops_per_token(4, 2, 8, 256)
    assert training_flops_per_token(10, 10, 4, 2, 8, 2048, 512) == 60 + 393_216
    with pytest.raises(ProbebookError, match="sliding window must be a whole number of keys >= 1, got 0"):
        attention_flops_per_token(4, 2, 8, 2048, window=0)


# -- item 7: the lack-of-fit warning agrees with its own test and gives no command --------------------


def test_lack_of_fit_warning_compares_a_residual_with_its_mean_standard_error():
    text = fit.lack_of_fit_warning(
        [0.125, -0.25, 0.0625], [4, 4, 16], [512.0, 1024.0, 2048.0], 0.25, 9.5, 0.004, ("c", "a")
    )
    assert text == (
        "the point means lie further from the c+a model than their own noise allows: at 1,024 tokens the mean "
        "misses it by 0.25 s, against a standard error of 0.125 s for a mean of 4 samples (lack-of-fit F=9.5, "
        "p=0.004); the model misses structure in these points (a fixed-cost plateau at short sequences, say), so "
        "the terms taken from it, and their intervals, are less certain than the intervals show"
    )
    assert "--tokens" not in text


# -- a headline whose interval contains zero is marked -------------------------------------------


def test_a_headline_whose_interval_spans_zero_is_marked_within_noise():
    spans = Quantity(value=-0.0067, unit="", fmt=".1%", key="s", uncertainty=(-0.0104, 0.0003))
    clear = Quantity(value=0.025, unit="", fmt=".1%", key="s", uncertainty=(0.009, 0.035))
    assert (directions.headline_mark(spans), directions.headline_mark(clear)) == ("within noise", None)
    assert directions.headline_mark(Quantity(value=1.0, unit="s", key="t")) is None


# -- the fastest stable batch and its runner-up ----------------------------------------------------


def test_a_runner_up_within_the_noise_of_the_gap_is_a_tie():
    # standard errors 1000·0.04/√16 = 10 and 990·0.04/√16 = 9.9 tok/s: the gap of 10 is within 1.96·14.07
    assert batchsweep.tied(1000.0, 0.04, 16, 990.0, 0.04, 16) is True
    # standard errors 1000·0.004/√16 = 1 and 0.99: a gap of 10 is over 1.96·1.407
    assert batchsweep.tied(1000.0, 0.004, 16, 990.0, 0.004, 16) is False


def test_a_batch_point_interval_is_its_normal_interval_from_cv_and_windows():
    # standard error 1000·0.04/√16 = 10 tok/s; 95%: ±19.6
    assert batchsweep.throughput_interval(1000.0, 0.04, 16) == pytest.approx((980.4, 1019.6), rel=1e-12)
    rows = [{"status": "ok", "batch": 8, "cv": 0.04, "windows": 16}, {"status": "oom", "batch": 16}]
    assert batchsweep.point_interval(rows, 8, 1000.0) == pytest.approx((980.4, 1019.6), rel=1e-12)
    assert batchsweep.point_interval([{"status": "ok", "batch": 8}], 8, 1000.0) is None  # no CV: none


def test_summarize_names_the_runner_up_and_the_tie():
    rows = [
        {"model": "m", "params": 10, "context": 512, "batch": b, "tok_s": t, "status": "ok", "cv": 0.04, "windows": 16}
        for b, t in ((1, 500.0), (2, 990.0), (4, 1000.0))
    ]
    (g,) = batchsweep.summarize(rows)
    assert (g.fastest_stable_batch, g.runner_up_batch, g.tie) == (4, 2, True)


# -- a model that fails its own test marks every number taken from it ------------------------------


def test_numbers_from_a_fit_that_fails_its_lack_of_fit_test_carry_the_mark():
    from render.functions.step_scaling import FitView
    from render.functions.views import EvidenceRef

    plateau = [(float(s), max(0.05, 1e-5 * s) + e) for s in (512, 1024, 2048, 4096, 8192) for e in (-1e-4, 0.0, 1e-4)]
    misfit = fit.fit_step_scaling(plateau, terms="c+a", bootstrap=50)
    assert misfit.misfit is True
    view = FitView(lambda ref, options, at: misfit, EvidenceRef("sweep", ID, "step-scaling"), {"terms": "c+a"})
    assert (view.c.mark, view.a.mark, view.max_residual.mark) == ("lack of fit", "lack of fit", None)
    assert "fails its own lack-of-fit test" in view.c.title
    line = [(float(s), 0.01 + 1e-5 * s + e) for s in (512, 1024, 2048) for e in (-1e-4, 0.0, 1e-4)]
    assert fit.fit_step_scaling(line, terms="c+a", bootstrap=50).misfit is False
