"""Command-line options of the two memory probes, ``batch-sweep`` and ``loss-memory`` (no torch).

Kept beside the probes so that ``measure/cli.py`` registers them with one line; every option maps
onto a field of the probe's config dataclass, which validates it.
"""

from __future__ import annotations

import argparse
from typing import Any, Callable


def _shared(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--budget-s",
        type=float,
        metavar="SECONDS",
        help="stop before a new point once this many seconds have passed; stored as partial",
    )
    p.add_argument(
        "--point-timeout-s",
        type=float,
        metavar="SECONDS",
        help="kill a point's process after this many seconds (default: 600)",
    )


def add_memory_args(
    name: str, p: argparse.ArgumentParser, int_list: Callable[[str], Any], str_list: Callable[[str], Any]
) -> None:
    """Add the options of ``batch-sweep`` or ``loss-memory`` to its subcommand parser."""
    _shared(p)
    if name == "batch-sweep":
        p.add_argument(
            "--contexts",
            type=int_list,
            metavar="S,S,...",
            help="sequence lengths, each walked separately (default: 1024,2048,4096 on CUDA; 32,64 on CPU)",
        )
        p.add_argument("--start-batch", type=int, help="first batch of every walk; each next one doubles (default: 1)")
        p.add_argument("--max-batch", type=int, help="largest batch to try (default: no limit besides --max-tokens)")
        p.add_argument(
            "--max-tokens", type=int, help="largest batch x context to try (default: 1048576 on CUDA, 512 on CPU)"
        )
        p.add_argument(
            "--cpu-memory-limit-bytes",
            type=int,
            metavar="BYTES",
            help="CPU only: a real address-space limit (RLIMIT_AS) this far above each point "
            "process's size after building the model, so large batches genuinely fail to allocate",
        )
    else:
        p.add_argument("--context", type=int, help="sequence length (default: 2048 on CUDA, 256 on CPU)")
        p.add_argument(
            "--microbatches",
            type=int_list,
            metavar="N,N,...",
            help="microbatch sizes in sequences, at least 2 (default: 1,2,4,8,16)",
        )
        p.add_argument("--arms", type=str_list, help="comma list of materialized, chunked (default: both)")
        p.add_argument(
            "--chunk-tokens", type=int, help="tokens per chunk of the chunked loss (default: 1024 on CUDA, 64 on CPU)"
        )
