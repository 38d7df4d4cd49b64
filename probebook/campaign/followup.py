"""``campaign plan --optimizer-timing-from DIR``: an optimizer-timing campaign over a finished batch sweep.

It is planned from the sweep's manifest and receipts, not from a spec: it inherits the sweep's
shared config, contexts, presets and executor settings, so nothing a second spec could say
differently (a context, a dtype) can slip in. Each curve stops at the sweep's largest fitting
batch; every point it keeps has already fit once, so the points of a curve do not wait for one
another (``parallel``) and a curve is blocked only by a failure. An OOM at a batch the sweep fit
is not a boundary but a finding: the point is recorded failed and its curve blocks.

Each point's job pairs an uninstrumented baseline worker (the sweep's own measurement at that
batch, ``batch_sweep.measure_here``) with an instrumented one (the ``optimizer`` probe at the same
shape) and stores both as evidence; the receipt's result names both ids. The instrumented worker runs the sweep's
optimizer settings (``--clip``, betas, weight decay: ``SHARED``) and, with ``--optimizer-mode captured`` (CUDA
only), times the original protocol's captured whole update instead of the eager step (``data.optimizer_mode``).
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path
from typing import Any

from measure.errors import ProbebookError
from measure.evidence.envelope import MEASURED, Evidence
from measure.evidence.store import Store
from measure.machine import code_fingerprint, fingerprint
from probebook.campaign import receipts
from probebook.campaign.plan import PROBE, VERSION, frozen, load_manifest, snapshot

KIND = "optimizer-timing"
SHARED = (  # the sweep's options the optimizer probe shares: the same recipe, timed with hooks
    "beta1",
    "beta2",
    "checkpointing",
    "clip",
    "compile",
    "cuda_graph",
    "device",
    "dtype",
    "global_every",
    "iters",
    "preset",
    "seed",
    "sliding_window",
    "utilisation",
    "warmup",
    "weight_decay",
    "windows",
    "workload",
)


MODES = ("eager", "captured")
"""``--optimizer-mode``: the optimizer probe's ``--mode`` the instrumented worker runs (eager: hooks in the eager step;
captured: the original protocol's captured whole update, CUDA only)."""


def points_from(
    sweep: Path, presets: tuple[str, ...] | None = None, mode: str = "eager"
) -> tuple[str, dict[str, Any], list[dict[str, Any]]]:
    """The sweep's manifest id and document, and the follow-up's points (each curve's ``ok`` points).

    ``presets`` keeps only those presets' curves (every context of each), for a follow-up of part of a
    sweep when device time is short; a preset the sweep did not measure is refused. ``mode`` is the instrumented
    worker's ``--mode``; ``captured`` over a sweep that ran on the CPU is refused (the probe captures a CUDA graph).
    """
    from measure.probes import batch_sweep, optimizer

    if mode not in MODES:
        raise ProbebookError(f"--optimizer-mode must be one of {', '.join(MODES)}, got {mode!r}")
    # a key a sweep's point config lacks (planned before the sweep took it) ran at batch-sweep's default there, so
    # the instrumented worker takes that default too, never the optimizer probe's own (its clip is 1.0, the sweep's 0)
    swept: dict[str, Any] = {f.name: f.default for f in dataclasses.fields(batch_sweep.Config)}

    ident, manifest = load_manifest(sweep)
    if manifest["params"].get("probe") != "batch-sweep" or manifest["data"].get("kind"):
        raise ProbebookError(f"{sweep}: an optimizer-timing follow-up needs a batch-sweep campaign")
    got = receipts.load_all(sweep)
    by_key = {p["key"]: p for p in manifest["data"]["points"]}
    curves = manifest["data"]["curves"]
    if presets is not None:
        measured = {by_key[c["points"][0]]["preset"] for c in curves if c["points"]}
        unknown = sorted(set(presets) - measured)
        if unknown:
            raise ProbebookError(
                f"{sweep}: --presets {','.join(unknown)}: the sweep measured only {', '.join(sorted(measured))}"
            )
        curves = [c for c in curves if c["points"] and by_key[c["points"][0]]["preset"] in presets]
    out = []
    for curve in curves:
        state, _ = receipts.curve_state(curve["points"], got)
        if state not in ("oom", "cap"):
            raise ProbebookError(f"{sweep}: curve {curve['curve']} is {state}; finish the sweep before its follow-up")
        fit = [by_key[k] for k in curve["points"] if k in got and got[k]["state"] == "ok"]
        if not fit:
            raise ProbebookError(f"{sweep}: curve {curve['curve']} has no batch that fit; nothing to time")
        if mode == "captured" and _swept_on(sweep, fit[0], got) == "cpu":
            raise ProbebookError(
                f"{sweep}: --optimizer-mode captured: the sweep ran on the CPU and captured mode replays a CUDA graph; "
                "use --optimizer-mode eager"
            )
        for index, point in enumerate(fit):
            cfg = point["config"]
            shared = {k: cfg[k] if k in cfg else swept[k] for k in SHARED}
            timed = optimizer.Config(**shared, batch=point["batch"], seq_len=point["context"], mode=mode)
            out.append(
                {
                    **{k: point[k] for k in ("key", "curve", "preset", "context", "batch")},
                    "index": index,
                    "config": cfg,  # the baseline worker's: the sweep's own recipe at this batch
                    "optimizer_config": dataclasses.asdict(timed),
                    "sweep_evidence": got[point["key"]]["evidence"],
                }
            )
    return ident, manifest, out


