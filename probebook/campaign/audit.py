"""``campaign audit``: re-check a campaign from its raw evidence and receipts; one line per finding.

Checks, per point: the evidence a receipt names exists and hashes to its id, is the point's own
(context, batch, config) and says what the receipt says; the timing arithmetic re-derived from the
raw windows (median step, tokens/s, CV, window count, tokens per step) and each window's optimizer
update count against its steps; the parameter count against the preset; the code that measured it
is the manifest's frozen source (``measure_source_sha256``); an OOM is an allocation failure, not
some other error. Per curve: the OOM boundary is contiguous (points form a prefix of the planned
walk, nothing fits above an OOM). Per campaign: the frozen source still hashes to the manifest's,
job time limits, at most one measured attempt per point, Slurm's accounting of every job (time limit
and elapsed, GPUs, CPUs and memory against the spec, its peak of jobs at once), no job named by two attempts
(``repeated_jobs``), peak concurrency against ``max_concurrent``, and (with the GPU lock, local
executor only: Slurm gives each job its own allocation) no two points holding the device at once.
A grid's point (``grid_findings``) is checked for what any probe's run records: its evidence is the
point's probe, with the point's config, by the frozen source, and says what its receipt says.
"""

from __future__ import annotations

import math
import statistics
import time
from pathlib import Path
from typing import Any

from measure.errors import ProbebookError
from measure.evidence.envelope import MEASURED, Evidence
from measure.evidence.store import Store
from measure.machine import code_fingerprint, source_tree_sha256
from measure.run.isolate import is_oom_text
from probebook.campaign import receipts
from probebook.campaign.plan import SOURCE, checked, load_manifest

PROBE = "campaign-audit"
VERSION = 1
ACCOUNTING_WAITS = 20  # seconds the audit waits for accounting to record the end of jobs that ended
REL = 1e-9  # re-derived numbers must agree to rounding: both sides are the same float arithmetic


def close(a: Any, b: Any) -> bool:
    """Whether two stored numbers agree to ``REL`` (both None also agrees)."""
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(float(a), float(b), rel_tol=REL, abs_tol=0.0)


def is_allocation_failure(error: str | None, device: str) -> bool:
    """Whether an error line reports an allocation failure of ``device`` (the probe's own rule: on CUDA only
    the device's allocator sets a boundary, ``measure.run.isolate.is_oom_text``)."""
    return bool(error) and is_oom_text(str(error), device)


def boundary_findings(curve: str, planned: list[int], states: dict[int, str]) -> list[str]:
    """A curve's walk: its settled batches must be a prefix of ``planned``, with nothing but OOM at its end.

    ``states`` maps batch -> receipt state. A gap (a later batch settled while an earlier one has
    no receipt) or an ``ok`` above an ``oom`` is a non-contiguous boundary.
    """
    out = []
    seen = [b for b in planned if b in states]
    prefix = planned[: len(seen)]
    if seen != prefix:
        gap = next(b for b in planned if b not in states)
        out.append(f"curve {curve}: batch {gap} has no receipt but larger batches do (non-contiguous walk)")
    ooms = [b for b in seen if states[b] == "oom"]
    if ooms:
        above = [b for b in seen if b > ooms[0] and states[b] == "ok"]
        if above:
            out.append(
                f"curve {curve}: batch {above[0]} fit above the OOM at batch {ooms[0]} (non-contiguous boundary)"
            )
        if len(ooms) > 1:
            out.append(f"curve {curve}: {len(ooms)} OOM points; the walk stops at the first")
    return out


def timing_findings(where: str, row: dict[str, Any], windows: list[float], planned_windows: int) -> list[str]:
    """Re-derive one ok row from its raw windows: median step (s), tokens/s, CV, window and token counts."""
    out = []
    if len(windows) != row.get("windows"):
        out.append(f"{where}: {len(windows)} raw windows but the row says {row.get('windows')}")
    if len(windows) < planned_windows:
        out.append(f"{where}: {len(windows)} windows, fewer than the {planned_windows} planned")
    if not windows:
        return out
    step = statistics.median(windows)
    if not close(step, row.get("step_s")):
        out.append(f"{where}: step_s {row.get('step_s')} is not the median of its windows ({step})")
    if row.get("tokens") != row["batch"] * row["context"]:
        out.append(f"{where}: tokens {row.get('tokens')} != batch x context {row['batch'] * row['context']}")
    if not close(row["batch"] * row["context"] / step, row.get("tok_s")):
        out.append(f"{where}: tok_s {row.get('tok_s')} != batch x context / median step")
    spread = statistics.stdev(windows) / statistics.fmean(windows) if len(windows) > 1 else 0.0
    if not close(spread, row.get("cv")):
        out.append(f"{where}: cv {row.get('cv')} is not the windows' CV ({spread})")
    return out


