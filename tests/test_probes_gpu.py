"""Every probe with the tiny preset on a CUDA device, in process: the GPU-only paths (events, pinned copies,
kernel rows)."""

from __future__ import annotations

import pytest

from measure.evidence.store import Store

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
    # torch's own notices, seen on the H200 (torch 2.11): the profiler warns once per start that it
    # clears events between cycles (our traces are one cycle), and Inductor calls a deprecated jit API.
    # As errors they would fail the probe from inside torch, not from anything the probe measured.
    pytest.mark.filterwarnings("ignore:.*Profiler clears events:UserWarning"),
    pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning"),
]
FAST = {"preset": "tiny", "device": "cuda", "warmup": 1, "windows": 3, "iters": 2}


def stored(archive, evidence):
    assert evidence.status == "complete", evidence.error
    ident = Store(archive).put(evidence)
    assert not Store(archive).verify()
    return Store(archive).get(ident)


def test_gemm_on_cuda_is_bf16_and_records_clocks(archive):
    from measure.probes import gemm

    doc = stored(archive, gemm.run(gemm.Config(**FAST, tokens=1024, square=2048)))
    assert doc["params"]["gemm_dtype"] == "bf16"
    assert doc["data"]["ceiling"]["square_tflop_s"] > 1.0
    clocks = doc["data"]["clocks"]
    assert set(clocks) == {"sm_mhz_before", "sm_mhz_after"}
    # every timed window sampled the SM clock (issue 27: the ceiling says the clock it ran at)
    assert doc["data"]["clock_sampling"]["sampling"] is True, doc["data"]["clock_sampling"]["why_not"]
    assert all(r["sm_clock_mhz_median"] > 0 for r in doc["data"]["samples"])
    assert doc["data"]["ceiling"]["sm_clock_mhz_median"] > 0


def test_copy_on_cuda_covers_every_direction(archive):
    from measure.probes import copy

    doc = stored(archive, copy.run(copy.Config(**FAST)))
    cases = {(p["direction"], p["memory"], p["pattern"]) for p in doc["data"]["points"]}
    assert len(cases) == 10 and ("h2d", "pinned", "per-layer") in cases and ("d2d", "device", "contiguous") in cases
    assert doc["data"]["skipped"] == []
    pinned = next(p for p in doc["data"]["points"] if p["direction"] == "h2d" and p["memory"] == "pinned")
    assert pinned["gb_s"] > 1.0


def test_step_scaling_on_cuda_observes_a_fused_sdpa_backend(archive):
    from measure.probes import step_scaling

    doc = stored(archive, step_scaling.run(step_scaling.Config(**FAST, seq_lens=(128, 256, 512))))
    assert doc["data"]["observed"]["sdpa_backend"] in ("flash", "efficient", "cudnn", "math")
    assert doc["data"]["observed"]["dtype"] == "bfloat16"
    assert len(doc["data"]["points"]) == 6


# Dynamo and Inductor raise their own UserWarnings while tracing (seen on the H200, torch 2.11: a
# non-leaf .grad access inside dynamo's tracer); as errors they abort the compile from inside torch.
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_step_scaling_compiled_engages(archive):
    from measure.probes import step_scaling

    doc = stored(
        archive,
        step_scaling.run(step_scaling.Config(**FAST, compile=True, seq_lens=(128, 256, 512), modes=("fixed_tokens",))),
    )
    assert doc["data"]["observed"]["compile_engaged"] is True
    assert all(p["compile_engaged"] for p in doc["data"]["points"])


def test_kernels_on_cuda_sum_kernel_rows_without_annotations(archive):
    from measure.probes import kernels

    doc = stored(archive, kernels.run(kernels.Config(**FAST, steps=2, seq_len=256)))
    data = doc["data"]
    assert data["unit"] == "device kernel self time"
    assert data["shares"]["gemm"] > 0 and data["shares"]["attention"] > 0
    # the optimizer's GPU annotation row spans its kernels: kept apart, never counted (PyTorch issue 130730)
    assert "Optimizer.step#AdamW.step" in [a["kernel"] for a in data["annotations"]]
    assert not [r for r in data["samples"] if "#" in r["kernel"] and not r["kernel"].startswith("void")]
    total = sum(r["device_time_s"] for r in data["samples"])
    assert data["consistency"]["kernel_total_s"] == pytest.approx(total / 2)
    assert (
        data["trace_check"]["kernel_records"] >= data["trace_check"]["launch_calls"]
        or data["trace_check"]["launch_calls"] == 0
    )
    assert data["consistency"]["ratio"] > 0


def test_ablate_on_cuda_includes_the_input_copy_arm(archive):
    from measure.probes import ablate

    doc = stored(archive, ablate.run(ablate.Config(**FAST, seq_len=256)))
    assert [a["arm"] for a in doc["data"]["arms"]][:2] == ["baseline", "no-input-copy"]


def test_optimizer_on_cuda_uses_events(archive):
    from measure.probes import optimizer

    doc = stored(archive, optimizer.run(optimizer.Config(**FAST, seq_len=256)))
    assert 0 < doc["data"]["summary"]["optimizer_share"] < 1


def test_the_device_check_reads_nvml_before_timing(archive):
    pytest.importorskip("pynvml")
    from measure.probes import copy

    doc = stored(archive, copy.run(copy.Config(**FAST)))
    found = doc["data"]["device_check"]
    assert found["checked"] is True, found["reason"]
    assert found["samples"] == 5 and found["max_sm_util_pct"] is not None
    assert isinstance(found["busy"], bool) and found["device"].startswith(("uuid", "pci"))
    assert all(p["pid"] != __import__("os").getpid() for p in found["other_processes"])


def test_a_plugin_harness_on_cuda_records_its_source_and_flops(archive, monkeypatch):
    from pathlib import Path

    from measure.probes import step_scaling

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parent / "fixtures" / "plugin_harness"))
    config = step_scaling.Config(**FAST, workload="tiny_lm.harness:lora", seq_lens=(16, 32, 64), modes=("fixed_batch",))
    doc = stored(archive, step_scaling.run(config))
    assert doc["params"]["n_params_total"] == 24320 and doc["params"]["n_params_trainable"] == 1024
    assert doc["code"]["workload_source"]["package"] == "tiny_lm"
    assert "engagement_warnings" not in doc["data"]  # no --compile asked; a fused backend in bf16
