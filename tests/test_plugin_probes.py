"""Every probe that times a training step, run on a plug-in harness that is not the reference decoder
(tests/fixtures/plugin_harness/tiny_lm) on CPU: its own step timed, its source hashed, its preset recorded only
when read, both parameter counts and LoRA's frozen-weight FLOPs."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import assert_measured

from measure.evidence.envelope import MEASURED, parse
from measure.evidence.store import Store
from measure.machine import source_tree_sha256

pytest.importorskip("torch")

HERE = Path(__file__).resolve().parent
PLUGINS = HERE / "fixtures" / "plugin_harness"
ENV = {"PYTHONPATH": f"{PLUGINS}:{HERE.parent}"}
SPEC = "tiny_lm.harness:factory"
TIMED = ["--warmup", "1", "--windows", "2", "--iters", "1"]

# probe -> its options for a quick CPU run (timing options only where the probe times something)
PROBES = {
    "step-scaling": [*TIMED, "--seq-lens", "4,8,16", "--modes", "fixed_batch"],
    "batch-sweep": [*TIMED, "--contexts", "16", "--max-tokens", "32"],
    "kernels": [*TIMED, "--steps", "1", "--seq-len", "16"],
    "ablate": [*TIMED, "--seq-len", "16"],
    "optimizer": [*TIMED, "--seq-len", "16", "--rounds", "2"],
    "copy": TIMED,
    "mask": [*TIMED, "--seq-len", "16", "--batch", "2", "--steps", "1", "--sliding-window", "4"],
    "stream": [*TIMED, "--seq-len", "16", "--observe-steps", "1", "--depths", "1"],
    "loss-memory": [*TIMED, "--dtype", "fp32", "--context", "16", "--microbatches", "1,2", "--chunk-tokens", "8"],
    "agreement": ["--seq-len", "16", "--arms", "identical,bf16,chunked"],
    "hvp": ["--seq-len", "8", "--batches", "1", "--modes", "eager", "--dtypes", "fp32", "--windows", "1"],
    "eval-boundary": [
        *TIMED,
        "--seq-len",
        "16",
        "--eval-batches",
        "1",
        "--repeats",
        "1",
        "--interval-steps",
        "1",
        "--intervals",
        "1",
    ],
}


def measure(cli, archive, probe, *args, spec=SPEC):
    out = cli(
        "--archive", str(archive), "measure", probe, "--device", "cpu", "--workload", spec, "--quiet", *args, env=ENV
    )
    assert_measured(out)
    ident = out.stdout.strip().splitlines()[-1]
    return parse(Store(archive).read_bytes(ident), ident)


def package_sha256() -> str:
    return source_tree_sha256(PLUGINS / "tiny_lm", (".py",))


@pytest.mark.slow
@pytest.mark.parametrize("probe", sorted(PROBES))
def test_every_step_probe_runs_the_plugin_harness(cli, archive, probe):
    doc = measure(cli, archive, probe, *PROBES[probe])
    assert doc["status"] in MEASURED, doc.get("error")
    params, code = doc["params"], doc["code"]
    assert params["workload_name"] == SPEC
    assert "preset" not in params  # the factory never read options.preset: the default is not an input
    assert params["n_params_total"] == params["n_params_trainable"] == params["n_params"] == 23296
    source = code["workload_source"]
    assert source["spec"] == SPEC and source["module"] == "tiny_lm.harness"
    assert source["package"] == "tiny_lm" and source["package_files"] == 3
    assert source["package_sha256"] == package_sha256()
    assert source["module_sha256"] is not None and source["module_file"] == "harness.py"


@pytest.mark.slow
def test_mask_kinds_on_the_plugin_are_its_own(cli, archive):
    doc = measure(cli, archive, "mask", *PROBES["mask"])
    kinds = doc["data"]["observed"]["kinds"]
    assert set(kinds) == {"causal", "explicit", "padded", "padded-causal", "sliding", "document"}
    assert "band_check" not in doc["data"]  # the band check hooks the reference decoder's attention only
    equivalence = doc["data"]["padded_equivalence"]  # from the plug-in's own forward, in its dtype
    assert equivalence["dtype"] == "bfloat16 autocast"
    assert equivalence["abs_diff"] == abs(equivalence["loss_mask"] - equivalence["loss_is_causal"])


@pytest.mark.slow
def test_a_plugin_that_reads_the_preset_records_it(cli, archive):
    doc = measure(cli, archive, "step-scaling", *PROBES["step-scaling"], spec="tiny_lm.harness:sized")
    assert doc["params"]["preset"] == "tiny"


@pytest.mark.slow
def test_lora_plugin_counts_frozen_weights_in_flops(cli, archive):
    doc = measure(cli, archive, "step-scaling", *PROBES["step-scaling"], spec="tiny_lm.harness:lora")
    params = doc["params"]
    # base by hand: embeddings 64x32 + positions 64x32, 2 blocks x (2 LayerNorms 2x(2x32), QKV 32x96+96,
    # out 32x32+32, fc1 32x64+64, fc2 64x32+32), final LayerNorm 2x32, head 32x64: 23,296; LoRA on QKV at
    # rank 4: 2 x (4x32 + 96x4) = 1,024 trainable
    assert params["n_params_total"] == 24320
    assert params["n_params_trainable"] == params["n_params"] == 1024
    # 4·P_all + 2·P_trainable + 12·L·H·Q·T: 97,280 + 2,048 + 12·2·2·16·T (3,072 at T = 4, 6,144 at 8, 12,288 at 16)
    assert params["model_flops_per_token"] == {"4": 102400, "8": 105472, "16": 111616}


def test_plugin_without_its_hidden_state_refuses_chunked_arms(cli_here, archive):
    toy = str(HERE / "fixtures" / "measure_plugins")
    import sys

    sys.path.insert(0, toy)
    try:
        out = cli_here(
            "--archive", str(archive), "measure", "agreement", "--device", "cpu", "--quiet",
            "--workload", "toy_harness:factory", "--arms", "chunked",
        )  # fmt: skip
    finally:
        sys.path.remove(toy)
    assert out.returncode != 0
    assert "needs head(batch)" in out.stderr or "no forward(batch)" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_plugin_source_fingerprint_follows_every_file_of_its_package(tmp_path, monkeypatch):
    import importlib
    import sys

    pkg = tmp_path / "userpkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "mod.py").write_text("X = 1\n")
    (pkg / "helper.py").write_text("Y = 1\n")
    (pkg / "weights.bin").write_bytes(b"\0" * 10)  # data beside the code: not hashed
    monkeypatch.syspath_prepend(str(tmp_path))
    from measure.workload.plugin import source_fingerprint

    module = importlib.import_module("userpkg.sub.mod")
    first = source_fingerprint("userpkg.sub.mod:f", module)
    assert first["package"] == "userpkg" and first["package_files"] == 4
    (pkg / "weights.bin").write_bytes(b"\1" * 10)
    assert source_fingerprint("userpkg.sub.mod:f", module) == first
    (pkg / "helper.py").write_text("Y = 2\n")  # a file the module never imports, in its package: a new hash
    second = source_fingerprint("userpkg.sub.mod:f", module)
    assert second["package_sha256"] != first["package_sha256"]
    assert second["module_sha256"] == first["module_sha256"]
    for name in [m for m in sys.modules if m.startswith("userpkg")]:
        del sys.modules[name]


def test_preset_read_is_noticed_only_when_read():
    from measure.workload import WorkloadOptions
    from measure.workload.plugin import preset_read, watched

    options = watched(WorkloadOptions(preset="20m"))
    assert not preset_read(options)
    assert options.dtype == "bf16" and not preset_read(options)
    assert options.preset == "20m" and preset_read(options)
