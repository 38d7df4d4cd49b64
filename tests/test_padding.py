"""The padding probe: batching by hand on fixture lengths, bucket-to-pair invariants, the no-op sweep, derivations."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli_here
from hypothesis import given, settings
from hypothesis import strategies as st

from measure.batching import chunk, histogram, pair_blocks, pair_rows, shuffle_microbatches
from measure.errors import ProbebookError
from measure.evidence.envelope import parse
from measure.evidence.store import Store
from render.derive import padding as padmod
from render.functions.derivations import Library
from render.functions.page import Page
from render.functions.pipeline import padding
from render.tables.kinds import render as render_table

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "padding"
# width 8, two rows per microbatch, one microbatch per window: every number below is checkable by hand
SMALL = ["--width", "8", "--microbatch", "2", "--accumulation", "1", "--bucket-sizes", "1,4,8", "--quiet"]


def measure(cli, archive, *args):
    """``probebook measure padding ARGS`` through ``cli``: the real process (``run_cli``) for the first refusal below,
    this process (``run_cli_here``) for the sweeps, whose subject is what the probe stores."""
    out = cli("--archive", str(archive), "measure", "padding", *args)
    ident = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""
    return out, (parse(Store(archive).read_bytes(ident), ident) if ident.startswith("sha256:") else None)


def test_hand_checkable_lengths(cli_here, archive):
    # lengths 8 6 2 4 4 3 1 = 28 tokens. Bucket 1 pairs 6+1, 4+2, 4+3 and leaves 8 alone: 4 rows, 32 slots.
    # Bucket 4: bounds 8,8 stay alone, five sequences of bound 4 pair twice, one left: 5 rows, 40 slots.
    # Bucket 8: every bound is the width, nothing pairs: 7 rows, as naive at the width.
    out, doc = measure(cli_here, archive, "--corpus", str(FIXTURES / "lengths.csv"), *SMALL)
    assert out.returncode == 0, out.stderr
    assert doc["status"] == "complete"
    rows = {(r["batching"], r["bucket_size"]): r for r in doc["data"]["samples"]}
    assert {k: (r["rows"], r["tokens"], r["slots_width"]) for k, r in rows.items()} == {
        ("naive", None): (7, 28, 56),
        ("bucket-to-pair", 1): (4, 28, 32),
        ("bucket-to-pair", 4): (5, 28, 40),
        ("bucket-to-pair", 8): (7, 28, 56),
    }
    shares = {k: padmod.padding_share(r["tokens"], r["slots_width"]) for k, r in rows.items()}
    assert shares == {
        ("naive", None): 0.5,
        ("bucket-to-pair", 1): 0.125,
        ("bucket-to-pair", 4): 0.30000000000000004,  # 1 - 28/40 in binary floating point
        ("bucket-to-pair", 8): 0.5,
    }
    # bucket 1 rows in pairing order: [8], [6+1], [4+2], [4+3]; microbatches [8,7] and [6,7] padded to 8 and 7
    assert rows[("bucket-to-pair", 1)]["slots_longest"] == 2 * 8 + 2 * 7
    # seven documents, each its own root: all seven seen across the full windows
    assert [(r["full_windows"], r["distinct_roots"]) for r in doc["data"]["samples"][1:]] == [(2, 7), (3, 7), (4, 7)]
    corpus = doc["data"]["corpus"]
    raw = (FIXTURES / "lengths.csv").read_bytes()
    assert corpus == {
        "name": "lengths.csv",
        "sha256": hashlib.sha256(raw).hexdigest(),
        "format": "csv",
        "documents": 7,
        "empty_documents": 0,
        "roots": 7,
        "tokens": 28,
        "sequences": 7,
    }
    assert doc["data"]["tokenizer"] == {"kind": "lengths"}
    assert doc["data"]["length_histogram"] == {"edges": [0, 1, 2, 4, 8, 16], "counts": [0, 1, 2, 3, 1]}

    page = Page(Library({doc_id(archive): doc}), {"pad": doc_id(archive)})
    view = padding(page, "pad", bucket=1)
    assert (view.before.value, view.after.value, view.rows_before.value, view.rows_after.value) == (0.5, 0.125, 7, 4)
    assert view.diversity.value == 3.5 and view.knee.value == 4  # 7/2 per window, then 7/3 at bucket 4
    assert view.saving.value is None and "no step-scaling fit" in view.saving.note
    table = render_table("padding", [doc])
    assert "| bucket-to-pair | 1 | 4 | 12.5% |" in table.markdown
    lengths = render_table("padding-lengths", [doc])
    assert "| 4 | 8 | 3 | 42.9% |" in lengths.markdown  # 6, 4, 4 of the seven documents


def doc_id(archive: Path) -> str:
    (ident,) = Store(archive).ids()
    return ident


def test_folder_corpus_is_named_and_hashed(cli_here, archive):
    folder = FIXTURES / "corpus"
    out, doc = measure(cli_here, archive, "--corpus", str(folder), "--roots", "folder", "--name", "fixture", *SMALL)
    assert out.returncode == 0, out.stderr
    manifest = "".join(
        f"{rel}\t{hashlib.sha256((folder / rel).read_bytes()).hexdigest()}\n"
        for rel in ("a/one.txt", "a/two.txt", "b/three.txt")
    )
    corpus = doc["data"]["corpus"]
    assert corpus["sha256"] == hashlib.sha256(manifest.encode()).hexdigest()
    # byte-level: 5, 3 and 10 bytes; the 10-byte file splits at width 8 into 8 + 2
    assert (corpus["name"], corpus["tokens"], corpus["sequences"], corpus["roots"]) == ("fixture", 18, 4, 2)
    assert doc["data"]["tokenizer"] == {"kind": "bytes"}
    assert doc["params"]["roots"] == "folder"


def test_jsonl_corpus_with_root_field(cli_here, archive):
    out, doc = measure(cli_here, archive, "--corpus", str(FIXTURES / "docs.jsonl"), "--roots", "repo", *SMALL)
    assert out.returncode == 0, out.stderr
    corpus = doc["data"]["corpus"]
    # byte-level over UTF-8: "héllo wörld" is 13 bytes (two 2-byte letters); the blank line is no document
    assert (corpus["documents"], corpus["tokens"], corpus["roots"], corpus["format"]) == (3, 21, 2, "jsonl")
    assert corpus["sha256"] == hashlib.sha256((FIXTURES / "docs.jsonl").read_bytes()).hexdigest()
    out, _ = measure(cli_here, archive, "--corpus", str(FIXTURES / "broken.jsonl"), "--quiet")
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [f"probebook: error: {FIXTURES / 'broken.jsonl'} line 2: not valid JSON"]


def test_a_sweep_that_varies_nothing_is_stored_failed(cli_here, archive):
    out, doc = measure(cli_here, archive, "--corpus", str(FIXTURES / "all_full.csv"), *SMALL)
    assert out.returncode == 1
    assert doc["status"] == "failed"
    assert doc["error"].startswith("the bucket sweep varied nothing: all 3 bucket sizes produced identical batches")
    assert "stored as failed" in out.stderr


def test_bad_input_is_one_line(cli, archive):
    out, _ = measure(cli, archive, "--corpus", str(FIXTURES / "lengths.csv"), "--column", "tokens", "--quiet")
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        f"probebook: error: {FIXTURES / 'lengths.csv'}: no column 'tokens' of token lengths (columns: length)"
    ]
    assert not (archive / "evidence").exists()
    # the second refusal in this process (conftest.run_cli_here); the first kept the real exit status and stderr
    out, _ = measure(run_cli_here, archive, "--corpus", str(FIXTURES / "lengths.csv"), "--fit", "sha256:12", "--quiet")
    assert out.returncode == 2 and "--fit 'sha256:12' is not an evidence id" in out.stderr


def test_chunk_pairing_histogram_by_hand():
    seq, roots = chunk(np.array([5, 0, 2]), np.array([0, 1, 2]), 2)
    assert (seq.tolist(), roots.tolist()) == ([2, 2, 1, 2], [0, 0, 0, 2])
    assert pair_blocks([2, 4, 6], [3, 1, 2], 8) == [(2, 0, 2), (1, 0, 1)]
    assert pair_blocks([5], [3], 8) == [(0, -1, 3)]
    assert pair_blocks([4], [3], 8) == [(0, 0, 1), (0, -1, 1)]
    assert histogram(np.array([0, 1, 3, 4])) == {"edges": [0, 1, 2, 4, 8], "counts": [1, 1, 1, 1]}


@settings(max_examples=60, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 64), min_size=1, max_size=200),
    width=st.integers(1, 64),
    bucket=st.integers(1, 80),
    microbatch=st.integers(1, 9),
    seed=st.integers(0, 3),
)
def test_bucket_to_pair_keeps_every_sequence_once(lengths, width, bucket, microbatch, seed):
    seq, _ = chunk(np.array(lengths), np.zeros(len(lengths), dtype=np.int64), width)
    first, second = pair_rows(seq, width, bucket)
    placed = np.concatenate((first, second[second >= 0]))
    assert sorted(placed.tolist()) == list(range(seq.size))  # never dropped, never duplicated
    tokens = seq[first] + np.where(second >= 0, seq[np.maximum(second, 0)], 0)
    assert int(tokens.max()) <= width
    shuffled_first, shuffled_second = pair_rows(seq, width, bucket, shuffle_seed=seed)
    assert sorted(np.concatenate((shuffled_first, shuffled_second[shuffled_second >= 0])).tolist()) == sorted(
        placed.tolist()
    )
    assert shuffled_first.size == first.size  # the pairing depends only on the bucket counts
    position = shuffle_microbatches(first.size, microbatch, seed)
    assert sorted(position.tolist()) == list(range(-(-first.size // microbatch)))  # every microbatch kept


def test_derivations_by_hand():
    assert padmod.padding_share(3, 4) == 0.25
    with pytest.raises(ProbebookError, match="padding share needs"):
        padmod.padding_share(5, 4)
    assert padmod.diversity(12, 4) == 3.0 and padmod.diversity(0, 0) is None
    assert padmod.diversity_knee([8, 16, 32], [10.0, 9.8, 9.0]) == 32
    assert padmod.diversity_knee([8, 16], [10.0, 9.6]) is None
    assert padmod.diversity_knee([8, 16, 32, 64], [9.0, 10.0, 9.6, 9.4]) == 64  # measured from the best, not the first
    assert padmod.step_time_s(0.01, 1e-5, 1e-9, 1000) == pytest.approx(0.021)
    assert padmod.epoch_saving_s(1000, 900, 4, 0.5) == 12.5
    assert padmod.slowdown(1.2, 1.0) == pytest.approx(0.2)
    assert padmod.padded_batch_share([12, 10, 8, 6], 12) == 0.25
