"""``padding``: how much of each batch is padding, naive against bucket-to-pair, and what bucketing does to diversity.

Runs on the CPU, no torch. The corpus (``measure/corpus.py``: a folder of text files, JSONL,
Parquet or a CSV of token lengths) is read into document lengths, split into sequences of at most
``--width`` tokens, then batched (``measure/batching.py``):

* naive: shuffled, one sequence per row, padded to the longest row of each microbatch and to the width;
* bucket-to-pair at every ``--bucket-sizes`` setting: length buckets, pairs filling the width, a
  global shuffle of microbatches.

Each row of ``data.samples`` holds one batching's raw counts (tokens, slots, rows, distinct roots
over the full accumulation windows); padding shares, diversity, its knee and the projected saving
(``--fit``: a step-scaling evidence id) are derived at render time (``render/derive/padding.py``).

Sweep-varies-nothing check: when every bucket size yields identical batches (same fingerprint of
the row assignment) the sweep measured nothing, and the evidence is stored as ``failed``.
"""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass
from typing import Any

from measure.errors import ProbebookError
from measure.evidence.envelope import Evidence
from measure.probes.common import positive
from measure.run.runner import Recorder, execute

PROBE = "padding"
VERSION = 1
HELP = "Padding share of naive batching against bucket-to-pair over a bucket-size sweep, with diversity per window."
EXAMPLE = "probebook measure padding --corpus /usr/lib/python3.11 --glob '**/*.py' --fit sha256:82604df8c5ff"
BUCKET_SIZES = (8, 16, 32, 64, 128, 256, 512, 1024, 2048)
_EVIDENCE_ID = re.compile(r"^sha256:[0-9a-f]{12,64}$")


@dataclass(frozen=True)
class Config:
    """Options of the padding probe."""

    corpus: str = ""
    """A folder of text files, a .jsonl, .parquet or .csv (token lengths) file, or one text file."""
    glob: str = "**/*"
    """Which files of a folder corpus are documents."""
    exclude: tuple[str, ...] = ()
    """fnmatch patterns of a folder corpus's relative paths to leave out (e.g. ``site-packages/*``)."""
    name: str | None = None
    """The corpus's name in the evidence (default: the file or folder name)."""
    tokenizer: str = "bytes"
    """``bytes`` (byte-level: one token per UTF-8 byte) or a tokenizers JSON file."""
    column: str | None = None
    """JSONL/Parquet: the text field (default text); CSV: the token-length column (default length)."""
    roots: str = "document"
    """Diversity counts ``document``s, a folder corpus's top-level ``folder``s, or a named root field."""
    width: int = 2048
    """Sequence width in tokens: rows are padded to it and longer documents split at it."""
    microbatch: int = 8
    """Rows per microbatch."""
    accumulation: int = 8
    """Microbatches per accumulation window (one optimizer step)."""
    bucket_sizes: tuple[int, ...] = BUCKET_SIZES
    """Bucket widths in tokens to sweep (at least two)."""
    shuffle_buckets: bool = False
    """Shuffle the sequences inside each bucket before pairing (default: they keep corpus order)."""
    seed: int = 0
    """Seed of the naive shuffle, the in-bucket shuffle and the microbatch shuffle."""
    fit: str | None = None
    """Step-scaling evidence id whose fit turns the padding removed into seconds per epoch."""

    def __post_init__(self) -> None:
        if not self.corpus:
            raise ProbebookError("--corpus is required: a folder, a .jsonl/.parquet/.csv file or a text file")
        for name in ("width", "microbatch", "accumulation"):
            positive(name, getattr(self, name))
        if len(set(self.bucket_sizes)) < 2 or min(self.bucket_sizes) < 1:
            raise ProbebookError(f"--bucket-sizes needs at least two distinct sizes >= 1, got {self.bucket_sizes}")
        if self.fit is not None and not _EVIDENCE_ID.match(self.fit):
            raise ProbebookError(f"--fit {self.fit!r} is not an evidence id (sha256: and at least 12 hex digits)")


def run(config: Config, journal: Any = None, progress: bool = False) -> Evidence:
    """Read the corpus, batch it both ways at every bucket size; return the evidence (not stored)."""
    from measure import batching, corpus

    t0 = time.perf_counter()
    docs = corpus.load(
        config.corpus, config.glob, config.tokenizer, config.column, config.roots, config.name, config.exclude
    )
    read_s = time.perf_counter() - t0
    params = {**asdict(config), "bucket_sizes": sorted(set(config.bucket_sizes))}
    # no host folder in evidence (or on the site built from it): the corpus is named by its SHA-256 in data.corpus
    params["corpus"] = corpus.portable_path(config.corpus)
    if config.tokenizer != "bytes":
        params["tokenizer"] = corpus.portable_path(config.tokenizer)

    def body(rec: Recorder) -> None:
        start = time.perf_counter()
        seq_len, seq_root = batching.chunk(docs.lengths, docs.roots, config.width)
        shape = (docs.n_roots, config.width, config.microbatch, config.accumulation)
        naive = batching.naive(seq_len, seq_root, *shape, config.seed)
        rec.point([naive], None, f"naive: {naive['rows']} rows")
        for size in params["bucket_sizes"]:
            row = batching.bucket_to_pair(
                seq_len, seq_root, *shape[:2], size, *shape[2:], config.seed, config.shuffle_buckets
            )
            rec.point([row], None, f"bucket {size}: {row['rows']} rows")
        batching_s = time.perf_counter() - start
        tokens = int(docs.lengths.sum())
        rec.data.update(
            {
                "corpus": {
                    "name": docs.name,
                    "sha256": docs.sha256,
                    "format": docs.format,
                    "documents": int(docs.lengths.size),
                    "empty_documents": int((docs.lengths == 0).sum()),
                    "roots": docs.n_roots,
                    "tokens": tokens,
                    "sequences": int(seq_len.size),
                },
                "tokenizer": docs.tokenizer,
                "length_histogram": batching.histogram(docs.lengths),
                "observed": {
                    "read_s": read_s,
                    "batching_s": batching_s,
                    "settings": 1 + len(params["bucket_sizes"]),
                },
            }
        )
        prints = {r["fingerprint"] for r in rec.samples if r["batching"] == "bucket-to-pair"}
        if len(prints) == 1:
            rec.fail(
                f"the bucket sweep varied nothing: all {len(params['bucket_sizes'])} bucket sizes produced identical "
                "batches (every sequence in one bucket, or sizes that cannot change the pairing)"
            )

    return execute(PROBE, VERSION, params, __file__, body, journal, progress)
