"""``probebook derive``, ``fit step-scaling`` and ``project``: derived numbers on the command line."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from measure.errors import ProbebookError
from measure.evidence.reading import for_reading
from measure.evidence.store import Store
from measure.probes.step_scaling import MODES
from probebook.cli import command, command_group
from probebook.cli.output import json_text, terminal_text
from render.derive.project import TOKENS_PER_PARAM, parse_count, project
from render.functions.names import functions
from render.pages import limits

# render's page machinery and numerics load in the commands that use them, not here: every probebook
# process builds this module's parsers (ARCHITECTURE.md §Fast processes); the names come from the
# page functions' source, not their import (render.functions.names)


def register(sub: Any) -> None:
    p = command(
        sub,
        "derive",
        "Call a page function on archived evidence and print the number the page would show, its derivation "
        f"and evidence (functions: {', '.join(functions())}). The id is the evidence alias 'ev'; further ids among "
        "the arguments, or given as --ev2 ID, are 'ev2', ...; an argument with a parenthesis is a page "
        "expression, e.g. 'batch_summary(ev).fastest_tok_s'.",
        "probebook derive fit sha256:4be1c0ffee12 --tokens 512: --at 2048,8192 --json",
        _derive,
    )
    p.add_argument("name", metavar="NAME", help="a page function: " + ", ".join(functions()))
    p.add_argument("id", metavar="ID", help="evidence id (sha256:<hex> or a unique prefix of >= 12 hex): alias ev")
    p.add_argument(
        "words",
        nargs=argparse.REMAINDER,
        metavar="ARGS",
        help="the function's arguments, then --KEY VALUE options; --json prints JSON; --out DIR is where "
        "chart() and table() write their files (default .)",
    )

    fsub = command_group(
        sub,
        "fit",
        "Fit a scaling law to archived evidence.",
        "probebook fit step-scaling sha256:4be1c0ffee12 --tokens 512: --json",
        "fit_command",
        "LAW",
    )
    p = command(
        fsub,
        "step-scaling",
        "Fit step(S) = c + a·S + b·S² to step-scaling evidence (non-negative terms, chosen automatically or named).",
        "probebook fit step-scaling sha256:4be1c0ffee12 --terms c+a --tokens 512:8192 --at 4096 --json",
        _fit,
    )
    p.add_argument("id", help="evidence id (sha256:<hex> or a unique prefix of >= 12 hex)")
    p.add_argument("--tokens", metavar="LO:HI", help="only sequence lengths in this inclusive range (LO: or :HI)")
    p.add_argument("--terms", default="auto", help="auto (default) or terms from c, a, b joined by +, e.g. c+a")
    p.add_argument("--at", metavar="W,...", help="widths at which to report the quadratic share b·W/(a+b·W)")
    p.add_argument("--mode", choices=MODES, help="rows of this mode (default fixed_batch where a mode column exists)")
    p.add_argument(
        "--bootstrap",
        type=int,
        default=None,
        help="bootstrap replicates for intervals (default: the pages' own count, so `fit` and `derive fit` agree)",
    )
    p.add_argument("--json", action="store_true", help="print the fit as one JSON object only")

    p = command(
        sub,
        "project",
        "Project training time T = k·P/R, GPU-hours and optimizer updates.",
        "probebook project --params 250M --tok-s 180000 --batch-tokens 524288 --json",
        _project,
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
    from render.derive import fit as fitting
    from render.derive.fit_inputs import width_key

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
        bootstrap=fitting.BOOTSTRAP if args.bootstrap is None else args.bootstrap,  # one rule: the pages' fit
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
        ("points", f"{result.n_points} ({result.n_samples} samples, batch {width_key(result.batch)})", ""),
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
        print(f"  S={width_key(s)}  residual {r:+.3g} s")
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


_ID = re.compile(r"^(sha256:)?[0-9a-f]{12,64}$")


def _split(words: list[str]) -> tuple[list[str], dict[str, str], bool, Path]:
    """Shell words after NAME ID -> (positional words, --KEY VALUE options, --json, --out)."""
    args: list[str] = []
    options: dict[str, str] = {}
    as_json, out = False, Path(".")
    for word in words:  # bounded before any is parsed: the number parser backtracks on a long run of digits
        if len(word) > limits.ARGUMENT_CHARS:
            raise ProbebookError(
                f"argument {word[:40]!r}... is {len(word)} characters; at most {limits.ARGUMENT_CHARS} "
                "(render.pages.limits.ARGUMENT_CHARS)"
            )
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--json":
            as_json = True
        elif word.startswith("--") and len(word) > 2:
            key, eq, value = word[2:].partition("=")
            if not eq:
                if i + 1 >= len(words):
                    raise ProbebookError(f"option {word} needs a value")
                value, i = words[i + 1], i + 1
            if key == "out":
                out = Path(value)
            else:
                options[key.replace("-", "_")] = value
        else:
            args.append(word)
        i += 1
    return args, options, as_json, out


def _archive_docs(store: Store) -> dict[str, dict[str, Any]]:
    """Every readable evidence document; a damaged one is `archive verify`'s to report, not this command's."""
    docs: dict[str, dict[str, Any]] = {}
    for path in store.iter_paths():
        ident = "sha256:" + path.parent.name + path.name[:-5]
        try:
            docs[ident] = for_reading(store.get(ident))  # as a build reads it: older versions in today's layout
        except ProbebookError:
            continue
    return docs


def _derive(args: Any) -> int:
    from render.functions import calls
    from render.numbers.claims import Claim
    from render.numbers.quantity import Quantity
    from render.pages.bounded import time_limit
    from render.pages.sandbox import Asset, Block

    words, options, as_json, out = _split(args.words)
    store = Store(args.archive)
    ids = [store.resolve(args.id)]
    for n, word in enumerate(words):  # further evidence ids among the arguments become ev2, ev3 ...
        if _ID.match(word):
            ids.append(store.resolve(word))
            words[n] = list(calls.aliases(ids))[-1]
    for key in sorted(k for k in options if re.fullmatch(rf"{calls.ALIAS}\d+", k)):  # --ev2 ID for expressions
        ids.append(store.resolve(options.pop(key)))
        if list(calls.aliases(ids))[-1] != key:
            raise ProbebookError(f"--{key}: give evidence aliases in order, {list(calls.aliases(ids))[-1]} next")
    for key, value in list(options.items()):  # --fit ID, as `measure padding --fit ID` takes it: the next alias
        # an id, not a long number (--params 250000000000): the sha256: prefix or a hex letter says so
        if _ID.match(value) and (value.startswith("sha256:") or re.search("[a-f]", value)):
            ids.append(store.resolve(value))
            options[key] = list(calls.aliases(ids))[-1]
    call = calls.plan(args.name, words, options)
    docs = _archive_docs(store)  # a page sees the whole archive too (padding() finds its fit by id)
    docs.update({ident: for_reading(store.get(ident)) for ident in ids})
    try:
        with time_limit(limits.TEMPLATE_SECONDS, f"{args.name}(...)"):  # a page's CPU-time limit, in the shell too
            result = calls.run(call, docs, ids)
    except (TypeError, ValueError) as exc:  # an argument of the wrong kind for the function: input, not a bug
        given = " ".join([args.name, args.id, *args.words])
        raise ProbebookError(
            f"derive {given}: {args.name}() cannot take these arguments ({type(exc).__name__}: {exc}); "
            f"see `probebook derive --help` and the README's table of page functions"
        ) from None
    if isinstance(result, Asset):
        written, markdown = calls.save_asset(result, out, f"{args.name}-{result.kind}")
        if as_json:
            print(json_text({"files": written, "markdown": markdown}, ensure_ascii=False))
        else:
            print("\n".join(f"wrote {path}" for path in written))
            print(terminal_text(markdown).rstrip("\n"))
        return 0
    if isinstance(result, list) and all(isinstance(r, str) for r in result):  # names (batch_models): no derivation
        print(json_text(result, ensure_ascii=False) if as_json else "\n".join(map(str, result)))
        return 0
    if isinstance(result, Claim):
        if as_json:
            print(json_text(calls.claim_json(result), ensure_ascii=False))
            return 0
        print(result.sentence)
        for c in result.comparisons:
            print(f"  holds: {c.text}")
            print(f"  evidence: {', '.join(dict.fromkeys(c.left.evidence + c.right.evidence))}")
        return 0
    shown = calls.attributes(result, (options.get("at") and calls.parse_word(options["at"])) or ())
    if as_json:
        body = {
            name: calls.quantity_json(v) if isinstance(v, Quantity) else list(v.lines) if isinstance(v, Block) else v
            for name, v in shown
        }
        print(json_text(body["value"] if list(body) == ["value"] else body, ensure_ascii=False))
        return 0
    if [name for name, _ in shown] == ["value"]:
        shown = [(result.key or args.name, result)]
    width = max(len(name) for name, _ in shown)
    for name, v in shown:
        if isinstance(v, Block):
            for line in v.lines:
                print(f"{name.ljust(width)}  {line}")
            continue
        interval = f"  (95% interval {v.interval_text})" if v.interval_text else ""
        note = f"  ({v.note})" if v.note else ""
        print(f"{name.ljust(width)}  {v.text}{interval}{note}")
        print(f"{''.ljust(width)}  derivation: {v.derivation}")
        print(f"{''.ljust(width)}  evidence: {', '.join(v.evidence)}")
    return 0
