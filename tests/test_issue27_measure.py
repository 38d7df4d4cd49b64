"""The measure side of issue 27: eval-boundary's numbers and run, the optimizer probe's clipping, captured mode and
burst weighting, the MoE presets (counts, active-expert FLOPs, looped = grouped) and compiled bf16 H·v on CPU."""

from __future__ import annotations

import pytest
from conftest import assert_measured

from measure.errors import ProbebookError
from measure.evidence.flops import moe_active_params, training_flops_per_token
from measure.probes.eval_boundary import boundary_share, gb_per_s
from measure.probes.optimizer import CPU_REFUSAL, Config, burst_weighted_mean
from measure.workload.presets import PRESETS, active_param_count, param_count


def test_gb_per_s_and_boundary_share_on_literal_inputs():
    assert gb_per_s(3_000_000_000, 1.5) == 2.0
    assert boundary_share(interval_s=10.0, steps=20, steady_step_s=0.4) == pytest.approx(0.2)


def test_burst_weighted_mean_weights_by_burst_length():
    assert burst_weighted_mean([1.0, 4.0], [3, 1]) == 7.0 / 4
    assert burst_weighted_mean([2.0, 2.0], [5, 5]) == 2.0
    with pytest.raises(ProbebookError):
        burst_weighted_mean([1.0], [0])


def test_captured_mode_is_refused_on_cpu_in_one_line():
    with pytest.raises(ProbebookError, match="needs a CUDA device") as err:
        Config(mode="captured", device="cpu")
    assert str(err.value) == CPU_REFUSAL and "\n" not in CPU_REFUSAL
    with pytest.raises(ProbebookError, match="--clip"):
        Config(clip=-1.0)


def test_moe_active_params_and_flops_on_literal_inputs():
    # 2 layers, 4 experts of 100 weights, top-2: 2 x 2 x 100 = 400 inactive
    assert moe_active_params(1000, 2, 4, 2, 100) == 600
    assert training_flops_per_token(600, 600, 2, 2, 64, 16) == 6 * 600 + 12 * 2 * 2 * 64 * 16
    with pytest.raises(ProbebookError):
        moe_active_params(1000, 2, 2, 4, 100)


def test_moe_preset_counts():
    tiny = PRESETS["moe-tiny"]
    # embedding 512x128; per block: attention 2·128² + 2·128·64, 4 experts x 3·128·128 + router 128·4, 2 norms
    per_block = 2 * 128 * 128 + 2 * 128 * 64 + 4 * 3 * 128 * 128 + 128 * 4 + 2 * 128
    assert param_count(tiny) == 512 * 128 + 2 * per_block + 128 == 558_720
    assert active_param_count(tiny) == 558_720 - 2 * 2 * 3 * 128 * 128 == 362_112
    big = PRESETS["moe-250m"]
    assert active_param_count(big) == 252_096_960  # the dense 250m's active FFN work, plus the routers


def test_moe_built_model_matches_count_and_variants_agree():
    torch = pytest.importorskip("torch")
    from measure.workload import WorkloadOptions, load_workload

    losses, grads = {}, {}
    for impl in ("looped", "grouped"):
        w = load_workload(WorkloadOptions(preset="moe-tiny", experts_impl=impl, dtype="fp32"))
        assert w.n_params == param_count(PRESETS["moe-tiny"]) and w.n_params_active == 362_112
        pad = {"expert_pad_rows": 8} if impl == "grouped" else {}  # only grouped experts pad their groups
        assert w.moe_shape == {"n_experts": 4, "experts_top_k": 2, **pad}  # what a page states, from evidence
        loss = w.forward(w.make_batch(2, 16))[0]
        loss.backward()
        losses[impl] = loss.detach()
        grads[impl] = torch.cat([p.grad.flatten() for p in w.model.parameters() if p.grad is not None])
    torch.testing.assert_close(losses["looped"], losses["grouped"])
    torch.testing.assert_close(grads["looped"], grads["grouped"], rtol=1e-4, atol=1e-6)


