"""Render's side of issue 27 on literal inputs: a follow-up's optimizer points, parameter counts and frozen-weight
FLOPs (and mfu()'s default to them), the gemm windows' clock and the phase peaks, the hvp curvature fields,
and the run marks (harness and hash, engagement, busy device) with their notices."""

from __future__ import annotations

from dataclasses import replace

import pytest

from measure.errors import ProbebookError
from render.derive import correctness, followup, gemm, lossmem, marks, workload
from render.functions import general, rates
from render.functions.derivations import Library
from render.functions.followup import optimizer_timing
from render.functions.page import Page
from render.pages import notices


def _point(name: str, ident: str, share: float, state: str = "ok") -> dict:
    result = {
        "baseline_evidence": "sha256:base",
        "instrumented_evidence": ident,
        "optimizer_share": share,
        "optimizer_median_s": 0.001,
        "tok_s": 1000.0,
        "instrumentation_overhead": 0.02,
    }
    return {"point": name, "state": state, "attempts": [{"result": result}]}


def _doc(preset: str, seq_len: int, batch: int, busy: bool) -> dict:
    return {
        "params": {"preset": preset, "seq_len": seq_len, "batch": batch},
        "data": {"device_check": {"busy": busy}},
    }


def test_optimizer_points_sorted_by_context_and_batch_with_the_busy_count():
    points = [
        _point("20m-s1024-b2", "sha256:c", 0.01),
        _point("20m-s512-b4", "sha256:b", 0.03),
        _point("20m-s512-b1", "sha256:a", 0.02),
        _point("20m-s512-b8", "sha256:x", 0.5, state="failed"),
    ]
    docs = {
        "sha256:a": _doc("20m", 512, 1, True),
        "sha256:b": _doc("20m", 512, 4, False),
        "sha256:c": _doc("20m", 1024, 2, True),
    }
    rows = followup.optimizer_points(points, docs)
    assert [(r.context, r.batch) for r in rows] == [(512, 1), (512, 4), (1024, 2)]
    assert [r.optimizer_share for r in rows] == [0.02, 0.03, 0.01]
    assert [r.device_busy for r in rows] == [1, 0, 1]
    assert followup.busy_points(rows) == 2
    assert followup.share_range(rows) == (0.01, 0.03)


def test_optimizer_points_refuse_a_point_without_its_evidence():
    with pytest.raises(ProbebookError, match=r"20m-s512-b1.*not in the archive"):
        followup.optimizer_points([_point("20m-s512-b1", "sha256:gone", 0.02)], {})
    with pytest.raises(ProbebookError, match="no measured points"):
        followup.share_range([])
    captured = _point("20m-s512-b1", "sha256:a", 0.02)
    captured["attempts"][0]["result"]["instrumentation_overhead"] = None  # a captured-mode receipt: no hooks
    with pytest.raises(ProbebookError, match=r"^follow-up point '20m-s512-b1' ran the captured update"):
        followup.optimizer_points([captured], {"sha256:a": _doc("20m", 512, 1, False)})


def test_param_counts_of_a_dense_a_lora_and_an_moe_run():
    dense = workload.param_counts({"n_params_total": 100, "n_params_trainable": 100}, "ev")
    assert (dense.dense_flops, dense.trainable_only_flops, dense.active) == (600, 600, None)
    # the LoRA plug-in: 24,320 weights, 1,024 of them adapters: 4·24320 + 2·1024
    lora = workload.param_counts({"n_params_total": 24_320, "n_params_trainable": 1_024}, "ev")
    assert (lora.dense_flops, lora.trainable_only_flops) == (99_328, 6_144)
    # MoE: the active count stands for both (every weight trains)
    moe = workload.param_counts({"n_params_total": 1000, "n_params_trainable": 1000, "n_params_active": 600}, "ev")
    assert (moe.dense_flops, moe.active) == (3_600, 600)
    old = workload.param_counts({"n_params": 50}, "ev")  # evidence from before issue 27
    assert (old.total, old.trainable, old.dense_flops) == (50, 50, 300)


