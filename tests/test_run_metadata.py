"""Run metadata every envelope records (issue 43): torch's commit, cuDNN, Triton and NCCL versions in ``machine``
(None where this install lacks one, never a failure), and the vocabulary and loss precision in ``data.workload``, on a
real CPU run of the CLI, which also records no energy (no card to read it from).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def test_software_stack_records_what_this_install_has() -> None:
    torch = pytest.importorskip("torch")
    from measure.machine import software

    stack = software(torch)
    assert stack["torch_git"] == torch.version.git_version
    assert set(stack) == {"torch_git", "cudnn", "triton", "nccl"}
    if not torch.cuda.is_available():
        assert stack["nccl"] is None  # a CPU build has no NCCL: recorded as unknown, the run goes on

    class Bare:  # a torch missing every piece: each is None, nothing raises
        pass

    assert software(Bare())["cudnn"] is None and software(Bare())["torch_git"] is None


# slow: a real probe run on the CPU (about 3.5 s of CPU), end to end; .ci/run runs it with -m slow
@pytest.mark.slow
def test_a_cpu_run_records_stack_and_workload_facts_and_no_energy(cli, archive: Path) -> None:
    pytest.importorskip("torch")
    out = cli(
        "--archive", str(archive), "measure", "step-scaling", "--preset", "tiny", "--device", "cpu", "--dtype", "bf16",
        "--warmup", "1", "--windows", "2", "--iters", "1", "--seq-lens", "8,16,24", "--batch", "1",
        "--modes", "fixed_batch",
    )  # fmt: skip
    assert out.returncode in (0, 1), out.stderr  # 1: stored unstable on a loaded CPU
    (path,) = list((archive / "evidence").rglob("*.json"))
    doc = json.loads(path.read_text())
    assert doc["machine"]["torch_git"] and "cudnn" in doc["machine"] and "triton" in doc["machine"]
    assert "energy" not in doc["machine"]  # no card: nothing to read energy from
    assert doc["data"]["workload"] == {"vocab": 512, "loss_precision": {"loss": "fp32", "logits": "bf16"}}
    rows = doc["data"]["samples"]
    assert rows and all("sm_clock_mhz" in r and "energy_j" not in r for r in rows)
