"""agreement, hvp and stream on CPU (tiny preset) into a real temp archive; HVP methods against an analytic Hessian."""

from __future__ import annotations

import pytest

from measure.errors import ProbebookError
from measure.evidence.envelope import parse
from measure.evidence.store import Store

torch = pytest.importorskip("torch")


def stored(archive, evidence):
    """Store the evidence in the archive and read it back, validated."""
    ident = Store(archive).put(evidence)
    return parse(Store(archive).read_bytes(ident), ident)


# --- agreement ------------------------------------------------------------------------------------


def test_agreement_identical_agrees_exactly_and_perturbed_fails(archive):
    from measure.probes.agreement import Config, run

    config = Config(device="cpu", seq_len=32, arms=("identical", "checkpointing", "chunked", "bf16", "perturbed"))
    doc = stored(archive, run(config))
    assert doc["status"] == "complete"
    noise = doc["data"]["noise_floor"]
    assert noise["loss"]["rel_l2"] == 0.0 and noise["grads"]["rel_l2"] == 0.0  # CPU kernels are deterministic
    arms = {a["arm"]: a for a in doc["data"]["arms"]}
    rows = {(r["arm"], r["quantity"]): r for r in doc["data"]["samples"]}
    for q in ("loss", "logits", "grads"):
        assert rows[("identical", q)]["rel_l2"] == 0.0
        assert rows[("identical", q)]["max_abs_error"] == 0.0
        assert rows[("identical", q)]["sign_agreement"] == 1.0
    assert arms["identical"]["passed"] is True
    assert arms["perturbed"]["passed"] is False  # a 1% weight change must not pass as the same step
    assert rows[("perturbed", "grads")]["rel_l2"] > rows[("perturbed", "grads")]["limit"]
    assert ("chunked", "logits") not in rows  # the chunked loss never makes full logits
    assert arms["chunked"]["floor"] == config.fp32_floor and arms["bf16"]["floor"] == config.bf16_floor
    assert arms["bf16"]["observed"]["dtype"] == "bfloat16"
    assert 0 < rows[("bf16", "grads")]["rel_l2"] < 0.05
    assert {"rule", "factor", "floor"} <= set(arms["bf16"]["tolerance"])


def test_agreement_refuses_bad_arms():
    from measure.probes.agreement import Config

    with pytest.raises(ProbebookError, match="--arms"):
        Config(arms=("bf16", "fast"))
    with pytest.raises(ProbebookError, match="--compile: agreement's arms set it"):
        Config(compile=True)  # inherited from CommonConfig, unused by agreement: refused, never silently recorded
    with pytest.raises(ProbebookError, match="--dtype must be one of fp32"):
        Config(dtype="bf16")


# torch's forward-mode AD loads its decompositions through torch.jit.script on first use, which warns
JIT_NOTICE = "ignore:`torch.jit.script` is deprecated:DeprecationWarning"


# --- hvp ------------------------------------------------------------------------------------------


@pytest.mark.filterwarnings(JIT_NOTICE)
def test_hvp_methods_match_an_analytic_hessian():
    """L(x, y) = 0.5 zᵀAz + bᵀz with z = (x, y) flattened and A symmetric: H·v = A v exactly."""
    from measure.probes.hvp import hvp_double_backward, hvp_forward_over_reverse

    gen = torch.Generator().manual_seed(0)
    n = 7
    m = torch.randn(n, n, generator=gen, dtype=torch.float64)
    a = m + m.T
    b = torch.randn(n, generator=gen, dtype=torch.float64)
    params = {
        "x": torch.randn(3, generator=gen, dtype=torch.float64),
        "y": torch.randn(2, 2, generator=gen, dtype=torch.float64),
    }
    v = {
        "x": torch.randn(3, generator=gen, dtype=torch.float64),
        "y": torch.randn(2, 2, generator=gen, dtype=torch.float64),
    }

    def loss(p):
        z = torch.cat([p["x"].reshape(-1), p["y"].reshape(-1)])
        return 0.5 * z @ a @ z + b @ z

    expected = a @ torch.cat([v["x"], v["y"].reshape(-1)])
    for method in (hvp_double_backward, hvp_forward_over_reverse):
        hv = method(loss, params, v)
        got = torch.cat([hv["x"].reshape(-1), hv["y"].reshape(-1)])
        assert got.dtype == torch.float64
        assert torch.allclose(got, expected, rtol=1e-13, atol=1e-13), method.__name__


