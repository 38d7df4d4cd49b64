"""``probebook check masks``: the sliding-window band check on a workload's real masks, before a job (issue 40).

A thin call into ``measure.workload.maskcheck``; torch is imported only when the command runs.
"""

from __future__ import annotations

import argparse
from typing import Any

from measure.errors import EXIT
from probebook.cli.output import json_text


def register(sub: Any) -> None:
    from measure.cli import command_group
    from measure.workload import DTYPES, EXPERTS_IMPLS
    from measure.workload.presets import PRESETS
    from probebook.cli import command

    group = command_group(
        sub,
        "check",
        "Checks of a workload that run in seconds on the CPU, before a job spends GPU hours.",
        "probebook check masks --workload mymodel.harness:factory --sliding-window 512",
        dest="check",
        metavar="CHECK",
    )
    p = command(
        group,
        "masks",
        "Run one forward with a sliding window and band-check the mask every scaled_dot_product_attention call "
        "receives (one call per layer, in order): a local layer's rows hold at most W keys, none ahead, none W or "
        "more back; a global layer stays causal. Exit 1 when a layer fails or no call is seen.",
        "probebook check masks --workload mymodel.harness:factory --sliding-window 512 --global-every 4",
        _masks,
    )
    p.add_argument("--workload", metavar="PKG.MOD:FACTORY", help="your model (README 'Measure your own model')")
    p.add_argument("--preset", default="tiny", choices=tuple(PRESETS), help="reference decoder size (default tiny)")
    p.add_argument("--sliding-window", type=int, required=True, metavar="W", help="keys a local layer may see")
    p.add_argument("--global-every", type=int, metavar="K", help="every K-th layer stays global")
    p.add_argument("--seq-len", type=int, metavar="S", help="sequence length (default: 4 x the window)")
    p.add_argument("--batch", type=int, default=1, metavar="B", help="batch size (default 1)")
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"), help="where the forward runs (default cpu)")
    p.add_argument("--dtype", default="fp32", choices=DTYPES, help="compute dtype (default fp32)")
    p.add_argument("--experts-impl", default="looped", choices=EXPERTS_IMPLS, help="MoE presets' expert GEMMs")
    p.add_argument("--seed", type=int, default=0, help="seed for weights and tokens (default 0)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")


def _masks(args: argparse.Namespace) -> int:
    from measure.device_check import resolve_device
    from measure.errors import ProbebookError
    from measure.probes.common import positive
    from measure.workload import WorkloadOptions
    from measure.workload.maskcheck import check_masks

    for name in ("batch", "seq_len"):
        positive(name, getattr(args, name))
    seq_len = args.seq_len or 4 * max(args.sliding_window, 1)
    options = WorkloadOptions(
        preset=args.preset,
        dtype=args.dtype,
        seed=args.seed,
        sliding_window=args.sliding_window,
        global_every=args.global_every,
        experts_impl=args.experts_impl,
        device=resolve_device(args.device),
    )
    if seq_len <= args.sliding_window:
        raise ProbebookError(f"--seq-len {seq_len} must exceed --sliding-window {args.sliding_window} to test the band")
    result = check_masks(options, args.workload, args.batch, seq_len)
    if args.json:
        print(json_text(result, indent=1))
    else:
        print(f"{result['workload']}: {len(result['layers'])} attention call(s) through its {result['through']}, "
              f"window {result['window']}, sequence {seq_len}")  # fmt: skip
        for layer in result["layers"]:
            kind = "local " if layer["local"] else "global"
            shown = f"mask {layer['mask']}"
            if "max_keys_per_row" in layer:
                shown += f": at most {layer['max_keys_per_row']} keys a row, {layer['lookahead_keys']} ahead, "
                shown += f"{layer['beyond_window_keys']} beyond the window"
            print(f"  layer {layer['layer']:>3} {kind} {shown}")
        for failure in result["failures"]:
            print(f"FAIL {failure}")
        print("ok: every layer's mask holds the band" if result["ok"] else f"{len(result['failures'])} failure(s)")
    return EXIT["ok"] if result["ok"] else EXIT["check failed"]
