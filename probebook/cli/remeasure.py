"""``probebook remeasure [list | run]``: the current single-GPU records' runs as a resumable queue (issue 38).

Thin calls into ``probebook.reproduce.queue`` (the entries and their status, read from the archive) and
``probebook.reproduce.queue_run`` (measuring the pending ones within a lease's seconds).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from measure.errors import ProbebookError

EXAMPLE = 'probebook remeasure list --card "NVIDIA H200"'


def _common(p: argparse.ArgumentParser, suppress: bool) -> None:
    """The options ``list`` and ``run`` share; on a subcommand they default to SUPPRESS, so one given before the
    subcommand (``remeasure --card X list``) is not overwritten by the subcommand's default."""

    def default(value: Any) -> Any:
        return argparse.SUPPRESS if suppress else value

    p.add_argument(
        "--card", default=default("NVIDIA H200"), help="the GPU model the queue is for (default: NVIDIA H200)"
    )
    p.add_argument(
        "--docs", type=Path, default=default(Path("docs")), metavar="DIR", help="the sources (default: docs)"
    )
    p.add_argument(
        "--records",
        default=default(None),
        metavar="A,B",
        help="these current records, in this order (default: every one, cheapest probe first)",
    )
    p.add_argument(
        "--trust-evidence",
        action="store_true",
        default=default(False),
        help="queue the runs whose evidence names an open value (--workload, --corpus), as probebook reproduce "
        "--trust-evidence runs them (read them in list first)",
    )
    p.add_argument(
        "--device",
        default=default("cuda"),
        choices=("cuda", "cpu"),
        help="the --device each queued command runs on (default: cuda)",
    )


def register(sub: Any) -> None:
    from probebook.cli import command

    p = command(
        sub,
        "remeasure",
        "The runs of every current single-GPU record as a queue of session-design re-measurements on one card, "
        "its state the archive itself: list shows each configuration's status (the default), run measures the "
        "pending ones within a lease's seconds and can be resumed in the next.",
        EXAMPLE,
        _list,
    )
    _common(p, suppress=False)
    p.add_argument("--json", action="store_true", help="print the queue as JSON")
    steps = p.add_subparsers(dest="remeasure_command", metavar="STEP")
    listing = command(
        steps,
        "list",
        "One line per entry (a configuration a current record cites, its twins collapsed): done, pending, needs "
        "word, campaign, refused or cannot, with its command; then a line per record and the records that wait.",
        EXAMPLE,
        _list,
    )
    _common(listing, suppress=True)
    listing.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print the queue as JSON")
    running = command(
        steps,
        "run",
        "Measure the pending entries in queue order, each as python -m measure --archive OUT COMMAND --sessions 3, "
        "under a limit cut to what is left of --hard-s (SIGINT first: partial evidence is stored); no entry starts "
        "with under 20 s left. Exit 3 while entries are pending: run it again in the next lease.",
        "probebook remeasure run --hard-s 1500 --out runs/remeasure/archive --records h200-ceilings",
        _run,
    )
    _common(running, suppress=True)
    running.add_argument(
        "--hard-s", type=float, required=True, metavar="SECONDS", help="start no entry after this long (the lease)"
    )
    running.add_argument("--out", type=Path, required=True, metavar="ARCHIVE", help="store the new evidence here")
    running.add_argument(
        "--log", type=Path, metavar="FILE", help="append (entry, key, wall_s, rc) here (default: OUT/../remeasure.tsv)"
    )


def _build(args: argparse.Namespace, also: tuple[Path, ...] = ()) -> Any:
    from probebook.reproduce import queue

    records = [r.strip() for r in args.records.split(",") if r.strip()] if args.records else None
    if args.records is not None and not records:
        raise ProbebookError(f"--records {args.records!r}: name at least one record")
    return queue.build(args.docs, Path(args.archive), args.card, records, args.trust_evidence, args.device, also)


def _list(args: argparse.Namespace) -> int:
    from probebook.reproduce import queue

    built = _build(args)
    if getattr(args, "json", False):
        print(queue.dumps(built))
        return 0
    for entry in built.entries:
        print(entry.line())
    for line in built.summary():
        print(line)
    sys.stdout.flush()
    return 0


def _run(args: argparse.Namespace) -> int:
    from probebook.reproduce import queue_run

    if not args.hard_s > 0:
        raise ProbebookError(f"--hard-s {args.hard_s:g}: give a positive number of seconds")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ProbebookError(f"--out {out}: not a folder")
    built = _build(args, (out,))
    log = args.log or out.resolve().parent / "remeasure.tsv"
    return queue_run.run(built, out, args.hard_s, args.card, log)