def _swept_on(sweep: Path, point: dict[str, Any], got: dict[str, Any]) -> str:
    """The device a sweep's point ran on: as its evidence resolved it (``auto`` says nothing), else as configured."""
    from probebook.campaign.plan import checked

    ident = got[point["key"]].get("evidence")
    try:
        return str(checked(Store(sweep / "archive"), ident)["params"]["device"])
    except (ProbebookError, OSError, KeyError, TypeError):  # not readable here: what the sweep was asked for
        return str(point["config"].get("device") or "auto")


def plan_followup(
    sweep: Path, folder: Path, name: str | None = None, presets: tuple[str, ...] | None = None, mode: str = "eager"
) -> str:
    """Write a new optimizer-timing campaign folder over the finished sweep ``sweep``; return its manifest id.

    With ``presets``, only those presets' curves are followed; the manifest records the selection
    (``data.presets``) so a partial follow-up is never read as the whole sweep's. ``mode`` (``MODES``) is the
    instrumented worker's, recorded as ``data.optimizer_mode`` and in every point's ``optimizer_config``.
    """
    sweep_id, sweep_doc, points = points_from(Path(sweep), presets, mode)
    folder = Path(folder)
    if folder.exists() and any(folder.iterdir()):
        raise ProbebookError(f"{folder}: not empty; plan a campaign into a new folder")
    (folder / "receipts").mkdir(parents=True)
    source = snapshot(folder)
    params = {**sweep_doc["params"], "name": name or f"{sweep_doc['params']['name']}-optimizer"}
    params["probe"] = "optimizer"
    curves: dict[str, list[str]] = {}
    for p in points:
        curves.setdefault(p["curve"], []).append(p["key"])
    evidence = Evidence(
        probe=PROBE,
        probe_version=VERSION,
        params=params,
        data={
            "kind": KIND,
            "follows": sweep_id,
            "presets": sorted(presets) if presets is not None else None,
            "optimizer_mode": mode,
            "parallel": True,
            "points": points,
            "curves": [{"curve": c, "points": keys} for c, keys in curves.items()],
            **frozen(source),
        },
        machine=fingerprint(),
        code=code_fingerprint(None),
    )
    ident = Store(folder / "archive").put(evidence)
    (folder / "manifest.id").write_text(ident + "\n", encoding="utf-8")
    return ident


def run_pair(point: dict[str, Any], folder: str, gpu_lock: bool) -> dict[str, Any]:
    """One follow-up point in one job: the baseline worker, then the instrumented one; both stored. While it
    runs, the job is one of the campaign's jobs that its siblings' device checks leave out (``job.sharing``)."""
    from probebook.campaign.job import sharing

    with sharing(folder, gpu_lock):
        return _measure_pair(point, folder, gpu_lock, time.time())


