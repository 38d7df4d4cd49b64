"""The reference workload: computed parameter counts, GEMM shapes, a tiny forward/backward, and the plug-in loader."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from measure.errors import ProbebookError
from measure.workload import WorkloadOptions, load_workload
from measure.workload.presets import PRESETS, Preset, linear_shapes, model_flops_per_token, param_count

torch = pytest.importorskip("torch")

PLUGINS = Path(__file__).resolve().parent / "fixtures" / "measure_plugins"


@pytest.fixture
def plugin_path(monkeypatch):
    monkeypatch.syspath_prepend(str(PLUGINS))
    yield
    sys.modules.pop("toy_harness", None)


def test_issue_presets_land_on_their_stated_parameter_counts():
    assert param_count(PRESETS["250m"]) == 251_943_360  # "about 252M parameters"
    assert param_count(PRESETS["500m"]) == 516_814_080  # "about 517M parameters"
    assert round(param_count(PRESETS["250m"]) / 1e6) == 252
    assert round(param_count(PRESETS["500m"]) / 1e6) == 517


def test_param_count_arithmetic_on_a_literal_shape():
    p = Preset("x", layers=2, width=128, heads=2, kv_heads=1, ffn=256, vocab=512)
    # embed 512*128 + 2 * (q,o 2*128*128 + k,v 2*128*64 + mlp 3*128*256 + norms 2*128) + final norm 128
    assert param_count(p) == 65536 + 2 * (32768 + 16384 + 98304 + 256) + 128


@pytest.mark.parametrize("name", ["tiny", "20m", "90m", "250m", "500m", "1b"])
def test_built_model_has_the_computed_count(name):
    # built on the meta device: shapes only, no memory, so even 1b is instant
    from measure.workload.model import Decoder

    with torch.device("meta"):
        model = Decoder(PRESETS[name])
    assert sum(p.numel() for p in model.parameters()) == param_count(PRESETS[name])
    assert model.head.weight is model.embed.weight  # tied


def test_model_flops_per_token_palm_formula():
    # 6N + 12*L*H*Q*T with N=1000, L=2, H=3, Q=4, T=5
    assert model_flops_per_token(1000, 2, 3, 4, 5) == 6000 + 12 * 2 * 3 * 4 * 5
    # 250m-like shapes: 6·250e6 + 12·20 layers·15 heads·64 head dim·2048 tokens (PaLM, appendix B)
    assert model_flops_per_token(250_000_000, 20, 15, 64, 2048) == 1_500_000_000 + 471_859_200


def test_linear_shapes_cover_every_matmul_of_the_step():
    shapes = {s["name"]: s for s in linear_shapes(PRESETS["250m"], 2048)}
    assert shapes["w_gate_up.fwd"] == {"name": "w_gate_up.fwd", "m": 2048, "n": 2560, "k": 960, "count": 40}
    assert shapes["head.wgrad"] == {"name": "head.wgrad", "m": 32000, "n": 960, "k": 2048, "count": 1}
    # 6N FLOPs/token == the sum of the GEMM FLOPs of a step, less the non-matmul params (norms)
    flops = sum(2 * s["m"] * s["n"] * s["k"] * s["count"] for s in shapes.values())
    p = PRESETS["250m"]
    norms = 2 * p.width * p.layers + p.width
    assert flops == 6 * (param_count(p) - norms) * 2048


def test_bad_preset_shape_is_refused():
    with pytest.raises(ProbebookError, match="heads x head_dim"):
        Preset("bad", layers=1, width=100, heads=2, kv_heads=2, ffn=10)


def test_tiny_forward_backward_updates_every_parameter():
    w = load_workload(WorkloadOptions(preset="tiny", device="cpu"))
    assert w.n_params == param_count(PRESETS["tiny"])
    inputs, targets = w.make_batch(2, 16)
    assert inputs.shape == (2, 16) and targets.shape == (2, 16)
    assert torch.equal(inputs[:, 1:], targets[:, :-1])  # next-token targets
    before = [p.detach().clone() for p in w.model.parameters()]
    loss = w.step((inputs, targets))
    assert torch.isfinite(loss)
    # ln(512) ~ 6.24: an untrained model over a 512-token vocabulary starts near uniform
    assert abs(loss.item() - 6.238) < 0.3
    changed = [not torch.equal(b, p) for b, p in zip(before, w.model.parameters(), strict=True)]
    assert all(changed)


def test_ablation_arms_run_and_restore_the_model():
    w = load_workload(WorkloadOptions(preset="tiny", device="cpu", dtype="fp32"))
    batch = w.make_batch(2, 16)
    assert set(w.arms) == {"no-optimizer", "no-loss-head", "no-attention"}
    assert w.arms["no-attention"].timing_only and not w.arms["no-optimizer"].timing_only
    for arm in w.arms.values():
        assert torch.isfinite(arm.step(batch))
    assert not w.model.hidden and not any(b.attn.identity for b in w.model.blocks)


def test_observe_reports_what_ran():
    from measure.workload.observe import observe

    w = load_workload(WorkloadOptions(preset="tiny", device="cpu"))
    seen = observe(w, w.make_batch(2, 16), "cpu")
    assert seen["sdpa_backend"] is not None
    assert seen["compile_engaged"] is False
    assert seen["dtype"] == "bfloat16"
    w32 = load_workload(WorkloadOptions(preset="tiny", device="cpu", dtype="fp32"))
    assert observe(w32, w32.make_batch(2, 16), "cpu")["dtype"] == "float32"


def test_plugin_loader_returns_the_users_harness(plugin_path):
    w = load_workload(WorkloadOptions(device="cpu"), "toy_harness:factory")
    assert w.name == "toy_harness:factory"
    assert w.n_params == (32 * 64 + 64) + (64 * 32 + 32)
    assert torch.isfinite(w.step(w.make_batch(2, 4)))
    w2 = load_workload(WorkloadOptions(device="cpu"), "toy_harness:factory_with_arm")
    assert list(w2.arms) == ["forward-only"]


@pytest.mark.parametrize(
    "spec, message",
    [
        ("no_colon", "expected package.module:factory"),
        ("nonexistent_mod_xyz:f", "cannot import"),
        ("toy_harness:missing", "no callable 'missing'"),
        ("toy_harness:not_callable", "no callable 'not_callable'"),
        ("toy_harness:broken", "the factory raised RuntimeError: the harness could not find its data"),
    ],
)
def test_plugin_loader_errors_are_one_line(plugin_path, spec, message):
    with pytest.raises(ProbebookError, match=message) as info:
        load_workload(WorkloadOptions(device="cpu"), spec)
    assert "\n" not in str(info.value)