def update_findings(where: str, updates: list[int | None], calls: int) -> list[str]:
    """Each timed window's optimizer update count (read from the optimizer) must be its ``calls`` steps exactly.

    Windows that do not record a count (evidence from before the window watch) are not judged.
    """
    return [
        f"{where}: window {i} made {n} optimizer updates in {calls} steps"
        for i, n in enumerate(updates)
        if n is not None and n != calls
    ]


def _point(
    key: str, point: dict[str, Any], receipt: dict[str, Any], store: Store, settings: dict[str, Any]
) -> tuple[list[str], dict[str, Any] | None]:
    """Findings of one point, and its row when it has one."""
    from measure.workload.presets import PRESETS, param_count

    where = f"point {key}"
    out: list[str] = []
    measured = [a for a in receipt["attempts"] if a.get("state") in receipts.MEASURED]
    if len(measured) > 1:
        out.append(f"{where}: measured by {len(measured)} attempts (a point runs once)")
    limit = settings["point_timeout_s"] + settings["grace_s"]
    for a in receipt["attempts"]:
        if a.get("wall_s") is not None and a["wall_s"] > limit:
            out.append(f"{where}: attempt {a['n']} ran {a['wall_s']:.1f} s, past its {limit:g} s job limit")
    if receipt["state"] not in receipts.MEASURED:
        if receipt.get("result") and receipt["result"].get("status") in receipts.MEASURED:
            out.append(f"{where}: receipt state {receipt['state']} but its result says {receipt['result']['status']}")
        return out, None
    ident = receipt.get("evidence")
    if not ident:
        return [*out, f"{where}: receipt says {receipt['state']} but names no evidence"], None
    try:
        doc = checked(store, ident)
    except ProbebookError as exc:
        return [*out, f"{where}: {exc}"], None
    rows = doc["data"].get("samples") or []
    failures = doc["data"].get("failures") or []
    if receipt["state"] == "oom" and (failures or doc["status"] not in MEASURED):
        why = failures[0]["error"] if failures else doc.get("error")
        return [*out, f"{where}: recorded as OOM but its evidence records a failure: {why!r}"], None
    if doc["probe"] != "batch-sweep" or len(rows) != 1:
        return [*out, f"{where}: {ident} is not one batch-sweep point"], None
    row = rows[0]
    if (row["context"], row["batch"]) != (point["context"], point["batch"]):
        out.append(f"{where}: its evidence measured context {row['context']} batch {row['batch']}")
    # sessions: the probe's default, resolved when it runs (a batch-sweep point measures in one session)
    out += params_findings(where, point["config"], doc["params"], resolved=("sessions",))
    out += source_findings(where, doc, settings)
    if row["status"] != receipt["state"]:
        out.append(f"{where}: receipt says {receipt['state']} but its evidence says {row['status']}")
    result = receipt.get("result") or {}
    for name in ("tok_s", "peak_bytes", "params"):
        if not close(result.get(name), row.get(name)):
            out.append(f"{where}: receipt {name} {result.get(name)} != evidence {row.get(name)} (tampered receipt?)")
    if result.get("evidence") != ident:
        out.append(f"{where}: receipt result names {result.get('evidence')}, the receipt {ident}")
    if point["config"].get("workload") is None:
        expected = param_count(PRESETS[point["preset"]])
        if row.get("params") != expected:
            out.append(f"{where}: {row.get('params')} parameters, the {point['preset']} preset has {expected}")
    if row["status"] == "oom":
        if not is_allocation_failure(row.get("error"), str(doc["params"].get("device", "cuda"))):
            out.append(f"{where}: recorded as OOM but its error is not an allocation failure: {row.get('error')!r}")
    else:
        windows = doc["data"].get("windows", [])
        out += timing_findings(where, row, [w["step_s"] for w in windows], point["config"]["windows"])
        # version 2 sizes its windows by time and records the calls it chose; version 1 ran the planned iters
        calls = row.get("window_iters") or point["config"]["iters"]
        out += update_findings(where, [w.get("updates") for w in windows], calls)
    return out, row