def _measure_pair(point: dict[str, Any], folder: str, gpu_lock: bool, started: float) -> dict[str, Any]:
    from filelock import FileLock

    from measure.device_check import resolve_device
    from measure.probes import batch_sweep, optimizer
    from measure.probes.common import release_device
    from measure.run.isolate import warm_imports
    from probebook.campaign.spec import probe_config_class

    warm_imports()
    store = Store(Path(folder) / "archive")
    base_cfg = probe_config_class("batch-sweep")(**{**point["config"], "contexts": tuple(point["config"]["contexts"])})
    lock = FileLock(str(Path(folder) / "gpu.lock")) if gpu_lock else None
    baseline = batch_sweep.measure_here(base_cfg, point["context"], point["batch"], device_lock=lock)
    base_id = store.put(baseline)
    rows = baseline.data.get("samples") or []
    row = rows[0] if rows else {}
    summary: dict[str, Any] = {}
    timed_id, error, status = None, None, "ok"
    if baseline.status not in MEASURED or row.get("status") != "ok":
        failures = baseline.data.get("failures") or []
        why = row.get("error") or baseline.error or (failures[0]["error"] if failures else "no row")
        status = "failed"
        # the sweep fit this batch: an OOM here is a finding about the machine or the code, never a boundary
        error = (
            f"unexpected OOM at batch {point['batch']} (the sweep fit it): {why}" if row.get("status") == "oom" else why
        )
    else:
        with lock if lock is not None else _nothing():
            timed = optimizer.run(optimizer.Config(**point["optimizer_config"]))
            release_device(resolve_device(point["optimizer_config"]["device"]))  # before the next job takes the card
        timed_id = store.put(timed)
        summary = timed.data.get("summary") or {}
        if timed.status not in MEASURED:
            status, error = "failed", f"instrumented worker: {timed.error}"
    return {
        "evidence": timed_id or base_id,
        "baseline_evidence": base_id,
        "instrumented_evidence": timed_id,
        "status": status,
        "error": error,
        "tok_s": row.get("tok_s"),
        "peak_bytes": row.get("peak_bytes"),
        "params": row.get("params"),
        "optimizer_share": summary.get("optimizer_share"),
        "optimizer_median_s": summary.get("optimizer_median_s"),
        "optimizer_mode": point["optimizer_config"].get("mode", "eager"),
        "instrumentation_overhead": summary.get("instrumentation_overhead"),
        # the instrumented run's own verdict against measure.constants.OVERHEAD_LIMIT (optimizer v3); a page judges
        # again from the run's rounds (render.derive.followup.overhead_check)
        "overhead_verdict": summary.get("overhead_verdict"),
        "pid": os.getpid(),
        "job_started_unix": started,
        "device_acquired_unix": row.get("device_acquired_unix"),
        "device_released_unix": row.get("device_released_unix"),
        "job_ended_unix": time.time(),
    }


def _nothing() -> Any:
    import contextlib

    return contextlib.nullcontext()


def point_findings(key: str, point: dict[str, Any], receipt: dict[str, Any], store: Store) -> list[str]:
    """An optimizer-timing point: both workers' evidence exists, hashes to its id, and is this point's."""
    from probebook.campaign.plan import checked

    where = f"point {key}"
    if receipt["state"] != "ok":
        return []
    result = receipt.get("result") or {}
    out = []
    for role, probe in (("baseline", "batch-sweep"), ("instrumented", "optimizer")):
        ident = result.get(f"{role}_evidence")
        if not ident:
            out.append(f"{where}: receipt names no {role} evidence")
            continue
        try:
            doc = checked(store, ident)
        except ProbebookError as exc:
            out.append(f"{where}: {exc}")
            continue
        if doc["probe"] != probe:
            out.append(f"{where}: its {role} evidence {ident[:19]} is {doc['probe']}, not {probe}")
        elif role == "baseline":
            rows = doc["data"].get("samples") or [{}]
            if (rows[0].get("context"), rows[0].get("batch"), rows[0].get("status")) != (
                point["context"],
                point["batch"],
                "ok",
            ):
                out.append(
                    f"{where}: its baseline evidence is not an ok row at context {point['context']} "
                    f"batch {point['batch']}"
                )
        elif (doc["params"].get("batch"), doc["params"].get("seq_len")) != (point["batch"], point["context"]):
            out.append(
                f"{where}: its instrumented evidence timed batch {doc['params'].get('batch')} "
                f"seq_len {doc['params'].get('seq_len')}"
            )
        elif doc["params"].get("mode", "eager") != (point.get("optimizer_config") or {}).get("mode", "eager"):
            out.append(
                f"{where}: its instrumented evidence ran --mode {doc['params'].get('mode', 'eager')}, not the "
                f"manifest's {point['optimizer_config'].get('mode', 'eager')}"
            )
    return out
