"""Argument definitions for ``probebook measure <probe>`` and ``python -m measure <probe>``.

Both entry points call ``register(subparsers, command)``, where ``command`` adds a subcommand
whose help ends with an example. Nothing here imports torch: a probe module is imported only
when its command runs, and probe modules import torch inside ``run``.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
from dataclasses import fields
from pathlib import Path
from typing import Any, Callable

from measure.errors import run_action
from measure.probes import PROBES
from measure.workload.presets import PRESETS

HELP = {
    "gemm": (
        "Matmul TFLOP/s on the workload's linear-layer shapes, a square reference, and the FLOP-weighted ceiling.",
        "probebook measure gemm --preset 250m --device cuda",
    ),
    "copy": (
        "Host<->device (pinned, pageable) and device<->device bandwidth: one block against the "
        "workload's per-layer tensors.",
        "probebook measure copy --preset 90m",
    ),
    "step-scaling": (
        "Training-step time at several sequence lengths, at fixed batch and at fixed tokens per step.",
        "probebook measure step-scaling --preset 90m --seq-lens 512,1024,2048,4096",
    ),
    "kernels": (
        "torch.profiler over a few steps: device-kernel time shares (attention, GEMM, norm/elementwise, "
        "loss, optimizer, other).",
        "probebook measure kernels --preset 250m --compile",
    ),
    "ablate": (
        "Interleaved arms that each remove one term of the step (optimizer, loss/head, attention, input copy).",
        "probebook measure ablate --preset 90m --rounds 7",
    ),
    "optimizer": (
        "optimizer.step's share of the step by CUDA events inside the real step, paired with an "
        "uninstrumented baseline.",
        "probebook measure optimizer --preset 250m",
    ),
    "batch-sweep": (
        "Peak memory and tokens/s while the batch doubles at each context, up to the first OOM or a "
        "cap; one fresh process per point.",
        "probebook measure batch-sweep --preset 90m --contexts 1024,2048,4096",
    ),
    "loss-memory": (
        "Peak memory per microbatch for the materialized loss (full logits) against a chunked, recomputed loss.",
        "probebook measure loss-memory --preset 250m --context 2048 --microbatches 1,2,4,8,16",
    ),
}


def _numbers(text: str, cast: Callable[[str], Any], noun: str) -> tuple[Any, ...]:
    try:
        values = tuple(cast(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated {noun}s, got {text!r}") from None
    if not values:
        raise argparse.ArgumentTypeError(f"expected at least one {noun}")
    return values


def _int_list(text: str) -> tuple[int, ...]:
    return _numbers(text, int, "integer")


def _float_list(text: str) -> tuple[float, ...]:
    return _numbers(text, float, "number")


def _str_list(text: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in text.split(",") if v.strip())


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--preset", default="tiny", choices=list(PRESETS), help="reference preset (default: tiny)")
    p.add_argument(
        "--device",
        default="auto",
        choices=["auto", "cpu", "cuda"],
        help="where to run (default: cuda when present, else cpu)",
    )
    p.add_argument("--compile", action="store_true", help="torch.compile the model's blocks")
    p.add_argument("--checkpointing", action="store_true", help="activation checkpointing per block")
    p.add_argument("--dtype", default="bf16", choices=["bf16", "fp32"], help="compute dtype (default: bf16 autocast)")
    p.add_argument(
        "--workload",
        metavar="PKG.MOD:FACTORY",
        help="time your own harness: factory(options) -> (model, make_batch, step[, optimizer])",
    )
    p.add_argument("--seed", type=int, default=0, help="seed for weights, tokens and operands")
    p.add_argument(
        "--sliding-window", type=int, metavar="W", help="reference decoder: local layers see the last W keys"
    )
    p.add_argument("--global-every", type=int, metavar="K", help="with --sliding-window: every K-th layer global")
    p.add_argument("--warmup", type=int, default=3, help="untimed calls before timing (default: 3)")
    p.add_argument("--windows", type=int, default=5, help="timed windows or interleaved rounds (default: 5)")
    p.add_argument("--iters", type=int, default=3, help="calls per window (default: 3)")
    _storage(p)


def _storage(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", metavar="ARCHIVE", help="archive to store the evidence in (default: the global --archive)")
    p.add_argument("--notes", help="free text kept with the evidence")
    p.add_argument("--quiet", action="store_true", help="no per-point progress lines on stderr")


def _probe_args(name: str, p: argparse.ArgumentParser) -> None:
    if name == "step-scaling":
        p.add_argument(
            "--seq-lens",
            type=_int_list,
            metavar="S,S,...",
            help="at least 3 sequence lengths (default: 512,1024,2048,4096,6144,8192 on CUDA; 32..256 on CPU)",
        )
        p.add_argument("--batch", type=int, help="batch of the fixed-batch mode (default: 4 on CUDA, 2 on CPU)")
        p.add_argument("--tokens-per-step", type=int, help="B*S of the fixed-tokens mode (default: 3 x longest S)")
        p.add_argument(
            "--modes",
            type=_str_list,
            default=("fixed_batch", "fixed_tokens"),
            help="comma list of fixed_batch, fixed_tokens (default: both)",
        )
    elif name == "gemm":
        p.add_argument("--tokens", type=int, help="tokens per step, the M of the GEMMs (default: 16384 CUDA, 256 CPU)")
        p.add_argument("--square", type=int, help="side of the square reference (default: 8192 CUDA, 512 CPU)")
        p.add_argument(
            "--gemm-dtype",
            default="auto",
            choices=["auto", "bf16", "fp16", "fp32"],
            help="operand dtype (default: bf16 on CUDA, fp32 on CPU)",
        )
        p.add_argument("--window-s", type=float, default=0.02, help="target seconds per window (default: 0.02)")
    elif name == "copy":
        p.add_argument(
            "--directions",
            type=_str_list,
            default=("h2d", "d2h", "d2d"),
            help="comma list of h2d, d2h, d2d (default: all)",
        )
        p.add_argument("--max-tensors", type=int, help="use at most this many workload tensors")
    elif name == "padding":
        p.add_argument(
            "--corpus", required=True, help="folder of text files, .jsonl, .parquet, .csv of lengths, or a file"
        )
        p.add_argument("--glob", help="files of a folder corpus that are documents (default: **/*)")
        p.add_argument("--exclude", type=_str_list, metavar="PAT,...", help="fnmatch patterns of paths to leave out")
        p.add_argument("--name", help="the corpus's name in the evidence (default: its file or folder name)")
        p.add_argument("--tokenizer", help="bytes (default: one token per UTF-8 byte) or a tokenizers JSON file")
        p.add_argument("--column", help="JSONL/Parquet text field (default text); CSV length column (default length)")
        p.add_argument("--roots", help="diversity counts: document (default), folder, or a root field's name")
        p.add_argument("--width", type=int, help="row width in tokens (default: 2048)")
        p.add_argument("--microbatch", type=int, help="rows per microbatch (default: 8)")
        p.add_argument("--accumulation", type=int, help="microbatches per accumulation window (default: 8)")
        p.add_argument("--bucket-sizes", type=_int_list, metavar="B,B,...", help="bucket widths (default: 8..2048)")
        p.add_argument(
            "--shuffle-buckets",
            action="store_true",
            default=None,
            help="shuffle sequences inside each bucket before pairing (default: corpus order)",
        )
        p.add_argument("--seed", type=int, help="seed of the shuffles (default: 0)")
        p.add_argument("--fit", metavar="ID", help="step-scaling evidence whose fit projects seconds saved per epoch")
    elif name == "mask":
        p.add_argument("--batch", type=int, help="batch size (default: 4 on CUDA, 2 on CPU)")
        p.add_argument("--seq-len", type=int, help="sequence length, the fixed width (default: 2048 CUDA, 128 CPU)")
        p.add_argument("--kinds", type=_str_list, help="comma list of causal, explicit, padded, sliding, document")
        p.add_argument("--min-length-fraction", type=float, help="shortest padded row / width (default: 0.5)")
        p.add_argument("--documents", type=int, help="packed documents per row of the document batch (default: 4)")
        p.add_argument("--steps", type=int, help="profiled steps per kind (default: 2)")
        p.add_argument("--rounds", type=int, dest="windows", metavar="N", help="interleaved rounds (default: 7)")
    elif name == "ddp":
        p.add_argument("--gpus", type=int, help="processes of the data-parallel run (default: every GPU; 2 on CPU)")
        p.add_argument("--batch", type=int, help="batch per rank (default: 4 on CUDA, 2 on CPU)")
        p.add_argument("--seq-len", type=int, help="sequence length (default: 2048 on CUDA, 64 on CPU)")
        p.add_argument("--bucket-cap-mb", type=int, help="DDP gradient bucket size in MiB (default: 25)")
        p.add_argument("--comm-steps", type=int, help="instrumented steps timing each bucket (default: 10)")
        p.add_argument(
            "--allreduce-mib",
            type=_float_list,
            metavar="MIB,MIB,...",
            help="standalone all-reduce sizes (default: 8,64,256,1024 on CUDA; 0.25,1 on CPU)",
        )
        p.add_argument("--allreduce-dtype", choices=["bf16", "fp16", "fp32"], help="sweep element type (default: bf16)")
        p.add_argument("--timeout-s", type=float, help="seconds one torchrun launch may take (default: 600)")
    elif name in ("batch-sweep", "loss-memory"):
        from measure.probes.memory_args import add_memory_args

        add_memory_args(name, p, _int_list, _str_list)
    else:  # kernels, ablate, optimizer: one step shape
        p.add_argument("--batch", type=int, help="batch size (default: 4 on CUDA, 2 on CPU)")
        p.add_argument("--seq-len", type=int, help="sequence length (default: 2048 on CUDA, 128 on CPU)")
        if name == "kernels":
            p.add_argument("--steps", type=int, default=3, help="profiled steps (default: 3)")
        if name == "ablate":
            p.add_argument(
                "--arms",
                type=_str_list,
                help="comma list of arms to run besides baseline (default: all the workload offers)",
            )
        if name in ("ablate", "optimizer"):
            p.add_argument(
                "--rounds", type=int, dest="windows", metavar="N", help="interleaved rounds (same as --windows)"
            )


def _declared_help(name: str) -> tuple[str, str]:
    """A probe module's own HELP and EXAMPLE (probe modules import torch only inside ``run``)."""
    module = importlib.import_module(PROBES[name])
    return module.HELP, module.EXAMPLE