@pytest.mark.filterwarnings(JIT_NOTICE)
def test_hvp_probe_on_tiny(archive):
    from measure.probes.hvp import Config, run

    config = Config(device="cpu", batches=(1,), seq_len=16, modes=("eager",), warmup=0, windows=2)
    doc = stored(archive, run(config))
    assert doc["status"] == "complete"
    cands = {(c["method"], c["dtype"]): c for c in doc["data"]["candidates"]}
    assert len(cands) == 4
    for method in ("double-backward", "forward-over-reverse"):
        fp32 = cands[(method, "fp32")]
        assert fp32["status"] == "ok"
        assert fp32["rel_l2_vs_float64"] < 1e-5  # fp32 against the float64 reference
        assert fp32["first_peak_bytes"] > 0 and fp32["warm_peak_bytes"] > 0 and fp32["first_call_s"] > 0
        assert fp32["tok_s"] == pytest.approx(16 / fp32["warm_median_s"])
    for method in ("double-backward", "forward-over-reverse"):  # forward-over-reverse in bf16 raised before v2
        bf16 = cands[(method, "bf16")]
        assert bf16["status"] == "ok" and 1e-5 < bf16["rel_l2_vs_float64"] < 0.1, bf16
        # the curvature statistics against fp32, and the verdict at the stated tolerance
        assert bf16["vhv_sign"] == cands[(method, "fp32")]["vhv_sign"] and bf16["vhv_sign_agrees"]
        assert bf16["verdict"] == "within tolerance" and bf16["tolerance"] == doc["params"]["tolerance"]
        total = bf16["curvature_share_vs_fp32"] + bf16["direction_share_vs_fp32"]
        assert total == pytest.approx(1.0)
    assert len(doc["data"]["references"]) == 1 and doc["data"]["references"][0]["batch"] == 1
    cache = doc["data"]["compiler_cache"]  # v3: recorded whether or not a candidate compiles
    assert doc["probe_version"] == 4 and cache["compiled"] is False and cache["state"] in ("warm", "cold")
    # one batch by default (--epoch-batches 1): no epoch rows, no epoch statistics
    assert "epoch" not in doc["data"] and all("epoch" not in c for c in doc["data"]["candidates"])
    assert all("cache_entries_before" not in c for c in doc["data"]["candidates"])  # eager only
    selection = doc["data"]["selection"]
    ok = [c for c in doc["data"]["candidates"] if c["status"] == "ok"]
    fastest = max((c for c in ok if c["dtype"] == "fp32"), key=lambda c: c["tok_s"])
    assert selection["best"]["fp32"]["method"] == fastest["method"]
    failed = {(c["method"], c["dtype"]) for c in doc["data"]["candidates"] if c["status"] != "ok"}
    assert failed == {(e["method"], e["dtype"]) for e in selection["excluded"]}
    for c in ok:  # one sample per warm window (a high CV adds windows)
        rows = [r["hvp_s"] for r in doc["data"]["samples"] if (r["method"], r["dtype"]) == (c["method"], c["dtype"])]
        assert rows == c["warm_times_s"] and len(rows) >= 2


