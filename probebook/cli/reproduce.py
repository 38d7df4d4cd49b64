"""``probebook reproduce RECORD``: re-measure a record version (or match it in another archive) and compare.

A thin call into ``probebook.reproduce.session``; this module parses the options and prints the result.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from probebook.cli.output import json_text


def register(sub: Any) -> None:
    from measure.constants import MAX_SESSIONS
    from probebook.cli import command

    p = command(
        sub,
        "reproduce",
        "Re-run every run a record version cites with today's probes (or match them in another archive with --with), "
        "render the record on the new evidence aside from the site, compare every number and claim, and archive "
        "the comparison as evidence (probe 'reproduction').",
        "probebook reproduce step-anatomy-250m --version 6 --dry-run",
        _reproduce,
    )
    p.add_argument("record", metavar="RECORD", help="the record's slug (its folder under docs/records/)")
    p.add_argument("--version", type=int, metavar="N", help="the record version (default: the current one)")
    p.add_argument("--docs", type=Path, default=Path("docs"), metavar="DIR", help="the sources (default: docs)")
    p.add_argument(
        "--with",
        dest="other",
        type=Path,
        metavar="ARCHIVE",
        help="match each cited document in this archive (or reproduction folder) instead of running anything; "
        "or sha256:ID of an earlier reproduction of the record in --archive: compare its runs again, with today's code",
    )
    p.add_argument(
        "--partial",
        action="store_true",
        help="go on with the documents that matched or measured; the numbers of the others are 'missing'",
    )
    p.add_argument("--dry-run", action="store_true", help="print the commands that would run; run nothing")
    p.add_argument(
        "--measure-only",
        action="store_true",
        help="stop once the runs are stored (compare later, elsewhere, with --with the folder)",
    )
    p.add_argument(
        "--folder",
        type=Path,
        metavar="DIR",
        help="the reproduction's campaign folder; the same command again resumes it "
        "(default: runs/reproduce-RECORD-vN)",
    )
    p.add_argument("--executor", choices=["local", "slurm"], default="local", help="submitit executor (default: local)")
    p.add_argument(
        "--executor-spec",
        type=Path,
        metavar="FILE",
        help="YAML with a campaign spec's executor section (slurm settings, max_concurrent, point_timeout_s); "
        "default: one run at a time",
    )
    p.add_argument(
        "--budget-s", type=float, metavar="SECONDS", help="submit no new run after this long; exit 3 to be resumed"
    )
    p.add_argument("--retry-failed", action="store_true", help="run the runs that failed once more")
    p.add_argument(
        "--point-timeout-s",
        type=float,
        default=3600.0,
        metavar="SECONDS",
        help="cancel a run after this long (default: 3600)",
    )
    p.add_argument(
        "--out",
        type=Path,
        metavar="ARCHIVE",
        help="store the new runs and the reproduction here (default: the global --archive, read for the cited runs)",
    )
    p.add_argument(
        "--sessions",
        type=int,
        metavar="N",
        help="measure each re-run in N fresh processes (probebook measure's --sessions), where its probe measures "
        "in sessions; the others run as recorded. Then the runs a verdict not resolved reads are re-run with twice "
        "the sessions, pass after pass, up to --max-sessions",
    )
    p.add_argument(
        "--max-sessions",
        type=int,
        metavar="M",
        help=f"the most sessions --sessions' extra passes reach (default: twice --sessions; at most {MAX_SESSIONS})",
    )
    p.add_argument("--json", action="store_true", help="print the archived document's data and its id as JSON")
    p.add_argument(
        "--trust-evidence",
        action="store_true",
        help="run every value the cited evidence names (a plug-in, a path), as printed before anything runs; "
        "without it such a value runs only when given here with the same value (read the commands with --dry-run)",
    )
    from probebook.reproduce.trust import every_open_option

    for name, flag in every_open_option().items():
        p.add_argument(
            flag,
            dest=f"given_{name}",
            action="append",
            default=[],
            metavar="VALUE",
            help=f"run the cited runs whose evidence names {flag} VALUE (repeatable; probebook measure's {flag})",
        )


def _table(data: dict[str, Any], ident: str) -> None:
    from rich.console import Console
    from rich.table import Table

    from measure.errors import printable

    console = Console(stderr=False, highlight=False)
    table = Table(title=printable(f"{data['record']} v{data['version']}: {data['mode']}"))
    for column in ("number", "old", "new", "change", "verdict", "three-way (judged by)"):
        table.add_column(column)
    moved = sorted(data["numbers"], key=lambda n: -abs(n["change"] or 0.0))
    for n in moved:
        change = f"{n['change']:+.1%}" if n["change"] is not None else ""
        three = f"{n['outcome']} ({n['judged_by']})" if n.get("outcome") else ""
        shown = f"{n['verdict']}: {n['reason']}" if n.get("reason") else n["verdict"]
        cells = (printable(n["label"]), printable(n["shown_old"]), printable(n["shown_new"]), change, printable(shown))
        table.add_row(*cells, three)
    for c in data["claims"]:
        truth = {True: "true", False: "false", None: "–"}
        said = f"{c['verdict']}: {c['reason']}" if c.get("reason") else c["verdict"]
        table.add_row(printable(c["text"]), truth[c["old"]], truth[c["new"]], "", printable(said), "")
    console.print(table, markup=False)
    s = data["summary"]
    print(
        f"measured numbers {s['measured']}: within {s['within']}, outside {s['outside']}, not comparable "
        f"{s['not_comparable']}, missing {s['missing']}; recorded numbers (params, constants, environment) "
        f"{s['recorded']}: {s['recorded_same']} the same; claims {s['claims']}: held {s['held']}, "
        f"flipped {s['flipped']}, not resolved {s.get('claims_not_resolved', 0)}; three-way: resolved different "
        f"{s.get('different', 0)}, equivalent {s.get('equivalent', 0)}, not resolved {s.get('not_resolved', 0)}; "
        f"stored {ident}"
    )


def _reproduce(args: argparse.Namespace) -> int:
    from probebook.reproduce.session import Options, reproduce

    opts = Options(
        record=args.record,
        version=args.version,
        docs=args.docs,
        archive=Path(args.archive),
        out=args.out,
        other=args.other,
        partial=args.partial,
        dry_run=args.dry_run,
        measure_only=args.measure_only,
        folder=args.folder,
        executor=args.executor,
        executor_spec=args.executor_spec,
        budget_s=args.budget_s,
        retry_failed=args.retry_failed,
        point_timeout_s=args.point_timeout_s,
        sessions=args.sessions,
        max_sessions=args.max_sessions,
        json=args.json,
        trust_evidence=args.trust_evidence,
        given={k.removeprefix("given_"): v for k, v in vars(args).items() if k.startswith("given_") and v},
    )
    outcome = reproduce(opts)
    for line in outcome.lines:
        print(line)
    code, data, ident = outcome.code, outcome.data, outcome.ident
    if data is None or ident is None:
        return code
    if args.json:
        print(json_text({**data, "evidence": ident}, indent=1, ensure_ascii=False))
    else:
        _table(data, ident)
    sys.stdout.flush()
    return code
