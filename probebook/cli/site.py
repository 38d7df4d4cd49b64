"""``probebook build | serve | publish | diff | lint``: the site and its ledger."""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import errno
import math
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from measure.errors import EXIT, ProbebookError, printable
from probebook.cli import command
from probebook.cli.output import json_text
from render.numbers import ledger

# render.assemble.stages pulls in pandas and altair; it is imported inside the commands that need it so
# that `probebook --help` and every other command start quickly. The engine names are plain data, kept
# here in step with render.site.engines.ENGINES (tests/test_engines.py checks they agree).
ENGINES = ("mkdocs", "zensical")
DEFAULT_ENGINE = "mkdocs"


def _site_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--docs", type=Path, default=Path("docs"), help="hand-written sources (default: docs)")
    p.add_argument(
        "--archive", default=argparse.SUPPRESS, help="evidence archive (default: ./archive or $PROBEBOOK_ARCHIVE)"
    )
    p.add_argument("--out", type=Path, default=Path("site"), help="where the site is written (default: site)")
    p.add_argument(
        "--build-dir",
        type=Path,
        default=Path("build"),
        help="render's Markdown tree and generated mkdocs.yml (default: build)",
    )
    p.add_argument(
        "--config", type=Path, default=Path("mkdocs.yml"), help="the site's mkdocs.yml (default: mkdocs.yml)"
    )
    p.add_argument(
        "--published",
        type=Path,
        help="published ledger for the Changes page (default: <archive>/published/ledger.json)",
    )
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default=DEFAULT_ENGINE,
        help=f"the site engine: mkdocs (Material for MkDocs) or zensical (default: {DEFAULT_ENGINE})",
    )


def register(sub: Any) -> None:
    p = command(
        sub,
        "build",
        "Verify the archive, render every page from evidence, lint the prose, and build the "
        "site with `mkdocs build --strict` (or Zensical: --engine zensical); writes the site and its ledger.json.",
        "probebook build --docs docs --archive archive --out site --engine mkdocs",
    )
    _site_options(p)
    p.add_argument("--no-site", action="store_true", help="render the Markdown tree only; skip mkdocs")
    p.add_argument(
        "--full",
        action="store_true",
        help="render every page and build the whole site afresh (the default reuses what did not change; "
        "the result is the same)",
    )
    p.add_argument("--json", action="store_true", help="print the build's summary as one JSON object")
    p.set_defaults(func=_build)

    p = command(
        sub,
        "serve",
        "Build, serve the site locally, and rebuild when sources or evidence change.",
        "probebook serve --port 8000",
    )
    _site_options(p)
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default: 8000; 0 picks a free one)")
    p.add_argument(
        "--interval", type=float, default=0.25, help="seconds between checks for changed sources (default: 0.25)"
    )
    p.set_defaults(func=_serve)

    p = command(
        sub,
        "publish",
        "Accept the built site's ledger as published: later builds' Changes page lists what moved since. "
        "Refuses a site from a failed or killed build, or one whose inputs changed since it was built.",
        "probebook publish --out site",
    )
    p.add_argument(
        "--archive",
        default=argparse.SUPPRESS,
        help="evidence archive whose published/ledger.json is replaced (default: ./archive)",
    )
    p.add_argument("--out", type=Path, default=Path("site"), help="the built site holding ledger.json (default: site)")
    p.add_argument(
        "--docs", type=Path, default=Path("docs"), help="the sources the site was built from (default: docs)"
    )
    p.add_argument(
        "--config", type=Path, default=Path("mkdocs.yml"), help="the mkdocs.yml it was built with (default: mkdocs.yml)"
    )
    p.set_defaults(func=_publish)

    p = command(
        sub,
        "diff",
        "List numbers added, removed and changed between two ledgers (old -> new, relative "
        "change). Exits 0; with --fail-on-change, 1 when any number differs (by more than --tolerance PCT).",
        "probebook diff archive/published/ledger.json site/ledger.json --fail-on-change",
    )
    p.add_argument("old", type=Path, help="the earlier ledger.json")
    p.add_argument("new", type=Path, help="the later ledger.json")
    p.add_argument("--fail-on-change", action="store_true", help="exit 1 when a number was added, removed or changed")
    p.add_argument(
        "--tolerance",
        type=_percent,
        default=0.0,
        metavar="PCT",
        help="with --fail-on-change: a value that moved by at most PCT percent does not fail (default 0)",
    )
    p.add_argument("--json", action="store_true", help="print the diff as JSON")
    p.set_defaults(func=_diff)

    p = command(
        sub,
        "lint",
        "List every hand-typed measurement and unchecked comparative sentence in the sources' prose "
        "(the check `build` runs).",
        "probebook lint --docs docs",
    )
    p.add_argument("--docs", type=Path, default=Path("docs"), help="hand-written sources (default: docs)")
    p.set_defaults(func=_lint)


def _paths(args: Any) -> Any:
    from measure.cli import declarations
    from render.assemble.stages import BuildPaths

    return BuildPaths(
        docs=args.docs,
        archive=Path(args.archive),
        build=args.build_dir,
        site=args.out,
        config=args.config,
        published=args.published,
        declarations=declarations(),
    )


_DISK_ERRORS = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM}
"""What the machine refuses a write for (a full disk, a file-size limit, a read-only or foreign folder): the
user's to fix, so one line (issue 25, item 12); any other ``OSError`` is a bug and keeps its traceback."""


