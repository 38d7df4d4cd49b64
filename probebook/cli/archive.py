"""``probebook archive``: import, add, list, show, verify and migrate evidence."""

from __future__ import annotations

import hashlib
import logging
import os
import stat
import sys
from pathlib import Path
from typing import Any

from measure.errors import EXIT, EvidenceError, ProbebookError, StoreError, printable
from measure.evidence import archive_check, contracts
from measure.evidence.envelope import Evidence, canonical_bytes, migrate, parse
from measure.evidence.files import TEMP_PREFIX, kind_of
from measure.evidence.reading import read_regular
from measure.evidence.store import Store, claimed_id, stored_id
from probebook.cli import command
from probebook.cli.output import json_text

log = logging.getLogger(__name__)


def register(sub: Any) -> None:
    top = command(sub, "archive", "Work with the evidence archive.", "probebook archive ls --probe gemm")
    asub = top.add_subparsers(dest="archive_command", metavar="ACTION", required=True)

    p = command(
        asub,
        "import",
        "Turn a CSV or JSON file of measurements taken elsewhere into evidence; print its id.",
        'probebook archive import --probe step-scaling sweep.csv --source "lab notebook, 2026-11-02"',
    )
    columns = "; ".join(f"{name}: {', '.join(contracts.CONTRACTS[name].required)}" for name in contracts.importable())
    p.add_argument(
        "file", type=Path, help=f"CSV or JSON file, one row per sample, with the columns of --probe ({columns})"
    )
    p.add_argument("--probe", required=True, choices=sorted(contracts.importable()), help="column contract to check")
    p.add_argument("--source", required=True, help="where the numbers came from")
    p.add_argument("--gpu", help="GPU the numbers were measured on, if known")
    p.add_argument("--notes", help="free text kept with the evidence")
    p.set_defaults(func=_import)

    p = command(
        asub,
        "add",
        "Copy evidence files (loose, or another archive folder) into this archive; print each id.",
        "probebook archive add ~/from-gpu-box/archive results/run-0412.json",
    )
    p.add_argument(
        "paths",
        nargs="+",
        type=Path,
        metavar="PATH",
        help="an evidence JSON file, or a folder (an archive, or one holding evidence files)",
    )
    p.set_defaults(func=_add)

    p = command(
        asub,
        "ls",
        "List archived evidence: id, probe, created, GPU, status, origin.",
        "probebook archive ls --probe step-scaling",
    )
    p.add_argument("--probe", help="only this probe")
    p.add_argument("--json", action="store_true", help="print JSON rows instead of a table")
    p.set_defaults(func=_ls)

    p = command(
        asub,
        "show",
        "Print one evidence document (id or unique prefix of >= 12 hex).",
        "probebook archive show sha256:4be1c0ffee12",
    )
    p.add_argument("id", help="sha256:<hex> or a unique prefix")
    p.set_defaults(func=_show)

    p = command(
        asub,
        "verify",
        "Re-hash every stored file; name each whose bytes do not match its name.",
        "probebook archive verify --clean",
    )
    p.add_argument("--clean", action="store_true", help="also remove temp files left by interrupted writes")
    p.add_argument(
        "--strict", action="store_true", help="also fail on stored files that are not valid current-schema evidence"
    )
    p.add_argument(
        "--json", action="store_true", help="print what was found as one JSON object (exit status as without)"
    )
    p.set_defaults(func=_verify)

    p = command(
        asub,
        "migrate",
        "Archive an upgraded copy of an old-schema evidence file; print the new id.",
        "probebook archive migrate old-run.json",
    )
    p.add_argument("file", type=Path, help="an evidence JSON file of an older schema version")
    p.set_defaults(func=_migrate)


