"""Batch document lengths two ways and count what each costs (numpy, no torch; the ``padding`` probe's engine).

Every function returns raw counts (tokens, slots, rows, distinct roots per window); the shares
and the diversity are derived from them at render time (``render/derive/padding.py``).

* ``chunk``: a document longer than the width becomes full-width sequences and a tail.
* ``naive``: shuffle the sequences, one per row, ``microbatch`` rows per microbatch; count the
  slots when each microbatch is padded to its longest row and when every row is padded to the width.
* ``bucket_to_pair``: sort the sequences (stably, so corpus order holds inside a bucket, unless
  ``shuffle_buckets`` shuffles them first) into
  length buckets of ``bucket`` tokens, then pair them so two share a row when their buckets'
  upper bounds fit the width together: the longest remaining bucket with the shortest, else
  alone (the two-pointer greedy, optimal for at most two items per bin of a fixed capacity).
  Rows form microbatches in that order; the microbatches are then shuffled globally.

Diversity is the number of distinct roots (source documents, or folders) per accumulation window
of ``accumulation`` microbatches, summed over the full windows (a partial last window is left out).
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np


def chunk(lengths: np.ndarray, roots: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Sequences of at most ``width`` tokens: (length per sequence, root per sequence); empty documents drop out.

    ``chunk([5, 0, 2], [0, 1, 2], 2)`` gives lengths ``[2, 2, 1, 2]`` and roots ``[0, 0, 0, 2]``.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    pieces = (lengths + width - 1) // width
    total = int(pieces.sum())
    doc = np.repeat(np.arange(len(lengths)), pieces)
    first = np.cumsum(pieces) - pieces
    k = np.arange(total) - np.repeat(first, pieces)
    seq = np.minimum(width, lengths[doc] - k * width)
    return seq, np.asarray(roots, dtype=np.int64)[doc]


def _distinct_per_window(window_of_seq: np.ndarray, roots: np.ndarray, n_roots: int, full_windows: int) -> int:
    """Sum over windows 0..full_windows-1 of the distinct roots each holds."""
    keep = window_of_seq < full_windows
    keys = window_of_seq[keep].astype(np.int64) * max(1, n_roots) + roots[keep]
    if keys.size == 0:
        return 0
    keys.sort()  # sort + count the changes: several times faster here than np.unique's hashing
    return int(np.count_nonzero(keys[1:] != keys[:-1])) + 1


def _longest_slots(row_tokens: np.ndarray, microbatch: int) -> int:
    """Slots when each microbatch of consecutive rows is padded to its longest row."""
    if row_tokens.size == 0:
        return 0
    starts = np.arange(0, row_tokens.size, microbatch)
    longest = np.maximum.reduceat(row_tokens, starts)
    sizes = np.diff(np.append(starts, row_tokens.size))
    return int((longest * sizes).sum())


def naive(
    seq_len: np.ndarray,
    seq_root: np.ndarray,
    n_roots: int,
    width: int,
    microbatch: int,
    accumulation: int,
    seed: int,
) -> dict[str, Any]:
    """Shuffled sequences, one per row: counts for pad-to-longest and pad-to-width."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(seq_len.size)
    lens = seq_len[order]
    n = int(lens.size)
    microbatches = -(-n // microbatch)
    full = microbatches // accumulation
    window = np.arange(n) // (microbatch * accumulation)
    return {
        "batching": "naive",
        "bucket_size": None,
        "sequences": n,
        "rows": n,
        "tokens": int(lens.sum()),
        "slots_width": n * width,
        "slots_longest": _longest_slots(lens, microbatch),
        "microbatches": microbatches,
        "full_windows": full,
        "distinct_roots": _distinct_per_window(window, seq_root[order], n_roots, full),
        "fingerprint": hashlib.sha256(order.tobytes()).hexdigest()[:16],
    }


def pair_blocks(bounds: list[int], counts: list[int], width: int) -> list[tuple[int, int, int]]:
    """Two-pointer pairing of buckets (upper bounds ascending, member counts): ``(hi, lo, rows)`` blocks.

    ``lo`` is -1 for rows holding one sequence. ``pair_blocks([2, 4, 6], [3, 1, 2], 8)`` pairs the two
    6s with two 2s, then the 4 with the last 2: ``[(2, 0, 2), (1, 0, 1)]``.
    """
    left = list(counts)
    lo, hi = 0, len(bounds) - 1
    blocks = []
    while lo <= hi:
        if left[hi] == 0:
            hi -= 1
            continue
        if left[lo] == 0:
            lo += 1
            continue
        if lo == hi:
            pairs = left[hi] // 2 if 2 * bounds[hi] <= width else 0
            if pairs:
                blocks.append((hi, hi, pairs))
            if left[hi] - 2 * pairs:
                blocks.append((hi, -1, left[hi] - 2 * pairs))
            break
        if bounds[hi] + bounds[lo] <= width:
            n = min(left[hi], left[lo])
            blocks.append((hi, lo, n))
            left[hi] -= n
            left[lo] -= n
        else:
            blocks.append((hi, -1, left[hi]))
            left[hi] = 0
    return blocks


def pair_rows(
    seq_len: np.ndarray, width: int, bucket: int, shuffle_seed: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Rows of bucket-to-pair: (first sequence index, second sequence index or -1) per row, in pairing order.

    Every sequence lands in exactly one row; two share a row only when their buckets' upper bounds
    sum to at most ``width``, so a row never holds more than ``width`` tokens. Inside a bucket the
    sequences keep corpus order, or a seeded random order when ``shuffle_seed`` is given (the
    pairing, and so the padding, depends only on how many sequences each bucket holds).
    """
    bound = np.minimum(-(-seq_len // bucket) * bucket, width)
    if shuffle_seed is None:
        order = np.argsort(bound, kind="stable")
    else:
        perm = np.random.default_rng(shuffle_seed).permutation(seq_len.size)
        order = perm[np.argsort(bound[perm], kind="stable")]
    keys, counts = np.unique(bound[order], return_counts=True)
    ptr = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    firsts, seconds = [], []
    for hi, lo, n in pair_blocks(keys.tolist(), counts.tolist(), width):
        start = ptr[hi]
        if lo == hi:  # pairs inside one bucket: members 0+1, 2+3, ... in corpus order
            firsts.append(order[start : start + 2 * n : 2])
            seconds.append(order[start + 1 : start + 2 * n : 2])
            ptr[hi] += 2 * n
            continue
        firsts.append(order[start : start + n])
        ptr[hi] += n
        if lo < 0:
            seconds.append(np.full(n, -1, dtype=np.int64))
        else:
            seconds.append(order[ptr[lo] : ptr[lo] + n])
            ptr[lo] += n
    empty = np.empty(0, dtype=np.int64)
    return (np.concatenate(firsts) if firsts else empty), (np.concatenate(seconds) if seconds else empty)


def shuffle_microbatches(rows: int, microbatch: int, seed: int) -> np.ndarray:
    """Position of each microbatch (``microbatch`` consecutive rows) after a global shuffle: a permutation."""
    count = -(-rows // microbatch)
    position = np.empty(count, dtype=np.int64)
    position[np.random.default_rng(seed).permutation(count)] = np.arange(count)
    return position


def bucket_to_pair(
    seq_len: np.ndarray,
    seq_root: np.ndarray,
    n_roots: int,
    width: int,
    bucket: int,
    microbatch: int,
    accumulation: int,
    seed: int,
    shuffle_buckets: bool = False,
) -> dict[str, Any]:
    """Bucket, pair to fill the width, shuffle the microbatches: the counts of one sweep setting."""
    first, second = pair_rows(seq_len, width, bucket, seed + 1 if shuffle_buckets else None)
    rows = int(first.size)
    paired = second >= 0
    row_tokens = seq_len[first] + np.where(paired, seq_len[np.maximum(second, 0)], 0)
    position = shuffle_microbatches(rows, microbatch, seed)
    microbatches = int(position.size)
    row_window = position[np.arange(rows) // microbatch] // accumulation
    full = microbatches // accumulation
    seq_window = np.concatenate((row_window, row_window[paired]))
    seq_roots = np.concatenate((seq_root[first], seq_root[second[paired]]))
    return {
        "batching": "bucket-to-pair",
        "bucket_size": int(bucket),
        "sequences": int(first.size + paired.sum()),
        "rows": rows,
        "tokens": int(row_tokens.sum()),
        "slots_width": rows * width,
        "slots_longest": _longest_slots(row_tokens, microbatch),
        "microbatches": microbatches,
        "full_windows": full,
        "distinct_roots": _distinct_per_window(seq_window, seq_roots, n_roots, full),
        "fingerprint": hashlib.sha256(first.tobytes() + second.tobytes()).hexdigest()[:16],
    }


def histogram(lengths: np.ndarray) -> dict[str, list[int]]:
    """Documents per power-of-two length bin: ``counts[i]`` documents with ``edges[i] <= length < edges[i+1]``.

    The first bin is ``[0, 1)`` (empty documents); ``histogram([0, 1, 3, 4])`` has edges ``[0, 1, 2, 4, 8]``
    and counts ``[1, 1, 1, 1]``.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    top = int(lengths.max()) if lengths.size else 0
    edges = [0, 1]
    while edges[-1] <= top:
        edges.append(edges[-1] * 2)
    counts, _ = np.histogram(lengths, bins=np.asarray(edges))
    # np.histogram closes its last bin on the right; the top edge is a power of two above the max, so no effect
    return {"edges": edges, "counts": [int(c) for c in counts]}
