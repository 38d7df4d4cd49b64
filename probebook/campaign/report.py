"""``campaign status`` (a table per curve and a progress bar) and ``campaign collect`` (into an archive).

``collect`` copies the manifest and every point's evidence into an archive, each refused unless
its bytes still hash to its id (as ``archive add`` does), and stores one ``campaign`` evidence
document listing the points' ids, their rows and their receipts: the document a record cites.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from measure.errors import ProbebookError
from measure.evidence.envelope import Evidence
from measure.evidence.store import Store
from measure.machine import code_fingerprint
from probebook.campaign import receipts
from probebook.campaign.plan import checked, load_manifest

PROBE = "campaign"
VERSION = 1


def curves(folder: Path) -> list[dict[str, Any]]:
    """One summary per curve: its state, points measured, last fitting batch, OOM batch, failures."""
    _ident, manifest = load_manifest(folder)
    got = receipts.load_all(folder)
    points = {p["key"]: p for p in manifest["data"]["points"]}
    out = []
    for curve in manifest["data"]["curves"]:
        keys = curve["points"]
        state, at = receipts.curve_state(keys, got)
        done = [got[k] for k in keys if k in got]
        ok = [points[r["point"]]["batch"] for r in done if r["state"] == "ok"]
        out.append(
            {
                "curve": curve["curve"],
                "state": state,
                "at": points[at]["batch"] if at else None,
                "measured": sum(r["state"] in receipts.MEASURED for r in done),
                "planned": len(keys),
                "largest_ok": max(ok) if ok else None,
                "oom": next((points[r["point"]]["batch"] for r in done if r["state"] == "oom"), None),
                "attempts": sum(len(r["attempts"]) for r in done),
                "failed_attempts": sum(a["state"] in receipts.FAILED for r in done for a in r["attempts"]),
            }
        )
    return out


def render_status(folder: Path) -> Any:
    """A rich renderable: the curve table and a progress bar over curves done."""
    from rich.console import Group
    from rich.progress_bar import ProgressBar
    from rich.table import Table

    rows = curves(folder)
    table = Table(title=f"campaign {Path(folder).name}")
    for column in ("curve", "state", "at batch", "measured", "largest ok", "OOM at", "attempts", "failed"):
        table.add_column(column, justify="left" if column in ("curve", "state") else "right")
    for r in rows:
        table.add_row(
            r["curve"],
            r["state"],
            str(r["at"] or "-"),
            f"{r['measured']}/{r['planned']}",
            str(r["largest_ok"] or "-"),
            str(r["oom"] or "-"),
            str(r["attempts"]),
            str(r["failed_attempts"]),
        )
    finished = sum(r["state"] in ("oom", "cap") for r in rows)
    bar = ProgressBar(total=len(rows), completed=finished, width=40)
    return Group(table, bar, f"{finished}/{len(rows)} curves done, {sum(r['measured'] for r in rows)} points measured")


def status(folder: Path, watch: bool = False, every_s: float = 2.0) -> int:
    """Print the status once, or refresh it until every curve is done or blocked (``--watch``)."""
    import time

    from rich.console import Console
    from rich.live import Live

    console = Console()
    if not watch:
        console.print(render_status(folder))
        return 0
    with Live(render_status(folder), console=console, refresh_per_second=4) as live:
        while any(r["state"] in ("ready", "running") for r in curves(folder)):
            time.sleep(every_s)
            live.update(render_status(folder))
    return 0


def collect(folder: Path, archive: Path) -> str:
    """Copy the manifest and the points' evidence into ``archive``; store and return the campaign document's id."""
    folder = Path(folder)
    manifest_id, manifest = load_manifest(folder)
    source, target = Store(folder / "archive"), Store(archive)
    got = receipts.load_all(folder)
    points = {p["key"]: p for p in manifest["data"]["points"]}
    samples, windows, listed = [], [], []
    for key, point in points.items():
        receipt = got.get(key)
        if receipt is None:
            continue
        ids = [a["evidence"] for a in receipt["attempts"] if a.get("evidence")]
        for ident in ids:  # every attempt's evidence, failed ones too: nothing measured is dropped
            doc = checked(source, ident)
            target.put_bytes(source.read_bytes(ident))
            if ident == receipt.get("evidence") and receipt["state"] in receipts.MEASURED:
                for row in doc["data"]["samples"]:
                    samples.append({**row, "point": key, "curve": point["curve"], "evidence": ident})
                windows += [{**w, "point": key} for w in doc["data"].get("windows", [])]
        listed.append(
            {
                "point": key,
                "curve": point["curve"],
                "state": receipt["state"],
                "evidence": receipt.get("evidence"),
                "attempts": receipt["attempts"],
            }
        )
    target.put_bytes(source.read_bytes(manifest_id))
    summary = curves(folder)
    open_curves = [c["curve"] for c in summary if c["state"] not in ("oom", "cap")]
    evidence = Evidence(
        probe=PROBE,
        probe_version=VERSION,
        params={"manifest": manifest_id, "campaign": manifest["params"]["name"], "probe": manifest["params"]["probe"]},
        data={"samples": samples, "windows": windows, "points": listed, "curves": summary},
        machine=manifest["machine"],
        code=code_fingerprint(__file__),
        status="complete" if not open_curves else "partial" if samples else "failed",
        error=f"curves not finished: {', '.join(open_curves)}" if open_curves else None,
    )
    if not listed:
        raise ProbebookError(f"{folder}: no point has run yet; nothing to collect")
    return target.put(evidence)
