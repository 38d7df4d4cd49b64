"""The README's "Measure your own model" guide, run as written: its example plug-in (a random-init HuggingFace
GPT-2) is copied out of README.md into a package, loaded through ``--workload``, and timed by a step probe on
the CPU; the evidence holds the counts, FLOPs per token, arms and source hashes the guide says, and no mark."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
from conftest import REPO, assert_measured

from measure.evidence.envelope import parse
from measure.evidence.store import Store
from measure.machine import source_tree_sha256

pytest.importorskip("torch")
pytest.importorskip("transformers")

SPEC = "mymodel.harness:factory"
GPT2_PARAMS = 132864
"""By hand: token and position embeddings 2 x 256·64, two blocks of (2 LayerNorms 2·2·64, c_attn 64·192+192,
attn c_proj 64·64+64, c_fc 64·256+256, mlp c_proj 256·64+64) = 2 x 49,984, the final LayerNorm 2·64; the
head is tied to the token embedding, counted once."""


def guide_code() -> str:
    """The README's example harness: the Python block that opens with ``# mymodel/harness.py``."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Measure your own model", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    found = [b for b in blocks if b.startswith("# mymodel/harness.py")]
    assert len(found) == 1, "the guide has one example harness"
    return found[0]


@pytest.fixture
def plugin(tmp_path: Path) -> Path:
    """The README's harness written out as the package ``mymodel`` (the folder to put on PYTHONPATH)."""
    package = tmp_path / "plugins" / "mymodel"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "harness.py").write_text(guide_code())
    return package.parent


def test_the_guide_s_plugin_loads_with_every_field_and_no_mark(plugin, monkeypatch):
    monkeypatch.syspath_prepend(str(plugin))
    from measure.probes.common import model_flops_per_token
    from measure.workload import WorkloadOptions, load_workload
    from measure.workload.observe import lost_marks

    workload = load_workload(WorkloadOptions(device="cpu", dtype="fp32"), SPEC)
    assert workload.name == SPEC
    assert workload.n_params == workload.n_params_total == GPT2_PARAMS
    assert (workload.layers, workload.heads, workload.head_dim) == (2, 2, 32)
    assert set(workload.arms) == {"no-optimizer"} and workload.forward is not None
    # 4·P_all + 2·P_trainable + 12·L·H·Q·T = 6 x 132,864 + 1,536·T
    assert model_flops_per_token(workload, 8) == 809472
    assert lost_marks(workload) == []
    loss, logits = workload.forward(workload.make_batch(2, 8))
    assert tuple(logits.shape) == (2, 8, 256) and loss.item() > 0
    import sys

    for name in [m for m in sys.modules if m.startswith("mymodel")]:
        del sys.modules[name]


@pytest.mark.slow
def test_the_guide_s_plugin_through_step_scaling_and_ablate_on_cpu(cli, archive, plugin):
    env = {"PYTHONPATH": f"{plugin}:{REPO}"}
    timing = ["--warmup", "1", "--windows", "2", "--iters", "1", "--quiet"]
    out = cli(
        "--archive", str(archive), "measure", "step-scaling", "--workload", SPEC, "--device", "cpu",
        "--seq-lens", "8,16,32", "--modes", "fixed_batch", *timing, env=env,
    )  # fmt: skip
    assert_measured(out)
    ident = out.stdout.split()[-1]
    doc = parse(Store(archive).read_bytes(ident), ident)
    params, data = doc["params"], doc["data"]
    assert params["workload"] == params["workload_name"] == SPEC and "preset" not in params
    assert params["n_params"] == params["n_params_total"] == GPT2_PARAMS
    assert params["model_flops_per_token"] == {"8": 809472, "16": 821760, "32": 846336}
    assert data["observed"]["dtype"] == "bfloat16"  # --dtype bf16 (the default) honoured by the harness
    assert "engagement_warnings" not in data, data.get("engagement_warnings")
    source = doc["code"]["workload_source"]
    assert source["module_sha256"] == hashlib.sha256((plugin / "mymodel" / "harness.py").read_bytes()).hexdigest()
    assert source["package_sha256"] == source_tree_sha256(plugin / "mymodel", (".py",))
    assert not [line for line in out.stderr.splitlines() if not line.startswith(("probebook: ", "[transformers]"))]

    out = cli(
        "--archive", str(archive), "measure", "ablate", "--workload", SPEC, "--device", "cpu", "--seq-len", "16",
        *timing, env=env,
    )  # fmt: skip
    assert_measured(out)
    ident = out.stdout.split()[-1]
    doc = parse(Store(archive).read_bytes(ident), ident)
    assert doc["params"]["arms"] == ["baseline", "no-optimizer"]
    assert [m["kind"] for m in doc["data"]["engagement_warnings"]] == ["arm-skipped"]  # no input copy on CPU


# slow: end to end (real builds or probe runs in child processes), 2-7 s of CPU each; .ci/run runs -m slow
@pytest.mark.slow
def test_the_guide_s_plugin_fails_the_mask_check_as_the_guide_says(cli, plugin):
    out = cli("check", "masks", "--workload", SPEC, "--sliding-window", "8", env={"PYTHONPATH": f"{plugin}:{REPO}"})
    assert out.returncode == 1, out.stderr
    assert "FAIL layer 0 is local but took is_causal (no window applied)" in out.stdout