def test_param_counts_refuse_what_is_not_a_count():
    with pytest.raises(ProbebookError, match=r"ev: params.n_params_total is None"):
        workload.param_counts({}, "ev")
    with pytest.raises(ProbebookError, match="n_params_active"):
        workload.param_counts({"n_params_total": 10, "n_params_active": 11}, "ev")


def _mfu_page(params: dict) -> Page:
    docs = {
        "sha256:" + "a" * 64: {"probe": "stream", "params": params, "data": {"tok_s": 1000}, "machine": {}},
        "sha256:" + "b" * 64: {"probe": "gemm", "params": {}, "data": {"flop_s": 1e9}},
    }
    return Page(Library(docs), {"run": "sha256:" + "a" * 64, "ceiling": "sha256:" + "b" * 64})


def _mfu(page: Page, *flops) -> float | None:
    rate = general.value(page, "run", "data.tok_s", unit="tok/s")
    peak = general.value(page, "ceiling", "data.flop_s", unit="FLOP/s")
    return rates.mfu(page, rate, *flops, peak=peak).value


def test_mfu_defaults_to_the_frozen_weight_flops_the_evidence_recorded():
    # the LoRA plug-in without attention shapes: 4·24320 + 2·1024 = 99,328 FLOPs per token, not 6·1024
    lora = _mfu_page({"n_params_total": 24_320, "n_params_trainable": 1_024, "model_flops_per_token": None})
    assert _mfu(lora) == 0.099328  # 1000 tok/s x 99,328 FLOPs / 1e9 FLOP/s
    assert _mfu(lora, 6_144) == 0.006144  # what passing 6·P_trainable by hand would give
    rate = general.value(lora, "run", "data.tok_s", unit="tok/s")
    shown = rates.mfu(lora, rate, peak=general.value(lora, "ceiling", "data.flop_s", unit="FLOP/s"))
    assert "× 99328 (4·P_all + 2·P_trainable of aaaaaaaaaaaa" in shown.derivation, shown.derivation
    # the probe's own count (with attention) comes first: a map with one sequence length, or a number
    by_length = {"n_params_total": 24_320, "n_params_trainable": 1_024, "model_flops_per_token": {"2048": 150_000}}
    assert _mfu(_mfu_page(by_length)) == 0.15
    assert _mfu(_mfu_page({"model_flops_per_token": 200_000})) == 0.2


def test_mfu_refuses_to_guess_the_flops():
    several = _mfu_page({"model_flops_per_token": {"512": 1, "2048": 2}})
    with pytest.raises(
        ProbebookError, match=r"at 2 sequence lengths; pass one, e.g. value\(ev, \"params.model_flops_per_token.512"
    ):
        _mfu(several)
    with pytest.raises(ProbebookError, match="records no model FLOPs per token"):
        _mfu(_mfu_page({"batch": 4}))


def test_the_gemm_windows_clock_per_shape_and_over_all():
    rows = [
        {"shape": "a", "sm_clock_mhz_median": 1980.0},
        {"shape": "a", "sm_clock_mhz_median": 1755.0},
        {"shape": "a", "sm_clock_mhz_median": None},  # a window NVML did not sample
        {"shape": "b", "sm_clock_mhz_median": 1500.0},
    ]
    assert gemm.shape_clock_mhz(rows, "a") == (1867.5, 2)
    assert gemm.shape_clock_mhz(rows) == (1755.0, 3)
    with pytest.raises(ProbebookError, match="no window sampled the SM clock"):
        gemm.shape_clock_mhz([{"shape": "a", "sm_clock_mhz_median": None}], "a")
    with pytest.raises(ProbebookError, match="no windows of shape 'c'"):
        gemm.shape_clock_mhz(rows, "c")


