"""``probebook check masks``: the sliding-window band check on the masks a workload's attention really receives
(issue 40): the pure judgement of captured calls, then real CLI runs on the reference decoder and on plug-ins."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from measure.workload.maskcheck import judge

HERE = Path(__file__).resolve().parent


def band(s: int, window: int | None) -> np.ndarray:
    q, k = np.arange(s)[:, None], np.arange(s)[None, :]
    return (k <= q) & ((q - k < window) if window else True)


def test_local_layers_need_the_band_and_global_ones_must_reach_past_it():
    calls = [{"mask": band(8, 2), "is_causal": False}, {"mask": None, "is_causal": True}]
    assert judge(calls, 2, 2)["ok"]  # layer 0 local, layer 1 (every 2nd) global
    wide = judge([{"mask": band(8, 3), "is_causal": False}], 2, None)
    assert wide["failures"] == ["layer 0 is local: up to 3 keys a row, 0 ahead, 6 beyond the window of 2"]
    windowed = judge(calls[:1] * 2, 2, 2)
    assert windowed["failures"] == ["layer 1 is global but its mask is a window: no key 2 or more back"]
    causal = judge([{"mask": None, "is_causal": True}], 2, None)
    assert causal["failures"] == ["layer 0 is local but took is_causal (no window applied)"]
    assert not judge([], 2, None)["ok"]  # nothing seen is nothing checked


def test_a_look_ahead_fails_a_global_layer():
    full = np.ones((4, 4), dtype=bool)
    assert judge([{"mask": band(4, 2), "is_causal": False}, {"mask": full, "is_causal": False}], 2, 2)["failures"] == [
        "layer 1 is global but looks ahead (6 keys)"
    ]


def test_the_reference_decoder_passes_with_and_without_global_layers(cli_here):
    pytest.importorskip("torch")
    out = cli_here("check", "masks", "--sliding-window", "8", "--global-every", "2")
    assert out.returncode == 0, out.stderr
    assert "layer   0 local  mask tensor: at most 8 keys a row, 0 ahead, 0 beyond the window" in out.stdout
    assert "layer   1 global mask is_causal" in out.stdout


# slow: end to end (real builds or probe runs in child processes), 2-7 s of CPU each; .ci/run runs -m slow
@pytest.mark.slow
def test_a_plugin_that_ignores_global_every_fails_with_exit_1(cli):
    pytest.importorskip("torch")
    env = {"PYTHONPATH": f"{HERE / 'fixtures' / 'plugin_harness'}:{HERE.parent}"}
    args = ["check", "masks", "--workload", "tiny_lm.harness:factory", "--sliding-window", "4"]
    assert cli(*args, env=env).returncode == 0  # every layer local: its masks hold the band
    out = cli(*args, "--global-every", "2", env=env)
    assert out.returncode == 1
    assert "FAIL layer 1 is global but its mask is a window: no key 4 or more back" in out.stdout


def test_bad_input_is_one_line(cli_here):
    out = cli_here("check", "masks", "--sliding-window", "8", "--seq-len", "8")
    assert out.returncode == 2 and out.stderr.strip().startswith("probebook: error: --seq-len 8 must exceed")