def params_findings(where: str, config: dict[str, Any], params: dict[str, Any], resolved: tuple[str, ...]) -> list[str]:
    """The evidence's params against the point's config; a null or ``auto`` among ``resolved`` is the probe's
    choice, made when it runs (not compared), and the runner's own limits are not the probe's."""
    out = []
    for name, value in config.items():
        if name in ("point_timeout_s", "budget_s") or (value in (None, "auto") and name in resolved):
            continue
        stored = params.get("device_requested" if name == "device" else name, value)
        if stored != value:
            out.append(f"{where}: evidence params.{name} is {stored!r}, the manifest says {value!r}")
    return out


def source_findings(where: str, doc: dict[str, Any], settings: dict[str, Any]) -> list[str]:
    """The measure source that ran the point against the manifest's frozen one."""
    frozen = settings.get("_measure_source_sha256")
    ran = (doc.get("code") or {}).get("measure_source_sha256")
    if frozen and ran != frozen:
        return [f"{where}: measured by measure source {str(ran)[:12]}, not the manifest's {frozen[:12]} (edited?)"]
    return []


def grid_findings(
    key: str, point: dict[str, Any], receipt: dict[str, Any], store: Store, settings: dict[str, Any]
) -> list[str]:
    """A grid point: the evidence its receipt names exists, hashes to its id, is a run of the point's probe with
    the point's config by the frozen source, and says what the receipt says."""
    where = f"point {key}"
    out = _point_times(key, receipt, settings)
    result = receipt.get("result") or {}
    if receipt["state"] not in receipts.MEASURED:
        if result.get("status") in receipts.MEASURED:
            out.append(f"{where}: receipt state {receipt['state']} but its result says {result['status']}")
        return out
    ident = receipt.get("evidence")
    if not ident:
        return [*out, f"{where}: receipt says {receipt['state']} but names no evidence"]
    try:
        doc = checked(store, ident)
    except ProbebookError as exc:
        return [*out, f"{where}: {exc}"]
    if doc["probe"] != point["probe"]:
        return [*out, f"{where}: its evidence {ident[:19]} is {doc['probe']}, not {point['probe']}"]
    if doc["status"] not in MEASURED:
        out.append(f"{where}: receipt says {receipt['state']} but its evidence is {doc['status']}")
    if result.get("evidence") != ident:
        out.append(f"{where}: receipt result names {result.get('evidence')}, the receipt {ident}")
    out += params_findings(where, point["config"], doc.get("params") or {}, resolved=tuple(point["config"]))
    return out + source_findings(where, doc, settings)


def _point_times(key: str, receipt: dict[str, Any], settings: dict[str, Any]) -> list[str]:
    """Attempts measured more than once or run past the job limit (the checks every campaign's points share)."""
    out = []
    if sum(a.get("state") in receipts.MEASURED for a in receipt["attempts"]) > 1:
        out.append(f"point {key}: measured by more than one attempt (a point runs once)")
    limit = settings["point_timeout_s"] + settings["grace_s"]
    for a in receipt["attempts"]:
        if a.get("wall_s") is not None and a["wall_s"] > limit:
            out.append(f"point {key}: attempt {a['n']} ran {a['wall_s']:.1f} s, past its {limit:g} s job limit")
    return out


