"""The padding probe's own speed: its numpy engine beside a pure-Python reference, in one run (issue 11).

1. A synthetic corpus of document lengths (log-normal, seeded) of ``--tokens`` tokens in all.
2. On a ``--sample-tokens`` prefix, the reference (one Python loop per sequence: split, bucket,
   pair from per-bucket queues, count) and the engine (``measure.batching``) each run the whole
   sweep (naive + every bucket size); their counts must be identical, row for row, and both
   speeds are reported in corpus tokens per second of sweep (ABAB order, best of the rounds).
3. The engine alone on the whole corpus, and the full probe (``measure.probes.padding.run`` on a
   CSV of the lengths: parse, chunk, sweep) on the same corpus.

Goal (issue 11): at least 10 million tokens of lengths per second, so a billion-token corpus takes
under two minutes. Wall seconds and process CPU seconds are both reported (on a shared machine the
wall clock includes time spent waiting for a core). The probe's time includes its fixed start-up
(the machine fingerprint imports torch). Prints one JSON object; ``--out FILE`` also writes it.

    PYTHONPATH=. python3 bench/padding.py                      # 1e9 tokens, 2e7-token sample
    PYTHONPATH=. python3 bench/padding.py --tokens 1e8 --sample-tokens 5e6
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import deque
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from measure import batching
from measure.probes import padding

WIDTH, MICROBATCH, ACCUMULATION, SEED = 2048, 8, 8, 0
SIZES = padding.BUCKET_SIZES


def synthetic_lengths(tokens: float, seed: int = 1) -> np.ndarray:
    """Log-normal document lengths (median e^6 ≈ 403 tokens, sigma 1.2), cut where the running sum passes ``tokens``."""
    rng = np.random.default_rng(seed)
    out, total = [], 0
    while total < tokens:
        part = np.maximum(1, rng.lognormal(6.0, 1.2, size=1_000_000).astype(np.int64))
        out.append(part)
        total += int(part.sum())
    lengths = np.concatenate(out)
    return lengths[: int(np.searchsorted(np.cumsum(lengths), tokens)) + 1]


def engine_sweep(lengths: np.ndarray) -> list[dict[str, Any]]:
    """The probe's engine: chunk, naive, every bucket size."""
    roots = np.arange(lengths.size, dtype=np.int64)
    seq, seq_root = batching.chunk(lengths, roots, WIDTH)
    shape = (lengths.size, WIDTH, MICROBATCH, ACCUMULATION)
    rows = [batching.naive(seq, seq_root, *shape, SEED)]
    for size in SIZES:
        rows.append(batching.bucket_to_pair(seq, seq_root, *shape[:2], size, *shape[2:], SEED))
    return rows


