"""95% intervals and stated bases of the GEMM, utilisation, ddp, follow-up, batch, session and padding numbers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import render_page

from render.derive import basis, batchsweep, fit, fit_inputs, followup, gemm, scaling, sessions, utilisation
from render.derive.intervals import median_interval, ratio_interval
from render.evidence.archive import load_evidence
from render.functions.derivations import Library

# Bootstrap medians of three windows: a resample's median is the smallest window with probability 7/27 and the
# largest with 7/27, both above the 2.5% tail, so the percentile interval is (smallest, largest) exactly.
WINDOWS = (1.0, 2.0, 3.0)


def test_identical_windows_are_resampled_once_and_give_the_same_interval() -> None:
    assert median_interval(list(WINDOWS)) == (1.0, 3.0)
    assert median_interval((3, 1, 2)) == (1.0, 3.0)  # ints, another order: the same windows
    assert median_interval([1.0, 2.0]) is None
    assert ratio_interval([2.0, 2.0, 2.0], [4.0, 4.0, 4.0]) == (0.5, 0.5)


def test_a_gemm_ceiling_is_its_flops_over_the_median_windows_interval() -> None:
    g = gemm.GemmShape("s", 10, 10, 10, 3, 2.0, 0.0, 0.0, WINDOWS)
    assert g.flops == 2000.0
    assert gemm.ceiling_interval(g) == (2000.0 / 3.0, 2000.0)
    assert gemm.ceiling_recipe(g, "doc|gemm s") == ("reciprocal", 2000.0, ("median", WINDOWS, "doc|gemm s"))
    few = gemm.GemmShape("f", 10, 10, 10, 2, 1.5, 0.0, 0.0, (1.0, 2.0))
    assert gemm.ceiling_interval(few) is None and gemm.ceiling_recipe(few, "k") is None


def test_the_workload_interval_weighs_each_shapes_resampled_median_by_its_count() -> None:
    a = gemm.GemmShape("a", 10, 10, 10, 3, 0.5, 0.0, 0.0, (0.5, 0.5, 0.5))
    b = gemm.GemmShape("b", 10, 10, 20, 3, 0.25, 0.0, 0.0, (0.25, 0.25, 0.25))
    square = gemm.GemmShape("square", 10, 10, 10, 1, 1.0, 0.0, 0.0, (1.0,))  # count 0: not weighed, not needed
    counts = {"a": 2, "b": 4, "square": 0}
    # Σ count·FLOPs = 2·2000 + 4·4000 = 20000 over Σ count·median = 2·0.5 + 4·0.25 = 2 s
    assert gemm.workload_ceiling_flop_s([a, b, square], counts) == 10000.0
    assert gemm.workload_interval([a, b, square], counts, "doc") == (10000.0, 10000.0)
    few = gemm.GemmShape("b", 10, 10, 20, 2, 0.25, 0.0, 0.0, (0.25, 0.25))
    assert gemm.workload_interval([a, few], counts, "doc") is None


def test_the_clock_interval_resamples_the_windows_own_medians() -> None:
    rows = [{"shape": "s", "sm_clock_mhz_median": v} for v in (1980.0, 1965.0, 1995.0)]
    rows.append({"shape": "t", "sm_clock_mhz_median": None})
    assert gemm.clock_interval(rows, "s") == (1965.0, 1995.0)
    assert gemm.clock_interval(rows) == (1965.0, 1995.0)
    assert gemm.clock_interval(rows[:2]) is None


def test_utilisation_medians_get_intervals_and_extremes_none() -> None:
    rows = [
        {"tokens": 2048, "sm_clock_mhz_median": c, "power_w_median": p, "sm_clock_mhz_min": 1500.0}
        for c, p in ((1980.0, 600.0), (1965.0, 650.0), (1995.0, 700.0))
    ] + [{"tokens": 4096, "sm_clock_mhz_median": 1000.0}]
    spans = utilisation.window_intervals(rows, 2048)
    assert spans["sm_clock_mhz_median"] == (1965.0, 1995.0)
    assert spans["power_w_median"] == (600.0, 700.0)
    assert spans["sm_util_pct_median"] is None  # no window recorded it
    assert "sm_clock_mhz_min" not in spans  # the lowest clock is a reading: observed, no interval
    assert utilisation.window_intervals(rows, 4096)["sm_clock_mhz_median"] is None


def test_the_fastest_batch_states_its_tie_test_as_its_basis() -> None:
    assert batchsweep.fastest_basis(None, None) == (
        "exact",
        "; the only stable fitting batch: no runner-up to tell it from",
    )
    assert batchsweep.fastest_basis(16, None) == (
        "observed",
        "; runner-up batch 16 not tested (a point lacks its windows' CV or count)",
    )
    assert batchsweep.fastest_basis(16, True) == ("a test", "; against runner-up batch 16: a tie within noise")
    assert batchsweep.fastest_basis(8, False) == (
        "a test",
        "; against runner-up batch 8: distinguishable (gap over 1.96 standard errors)",
    )


def _point(share: float, optimizer: float, overhead: float) -> followup.OptimizerPoint:
    return followup.OptimizerPoint("20m", 1024, 8, share, optimizer, 1e5, overhead, 0, "b", "i")


def _rounds(optimizer: float, step: float, baseline: float, n: int = 3) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for i in range(n):
        rows.append({"arm": "instrumented", "round": i, "optimizer_s": optimizer, "step_s": step})
        rows.append({"arm": "baseline", "round": i, "optimizer_s": None, "step_s": baseline})
    return rows


def test_a_follow_up_points_figures_resample_its_rounds_jointly() -> None:
    rows = _rounds(0.25, 1.0, 0.8)
    spans = followup.point_intervals(rows, _point(0.25, 0.25, 0.25), "doc|rounds")
    assert spans == {
        "optimizer_median_s": (0.25, 0.25),
        "optimizer_share": (0.25, 0.25),
        "instrumentation_overhead": (0.25, 0.25),
    }
    # a receipt whose figure is not the rounds' statistic gets no interval for that figure
    other = followup.point_intervals(rows, _point(0.3, 0.25, 0.25), "doc|rounds")
    assert other["optimizer_share"] is None and other["optimizer_median_s"] == (0.25, 0.25)
    assert set(followup.point_intervals(_rounds(0.25, 1.0, 0.8, 2), _point(0.25, 0.25, 0.25), "k").values()) == {None}


def _ddp_doc(step_1: float, step_2: float, comm: float, exposed: float, allreduce: float) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for _ in range(3):
        rows.append({"phase": "step", "gpus": 1, "step_s": step_1})
        rows.append({"phase": "step", "gpus": 2, "step_s": step_2})
        rows.append({"phase": "comm", "gpus": 2, "comm_s": comm, "exposed_s": exposed, "step_s": step_2})
        rows.append({"phase": "allreduce", "gpus": 2, "kind": "gradient", "bytes": 1024, "time_s": allreduce})
    return {"params": {"gpus": 2, "tokens_per_rank": 64}, "data": {"samples": rows, "grad_bytes": 1024}}


def test_every_ddp_term_gets_the_interval_of_its_replicates() -> None:
    doc = _ddp_doc(0.5, 0.625, 0.25, 0.0625, 0.125)
    summary = scaling.summarize(doc)
    reps = scaling.replicates(doc, "doc|ddp")
    spans = scaling.summary_intervals(summary, reps)
    assert summary.efficiency == 0.8 and spans["efficiency"] == (0.8, 0.8)
    assert spans["tok_s_1"] == (128.0, 128.0) and spans["tok_s_all"] == (204.8, 204.8)
    assert spans["overlap"] == (0.75, 0.75)
    assert spans["other_s"] == (0.0625, 0.0625)
    assert spans["grad_busbw_b_s"] == (8192.0, 8192.0)  # 1024 B / 0.125 s · 2(2−1)/2
    # at 4 GPUs: step(4) = 0.625 + 0.125·(1.5/1 − 1) = 0.6875; 0.5 / 0.6875
    assert scaling.projected_efficiency(summary, 4) == 0.5 / 0.6875
    assert scaling.projected_interval(summary, reps, 4) == (0.5 / 0.6875, 0.5 / 0.6875)
    one = scaling.summarize({**doc, "params": {"gpus": 1, "tokens_per_rank": 64}})
    assert scaling.projected_interval(one, scaling.replicates({**doc, "params": {"gpus": 1}}, "k"), 4) is None


def test_the_spread_between_sessions_is_taken_replicate_by_replicate() -> None:
    assert sessions.relative_range_interval([np.full(4, 2.0), np.full(4, 3.0)]) == (0.5, 0.5)
    assert sessions.relative_range_interval([np.array([1.0, 2.0]), np.array([2.0, 2.0])]) == (
        pytest.approx(0.025),
        pytest.approx(0.975),
    )
    assert sessions.relative_range_interval([np.full(4, 2.0)]) is None
    assert sessions.relative_range_interval([np.full(4, 2.0), np.zeros(4)]) is None


def test_a_number_without_an_interval_carries_a_few_windows_operand() -> None:
    assert basis.carried(["few windows", "interval"]) == "few windows"
    assert basis.carried(["observed", "exact"]) == "observed"
    assert basis.carried(["observed", "interval"]) == ""


def test_the_fit_gives_the_steps_interval_at_a_width() -> None:
    samples = [
        (float(t), 0.01 + 1e-5 * t + 1e-9 * t * t + e) for t in (512, 1024, 2048, 4096) for e in (-1e-4, 0.0, 1e-4)
    ]
    f = fit.fit_step_scaling(samples, terms=("c", "a", "b"), at=(2048,), bootstrap=200)
    low, high = f.ci[f"step_s:{fit_inputs.width_key(2048)}"]
    step = f.c_s + f.a_s_per_token * 2048 + f.b_s_per_token2 * 2048**2
    assert low <= step <= high and high - low < 1e-3


ARCHIVE = Path(__file__).resolve().parent / "fixtures" / "ddp" / "archive"
TWO = "sha256:70258d760133552942bdf9c14bbc2e463a9beb7b9b3651767684de2530561c1a"


def test_ddp_rows_state_an_interval_or_their_basis(tmp_path: Path) -> None:
    library = Library(load_evidence(ARCHIVE).docs)
    body = "{{ ddp(run).gpus }} {{ ddp(run).efficiency }} {{ ddp(run).projected(8) }} {{ ddp(run).projected_gpus(8) }}"
    _, state = render_page(library, {"run": TWO}, body, tmp_path)
    rows = dict(state.rows)
    assert rows["ddp(run).gpus"].stated_basis == "exact"
    assert rows["ddp(run).projected_gpus(8)"].stated_basis == "exact"
    assert rows["ddp(run).efficiency"].stated_basis in ("interval", "few windows")
    assert rows["ddp(run).projected(8)"].stated_basis in ("interval", "few windows")