def _same_machine(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two local attempts may have run on one machine's boot (an attempt that does not say may have)."""
    for key in ("host", "boot_id"):
        if a.get(key) is not None and b.get(key) is not None and a[key] != b[key]:
            return False
    return True


def _overlap(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two attempts' lifetimes (submission to end; an unended one runs on) share an instant."""
    a0, b0 = a.get("submitted_unix"), b.get("submitted_unix")
    if a0 is None or b0 is None:
        return True
    a1, b1 = a.get("ended_unix") or math.inf, b.get("ended_unix") or math.inf
    return a0 < b1 and b0 < a1


def repeated_jobs(attempts: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """Jobs named by more than one attempt, one line each; ``attempts`` holds (point key, attempt).

    A Slurm job id is unique on its cluster: two attempts naming one are one job. A local job's id
    is its controller's process id, unique only among the live processes of one machine's boot:
    the same number on another host or boot (a campaign resumed on a fresh machine), or on one boot
    after the first process ended (pid reuse), is another job. So two local attempts are one job
    when their ids match, nothing they record (``host``, ``boot_id``) tells their machines apart,
    and their lifetimes overlap, as a receipt copied from another point's would.
    """
    out = []
    for i, (key_a, a) in enumerate(attempts):
        for key_b, b in attempts[i + 1 :]:
            if not a.get("job_id") or a["job_id"] != b.get("job_id") or a.get("executor") != b.get("executor"):
                continue
            if a.get("executor") == "local" and not (_same_machine(a, b) and _overlap(a, b)):
                continue
            out.append(
                f"job {a['job_id']}: named by attempt {a.get('n')} of {key_a} and attempt {b.get('n')} of {key_b}"
                + (" while both ran on one machine" if a.get("executor") == "local" else "")
            )
    return out


def concurrency(intervals: list[tuple[float, float]]) -> int:
    """Most intervals open at one instant (an end and a start at the same instant do not overlap)."""
    events = sorted([(a, 1) for a, _ in intervals] + [(b, -1) for _, b in intervals], key=lambda e: (e[0], e[1]))
    peak = now = 0
    for _, step in events:
        now += step
        peak = max(peak, now)
    return peak


def accounting_findings(
    jobs: list[tuple[str, dict[str, Any]]], settings: dict[str, Any]
) -> tuple[list[str], int | None]:
    """Slurm's accounting of every Slurm attempt against the spec: time limit and elapsed time, GPUs, CPUs and
    memory allocated, and the peak of jobs running at once (by Slurm's start and end, not the runner's view).

    One batched ``sacct`` call; a campaign with no Slurm job returns no findings and no peak.
    """
    from probebook.campaign import executors, slurm
    from probebook.campaign.spec import Executor, Slurm

    ran = [(k, a) for k, a in jobs if a.get("executor") == "slurm" and a.get("job_id")]
    if not ran:
        return [], None
    asked = Slurm(**settings["slurm"])
    limit_min = executors.parameters("slurm", Executor(**{**settings, "slurm": asked}), "audit", [], "cpu")["time"]
    since = min(a.get("submitted_unix") or 0.0 for _, a in ran)
    ids = [str(a["job_id"]) for _, a in ran]
    got = slurm.accounting(ids, since)
    settled = {str(a["job_id"]) for _, a in ran if a.get("state") not in receipts.IN_FLIGHT}
    for _ in range(ACCOUNTING_WAITS):  # slurmdbd records a job's end and limit seconds after the runner saw it end
        if all(got.get(i) is not None and got[i].end_unix and got[i].time_limit_min for i in settled):
            break
        time.sleep(1.0)
        got = slurm.accounting(ids, since)
    out, spans = [], []
    for key, a in ran:
        where = f"point {key} attempt {a['n']} (job {a['job_id']})"
        acct = got.get(str(a["job_id"]))
        if acct is None:
            out.append(f"{where}: Slurm's accounting has no such job")
            continue
        if acct.start_unix and acct.end_unix:
            spans.append((acct.start_unix, acct.end_unix))
        if acct.time_limit_min is not None and acct.time_limit_min != limit_min:
            out.append(f"{where}: time limit {acct.time_limit_min} min, the spec asked for {limit_min}")
        if acct.elapsed_s > limit_min * 60:
            out.append(f"{where}: ran {acct.elapsed_s} s, past its {limit_min} min limit")
        if not acct.tres:  # a job that never started has no allocation to judge
            continue
        gpus = int(acct.tres.get("gres/gpu", 0))
        if gpus != asked.gpus:
            out.append(f"{where}: allocated {gpus} GPU(s), the spec asked for {asked.gpus}")
        if int(acct.tres.get("cpu", 0)) < asked.cpus:
            out.append(f"{where}: allocated {acct.tres.get('cpu')} CPU(s), the spec asked for {asked.cpus}")
        mem = acct.mem_mb()
        if mem is not None and abs(mem - asked.mem_gb * 1024) > 1:
            out.append(f"{where}: allocated {acct.tres['mem']} of memory, the spec asked for {asked.mem_gb} GB")
    peak = concurrency(spans)
    if peak > settings["max_concurrent"]:
        out.append(f"campaign: Slurm ran {peak} of its jobs at once, above max_concurrent {settings['max_concurrent']}")
    return out, peak


def audit(folder: Path) -> tuple[list[str], dict[str, Any]]:
    """Every finding of a campaign folder, and counts of what was checked."""
    folder = Path(folder)
    manifest_id, manifest = load_manifest(folder)
    settings = manifest["params"]["executor"]
    store = Store(folder / "archive")
    findings: list[str] = []
    frozen = manifest["data"].get("measure_source_sha256")
    if frozen is not None:  # a manifest that froze a snapshot (plan version 2): it must be as planned
        settings = {**settings, "_measure_source_sha256": frozen}
        tree = source_tree_sha256(folder / SOURCE) if (folder / SOURCE).is_dir() else None
        if tree != manifest["data"]["source_tree_sha256"]:
            findings.append(
                f"campaign: {folder / SOURCE} hashes to {str(tree)[:12]}, not the manifest's "
                f"{manifest['data']['source_tree_sha256'][:12]}: the frozen source changed after plan"
            )
    got = receipts.load_all(folder)
    points = {p["key"]: p for p in manifest["data"]["points"]}
    unknown = sorted(set(got) - set(points))
    findings += [f"receipt {k}: no such point in manifest {manifest_id[:19]}" for k in unknown]
    rows: list[dict[str, Any]] = []
    jobs: list[tuple[str, dict[str, Any]]] = []
    device: list[tuple[float, float]] = []
    for key, point in points.items():
        if key not in got:
            continue
        if manifest["data"].get("kind") == "grid":
            found, row = grid_findings(key, point, got[key], store, settings), None
        elif manifest["data"].get("kind") == "optimizer-timing":
            from probebook.campaign.followup import point_findings

            found, row = _point_times(key, got[key], settings), None
            found += point_findings(key, point, got[key], store)
        else:
            found, row = _point(key, point, got[key], store, settings)
        findings += found
        if row is not None:
            rows.append(row)
            # the GPU lock is the local executor's (one machine's device); Slurm gives each job its own
            local = got[key]["attempts"] and got[key]["attempts"][-1].get("executor") == "local"
            if local and row.get("device_acquired_unix") and row.get("device_released_unix"):
                device.append((row["device_acquired_unix"], row["device_released_unix"]))
        jobs += [(key, a) for a in got[key]["attempts"]]
    for curve in manifest["data"]["curves"]:
        states = {points[k]["batch"]: got[k]["state"] for k in curve["points"] if k in got}
        findings += boundary_findings(curve["curve"], [points[k]["batch"] for k in curve["points"]], states)
    findings += repeated_jobs(jobs)
    spans = [
        (a["submitted_unix"], a["ended_unix"])
        for r in got.values()
        for a in r["attempts"]
        if a.get("submitted_unix") and a.get("ended_unix")
    ]
    peak = concurrency(spans)
    if peak > settings["max_concurrent"]:
        findings.append(f"campaign: {peak} jobs ran at once, above max_concurrent {settings['max_concurrent']}")
    on_device = concurrency(device)
    if settings["gpu_lock"] and on_device > 1:
        findings.append(f"campaign: {on_device} points held the device at once (the GPU lock was not respected)")
    slurm_found, slurm_peak = accounting_findings(jobs, manifest["params"]["executor"])
    findings += slurm_found
    counts = {
        "points_checked": len(got),
        "peak_concurrent_slurm_jobs": slurm_peak,
        "rows_checked": len(rows),
        "curves": len(manifest["data"]["curves"]),
        "peak_concurrent_jobs": peak,
        "peak_points_on_device": on_device,
        "findings": len(findings),
    }
    return findings, counts


def audit_evidence(folder: Path, findings: list[str], counts: dict[str, Any]) -> Evidence:
    """The audit's verdict as evidence, citing the manifest it checked."""
    manifest_id, manifest = load_manifest(folder)
    return Evidence(
        probe=PROBE,
        probe_version=VERSION,
        params={"manifest": manifest_id, "campaign": manifest["params"]["name"]},
        data={**counts, "lines": findings, "verdict": "clean" if not findings else "findings"},
        machine=manifest["machine"],
        code=code_fingerprint(__file__),
    )