def _import(args: Any) -> int:
    from measure.evidence import importer  # here: csv, decimal and the machine fingerprint only where they are used
    from measure.machine import code_fingerprint

    request = importer.ImportRequest(
        probe=args.probe, path=args.file, source=args.source, gpu=args.gpu, notes=args.notes
    )
    evidence = importer.build(request, code_fingerprint())
    store = Store(args.archive)
    earlier = importer.already_archived(store, evidence)
    if earlier is not None:
        print(
            f"probebook: {args.file} is already archived as {earlier} (the same rows and source); nothing stored",
            file=sys.stderr,
        )
        print(earlier)
        return 0
    print(store.put(evidence))
    return 0


def _evidence_files(path: Path) -> tuple[list[Path], list[str]]:
    """The evidence files a PATH argument of ``archive add`` names, and one line per thing it cannot take.

    A folder is walked without following links; a link, FIFO or device among its files is named,
    never opened, so a foreign archive cannot hang ``add`` or smuggle a host file in.
    """
    if path.is_symlink() or path.is_file():
        return [path], []
    if not path.is_dir():
        if os.path.lexists(path):  # a FIFO, a device, a socket: named as what it is, never opened
            raise ProbebookError(f"{path}: {kind_of(path.lstat().st_mode)}, not an evidence file; nothing was added")
        raise ProbebookError(f"{path}: no such file or folder")
    if (path / "evidence" / "sha256").is_dir():
        foreign = Store(path)
        files = list(foreign.iter_paths())  # another archive: final names only, temp files skipped
        problems = [f"{s.path}: {s.why}" for s in foreign.strays()]
    else:
        files, problems = [], []
        for dirpath, dirnames, filenames in os.walk(path):  # does not descend into linked folders
            dirnames.sort()
            for name in sorted(dirnames + filenames):
                f = Path(dirpath) / name
                if name in dirnames and f.is_symlink():
                    problems.append(f"{f}: a symbolic link to a folder; not followed")
                elif name in filenames and name.endswith(".json") and not name.startswith(TEMP_PREFIX):
                    mode = f.lstat().st_mode
                    if stat.S_ISREG(mode):
                        files.append(f)
                    else:
                        kind = "a symbolic link" if stat.S_ISLNK(mode) else "not a regular file"
                        problems.append(f"{f}: {kind}; not read")
    if not files and not problems:
        raise ProbebookError(f"{path}: no evidence files (*.json) in this folder")
    return files, problems


def _add(args: Any) -> int:
    files: list[Path] = []
    problems: list[str] = []
    seen: set[Path] = set()
    for path in args.paths:
        found, trouble = _evidence_files(path)
        problems += trouble
        for f in found:
            if f.absolute() not in seen:
                seen.add(f.absolute())
                files.append(f)
    if problems:
        for line in problems:
            log.error("%s", printable(line))
        raise ProbebookError(f"{len(problems)} file(s) above cannot be added; nothing was added")
    # Validate every file before storing any, so a bad one leaves nothing half-added.
    ready: list[tuple[Path, bytes]] = []
    for path in files:
        raw = read_regular(path)
        claimed = claimed_id(path)
        if claimed is not None:
            actual = "sha256:" + hashlib.sha256(raw).hexdigest()
            if actual != claimed:
                raise EvidenceError(
                    f"{path}: bytes do not match the file's name (expected {claimed}, "
                    f"actual {actual}); refusing evidence that changed after it was written"
                )
        doc = parse(raw, str(path))
        try:
            ready.append((path, canonical_bytes(doc)))
        except EvidenceError as exc:  # e.g. a lone surrogate escape that has no UTF-8 form
            raise EvidenceError(f"{path}: {exc}") from None
    store = Store(args.archive)
    before = set(store.ids())
    added = 0
    for _path, raw in ready:
        ident = store.put_bytes(raw)
        added += ident not in before
        before.add(ident)
        print(ident)
    log.info("%d added, %d already present", added, len(ready) - added)
    return 0


def _existing(args: Any) -> Store:
    """The archive a read-only command looks at; a missing folder is an error, not an empty archive."""
    root = Path(args.archive)
    if not root.is_dir():
        raise StoreError(f"no archive folder at {root}: give --archive DIR or set PROBEBOOK_ARCHIVE")
    return Store(root)


