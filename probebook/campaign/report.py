"""``campaign status`` (a table per curve, or per point of a grid, and a progress bar) and ``campaign collect``.

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
DONE = ("oom", "cap", "done")
"""A curve's states once it is finished: at its OOM, at its cap; a grid's point, measured."""


def largest_batch(store: Store, done: list[dict[str, Any]]) -> int | None:
    """The largest fitting batch of one batch-sweep curve by ``batch_summary``'s own rule
    (``render.derive.batchsweep.summarize``: up to the first OOM, spill or throughput collapse), from its measured
    points' evidence, so ``campaign status`` and a page never disagree (issue 40); None before a batch fits."""
    from render.derive.batchsweep import summarize

    rows = [
        row
        for r in done
        if r["state"] in receipts.MEASURED and r.get("evidence")
        for row in store.get(r["evidence"])["data"]["samples"]
    ]
    fits = [g.largest_fitting_batch for g in summarize(rows) if g.largest_fitting_batch is not None] if rows else []
    return max(fits) if fits else None


def grid_points(manifest: dict[str, Any], got: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One summary per point of a grid campaign (each is a curve of its own): its options, its state (``ready``,
    ``running``, ``blocked`` by a failure, ``done``), its attempts, its evidence and its last error."""
    out = []
    for point in manifest["data"]["points"]:
        state, _at = receipts.curve_state([point["key"]], got)
        receipt = got.get(point["key"]) or {"attempts": [], "state": None}
        last = receipt["attempts"][-1] if receipt["attempts"] else {}
        out.append(
            {
                "curve": point["key"],
                "options": point["options"],
                "state": "done" if state == "cap" else state,
                "receipt": receipt["state"],
                "measured": int(receipt["state"] in receipts.MEASURED),
                "planned": 1,
                "evidence": receipt.get("evidence"),
                "attempts": len(receipt["attempts"]),
                "failed_attempts": sum(a["state"] in receipts.FAILED for a in receipt["attempts"]),
                "error": last.get("error"),
            }
        )
    return out


def curves(folder: Path) -> list[dict[str, Any]]:
    """One summary per curve: its state, points measured, largest fitting batch, OOM batch, failures (a grid's:
    ``grid_points``)."""
    _ident, manifest = load_manifest(folder)
    got = receipts.load_all(folder)
    if manifest["data"].get("kind") == "grid":
        return grid_points(manifest, got)
    points = {p["key"]: p for p in manifest["data"]["points"]}
    sweep = manifest["params"].get("probe") == "batch-sweep" and not manifest["data"].get("kind")
    store = Store(Path(folder) / "archive")
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
                # a throughput sweep's by batch_summary's rule; a follow-up's points all fit once: its largest ok
                "largest_batch": largest_batch(store, done) if sweep else max(ok) if ok else None,
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
    if rows and "options" in rows[0]:
        return _grid_status(folder, rows)
    table = Table(title=f"campaign {Path(folder).name}")
    for column in ("curve", "state", "at batch", "measured", "largest batch", "OOM at", "attempts", "failed"):
        table.add_column(column, justify="left" if column in ("curve", "state") else "right")
    for r in rows:
        table.add_row(
            r["curve"],
            r["state"],
            str(r["at"] or "-"),
            f"{r['measured']}/{r['planned']}",
            str(r["largest_batch"] or "-"),
            str(r["oom"] or "-"),
            str(r["attempts"]),
            str(r["failed_attempts"]),
        )
    finished = sum(r["state"] in ("oom", "cap") for r in rows)
    bar = ProgressBar(total=len(rows), completed=finished, width=40)
    return Group(table, bar, f"{finished}/{len(rows)} curves done, {sum(r['measured'] for r in rows)} points measured")


def _grid_status(folder: Path, rows: list[dict[str, Any]]) -> Any:
    """A grid campaign's status: a row per point (its options, state, attempts, evidence, error) and a bar."""
    from rich.console import Group
    from rich.markup import escape
    from rich.progress_bar import ProgressBar
    from rich.table import Table

    table = Table(title=f"campaign {Path(folder).name}")
    for column in ("point", "options", "state", "attempts", "failed", "evidence", "error"):
        table.add_column(column, justify="right" if column in ("attempts", "failed") else "left")
    for r in rows:
        options = " ".join(f"{k}={v}" for k, v in r["options"].items())
        table.add_row(
            r["curve"],
            escape(options),  # option values are the spec's text: never rich markup
            r["state"],
            str(r["attempts"]),
            str(r["failed_attempts"]),
            (r["evidence"] or "-")[:19],
            escape(r["error"] or "-"),
        )
    done = sum(r["state"] == "done" for r in rows)
    bar = ProgressBar(total=len(rows), completed=done, width=40)
    return Group(table, bar, f"{done}/{len(rows)} points done")


OFF_TERMINAL_WIDTH = 1000
"""Columns of ``campaign status`` printed off a terminal, where rich would assume 80 and cut curve names."""


def status(folder: Path, watch: bool = False, every_s: float = 2.0) -> int:
    """Print the status once, or refresh it until every curve is done or blocked (``--watch``)."""
    import time

    from rich.console import Console
    from rich.live import Live

    console = Console()
    if not console.is_terminal:  # a pipe or a file: lines as long as they need, not cut to rich's 80 columns
        console = Console(width=OFF_TERMINAL_WIDTH)
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
                tags = {"point": key, "curve": point["curve"], "evidence": ident}
                samples += [{**row, **tags} for row in doc["data"].get("samples", [])]
                windows += [{**w, "point": key} for w in doc["data"].get("windows", [])]
        listed.append(
            {
                "point": key,
                "curve": point["curve"],
                **({"options": point["options"]} if "options" in point else {}),  # a grid point's values
                "state": receipt["state"],
                "evidence": receipt.get("evidence"),
                "attempts": receipt["attempts"],
            }
        )
    target.put_bytes(source.read_bytes(manifest_id))
    summary = curves(folder)
    open_curves = [c["curve"] for c in summary if c["state"] not in DONE]
    unit = "point" if manifest["data"].get("kind") == "grid" else "curve"
    evidence = Evidence(
        probe=PROBE,
        probe_version=VERSION,
        params={
            "manifest": manifest_id,
            "campaign": manifest["params"]["name"],
            "probe": manifest["params"]["probe"],
            **({"kind": "grid"} if manifest["data"].get("kind") == "grid" else {}),
        },
        data={"samples": samples, "windows": windows, "points": listed, "curves": summary},
        machine=manifest["machine"],
        code=code_fingerprint(__file__),
        status="complete" if not open_curves else "partial" if samples else "failed",
        error=f"{unit}s not finished: {', '.join(open_curves)}" if open_curves else None,
    )
    if not listed:
        raise ProbebookError(f"{folder}: no point has run yet; nothing to collect")
    return target.put(evidence)


COMBINED = "campaign-report"


def _finished(folder: Path, what: str) -> tuple[str, dict[str, Any], dict[str, dict[str, Any]]]:
    """A campaign's manifest id and document and its receipts, refused unless every curve is finished and its
    audit is clean (a report stands on audited inputs only)."""
    from probebook.campaign.audit import audit

    ident, manifest = load_manifest(folder)
    kind = manifest["data"].get("kind") or "throughput"
    if kind != what:
        raise ProbebookError(f"{folder}: a {kind} campaign given where a {what} campaign goes")
    got = receipts.load_all(folder)
    for c in curves(folder):
        if c["state"] not in ("oom", "cap"):
            raise ProbebookError(f"{folder}: curve {c['curve']} is {c['state']}: the grid is incomplete")
    findings, _counts = audit(folder)
    if findings:
        raise ProbebookError(f"{folder}: its audit has {len(findings)} finding(s) ({findings[0]}); fix them first")
    return ident, manifest, got


def combined(throughput: list[Path], optimizer: list[Path]) -> Evidence:
    """Join throughput campaigns with their optimizer-timing follow-ups, paired by order, into one report.

    Every pair's optimizer campaign must cover its throughput campaign's grid (the same curves, each up to
    its largest fitting batch), and no curve (preset, context) may come from two pairs. The report records
    the manifest id of every input and the evidence ids of every row.
    """
    if not throughput or len(throughput) != len(optimizer):
        raise ProbebookError(
            f"campaign report: {len(throughput)} --throughput and {len(optimizer)} --optimizer campaigns; "
            "they pair by order, one each"
        )
    rows: list[dict[str, Any]] = []
    inputs: list[dict[str, str]] = []
    seen: dict[str, int] = {}  # curve -> the pair it came from
    for n, (tp_dir, opt_dir) in enumerate(zip(throughput, optimizer, strict=True), 1):
        tp_id, tp, tp_got = _finished(tp_dir, "throughput")
        opt_id, opt, opt_got = _finished(opt_dir, "optimizer-timing")
        tp_points = {p["key"]: p for p in tp["data"]["points"]}
        fit = {k for k, r in tp_got.items() if r["state"] == "ok"}
        timed = {p["key"] for p in opt["data"]["points"]}
        if fit != timed:
            missing = sorted(fit - timed) or sorted(timed - fit)
            raise ProbebookError(f"{opt_dir}: does not cover {tp_dir}'s grid (point {missing[0]}): incomplete grid")
        for key in sorted(fit, key=lambda k: (tp_points[k]["curve"], tp_points[k]["batch"])):
            point = tp_points[key]
            curve = point["curve"]
            if seen.setdefault(curve, n) != n:
                raise ProbebookError(
                    f"{tp_dir}: curve {curve} of pair {n} is also in pair {seen[curve]}: the contexts overlap"
                )
            result = opt_got[key]["result"]
            rows.append(
                {
                    "curve": curve,
                    "preset": point["preset"],
                    "context": point["context"],
                    "batch": point["batch"],
                    "tok_s": tp_got[key]["result"]["tok_s"],
                    "optimizer_share": result["optimizer_share"],
                    "throughput_evidence": tp_got[key]["evidence"],
                    "optimizer_evidence": result["instrumented_evidence"],
                    "baseline_evidence": result["baseline_evidence"],
                }
            )
        inputs.append({"throughput": tp_id, "optimizer": opt_id})
    return Evidence(
        probe=COMBINED,
        probe_version=1,
        params={"inputs": inputs},
        data={"samples": rows},
        machine=load_manifest(throughput[0])[1]["machine"],
        code=code_fingerprint(__file__),
    )


def write_combined(throughput: list[Path], optimizer: list[Path], output: Path, archive: Path) -> str:
    """Store the combined report in ``archive`` and write it to ``output``; an existing output is never replaced."""
    import json

    output = Path(output)
    if output.exists():
        raise ProbebookError(f"{output}: exists (an audited report is written once); write to a new file")
    evidence = combined(throughput, optimizer)
    ident = Store(archive).put(evidence)
    output.write_text(json.dumps({"id": ident, **evidence.to_dict()}, indent=1, sort_keys=True) + "\n")
    return ident
