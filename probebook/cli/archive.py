"""``probebook archive``: import, list, show, verify and migrate evidence."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from measure import importer
from measure.errors import EvidenceError, ProbebookError
from measure.evidence import Evidence, migrate, parse
from measure.machine import code_fingerprint
from measure.store import Store
from probebook.cli import command


def register(sub: Any) -> None:
    top = command(sub, "archive", "Work with the evidence archive.", "probebook archive ls --probe gemm")
    asub = top.add_subparsers(dest="archive_command", metavar="ACTION", required=True)

    p = command(asub, "import", "Turn a CSV or JSON file of measurements taken elsewhere into evidence; print its id.",
                'probebook archive import --probe step-scaling sweep.csv --source "lab notebook, 2026-11-02"')
    p.add_argument("file", type=Path, help="CSV or JSON file (see DESIGN §2 for each probe's columns)")
    p.add_argument("--probe", required=True, choices=sorted(importer.CONTRACTS), help="column contract to check")
    p.add_argument("--source", required=True, help="where the numbers came from")
    p.add_argument("--gpu", help="GPU the numbers were measured on, if known")
    p.add_argument("--notes", help="free text kept with the evidence")
    p.set_defaults(func=_import)

    p = command(asub, "ls", "List archived evidence: id, probe, created, GPU, status, origin.",
                "probebook archive ls --probe step-scaling")
    p.add_argument("--probe", help="only this probe")
    p.add_argument("--json", action="store_true", help="print JSON rows instead of a table")
    p.set_defaults(func=_ls)

    p = command(asub, "show", "Print one evidence document (id or unique prefix of >= 12 hex).",
                "probebook archive show sha256:4be1c0ffee12")
    p.add_argument("id", help="sha256:<hex> or a unique prefix")
    p.set_defaults(func=_show)

    p = command(asub, "verify", "Re-hash every stored file; name each whose bytes do not match its name.",
                "probebook archive verify --clean")
    p.add_argument("--clean", action="store_true", help="also remove temp files left by interrupted writes")
    p.set_defaults(func=_verify)

    p = command(asub, "migrate", "Archive an upgraded copy of an old-schema evidence file; print the new id.",
                "probebook archive migrate old-run.json")
    p.add_argument("file", type=Path, help="an evidence JSON file of an older schema version")
    p.set_defaults(func=_migrate)


def _import(args: Any) -> int:
    request = importer.ImportRequest(probe=args.probe, path=args.file, source=args.source, gpu=args.gpu,
                                     notes=args.notes)
    evidence = importer.build(request, code_fingerprint())
    print(Store(args.archive).put(evidence))
    return 0


def _summary(ident: str, doc: dict[str, Any]) -> dict[str, Any]:
    return {"id": ident, "probe": doc["probe"], "created": doc["created_at"],
            "gpu": (doc.get("machine") or {}).get("gpu") or "-", "status": doc["status"],
            "origin": doc["origin"]["kind"]}


def _ls(args: Any) -> int:
    store = Store(args.archive)
    rows = []
    for path in store.iter_paths():
        ident = "sha256:" + path.parent.name + path.name[:-5]
        try:
            doc = parse(path.read_bytes(), str(path))
        except EvidenceError as exc:
            print(f"probebook: warning: {exc}", file=sys.stderr)
            continue
        if args.probe and doc["probe"] != args.probe:
            continue
        rows.append(_summary(ident, doc))
    rows.sort(key=lambda r: (r["created"], r["id"]))
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    header = {"id": "ID", "probe": "PROBE", "created": "CREATED", "gpu": "GPU", "status": "STATUS", "origin": "ORIGIN"}
    shown = [header] + [{**r, "id": r["id"][:19]} for r in rows]
    widths = {k: max(len(str(r[k])) for r in shown) for k in header}
    for r in shown:
        print("  ".join(str(r[k]).ljust(widths[k]) for k in header).rstrip())
    return 0


def _show(args: Any) -> int:
    doc = Store(args.archive).get(args.id)
    print(json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False))
    return 0


def _verify(args: Any) -> int:
    store = Store(args.archive)
    bad = store.verify()
    for m in bad:
        print(f"MISMATCH {m.path}: expected {m.expected}, actual {m.actual}")
    temps = store.clean() if args.clean else store.temp_files()
    verb = "removed" if args.clean else "left by interrupted writes (run with --clean to remove)"
    if temps:
        print(f"{len(temps)} temp file(s) {verb}")
    total = len(store.ids())
    if bad:
        print(f"{len(bad)} of {total} evidence file(s) do not match their names", file=sys.stderr)
        return 1
    print(f"ok: {total} evidence file(s) verified")
    return 0


def _migrate(args: Any) -> int:
    try:
        raw = args.file.read_bytes()
    except OSError as exc:
        raise ProbebookError(f"{args.file}: cannot read ({exc.strerror})") from None
    print(Store(args.archive).put(Evidence.from_dict(migrate(raw, str(args.file)))))
    return 0