def _reference_counts(
    pairs: list[tuple[int, int]], seq: list[int], roots: list[int], seed: int | None
) -> dict[str, Any]:
    """Counts of one batching; ``seed`` None: microbatches stay in row order (naive is shuffled already)."""
    row_tokens = [seq[a] + (seq[b] if b >= 0 else 0) for a, b in pairs]
    rows = len(pairs)
    count = -(-rows // MICROBATCH)
    perm = list(range(count)) if seed is None else np.random.default_rng(seed).permutation(count).tolist()
    position = [0] * count
    for new, old in enumerate(perm):
        position[old] = new
    full = count // ACCUMULATION
    seen: set[tuple[int, int]] = set()
    longest = 0
    for m in range(count):
        chunk_rows = row_tokens[m * MICROBATCH : (m + 1) * MICROBATCH]
        longest += max(chunk_rows) * len(chunk_rows)
    for r, (a, b) in enumerate(pairs):
        window = position[r // MICROBATCH] // ACCUMULATION
        if window < full:
            seen.add((window, roots[a]))
            if b >= 0:
                seen.add((window, roots[b]))
    return {
        "rows": rows,
        "tokens": sum(row_tokens),
        "slots_width": rows * WIDTH,
        "slots_longest": longest,
        "full_windows": full,
        "distinct_roots": len(seen),
    }


def reference_sweep(lengths: np.ndarray) -> list[dict[str, Any]]:
    """The same sweep, one Python step per sequence (the reference the engine must match)."""
    seq, roots = [], []
    for doc, n in enumerate(lengths.tolist()):
        while n > 0:
            seq.append(min(WIDTH, n))
            roots.append(doc)
            n -= WIDTH
    order = np.random.default_rng(SEED).permutation(len(seq)).tolist()  # naive: the engine's shuffle
    naive_rows = [(i, -1) for i in order]
    out = [{"batching": "naive", **_reference_counts(naive_rows, seq, roots, None)}]
    for size in SIZES:
        queues: dict[int, deque[int]] = {}
        for i, n in enumerate(seq):
            queues.setdefault(min(-(-n // size) * size, WIDTH), deque()).append(i)
        keys = sorted(queues)
        lo, hi, pairs = 0, len(keys) - 1, []
        while lo <= hi:
            if not queues[keys[hi]]:
                hi -= 1
                continue
            if not queues[keys[lo]]:
                lo += 1
                continue
            a = queues[keys[hi]].popleft()
            if lo == hi:
                fits = 2 * keys[hi] <= WIDTH and queues[keys[hi]]
                pairs.append((a, queues[keys[hi]].popleft() if fits else -1))
            elif keys[hi] + keys[lo] <= WIDTH:
                pairs.append((a, queues[keys[lo]].popleft()))
            else:
                pairs.append((a, -1))
        out.append({"batching": "bucket-to-pair", **_reference_counts(pairs, seq, roots, SEED)})
    return out


COMPARED = ("rows", "tokens", "slots_width", "slots_longest", "full_windows", "distinct_roots")


def main() -> int:
    parser = argparse.ArgumentParser(
        allow_abbrev=False, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tokens", type=float, default=1e9, help="corpus size in tokens (default 1e9)")
    parser.add_argument("--sample-tokens", type=float, default=2e7, help="prefix the reference runs on (default 2e7)")
    parser.add_argument("--rounds", type=int, default=2, help="ABAB rounds on the sample (default 2)")
    parser.add_argument("--out", type=Path, help="also write the JSON result here")
    args = parser.parse_args()

    lengths = synthetic_lengths(args.tokens)
    sample = lengths[: int(np.searchsorted(np.cumsum(lengths), args.sample_tokens)) + 1]
    sample_tokens = int(sample.sum())
    best = {"engine": float("inf"), "reference": float("inf")}
    cpu = {"engine": float("inf"), "reference": float("inf")}
    results: dict[str, list[dict[str, Any]]] = {}
    for _ in range(args.rounds):
        for name, fn in (("engine", engine_sweep), ("reference", reference_sweep)):
            t0, c0 = time.perf_counter(), time.process_time()
            results[name] = fn(sample)
            best[name] = min(best[name], time.perf_counter() - t0)
            cpu[name] = min(cpu[name], time.process_time() - c0)
    mismatches = [
        (i, key)
        for i, (e, r) in enumerate(zip(results["engine"], results["reference"], strict=True))
        for key in COMPARED
        if e[key] != r[key]
    ]

    t0, c0 = time.perf_counter(), time.process_time()
    engine_sweep(lengths)
    engine_full_s, engine_full_cpu_s = time.perf_counter() - t0, time.process_time() - c0
    with tempfile.TemporaryDirectory() as tmp:
        csv_path = Path(tmp) / "lengths.csv"
        t0 = time.perf_counter()
        np.savetxt(csv_path, lengths, fmt="%d", header="length", comments="")
        write_s = time.perf_counter() - t0
        t0, c0 = time.perf_counter(), time.process_time()
        evidence = padding.run(padding.Config(corpus=str(csv_path)))
        probe_s, probe_cpu_s = time.perf_counter() - t0, time.process_time() - c0
    tokens = int(lengths.sum())
    out = {
        "corpus": {"documents": int(lengths.size), "tokens": tokens, "sample_tokens": sample_tokens},
        "sweep_settings": 1 + len(SIZES),
        "sample": {
            "engine_s": best["engine"],
            "reference_s": best["reference"],
            "engine_tok_s": sample_tokens / best["engine"],
            "reference_tok_s": sample_tokens / best["reference"],
            "speedup": best["reference"] / best["engine"],
            "engine_cpu_s": cpu["engine"],
            "reference_cpu_s": cpu["reference"],
            "cpu_speedup": cpu["reference"] / cpu["engine"],
            "identical_counts": not mismatches,
            "mismatches": mismatches[:10],
        },
        "full": {
            "engine_s": engine_full_s,
            "engine_tok_s": tokens / engine_full_s,
            "engine_cpu_s": engine_full_cpu_s,
            "engine_tok_per_cpu_s": tokens / engine_full_cpu_s,
            "probe_s": probe_s,
            "probe_tok_s": tokens / probe_s,
            "probe_cpu_s": probe_cpu_s,
            "probe_status": evidence.status,
            "csv_write_s": write_s,
        },
        "goal_tok_s": 1e7,
        "goal_met": tokens / probe_s >= 1e7,
    }
    text = json.dumps(out, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0 if not mismatches else 1


if __name__ == "__main__":
    raise SystemExit(main())
