"""``probebook fit step-scaling`` and ``probebook project``: derived numbers on the command line."""

from __future__ import annotations

import sys
from typing import Any

from measure.errors import ProbebookError
from measure.store import Store
from probebook.cli import command
from probebook.cli.output import json_text
from render.derive import fit as fitting
from render.derive.project import TOKENS_PER_PARAM, parse_count, project


def register(sub: Any) -> None:
    top = command(
        sub,
        "fit",
        "Fit a scaling law to archived evidence.",
        "probebook fit step-scaling sha256:4be1c0ffee12 --tokens 512: --json",
    )
    fsub = top.add_subparsers(dest="fit_command", metavar="LAW", required=True)
    p = command(
        fsub,
        "step-scaling",
        "Fit step(S) = c + a·S + b·S² to step-scaling evidence (non-negative terms, chosen automatically or named).",
        "probebook fit step-scaling sha256:4be1c0ffee12 --terms c+a --tokens 512:8192 --at 4096 --json",
    )
    p.add_argument("id", help="evidence id (sha256:<hex> or a unique prefix of >= 12 hex)")
    p.add_argument("--tokens", metavar="LO:HI", help="only sequence lengths in this inclusive range (LO: or :HI)")
    p.add_argument("--terms", default="auto", help="auto (default) or terms from c, a, b joined by +, e.g. c+a")
    p.add_argument("--at", metavar="W,...", help="widths at which to report the quadratic share b·W/(a+b·W)")
    p.add_argument(
        "--mode", choices=fitting.MODES, help="rows of this mode (default fixed_batch where a mode column exists)"
    )
    p.add_argument("--bootstrap", type=int, default=200, help="bootstrap replicates for intervals (default 200)")
    p.add_argument("--json", action="store_true", help="print the fit as one JSON object only (ARCHITECTURE.md §6.2)")
    p.set_defaults(func=_fit)

    p = command(
        sub,
        "project",
        "Project training time T = k·P/R, GPU-hours and optimizer updates.",
        "probebook project --params 250M --tok-s 180000 --batch-tokens 524288 --json",
    )
    p.add_argument("--params", required=True, help="parameters P (250e6, 250000000 or 250M)")
    p.add_argument("--tok-s", required=True, help="throughput R of the whole run, tokens/s")
    p.add_argument(
        "--tokens-per-param",
        default=str(int(TOKENS_PER_PARAM)),
        help=f"training tokens per parameter k (default {int(TOKENS_PER_PARAM)})",
    )
    p.add_argument("--batch-tokens", help="tokens per optimizer update: round up to whole updates")
    p.add_argument("--gpus", default="1", help="GPUs the run uses, for GPU-hours (default 1)")
    p.add_argument("--json", action="store_true", help="print a JSON object")
    p.set_defaults(func=_project)


def _widths(text: str | None) -> list[float]:
    if not text:
        return []
    out = []
    for part in text.split(","):
        try:
            out.append(float(part))
        except ValueError:
            raise ProbebookError(
                f"--at {text!r}: {part.strip()!r} is not a number; give widths like 1024,4096"
            ) from None
    return out


def _fit(args: Any) -> int:
    store = Store(args.archive)
    ident = store.resolve(args.id)
    doc = store.get(ident)
    if doc["probe"] != "step-scaling":
        raise ProbebookError(f"evidence {ident} is {doc['probe']} evidence; fit step-scaling needs a step-scaling run")
    result = fitting.fit_evidence(
        doc,
        terms=args.terms,
        tokens=args.tokens,
        at=_widths(args.at),
        mode=args.mode,
        bootstrap=args.bootstrap,
        source=f"evidence {ident}",
    )
    for line in result.warnings:
        print(f"probebook: warning: {line}", file=sys.stderr)
    if args.json:
        print(json_text(result.to_json()))
        return 0
    ci = result.ci
    rows = [
        ("terms", "+".join(result.terms), ""),
        ("c", f"{result.c_s:.6g} s", ci.get("c_s")),
        ("a", f"{result.a_s_per_token:.6g} s/token", ci.get("a_s_per_token")),
        ("b", f"{result.b_s_per_token2:.6g} s/token²", ci.get("b_s_per_token2")),
        ("points", f"{result.n_points} ({result.n_samples} samples, batch {fitting.width_key(result.batch)})", ""),
        ("max |residual|", f"{result.max_abs_residual_s:.3g} s", ""),
        ("noise floor", "-" if result.noise_floor_s is None else f"{result.noise_floor_s:.3g} s", ""),
    ]
    if result.asymptote_tok_s is not None:
        rows.append(("asymptote", f"{result.asymptote_tok_s:.6g} tokens/s", ci.get("asymptote_tok_s")))
    for key, share in result.quadratic_share.items():
        rows.append(
            (f"quadratic share @{key}", "-" if share is None else f"{share:.4g}", ci.get(f"quadratic_share:{key}"))
        )
    width = max(len(r[0]) for r in rows)
    for name, value, interval in rows:
        tail = f"  [{interval[0]:.4g}, {interval[1]:.4g}] {fitting.CI_LEVEL:.0%} CI" if interval else ""
        print(f"{name.ljust(width)}  {value}{tail}")
    for s, r in zip(result.tokens, result.residuals_s, strict=True):
        print(f"  S={fitting.width_key(s)}  residual {r:+.3g} s")
    return 0


def _whole(name: str, text: str) -> int:
    value = parse_count(text, name)
    if value != int(value):
        raise ProbebookError(f"{name} {text!r} must be a whole number")
    return int(value)


def _project(args: Any) -> int:
    result = project(
        parse_count(args.params, "--params"),
        parse_count(args.tok_s, "--tok-s"),
        tokens_per_param=parse_count(args.tokens_per_param, "--tokens-per-param"),
        batch_tokens=None if args.batch_tokens is None else _whole("--batch-tokens", args.batch_tokens),
        gpus=_whole("--gpus", args.gpus),
    )
    if args.json:
        print(json_text(result.to_json()))
        return 0
    days = result.seconds / 86400
    print(f"tokens             {result.tokens:.6g} ({result.tokens_per_param:g} per parameter)")
    print(f"training time      {result.seconds:.6g} s ({days:.3g} days)")
    print(f"GPU-hours          {result.gpu_hours:.6g} ({result.gpus} GPU{'s' if result.gpus > 1 else ''})")
    print(f"per 1e9 tokens     {result.seconds_per_billion_tokens:.6g} s")
    if result.optimizer_updates is not None:
        print(f"optimizer updates  {result.optimizer_updates} of {result.batch_tokens} tokens")
    return 0