def _summary(ident: str, doc: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": ident,
        "probe": doc["probe"],
        "created": doc["created_at"],
        "gpu": (doc.get("machine") or {}).get("gpu") or "-",
        "status": doc["status"],
        "origin": doc["origin"]["kind"],
    }


def _ls(args: Any) -> int:
    store = _existing(args)
    rows = []
    for stray in store.strays():
        log.warning("warning: skipped %s", printable(f"{stray.path}: {stray.why}"))
    for path in store.iter_paths():
        ident = stored_id(path.parent.name, path.name)
        try:
            doc = parse(read_regular(path, store.limit), str(path))
        except (EvidenceError, StoreError) as exc:  # a warning, not fatal: `verify --strict` fails on these
            log.warning("warning: skipped %s", printable(str(exc)))
            continue
        if args.probe and doc["probe"] != args.probe:
            continue
        rows.append(_summary(ident, doc))
    rows.sort(key=lambda r: (r["created"], r["id"]))
    if args.json:
        print(json_text(rows, indent=2))
        return 0
    header = {"id": "ID", "probe": "PROBE", "created": "CREATED", "gpu": "GPU", "status": "STATUS", "origin": "ORIGIN"}
    # evidence text (a GPU name from another machine) may hold terminal escape codes: shown escaped, never raw
    shown = [header] + [{k: printable(str(v), 40) for k, v in {**r, "id": r["id"][:19]}.items()} for r in rows]
    widths = {k: max(len(r[k]) for r in shown) for k in header}
    for r in shown:
        print("  ".join(r[k].ljust(widths[k]) for k in header).rstrip())
    return 0


def _show(args: Any) -> int:
    doc = _existing(args).get(args.id)
    print(json_text(doc, indent=2, sort_keys=True, ensure_ascii=False))
    return 0


def _verify(args: Any) -> int:
    store = _existing(args)
    found = archive_check.check(store)  # listed once, each file read once: hashed, then parsed and validated
    bad, strays, invalid = found.mismatches, found.strays, found.invalid
    temps = store.clean() if args.clean else found.temps
    total = found.count
    # files that hash correctly but readers refuse (old schema, junk) are fatal only with --strict
    failed = bool(bad or strays or (invalid and args.strict))
    if args.json:
        body = {
            "ok": not failed,
            "files": total,
            "mismatches": [{"path": str(m.path), "expected": m.expected, "actual": m.actual} for m in bad],
            "strays": [{"path": str(x.path), "why": x.why} for x in strays],
            "invalid": [item.message for item in invalid],
            "temp_files": [str(t) for t in temps],
            "temp_files_removed": bool(args.clean),
        }
        print(json_text(body, indent=1, ensure_ascii=False))
        return EXIT["check failed"] if failed else EXIT["ok"]
    for m in bad:
        print(f"MISMATCH {m.path}: expected {m.expected}, actual {m.actual}")
    for stray in strays:
        print(f"STRAY {printable(f'{stray.path}: {stray.why}')}")
    for item in invalid:
        print(f"INVALID {item.message}")
    verb = "removed" if args.clean else "left by interrupted writes (run with --clean to remove)"
    if temps:
        print(f"{len(temps)} temp file(s) {verb}")
    if bad:
        log.error("%d of %d evidence file(s) do not match their names", len(bad), total)
    if strays:
        log.error("%d thing(s) under evidence/ are not evidence files (links, FIFOs, stray names)", len(strays))
    if invalid:
        how = "" if args.strict else " (not fatal without --strict)"
        log.error("%d of %d evidence file(s) are not valid current-schema evidence%s", len(invalid), total, how)
    if failed:
        return EXIT["check failed"]
    print(f"ok: {total} evidence file(s) match their names")
    return EXIT["ok"]


def _migrate(args: Any) -> int:
    raw = read_regular(args.file)
    print(Store(args.archive).put(Evidence.from_dict(migrate(raw, str(args.file)))))
    return 0
