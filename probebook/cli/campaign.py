"""``probebook campaign plan | run | status | collect | audit``: thin calls into ``probebook.campaign``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from measure.errors import EXIT, ProbebookError
from probebook.cli.output import json_text


def register(sub: Any) -> None:
    from probebook.cli import command, command_group

    csub = command_group(
        sub,
        "campaign",
        "Plan, run, resume, watch, collect and audit a campaign of probe points through submitit (Slurm or local).",
        "probebook campaign plan sweep.yaml --output runs/sweep && probebook campaign run runs/sweep",
        "campaign_command",
        "STEP",
    )
    p = command(
        csub,
        "plan",
        "Freeze a spec into a new campaign folder; its manifest is archived evidence. Prints the manifest id.",
        "probebook campaign plan sweep.yaml --output runs/sweep",
        _plan,
    )
    p.add_argument(
        "spec", type=Path, nargs="?", help="the campaign spec (YAML; README.md 'Campaigns' has a complete example)"
    )
    p.add_argument(
        "--optimizer-timing-from",
        type=Path,
        metavar="DIR",
        help="plan an optimizer-timing follow-up of this finished batch-sweep campaign (no spec: it inherits its)",
    )
    p.add_argument(
        "--presets",
        metavar="LIST",
        help="with --optimizer-timing-from: follow only these presets' curves (comma-separated; every context of each)",
    )
    p.add_argument(
        "--optimizer-mode",
        choices=("eager", "captured"),
        help="with --optimizer-timing-from: the optimizer probe's --mode per point (default eager: hooks in the eager "
        "step; captured: the whole update captured in one CUDA graph, CUDA sweeps only)",
    )
    p.add_argument("--output", type=Path, metavar="DIR", help="a new, empty campaign folder (not with --estimate)")
    p.add_argument(
        "--estimate",
        action="store_true",
        help="print each job's and the campaign's wall time and the time_min to ask for; plan nothing",
    )
    p.add_argument(
        "--from",
        dest="estimate_from",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="with --estimate: a finished campaign folder measuring the same recipes (repeatable)",
    )
    p.add_argument("--gpu", metavar="NAME", help="with --estimate: the GPU the jobs get (default: this machine's)")
    p.add_argument(
        "--time-min", type=int, metavar="MIN", help="with --estimate: a job's time for recipes nothing measured"
    )
    p = command(
        csub,
        "run",
        "Submit each curve's next point as a submitit job until every curve reaches its OOM, its cap or a failure.",
        "probebook campaign run runs/sweep --executor slurm --max-concurrent 12",
        _run,
    )
    p.add_argument("dir", type=Path, help="the campaign folder")
    p.add_argument("--executor", choices=["local", "slurm"], default="local", help="submitit executor (default: local)")
    p.add_argument("--max-concurrent", type=int, metavar="N", help="jobs in flight at once (default: the spec's)")
    p.add_argument(
        "--dry-run", action="store_true", help="print the exact submissions that would go out; touch nothing"
    )
    p.add_argument("--resume", action="store_true", help="continue: settle every recorded job first, then submit")
    p.add_argument("--retry-failed", action="store_true", help="with --resume: run each failed point once more")
    p.add_argument(
        "--budget-s", type=float, metavar="SECONDS", help="submit nothing new after this long; exit 3 to be resumed"
    )
    p = command(
        csub,
        "report",
        "Join throughput campaigns with their optimizer-timing follow-ups (paired by order) into one report.",
        "probebook --archive archive campaign report --throughput runs/sweep --optimizer runs/opt --output r.json",
        _report,
    )
    p.add_argument("--throughput", type=Path, action="append", default=[], metavar="DIR", help="a batch-sweep campaign")
    p.add_argument(
        "--optimizer", type=Path, action="append", default=[], metavar="DIR", help="its optimizer-timing follow-up"
    )
    p.add_argument("--output", type=Path, required=True, metavar="FILE", help="a new file for the report (JSON)")
    p = command(
        csub, "status", "A table per curve and a progress bar.", "probebook campaign status runs/sweep --watch", _status
    )
    p.add_argument("dir", type=Path, help="the campaign folder")
    p.add_argument("--watch", action="store_true", help="refresh until every curve is done or blocked")
    p.add_argument("--json", action="store_true", help="print one JSON object per curve, as a list (not with --watch)")
    folder_commands = (
        (
            "collect",
            "Bring every point's evidence into the archive (hash-checked) and store one campaign document "
            "listing them.",
            _collect,
        ),
        (
            "audit",
            "Re-derive every point from its raw evidence and check the receipts; one line per finding, exit 1 on any. "
            "Stores the verdict as evidence in the archive.",
            _audit,
        ),
    )
    for name, help, func in folder_commands:
        p = command(csub, name, help, f"probebook --archive archive campaign {name} runs/sweep", func)
        p.add_argument("dir", type=Path, help="the campaign folder")
        if name == "audit":
            p.add_argument("--json", action="store_true", help="print the findings, counts and verdict id as JSON")


def _plan(args: argparse.Namespace) -> int:
    from measure.errors import ProbebookError

    if args.optimizer_timing_from is not None:
        if args.spec is not None or args.estimate or args.output is None:
            raise ProbebookError(
                "campaign plan --optimizer-timing-from DIR: give --output DIR and no spec (it inherits the sweep's)"
            )
        from probebook.campaign.followup import plan_followup

        presets = tuple(x for x in args.presets.split(",") if x) if args.presets else None
        mode = args.optimizer_mode or "eager"
        print(plan_followup(args.optimizer_timing_from, args.output, presets=presets, mode=mode))
        return 0
    if args.presets is not None:
        raise ProbebookError("campaign plan --presets: only with --optimizer-timing-from DIR")
    if args.optimizer_mode is not None:
        raise ProbebookError("campaign plan --optimizer-mode: only with --optimizer-timing-from DIR")
    if args.spec is None:
        raise ProbebookError("campaign plan: give a spec (or --optimizer-timing-from DIR)")
    if args.estimate:
        from probebook.campaign.estimate import estimate, render

        print(render(estimate(args.spec, args.estimate_from, args.gpu, args.time_min)))
        return 0
    if args.output is None:
        raise ProbebookError("campaign plan: --output DIR is required (or --estimate, which plans nothing)")
    from probebook.campaign.plan import plan

    print(plan(args.spec, args.output))
    return 0


def _run(args: argparse.Namespace) -> int:
    from probebook.campaign.runner import run

    return run(
        args.dir, args.executor, args.max_concurrent, args.dry_run, args.resume, args.retry_failed, args.budget_s
    )


def _report(args: argparse.Namespace) -> int:
    from probebook.campaign.report import write_combined

    print(write_combined(args.throughput, args.optimizer, args.output, Path(args.archive)))
    return 0


def _status(args: argparse.Namespace) -> int:
    from probebook.campaign.report import curves, status

    if args.json:
        if args.watch:
            raise ProbebookError("campaign status: --json prints the status once; leave out --watch")
        print(json_text(curves(args.dir), indent=1, ensure_ascii=False))
        return 0
    return status(args.dir, args.watch)


def _collect(args: argparse.Namespace) -> int:
    from probebook.campaign.report import collect

    print(collect(args.dir, Path(args.archive)))
    return 0


def _audit(args: argparse.Namespace) -> int:
    from measure.evidence.store import Store
    from probebook.campaign.audit import audit, audit_evidence

    findings, counts = audit(args.dir)
    if not args.json:
        for line in findings:
            print(line)
    ident = Store(Path(args.archive)).put(audit_evidence(args.dir, findings, counts))
    if args.json:
        print(json_text({"findings": findings, "counts": counts, "evidence": ident}, indent=1, ensure_ascii=False))
        return EXIT["check failed"] if findings else EXIT["ok"]
    verdict = "clean" if not findings else f"{len(findings)} finding(s)"
    said = f"{counts['points_checked']} points, {counts['curves']} curves: {verdict}; {ident}"
    print(f"probebook: audit: {said}", file=sys.stderr)
    return EXIT["check failed"] if findings else EXIT["ok"]