def register(sub: Any, command: Callable[..., argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add ``measure`` with one subcommand per probe (and ``recover``) to ``sub``."""
    top = command(
        sub,
        "measure",
        "Run a probe on this machine and archive its evidence; print the evidence id.",
        "probebook measure step-scaling --preset 90m --device cuda",
    )
    msub = top.add_subparsers(dest="probe", metavar="PROBE", required=True)
    for name in PROBES:
        text, example = HELP[name] if name in HELP else _declared_help(name)
        p = command(msub, name, text, example)
        (_storage if name == "padding" else _common)(p)  # padding reads a corpus: no model, no device
        _probe_args(name, p)
        p.set_defaults(func=run_probe, probe_name=name)
    p = command(
        msub,
        "recover",
        "Archive what a journal holds (a probe process that died before storing) as partial.",
        "probebook measure recover archive/journal/step-scaling-20261129T080000Z-4242.jsonl",
    )
    p.add_argument("journal", type=Path, help="a journal file under <archive>/journal/")
    p.add_argument("--out", metavar="ARCHIVE", help="archive to store the evidence in (default: the global --archive)")
    p.set_defaults(func=run_recover)
    return top


def build_config(name: str, args: argparse.Namespace) -> Any:
    """The probe's config dataclass from parsed arguments (validated by the dataclass)."""
    module = importlib.import_module(PROBES[name])
    config_cls = next(v for k, v in vars(module).items() if k.endswith("Config") and v.__module__ == module.__name__)
    kwargs = {}
    for f in fields(config_cls):
        value = getattr(args, f.name, None)
        if value is not None:
            kwargs[f.name] = value
    return module, config_cls(**kwargs)


def run_probe(args: argparse.Namespace) -> int:
    """Run one probe, store its evidence, print the id; non-zero when it is not complete."""
    from measure.runner import journal_path
    from measure.store import Store

    module, config = build_config(args.probe_name, args)
    archive = Path(args.out or args.archive)
    # SIGTERM (e.g. from `timeout`) becomes KeyboardInterrupt, which the runner turns into partial evidence
    signal.signal(signal.SIGTERM, _interrupt)
    journal = journal_path(archive, args.probe_name)
    evidence = module.run(config, journal=journal, progress=not args.quiet)
    if args.notes:
        from dataclasses import replace

        evidence = replace(evidence, notes=args.notes)
    ident = Store(archive).put(evidence)
    journal.unlink(missing_ok=True)
    print(ident)
    if evidence.status != "complete":
        print(
            f"probebook: warning: {args.probe_name} evidence stored as {evidence.status}: {evidence.error}",
            file=sys.stderr,
        )
        return 1
    return 0


def _interrupt(signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt(f"stopped by signal {signum}")


def run_recover(args: argparse.Namespace) -> int:
    from measure.runner import recover
    from measure.store import Store

    evidence = recover(args.journal)
    print(Store(Path(args.out or args.archive)).put(evidence))
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m measure``: the same probes without the rest of probebook's commands."""
    import os

    class Formatter(argparse.RawDescriptionHelpFormatter):
        pass

    def command(sub: Any, name: str, help: str, example: str, **kw: Any) -> argparse.ArgumentParser:
        if name == "measure":  # the hidden `measure` level: its usage line reads `python -m measure PROBE`
            kw.setdefault("prog", "python -m measure [--archive ARCHIVE]")
            example = "python -m measure --archive archive step-scaling --preset 90m --device cuda"
        example = example.replace("probebook measure ", "python -m measure ")
        return sub.add_parser(
            name, help=help, description=help, epilog=f"example:\n  {example}", formatter_class=Formatter, **kw
        )

    parser = argparse.ArgumentParser(
        prog="python -m measure",
        description="Run probebook probes.",
        epilog="example:\n  python -m measure step-scaling --preset tiny --device cpu",
        formatter_class=Formatter,
    )
    parser.add_argument(
        "--archive",
        default=os.environ.get("PROBEBOOK_ARCHIVE", "archive"),
        help="archive folder (default: ./archive or $PROBEBOOK_ARCHIVE)",
    )
    sub = parser.add_subparsers(dest="command", metavar="PROBE", required=True)
    measure = register(sub, command)
    # `python -m measure gemm ...` reads better than `python -m measure measure gemm ...`
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(_insert_measure(argv))
    del measure
    return run_action(lambda: args.func(args), "measure")


def _insert_measure(argv: list[str]) -> list[str]:
    """Put the ``measure`` subcommand in front of the first positional (after global options)."""
    out, i = [], 0
    while i < len(argv):
        token = argv[i]
        if token == "--archive" and i + 1 < len(argv):
            out += argv[i : i + 2]
            i += 2
            continue
        if token.startswith("--archive="):
            out.append(token)
            i += 1
            continue
        return out + ["measure"] + argv[i:]  # `-h` alone lands here too: the probe list is the useful help
    return out + ["measure"]