# slow: end to end (real builds or probe runs in child processes), 2-7 s of CPU each; .ci/run runs -m slow
@pytest.mark.slow
def test_hvp_epoch_batches_on_tiny_through_the_cli(cli, archive):
    args = ["--archive", str(archive), "measure", "hvp", "--device", "cpu", "--preset", "tiny", "--quiet"]
    args += ["--batches", "1", "--seq-len", "16", "--modes", "eager", "--dtypes", "bf16,fp32"]
    args += ["--methods", "double-backward", "--warmup", "0", "--windows", "2"]
    out = cli(*args, "--epoch-batches", "3")
    assert out.returncode in (0, 1), out.stderr  # 1: stored, its noisy windows flagged unstable on a loaded CPU
    ident = out.stdout.strip().splitlines()[-1]
    doc = parse(Store(archive).read_bytes(ident), ident)
    assert doc["probe_version"] == 4 and doc["params"]["epoch_batches"] == 3
    rows = doc["data"]["epoch"]
    assert [(r["dtype"], r["epoch_batch"]) for r in rows] == [(d, k) for d in ("bf16", "fp32") for k in range(3)]
    for cand in doc["data"]["candidates"]:
        mine = [r for r in rows if r["dtype"] == cand["dtype"]]
        # batch 0 is the timed batch: its row restates the candidate's own comparison
        assert mine[0]["vhv_nats"] == cand["vhv_nats"] and mine[0]["verdict"] == cand["verdict"]
        assert mine[0]["rel_l2_vs_float64"] == cand["rel_l2_vs_float64"]
        assert len({r["vhv_nats"] for r in mine}) == 3  # three distinct batches: three curvatures
        epoch = cand["epoch"]
        assert epoch["batches"] == 3 and "not across sessions" in epoch["basis"]
        vhv = [r["vhv_nats"] for r in mine]
        assert epoch["vhv_nats"]["min"] == min(vhv) and epoch["vhv_nats"]["max"] == max(vhv)
        assert epoch["vhv_nats"]["mean"] == pytest.approx(sum(vhv) / 3)
        assert epoch["verdict_agrees_share"] == sum(r["verdict"] == mine[0]["verdict"] for r in mine) / 3
        assert all(r["rel_l2_vs_float64"] < (1e-5 if cand["dtype"] == "fp32" else 0.1) for r in mine)
    refused = cli(*args, "--epoch-batches", "0")
    assert refused.returncode == 2 and "--epoch-batches must be >= 1" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_hvp_records_the_compiler_caches_state(tmp_path):
    from measure.compiler_cache import CACHE_ENV, compiler_cache

    missing = str(tmp_path / "none")
    assert compiler_cache({}, missing) == {
        "dir_from": "torch default", "existed": False, "entries_before": 0, "state": "cold",
    }  # fmt: skip
    (tmp_path / "empty").mkdir()
    assert compiler_cache({CACHE_ENV: str(tmp_path / "empty")}, missing) == {
        "dir_from": CACHE_ENV, "existed": True, "entries_before": 0, "state": "cold",
    }  # fmt: skip
    (tmp_path / "used" / "fxgraph").mkdir(parents=True)
    for name in ("a", "b"):
        (tmp_path / "used" / "fxgraph" / name).write_bytes(b"x")
    assert compiler_cache({CACHE_ENV: str(tmp_path / "used")}, missing)["entries_before"] == 2
    assert compiler_cache({CACHE_ENV: str(tmp_path / "used")}, None)["state"] == "warm"
    assert compiler_cache({}, None)["dir_from"] == "unknown"


def test_hvp_selection_excludes_failed_and_over_memory():
    from measure.probes.hvp import select

    def cand(method, tok_s, status="ok", peak=10):
        return {
            "method": method,
            "mode": "eager",
            "dtype": "bf16",
            "batch": 1,
            "status": status,
            "tok_s": tok_s,
            "first_peak_bytes": peak,
            "warm_peak_bytes": peak,
        }

    chosen = select(
        [cand("a", 50.0), cand("b", 90.0, peak=91), cand("c", 99.0, status="oom"), cand("d", 60.0)], 100, 0.9
    )
    assert chosen["best"]["bf16"]["method"] == "d"
    assert [e["method"] for e in chosen["excluded"]] == ["b", "c"]
    assert select([cand("a", 1.0, status="error")], 100, 0.9)["best"] == {}


