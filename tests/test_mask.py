"""The mask probe: masks by hand, the sliding-window band check, and every mask kind on CPU via the CLI."""

from __future__ import annotations

import statistics

import pytest
from conftest import assert_measured, run_cli_here

from measure.errors import ProbebookError
from measure.evidence.envelope import MEASURED, parse
from measure.evidence.store import Store
from measure.probes.mask import KINDS, Config, band_check, document_ids, padded_lengths
from render.functions.derivations import Library
from render.functions.page import Page
from render.functions.pipeline import mask_cost
from render.tables.kinds import render as render_table

torch = pytest.importorskip("torch")

from measure.workload.model import attention_mask, is_local, layer_masks  # noqa: E402  (needs torch)


def test_padded_lengths_and_document_ids_by_hand():
    assert padded_lengths(4, 12, 0.5) == [12, 10, 8, 6]
    assert padded_lengths(2, 128, 0.5) == [128, 64]
    assert padded_lengths(1, 128, 0.5) == [128]
    assert document_ids(6, 3) == [0, 0, 1, 1, 2, 2]
    with pytest.raises(ProbebookError, match="--documents 7 exceeds --seq-len 6"):
        document_ids(6, 7)


def test_attention_mask_by_hand():
    # window 2 over 4 positions: each query sees itself and the one key before it
    band = attention_mask(4, "cpu", window=2)[0, 0].int().tolist()
    assert band == [[1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]]
    # right padding: the row of length 2 hides keys 2 and 3 from every query, yet query 3 keeps key 0
    padded = attention_mask(4, "cpu", lengths=torch.tensor([4, 2]))[:, 0].int().tolist()
    assert padded[1] == [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 0, 0], [1, 1, 0, 0]]
    assert padded[0] == [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]]
    docs = attention_mask(4, "cpu", doc_ids=torch.tensor([[0, 0, 1, 1]]))[0, 0].int().tolist()
    assert docs == [[1, 0, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [0, 0, 1, 1]]


def test_layer_masks_local_global_pattern():
    assert [is_local(i, 8, 3) for i in range(6)] == [True, True, False, True, True, False]
    masks = layer_masks(6, 16, "cpu", window=8, global_every=3)
    assert [m is None for m in masks] == [False, False, True, False, False, True]
    assert all(m is None for m in layer_masks(3, 16, "cpu"))  # no request: is_causal everywhere
    explicit = layer_masks(2, 4, "cpu", explicit=True)
    assert explicit[0] is not None and explicit[0][0, 0].int().tolist() == torch.ones(4, 4).tril().int().tolist()


def test_band_check_passes_on_the_models_mask_and_fails_shifted_by_one():
    window = 16
    mask = layer_masks(2, 64, "cpu", window=window)[0]  # what Decoder.forward passes to SDPA, no weights built
    ok = band_check(mask.numpy(), window)
    assert ok == {
        "window": 16,
        "rows": 64,
        "max_keys_per_row": 16,
        "lookahead_keys": 0,
        "beyond_window_keys": 0,
        "ok": True,
    }
    ahead = band_check(torch.roll(mask, 1, dims=-1).numpy(), window)  # every row shifted one key later
    assert not ahead["ok"] and ahead["lookahead_keys"] == 63  # each row but the last now sees its next token
    behind = band_check(torch.roll(mask, -1, dims=-1).numpy(), window)  # one key earlier: reaches W back
    assert not behind["ok"] and behind["beyond_window_keys"] == 64 - window


def test_config_refuses_bad_options():
    with pytest.raises(ProbebookError, match="--kinds must be a comma list of causal, explicit, padded"):
        Config(kinds=("causal", "diagonal"))
    with pytest.raises(ProbebookError, match="--kinds must be a comma list"):
        Config(kinds=())
    with pytest.raises(ProbebookError, match="--global-every needs --sliding-window"):
        Config(global_every=2)
    with pytest.raises(ProbebookError, match="--min-length-fraction"):
        Config(min_length_fraction=0.0)


# slow: a real mask probe run of every kind (about 4 s of CPU), end to end; .ci/run runs it with -m slow
@pytest.mark.slow
def test_mask_probe_runs_every_kind_on_cpu(cli, archive):
    out = cli(
        "--archive",
        str(archive),
        "measure",
        "mask",
        "--device",
        "cpu",
        "--preset",
        "tiny",
        "--seq-len",
        "64",
        "--batch",
        "2",
        "--sliding-window",
        "16",
        "--global-every",
        "2",
        "--warmup",
        "1",
        "--rounds",
        "2",
        "--iters",
        "1",
        "--steps",
        "1",
        "--quiet",
    )
    assert_measured(out)
    ident = out.stdout.strip().splitlines()[-1]
    doc = parse(Store(archive).read_bytes(ident), ident)
    assert doc["status"] in MEASURED, doc.get("error")
    observed = doc["data"]["observed"]["kinds"]
    assert set(observed) == set(KINDS)
    for kind, seen in observed.items():
        # CPU torch takes its fused CPU kernel or the math fallback; either way it is read from the trace
        assert seen["sdpa_backend"] in ("flash-cpu", "math"), kind
        assert any("scaled_dot_product" in op for op in seen["sdpa_ops"]), kind
        assert seen["attention_kernels"] == []  # no device kernels on a CPU
    assert {p["kind"] for p in doc["data"]["points"]} == set(KINDS)
    assert all(p["median_s"] > 0 for p in doc["data"]["points"])
    band = doc["data"]["band_check"]
    assert band["ok"] and band["window"] == 16
    assert [(layer["local"], layer["mask"]) for layer in band["layers"]] == [(True, "tensor"), (False, "is_causal")]
    assert doc["data"]["batches"]["padded"] == {"lengths": [64, 32], "width": 64}

    cost = mask_cost(Page(Library({ident: doc}), {"m": ident}), "m", "padded")
    medians = {
        k: statistics.median(r["step_s"] for r in doc["data"]["samples"] if r["kind"] == k)
        for k in ("padded", "causal")
    }
    assert cost.slowdown.value == medians["padded"] / medians["causal"] - 1
    assert cost.padding_share.value == 0.25  # rows of 64 and 32 at width 64
    same = doc["data"]["padded_equivalence"]
    # right padding under a causal mask: the real tokens never see a pad, so the mask changes no loss
    assert same["dtype"] == "float32" and same["abs_diff"] < 1e-5 * same["loss_is_causal"]
    assert cost.window.value == 16
    assert cost.attention.value is None and "CPU" in cost.attention.note
    table = render_table("mask", [doc]).markdown
    # one model and one backend in every row: said once above the table, then a row per mask kind
    assert table.startswith("In every row — model: tiny; SDPA backend (traced): ")
    assert ("flash-cpu" in table or "math" in table) and all(f"| {k} |" in table for k in KINDS)


def test_mask_probe_refuses_a_window_wider_than_the_sequence(archive):
    # in this process, which has torch (conftest.run_cli_here): a child imported it again only to be refused, about
    # 1.4 s of CPU; a refusal's real exit status and stderr are test_measure_cli's and test_exit_table's
    out = run_cli_here(
        "--archive", str(archive), "measure", "mask", "--device", "cpu", "--seq-len", "32", "--sliding-window", "64"
    )
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "probebook: error: --sliding-window 64 exceeds --seq-len 32: the window would be no window"
    ]
    assert not (archive / "evidence").exists()


def test_mask_medians_are_one_rule_for_the_table_and_mask_cost() -> None:
    """Median step per kind over the rows that are rounds: a kind and a finite numeric step_s."""
    from render.derive.padding import mask_step_medians

    rows = [
        {"kind": "causal", "step_s": 0.010},
        {"kind": "causal", "step_s": 0.012},
        {"kind": "causal", "step_s": 0.011},
        {"kind": "padded", "step_s": 0.020},
        {"kind": "padded", "step_s": 0.030},
        {"kind": "padded", "step_s": None},  # a round that failed: not a sample
        {"kind": "padded", "step_s": float("nan")},
        {"step_s": 5.0},  # not a mask round
    ]
    assert mask_step_medians(rows) == {"causal": 0.011, "padded": 0.025}
