"""The ddp() page function on real gloo ddp evidence (tiny, CPU): values from the derivation, N=1, projection."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import render_page

from render.derive import scaling
from render.evidence.archive import load_evidence
from render.functions.derivations import Library
from render.pages.sandbox import PageError, PageState

ARCHIVE = Path(__file__).resolve().parent / "fixtures" / "ddp" / "archive"
TWO = "sha256:70258d760133552942bdf9c14bbc2e463a9beb7b9b3651767684de2530561c1a"
ONE = "sha256:363780be775aadf986bda241509d2cea1e4bbaefe9b037cbe17aa5fbc790f8ae"


@pytest.fixture(scope="module")
def library() -> Library:
    return Library(load_evidence(ARCHIVE).docs)


def render(library: Library, body: str, tmp_path: Path) -> tuple[str, PageState]:
    return render_page(library, {"run": TWO, "one": ONE}, body, tmp_path)


def test_two_processes(library: Library, tmp_path: Path) -> None:
    body = " ".join(
        f"{{{{ ddp(run).{name} }}}}"
        for name in ("efficiency", "tok_s_1", "tok_s_n", "comm_share", "exposed", "overlap", "other", "busbw")
    )
    _, state = render(library, body + " {{ ddp(run).sweep_busbw(1) }} {{ ddp(run).projected(8) }}", tmp_path)
    rows = dict(state.rows)
    s = scaling.summarize(library.docs[TWO])
    assert s.gpus == 2
    assert rows["ddp(run).efficiency"].value == s.step_1_s / s.step_n_s
    assert rows["ddp(run).tok_s_n"].value == 64 / s.step_n_s and rows["ddp(run).tok_s_n"].unit == "tok/s"
    assert rows["ddp(run).comm_share"].value == s.comm_s / s.step_n_s
    assert rows["ddp(run).exposed"].value == s.exposed_s
    assert rows["ddp(run).other"].value == s.step_n_s - s.step_1_s - s.exposed_s
    assert rows["ddp(run).busbw"].value == s.grad_busbw_b_s and rows["ddp(run).busbw"].unit == "B/s"
    assert rows["ddp(run).sweep_busbw(1)"].value == s.sweep_busbw_b_s[2**20]
    _, state = render(library, "{{ ddp(run).paired_efficiency }}", tmp_path)
    paired = dict(state.rows)["ddp(run).paired_efficiency"]
    assert paired.value is None and "probe version 1" in paired.note  # this fixture predates paired rounds
    projected = rows["ddp(run).projected(8)"]
    assert projected.value == scaling.projected_efficiency(s, 8)
    assert projected.derivation.startswith("PROJECTION, not a measurement")


def test_one_process_says_n_is_one(library: Library, tmp_path: Path) -> None:
    _, state = render(library, "{{ ddp(one).tok_s_1 }} {{ ddp(one).efficiency }} {{ ddp(one).projected(8) }}", tmp_path)
    rows = dict(state.rows)
    assert rows["ddp(one).tok_s_1"].value == scaling.summarize(library.docs[ONE]).tok_s_1
    for key in ("ddp(one).efficiency", "ddp(one).projected(8)"):
        assert rows[key].value is None and rows[key].note.startswith("N=1")


def test_interconnect_block_and_unswept_size(library: Library, tmp_path: Path) -> None:
    text, _ = render(library, "{{ ddp(run).interconnect }}", tmp_path)
    assert "nvidia-smi was not available" in text and "none named" in text
    with pytest.raises(PageError, match=r"3 MiB was not swept in run \(MiB swept: 0\.25, 1\)"):
        render(library, "{{ ddp(run).sweep_busbw(3) }}", tmp_path)


def test_a_projections_gpu_count_is_a_ledger_row_of_no_measurement(library: Library, tmp_path: Path) -> None:
    _, state = render(library, "{{ ddp(run).projected(64) }} at {{ ddp(run).projected_gpus(64) }} GPUs", tmp_path)
    gpus = dict(state.rows)["ddp(run).projected_gpus(64)"]
    assert (gpus.value, gpus.unit, gpus.text) == (64, "", "64")
    assert gpus.derivation == "the GPU count projected() is evaluated at (64): an input of the page, not a measurement"
    with pytest.raises(PageError, match=r"projected_gpus\(\): gpus must be >= 1, got 0$"):
        render(library, "{{ ddp(run).projected_gpus(0) }}", tmp_path)