def test_phase_peaks_of_the_matching_rows():
    rows = [  # tests' shape of the H200 plug-in loss-memory run: setup and warm-up peaks per arm and microbatch
        {"arm": "m", "microbatch": 1, "setup_peak_bytes": 34_788_864, "warmup_peak_bytes": 68_679_168},
        {"arm": "m", "microbatch": 2, "setup_peak_bytes": 34_868_224, "warmup_peak_bytes": 68_857_344},
        {"arm": "c", "microbatch": 2, "setup_peak_bytes": 34_868_224, "warmup_peak_bytes": None},
    ]
    assert lossmem.phase_peak_bytes(rows, "warmup", {"arm": "m"}) == (68_857_344, 2)
    assert lossmem.phase_peak_bytes(rows, "setup", {"arm": "m", "microbatch": 1}) == (34_788_864, 1)
    assert lossmem.phase_peak_bytes(rows, "setup", {}) == (34_868_224, 3)
    with pytest.raises(ProbebookError, match=r"no row \(arm=c\) records warmup_peak_bytes"):
        lossmem.phase_peak_bytes(rows, "warmup", {"arm": "c"})
    with pytest.raises(ProbebookError, match=r"no row \(any row\) records capture_peak_bytes"):
        lossmem.phase_peak_bytes(rows, "capture", {})


def test_hvp_curvature_fields():
    data = {"references": [{"batch": 4, "fp32": {"vhv_nats": -256.4}}]}
    assert correctness.reference_vhv(data, 4) == -256.4
    assert correctness.reference_vhv(data, 1) is None
    assert correctness.reference_vhv({}, 4) is None
    assert correctness.within_tolerance("within tolerance") == 1
    assert correctness.within_tolerance("fails: curvature (vᵀHv)") == 0
    assert correctness.within_tolerance("undefined: a zero reference") is None
    assert correctness.within_tolerance(None) is None
    with pytest.raises(ProbebookError, match="unknown hvp verdict"):
        correctness.within_tolerance("maybe")


PLUGIN = {
    "params": {"workload": "tiny_lm.harness:lora"},
    "code": {
        "workload_source": {
            "module": "tiny_lm.harness",
            "module_sha256": "ab" * 32,
            "package": "tiny_lm",
            "package_files": 3,
            "package_sha256": "cd" * 32,
        }
    },
    "data": {
        "engagement_warnings": [{"message": "--compile was requested but no region compiled"}],
        "device_check": {"busy": True, "reason": "1 other process(es) on the card: pids 7"},
    },
}


def test_marks_name_the_harness_by_hash_and_the_warnings():
    found = marks.marks(PLUGIN)
    assert [m.kind for m in found] == ["harness", "engagement", "busy"]
    assert "tiny_lm.harness:lora" in found[0].text and "cd" * 32 in found[0].text and "ab" * 32 in found[0].text
    assert found[1].text == "--compile was requested but no region compiled"
    assert found[2].text == "1 other process(es) on the card: pids 7"
    reference = {"params": {"workload": None}, "data": {"device_check": {"busy": False}}}
    assert marks.marks(reference) == []


def test_record_notices_group_one_harness_and_warn_per_alias():
    idle = {**PLUGIN, "data": {}}
    lines = notices.run_marks(
        {"a": "sha256:" + "1" * 64, "b": "sha256:" + "2" * 64},
        {
            "sha256:" + "1" * 64: PLUGIN,
            "sha256:" + "2" * 64: idle,
        },
    )
    text = "\n".join(lines)
    assert text.count('!!! note "Plug-in harness"') == 1
    assert "`a` (sha256:111111111111), `b` (sha256:222222222222) ran the plug-in harness" in text
    assert text.count("!!! warning") == 2 and '!!! warning "Device busy before timing"' in text


def test_a_points_busy_flag_reads_as_its_evidence_page_shows_it_and_cites_that_run_alone():
    camp, manifest, run = ("sha256:" + c * 64 for c in "cdf")
    docs = {
        camp: {
            "probe": "campaign",
            "params": {"manifest": manifest},
            "data": {"points": [_point("20m-s512-b1", run, 0.02)]},
        },
        manifest: {"probe": "campaign", "params": {}, "data": {"kind": followup.KIND}},
        run: {**_doc("20m", 512, 1, True), "probe": "optimizer"},
    }
    (point,) = optimizer_timing(Page(Library(docs), {"followup": camp}), "followup")
    busy = point.busy
    # the evidence page shows the boolean data.device_check.busy as "yes" (render.evidence.fields.value_text)
    assert (busy.value, busy.text, busy.evidence, busy.anchor) == (1, "yes", (run,), "data-device_check.busy")
    assert busy.more_anchors == ()
    assert point.share.evidence == (camp, run)  # the receipt's numbers cite both
    assert replace(busy, value=0).text == "no"