@pytest.mark.slow
def test_eval_boundary_on_the_plugin_harness(cli, archive, tmp_path):
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    from test_plugin_probes import ENV, SPEC

    from measure.evidence.envelope import parse
    from measure.evidence.store import Store

    out = cli(
        "--archive",
        str(archive),
        "measure",
        "eval-boundary",
        "--device",
        "cpu",
        "--workload",
        SPEC,
        "--quiet",
        "--seq-len",
        "16",
        "--warmup",
        "1",
        "--windows",
        "2",
        "--iters",
        "1",
        "--eval-batches",
        "2",
        "--repeats",
        "1",
        "--interval-steps",
        "2",
        "--intervals",
        "1",
        "--checkpoint-dir",
        str(ckpt),
        env=ENV,
    )
    assert_measured(out)
    ident = out.stdout.strip().splitlines()[-1]
    doc = parse(Store(archive).read_bytes(ident), ident)
    phases = {r["phase"] for r in doc["data"]["samples"]}
    assert phases == {"steady", "eval", "checkpoint-write", "checkpoint-read", "interval"}
    summary = doc["data"]["summary"]
    assert summary["comparable"] is False and doc["data"]["checkpoint"]["bytes"] > 0
    write = next(r for r in doc["data"]["samples"] if r["phase"] == "checkpoint-write")
    assert write["gb_per_s"] == gb_per_s(write["bytes"], write["seconds"])
    assert list(ckpt.iterdir()) == []  # the checkpoint folder is removed


@pytest.mark.slow
def test_optimizer_eager_clips_by_default(cli, archive):
    out = cli(
        "--archive",
        str(archive),
        "measure",
        "optimizer",
        "--device",
        "cpu",
        "--quiet",
        "--seq-len",
        "16",
        "--warmup",
        "1",
        "--rounds",
        "2",
        "--iters",
        "1",
    )
    assert_measured(out)
    from measure.evidence.store import Store

    doc = Store(archive).get(out.stdout.strip().splitlines()[-1])
    assert doc["probe_version"] == 3 and doc["data"]["summary"]["clip_max_norm"] == 1.0
    refused = cli("--archive", str(archive), "measure", "optimizer", "--device", "cpu", "--mode", "captured")
    assert refused.returncode != 0 and CPU_REFUSAL in refused.stderr and "Traceback" not in refused.stderr


@pytest.mark.slow
def test_compiled_bf16_forward_over_reverse_runs_on_cpu(cli, archive):
    # minutes on a shared CPU: torch.compile of the whole jvp-of-grad under bf16 autocast
    out = cli(
        "--archive",
        str(archive),
        "measure",
        "hvp",
        "--device",
        "cpu",
        "--quiet",
        "--seq-len",
        "8",
        "--batches",
        "1",
        "--methods",
        "forward-over-reverse",
        "--modes",
        "compiled",
        "--dtypes",
        "bf16",
        "--windows",
        "1",
        "--warmup",
        "0",
    )
    assert_measured(out)
    from measure.evidence.store import Store

    doc = Store(archive).get(out.stdout.strip().splitlines()[-1])
    (cand,) = doc["data"]["candidates"]
    assert cand["status"] == "ok" and cand["mode"] == "compiled" and cand["dtype"] == "bf16", cand.get("error")


@pytest.mark.slow
@pytest.mark.parametrize("impl", ["looped", "grouped"])
def test_kernels_reports_the_expert_gemm_share_of_a_moe_step(cli, archive, impl):
    out = cli(
        "--archive",
        str(archive),
        "measure",
        "kernels",
        "--device",
        "cpu",
        "--quiet",
        "--preset",
        "moe-tiny",
        "--seq-len",
        "16",
        "--warmup",
        "1",
        "--windows",
        "2",
        "--iters",
        "1",
        "--steps",
        "1",
        "--experts-impl",
        impl,
    )
    assert_measured(out)
    from measure.evidence.store import Store

    doc = Store(archive).get(out.stdout.strip().splitlines()[-1])
    expert = doc["data"]["expert_gemm"]
    assert doc["probe_version"] == 7 and expert["experts_impl"] == impl and expert["category"] == "expert-gemm"
    assert 0 < expert["share"] <= 1 and expert["calls"] > 0
    assert doc["params"]["n_params_active"] == 362_112
    assert (doc["params"]["n_experts"], doc["params"]["experts_top_k"]) == (4, 2)
    assert doc["params"].get("expert_pad_rows") == (8 if impl == "grouped" else None)
