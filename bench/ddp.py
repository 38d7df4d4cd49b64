"""The ddp probe's step timing beside a bare DDP training loop, interleaved in one torchrun run.

Usage (from the repository root): ``PYTHONPATH=. python3 bench/ddp.py --nproc 2 --preset 250m
--seq-len 2048 --batch 4 --out bench-ddp.json`` (``--device cpu --preset tiny`` on a CPU).

Run without torchrun, it starts itself under torchrun (``measure.run.distributed``: the same child
environment as the probe, NVLink multicast off). Every rank then builds two copies of the model:

* ``bare``: ``measure.workload.model.Decoder`` on the device, fused AdamW, bf16 autocast,
  cross-entropy, wrapped in ``DistributedDataParallel`` when there is more than one rank, timed by
  two CUDA events around ``--iters`` steps on rank 0 (``perf_counter`` on CPU). No probebook
  timing, workload or routing code is involved.
* ``probe``: the probe's own path (``measure.run.ddp_worker.build`` and ``time_steps``: the reference
  workload, its step routed through DDP, ``measure.timing.time_windows`` with the slowest rank's time).

Rounds alternate bare and probe windows of the same number of steps (ABBA: the first arm alternates),
so drift lands on both. Rank 0 writes the per-round tokens/s per rank of both arms, their medians,
the ratio of the medians and the median of the per-round ratios to ``--out``, and prints one line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        allow_abbrev=False,
        description=__doc__.split("\n\n")[0],
        epilog="example:\n  PYTHONPATH=. python3 bench/ddp.py --nproc 2 --preset 250m --seq-len 2048 --batch 4",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--nproc", type=int, default=2, help="ranks (default: 2)")
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"], help="device (default: cuda)")
    p.add_argument("--preset", default="250m", help="reference preset (default: 250m)")
    p.add_argument("--seq-len", type=int, default=2048, help="sequence length (default: 2048)")
    p.add_argument("--batch", type=int, default=4, help="batch per rank (default: 4)")
    p.add_argument("--rounds", type=int, default=7, help="interleaved rounds (default: 7)")
    p.add_argument("--iters", type=int, default=10, help="steps per window (default: 10)")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps per arm first (default: 5)")
    p.add_argument("--out", type=Path, default=Path("bench-ddp.json"), help="JSON report (default: bench-ddp.json)")
    return p.parse_args(argv)


def bare_loop(args: argparse.Namespace, world: int):
    """A plain DDP training loop as a user would write it; returns (step, timer of n steps in seconds)."""
    import torch
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    from measure.workload.model import Decoder
    from measure.workload.presets import get_preset

    preset = get_preset(args.preset)
    device = torch.device(args.device)
    torch.manual_seed(0)
    model = Decoder(preset).to(device)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)
    net: torch.nn.Module = model
    if world > 1:
        local = [int(os.environ["LOCAL_RANK"])] if args.device == "cuda" else None
        net = DDP(model, device_ids=local, bucket_cap_mb=25)
    tokens = torch.randint(0, preset.vocab, (args.batch, args.seq_len + 1), device=device)
    inputs, targets = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()

    def step() -> None:
        with torch.autocast(device.type, dtype=torch.bfloat16):
            logits = net(inputs)
            loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    def timed(n: int) -> float:
        if args.device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(n):
                step()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / 1000.0
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        return time.perf_counter() - t0

    return step, timed


def worker(args: argparse.Namespace) -> int:
    from measure.probes.ddp import Config
    from measure.run import ddp_worker
    from measure.timing import WindowPlan, sync_for

    spec = {**asdict(Config(preset=args.preset, device=args.device)), "batch": args.batch, "seq_len": args.seq_len}
    world, rank, device = ddp_worker.start(spec)
    workload, _ddp, batch, _grad = ddp_worker.build(spec, device, world)
    bare_step, bare_timed = bare_loop(args, world)
    sync = sync_for(device)
    for _ in range(args.warmup):
        bare_step()
    # warm-up of the probe arm happens inside its first time_steps call (the plan's warmup); later rounds none
    tokens = args.batch * args.seq_len
    rounds = []
    for r in range(args.rounds):
        plan = WindowPlan(warmup=args.warmup if r == 0 else 0, windows=1, iters=args.iters, extra=0)
        sync()
        # ABBA: the arm that goes first alternates, so a trend within a round favours neither
        if r % 2 == 0:
            bare_s = bare_timed(args.iters) / args.iters
            probe_s = ddp_worker.time_steps(lambda: workload.step(batch), device, world, plan).times_s[0]
        else:
            probe_s = ddp_worker.time_steps(lambda: workload.step(batch), device, world, plan).times_s[0]
            bare_s = bare_timed(args.iters) / args.iters
        rounds.append(
            {
                "round": r,
                "bare_tok_s": tokens / bare_s,
                "probe_tok_s": tokens / probe_s,
                "probe_over_bare": bare_s / probe_s,
            }
        )
    if world > 1:
        import torch.distributed as dist

        dist.barrier()
        dist.destroy_process_group()
    if rank == 0:
        bare = statistics.median(r["bare_tok_s"] for r in rounds)
        probe = statistics.median(r["probe_tok_s"] for r in rounds)
        report = {
            "world": world,
            "device": device,
            "preset": args.preset,
            "seq_len": args.seq_len,
            "batch_per_rank": args.batch,
            "iters_per_window": args.iters,
            "rounds": rounds,
            "median_bare_tok_s_per_rank": bare,
            "median_probe_tok_s_per_rank": probe,
            "probe_over_bare": probe / bare,
            "median_round_probe_over_bare": statistics.median(r["probe_over_bare"] for r in rounds),
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(
            f"bench/ddp.py {args.preset} S={args.seq_len} B={args.batch} x {world} rank(s): "
            f"bare {bare:,.0f} tok/s per rank, probe {probe:,.0f} tok/s per rank, probe/bare {probe / bare:.4f}, "
            f"median of round ratios {report['median_round_probe_over_bare']:.4f}",
            flush=True,
        )
    return 0


ARGS_ENV = "PROBEBOOK_BENCH_DDP_ARGS"  # the workers' argv, out of reach of torchrun's own option parser


def main() -> int:
    if "LOCAL_RANK" in os.environ:
        return worker(parse(json.loads(os.environ[ARGS_ENV])))
    args = parse()
    import subprocess

    from measure.run.distributed import child_env

    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes", "1"]
    cmd += ["--nproc-per-node", str(args.nproc), str(Path(__file__).resolve())]
    env = child_env()
    env[ARGS_ENV] = json.dumps(sys.argv[1:])
    env["NCCL_DEBUG"] = os.environ.get("NCCL_DEBUG", "WARN")  # the probe records NCCL's log; the bench needs none
    return subprocess.run(cmd, env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
