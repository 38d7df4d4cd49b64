"""The ddp probe: launcher environment, NCCL log, bucket-interval union, gloo runs on CPU through the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import assert_measured

from measure.evidence.envelope import MEASURED, parse
from measure.evidence.store import Store
from measure.run.ddp_worker import union_s
from measure.run.distributed import MULTICAST_OFF, child_env, nccl_observed, torchrun_command, worker_error

PLUGINS = str(Path(__file__).resolve().parent / "fixtures" / "measure_plugins")
FAST = ["--device", "cpu", "--warmup", "1", "--windows", "2", "--iters", "1", "--comm-steps", "2", "--quiet"]


def test_launcher_turns_multicast_off_even_when_the_caller_turned_it_on():
    env = child_env({"NCCL_NVLS_ENABLE": "1", "NVSHMEM_DISABLE_NVLS": "0", "PATH": "/usr/bin"})
    assert env["NCCL_NVLS_ENABLE"] == "0"
    assert env["TORCH_SYMM_MEM_DISABLE_MULTICAST"] == "1"
    assert env["NVSHMEM_DISABLE_NVLS"] == "1"
    assert env["NCCL_DEBUG"] == "INFO" and env["PATH"] == "/usr/bin"
    assert env["PYTHONPATH"].split(":")[0] == str(Path(__file__).resolve().parent.parent)
    assert child_env({"NCCL_DEBUG": "WARN"})["NCCL_DEBUG"] == "WARN"  # a chosen level is kept


def test_torchrun_command_one_process_per_rank():
    cmd = torchrun_command("measure.run.ddp_worker", 2, Path("/s.json"), Path("/r.json"))
    assert cmd[1:4] == ["-m", "torch.distributed.run", "--standalone"]
    assert cmd[cmd.index("--nproc-per-node") + 1] == "2"
    assert cmd[-4:] == ["-m", "measure.run.ddp_worker", "/s.json", "/r.json"]


def test_nccl_log_gives_version_and_transports():
    log = "\n".join(
        [
            "h:1:1 [0] NCCL INFO NCCL version 2.28.9+cuda12.9",
            "h:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM",
            "h:1:9 [1] NCCL INFO Channel 01/0 : 1[1] -> 0[0] via P2P/CUMEM",
            "h:1:9 [1] NCCL INFO Channel 02/0 : 1[1] -> 0[0] via SHM/direct/direct",
            "unrelated line via nothing",
        ]
    )
    seen = nccl_observed(log)
    assert seen["nccl_version"] == "2.28.9+cuda12.9"
    assert seen["transports"] == ["P2P/CUMEM", "SHM/direct/direct"]
    assert seen["nccl_info_lines"] == 4 and len(seen["nccl_info_kept"]) == 4
    assert nccl_observed("gloo says nothing")["transports"] == []


def test_worker_error_names_the_rank_exception():
    log = "noise\n[rank1]: ValueError: bad bucket\n=====\nChildFailedError"
    assert worker_error(log) == "[rank1]: ValueError: bad bucket"
    assert worker_error("") == "(no output)"


def test_union_of_bucket_intervals():
    assert union_s([]) == 0.0
    assert union_s([(0.0, 2.0), (1.0, 3.0), (5.0, 6.0)]) == 3.0 + 1.0
    assert union_s([(4.0, 5.0), (0.0, 10.0)]) == 10.0


def stored(cli, archive, *args, env=None):
    out = cli("--archive", str(archive), "measure", "ddp", *args, env=env)
    assert_measured(out)  # exit 0, or 1 with the evidence stored unstable: a loaded CPU's windows are noisy
    ident = out.stdout.strip().splitlines()[-1]
    doc = parse(Store(archive).read_bytes(ident), ident)
    assert doc["status"] in MEASURED, doc.get("error")
    return doc


@pytest.mark.slow
def test_reference_workload_gloo_two_processes(cli, archive):
    pytest.importorskip("torch")
    doc = stored(cli, archive, *FAST, "--preset", "tiny", "--seq-len", "32", "--allreduce-mib", "0.25")
    assert doc["params"]["gpus"] == 2 and doc["params"]["tokens_per_rank"] == 2 * 32
    phases = doc["data"]["observed"]["phases"]
    assert set(phases) == {"1", "2"}
    assert (phases["1"]["ddp"], phases["1"]["backend"]) == (False, None)
    assert (phases["2"]["ddp"], phases["2"]["backend"]) == (True, "gloo")
    for phase in phases.values():  # what the workers themselves saw in their environment
        assert phase["env"] == MULTICAST_OFF
    rows = doc["data"]["samples"]
    steps = [r for r in rows if r["phase"] == "step"]
    assert {r["gpus"] for r in steps} == {1, 2} and all(r["step_s"] > 0 for r in steps)
    paired = [r for r in rows if r["phase"] == "paired"]
    rounds = {r["round"] for r in paired}  # 2 rounds, or 7 when the CV rule added 5 more
    assert len(rounds) in (2, 7)
    assert sorted((r["round"], r["arm"]) for r in paired) == [
        (i, arm) for i in sorted(rounds) for arm in ("ddp", "no_sync")
    ]
    comm = [r for r in rows if r["phase"] == "comm"]
    assert len(comm) == 2
    for r in comm:
        assert r["bucket_bytes"] == doc["data"]["grad_bytes"] == 4 * doc["params"]["n_params"]
        assert r["comm_s"] > 0 and 0 <= r["exposed_s"] <= r["comm_end_s"] <= r["step_s"]
    assert doc["probe_version"] == 3  # comm buckets stored with named fields
    buckets = doc["data"]["comm_buckets"]
    assert len(buckets) == len(comm)
    for r, step in zip(comm, buckets, strict=True):
        assert [sorted(b) for b in step] == [["bytes", "done_s", "ready_s"]] * r["buckets"]
        assert sum(b["bytes"] for b in step) == r["bucket_bytes"]
        assert all(0 <= b["ready_s"] <= b["done_s"] <= r["step_s"] for b in step)
    sizes = {(r["kind"], r["dtype"], r["bytes"]) for r in rows if r["phase"] == "allreduce"}
    assert sizes == {("gradient", "fp32", doc["data"]["grad_bytes"]), ("sweep", "bf16", 2**18)}


@pytest.mark.slow
def test_plugin_workload_is_routed_through_ddp(cli, archive):
    pytest.importorskip("torch")
    doc = stored(
        cli, archive, *FAST, "--workload", "toy_harness:factory", "--batch", "2", "--seq-len", "8",
        "--allreduce-mib", "0.25", env={"PYTHONPATH": f"{Path(__file__).resolve().parent.parent}:{PLUGINS}"},
    )  # fmt: skip
    comm = [r for r in doc["data"]["samples"] if r["phase"] == "comm"]
    # the toy harness calls its own model; buckets reduced means its calls went through DDP
    assert comm and all(r["buckets"] >= 1 and r["bucket_bytes"] == doc["data"]["grad_bytes"] for r in comm)
    assert doc["params"]["workload_name"] == "toy_harness:factory"


def test_bad_option_is_one_line(cli, archive):
    out = cli("--archive", str(archive), "measure", "ddp", "--device", "cpu", "--allreduce-dtype", "fp32",
              "--allreduce-mib", "0,1")  # fmt: skip
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "probebook: error: --allreduce-mib must be positive sizes in MiB, got [0.0, 1.0]"
    ]
    assert not (archive / "evidence").exists()


@pytest.mark.gpu
def test_cuda_nccl_on_every_visible_gpu(archive):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    from measure.probes import ddp

    n = torch.cuda.device_count()
    config = ddp.Config(device="cuda", warmup=1, windows=3, iters=2, comm_steps=2, allreduce_mib=(1.0,))
    evidence = ddp.run(config)
    assert evidence.status == "complete", evidence.error
    doc = Store(archive).get(Store(archive).put(evidence))
    phases = doc["data"]["observed"]["phases"]
    assert doc["params"]["gpus"] == n and set(phases) == {"1", str(n)}
    if n > 1:  # NCCL named its version and the transport it chose, in its own log
        assert phases[str(n)]["backend"] == "nccl" and phases[str(n)]["nccl_version"]
        assert phases[str(n)]["transports"] and phases[str(n)]["env"] == MULTICAST_OFF
