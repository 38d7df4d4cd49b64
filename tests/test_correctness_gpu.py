"""The correctness probes' CUDA-only paths on the tiny preset: side-stream streaming, graph capture, NVML sampling."""

from __future__ import annotations

import pytest

from measure.evidence.store import Store

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
    pytest.mark.filterwarnings("ignore:.*Profiler clears events:UserWarning"),
    pytest.mark.filterwarnings("ignore:`torch.jit.script.*` is deprecated:DeprecationWarning"),
]


def stored(archive, evidence):
    assert evidence.status == "complete", evidence.error
    ident = Store(archive).put(evidence)
    return Store(archive).get(ident)


def test_stream_on_cuda_times_copies_and_stalls_and_agrees(archive):
    from measure.probes import stream

    doc = stored(archive, stream.run(stream.Config(device="cuda", seq_len=64, warmup=1, windows=2, iters=1)))
    arms = {a["arm"]: a for a in doc["data"]["arms"]}
    assert doc["params"]["pinned"] is True
    assert arms["streamed-d1"]["layer_copy_s"] > 0 and arms["streamed-d1"]["stall_share"] >= 0
    assert all(c["passed"] for c in doc["data"]["agreement"]["checks"])


def test_whole_update_is_captured_and_replays_train(archive):
    from measure.graphs import capture
    from measure.integrity import Integrity
    from measure.workload import WorkloadOptions, load_workload

    workload = load_workload(WorkloadOptions(preset="tiny", device="cuda"))
    batch = workload.make_batch(2, 64)
    replay, info = capture(lambda: workload.step(batch), workload.optimizer, "cuda")
    assert info["captured"], info["reason"]
    check = Integrity(workload.optimizer, "cuda")
    replay = check.wrap(replay)
    check.begin()
    losses = [float(replay()) for _ in range(3)]
    torch.cuda.synchronize()
    window = check.end(3)
    assert window["updates"] == 3 and window["failure"] is None
    assert losses[2] < losses[0]  # the same batch three times: the replayed updates train


def test_optimizer_probe_graph_arm_and_utilisation(archive):
    from measure.probes import optimizer

    config = optimizer.Config(
        device="cuda", preset="tiny", warmup=1, windows=3, iters=2, cuda_graph=True, utilisation=True
    )
    doc = stored(archive, optimizer.run(config))
    assert doc["data"]["cuda_graph"]["captured"] is True
    assert doc["data"]["summary"]["graph_median_s"] > 0
    assert not doc["data"]["window_failures"]
    if doc["data"]["utilisation"]["sampling"]:
        assert any(w["sm_clock_mhz_median"] for w in doc["data"]["windows"])