@contextlib.contextmanager
def _writes(what: str, after: str) -> Iterator[None]:
    try:
        yield
    except OSError as exc:
        if exc.errno not in _DISK_ERRORS:
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        raise ProbebookError(f"{what}: {where}cannot write ({exc.strerror}); {after}") from None


def _build(args: Any) -> int:
    from render.site import engines

    # the engine's process first: its start overlaps render.assemble.stages's imports (about a quarter of a second)
    started = None if args.no_site else engines.start(args.engine)
    from render.assemble.stages import build

    paths = _paths(args)
    with _writes("build", f"{args.out} is still the last good build"):
        result = build(paths, site=not args.no_site, full=args.full, engine=args.engine, started=started)
    d = result.diff
    where = f"{paths.site}/" if result.site else f"{paths.tree}/ (no site: --no-site)"
    if args.json:
        summary = {
            "site": None if result.site is None else str(result.site),
            "tree": str(result.tree),
            "evidence": result.evidence,
            "pages": result.pages,
            "pages_written": result.pages_written,
            "numbers": len(result.ledger),
            "changes_since_published": {"added": len(d.added), "removed": len(d.removed), "changed": len(d.changed)},
        }
        print(json_text(summary, indent=1, ensure_ascii=False))
        return 0
    print(
        f"built {where} from {result.evidence} evidence file(s): {result.pages} pages "
        f"({result.pages_written} written anew, the rest unchanged), {len(result.ledger)} numbers in the ledger"
    )
    print(
        f"changes since published: {len(d.added)} added, {len(d.removed)} removed, {len(d.changed)} changed "
        f"(a relative change below {ledger.NOISE_REL:g} is floating-point noise, counted unchanged)"
    )
    return 0


def _serve(args: Any) -> int:
    from render.assemble.serve import serve

    serve(_paths(args), host=args.host, port=args.port, interval=args.interval, engine=args.engine)
    return 0


def _publish(args: Any) -> int:
    from render.pages import history, sources
    from render.site.folder import check_publishable

    source = args.out / "ledger.json"
    rows = ledger.read(source)
    check_publishable(args.out, args.docs, Path(args.archive), args.config)
    target = Path(args.archive) / "published" / "ledger.json"
    before = ledger.read(target) if target.exists() else []
    log_path = history.path_beside(target)
    past = history.read(log_path)  # a rewritten history is refused before anything is written
    d = ledger.diff(before, rows)
    entry = history.entry(_publish_date(), rows, before, sources.load(args.docs))
    with _writes("publish", f"{target} is as it was"):
        ledger.write(target, rows)
    if past and past[-1]["ledger_sha256"] == entry["ledger_sha256"] and past[-1].get("records") == entry["records"]:
        print(f"published {len(rows)} numbers from {source} to {target}: as last published, history unchanged")
        return 0
    with _writes("publish", f"{log_path} is as it was; run publish again to add its entry"):
        history.append(log_path, entry)
    print(
        f"published {len(rows)} numbers from {source} to {target} "
        f"({len(d.added)} added, {len(d.removed)} removed, {len(d.changed)} changed since the last publish); "
        f"dated {entry['date']} in {log_path}"
    )
    return 0


def _publish_date() -> str:
    """Today (UTC), or the day of ``SOURCE_DATE_EPOCH`` when it is set, as YYYY-MM-DD: the history entry's date."""
    from render.pages import limits

    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch is not None and epoch.isascii() and epoch.isdigit():
        low, high = limits.EPOCH_RANGE
        if not low <= int(epoch) <= high:
            raise ProbebookError(f"SOURCE_DATE_EPOCH={epoch[:40]!r} is outside {low}..{high} (1970 to 2106)")
        return dt.datetime.fromtimestamp(int(epoch), dt.timezone.utc).date().isoformat()
    return dt.datetime.now(dt.timezone.utc).date().isoformat()


def _percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a percentage of at least 0, e.g. 2.5")
    return value


def _diff(args: Any) -> int:
    d = ledger.diff(ledger.read(args.old), ledger.read(args.new))
    failing = [c for c in d.changed if ledger.beyond_tolerance(c, args.tolerance)]
    if args.json:
        body = {**d.to_dict(), "tolerance_pct": args.tolerance, "changed_beyond_tolerance": len(failing)}
        print(json_text(body, indent=1, sort_keys=True, ensure_ascii=False))
    else:
        for line in ledger.format_diff(d):
            print(printable(line))  # ledger text may hold terminal escape codes: shown escaped, never raw
        if args.tolerance:
            print(f"{len(d.changed) - len(failing)} changed within the {args.tolerance:g}% tolerance")
    return EXIT["check failed"] if args.fail_on_change and (d.added or d.removed or failing) else EXIT["ok"]


def _lint(args: Any) -> int:
    from render.pages import lint, sources

    pages = sources.load(args.docs).pages
    hits = [h for page in pages for h in lint.lint_page(page)]
    unchecked = [h for page in pages for h in lint.comparatives(page)]
    for h in [*hits, *unchecked]:
        print(h)
    if hits or unchecked:
        counts = f"{len(hits)} hand-typed measurement(s), {len(unchecked)} unchecked comparative sentence(s)"
        print(f"probebook: {counts}", file=sys.stderr)
        return 1
    print("ok: no hand-typed measurements, no unchecked comparative sentences")
    return 0