# --- stream ---------------------------------------------------------------------------------------


def test_stream_on_cpu_runs_the_schedule_and_agrees(archive):
    from measure.probes.stream import Config, run, stall_share, visits

    assert visits(2) == [("forward", 0), ("forward", 1), ("backward", 1), ("backward", 0)]
    assert stall_share(0.25, 1.0) == 0.25
    doc = stored(archive, run(Config(device="cpu", seq_len=16, warmup=0, windows=1, iters=1, observe_steps=1)))
    assert doc["status"] == "complete", doc.get("error")
    assert doc["params"]["pinned"] is False
    arms = {a["arm"]: a for a in doc["data"]["arms"]}
    assert set(arms) == {"resident", "streamed-d1", "streamed-d2", "no-copy", "no-compute"}
    visits_rows = [r for r in doc["data"]["samples"] if r["kind"] == "visit"]
    layers = doc["params"]["layers"]
    for arm in ("streamed-d1", "streamed-d2", "no-copy", "no-compute"):
        rows = [r for r in visits_rows if r["arm"] == arm]
        assert [(r["phase"], r["layer"]) for r in rows] == visits(layers)
        copied = arm != "no-copy"
        assert all((r["copy_s"] is not None) == copied for r in rows)
        assert all((r["grad_copy_s"] is not None) == (copied and r["phase"] == "backward") for r in rows)
    assert arms["streamed-d1"]["layer_copy_s"] > 0 and arms["no-copy"]["layer_copy_s"] is None
    checks = {c["arm"]: c for c in doc["data"]["agreement"]["checks"]}
    assert set(checks) == {"streamed-d1", "streamed-d2", "no-copy"}
    for check in checks.values():
        assert check["passed"] is True
        assert all(c["rel_l2"] == 0.0 for c in check["checks"])  # same kernels, same order: bit-identical on CPU
    assert {r["arm"] for r in doc["data"]["samples"] if r["kind"] == "round"} == set(arms)
    # v2: each streamed step loads every block twice (forward, then backward's recompute) and stores its gradients
    # once, each copy one block's fp32 buffer; the no-copy arm moves nothing
    assert doc["probe_version"] == 2
    block = doc["params"]["block_weight_bytes"]
    for arm in ("streamed-d1", "streamed-d2", "no-compute"):
        a = arms[arm]
        assert (a["loads_per_step"], a["stores_per_step"]) == (2 * layers, layers)
        assert a["bytes_per_step"] == 3 * layers * block
        assert a["bytes_per_s"] == a["bytes_per_step"] / a["median_step_s"]
    assert (arms["no-copy"]["loads_per_step"], arms["no-copy"]["bytes_per_step"]) == (0, 0)
    assert "bytes_per_step" not in arms["resident"]
    # the page recounts them from the visit rows (so a v1 run shows them too) and agrees with the probe
    from render.derive import correctness

    for arm in ("streamed-d1", "no-copy"):
        recount = correctness.stream_moved(doc["data"]["samples"], arm, block)
        assert recount == {k: arms[arm][k] for k in ("loads_per_step", "stores_per_step", "bytes_per_step")}


def test_stream_refuses_a_deep_prefetch():
    from measure.probes.stream import Config

    with pytest.raises(ProbebookError, match="--depths"):
        Config(depths=(3,))


def test_hvp_compiles_on_cpu_only_when_asked() -> None:
    # compiling every candidate kept a 2-core machine busy for 18 minutes (issue 29): CPU's default is eager
    from measure.probes.hvp import Config, modes_for

    assert Config().modes is None
    assert modes_for("cpu", None) == ["eager"]
    assert modes_for("cuda", None) == ["eager", "compiled"]
    assert modes_for("cpu", ("compiled",)) == ["compiled"]
