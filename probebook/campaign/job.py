"""What one campaign job runs: one point, measured in the job's own (fresh) process.

``run_probe`` runs one point of any probe (a grid campaign's, a reproduction's): the probe's ``run``
with the point's config, as ``python -m measure PROBE ...`` would, holding the device lock
(``gpu_lock``) throughout. ``run_point`` measures one batch of a batch sweep's curve.

The sweep's job imports what a point needs before it asks for the device, so its interpreter start and
imports overlap the point that holds the device; with ``gpu_lock`` it then holds a lock file from
before the model is built until its device memory is returned (``batch_sweep.measure_here``), so
two points never use one GPU at once; the point's device check runs once it holds the lock, and leaves
out the campaign's other jobs (``sharing``). Its evidence goes into the campaign folder's store; the
job returns a small summary that submitit pickles for the runner.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any

from measure.evidence.envelope import MEASURED


def sharing(folder: str, gpu_lock: bool) -> contextlib.AbstractContextManager[None]:
    """While a job runs, its pid is registered among the campaign's jobs that take turns on one card
    (``gpu_lock``), so that their device checks leave it out (``measure.device_check.sibling``)."""
    from measure import device_check

    return device_check.sibling(Path(folder) / "jobs") if gpu_lock else contextlib.nullcontext()


def run_point(point: dict[str, Any], folder: str, gpu_lock: bool) -> dict[str, Any]:
    """Measure one point; store its evidence in ``<folder>/archive``; return what the receipt records."""
    started = time.time()
    from filelock import FileLock

    from measure.evidence.store import Store
    from measure.probes import batch_sweep
    from measure.run.isolate import warm_imports
    from probebook.campaign.spec import probe_config_class

    warm_imports()
    imported = time.time()
    config = probe_config_class("batch-sweep")(**{**point["config"], "contexts": tuple(point["config"]["contexts"])})
    lock = FileLock(str(Path(folder) / "gpu.lock")) if gpu_lock else None
    with sharing(folder, gpu_lock):
        evidence = batch_sweep.measure_here(config, point["context"], point["batch"], device_lock=lock)
    ident = Store(Path(folder) / "archive").put(evidence)
    rows = evidence.data.get("samples") or []
    row = rows[0] if rows else {}
    failures = evidence.data.get("failures") or []
    return {
        "evidence": ident,
        "status": row.get("status") if evidence.status in MEASURED else "failed",  # unstable: measured, flagged
        "error": evidence.error or (failures[0]["error"] if failures else None),
        "tok_s": row.get("tok_s"),
        "peak_bytes": row.get("peak_bytes"),
        "params": row.get("params"),
        "pid": os.getpid(),
        "job_started_unix": started,
        "imports_s": imported - started,
        "device_acquired_unix": row.get("device_acquired_unix"),
        "device_released_unix": row.get("device_released_unix"),
        "job_ended_unix": time.time(),
    }


def run_probe(point: dict[str, Any], folder: str, gpu_lock: bool) -> dict[str, Any]:
    """Run the point's probe with its config; store the evidence in ``<folder>/archive``; return what the receipt
    records. A probe killed mid-run leaves its journal in ``<folder>/archive/journal`` (``python -m measure
    recover`` archives it as partial evidence)."""
    started = time.time()
    from filelock import FileLock

    from measure.cli import probe_module
    from measure.evidence.store import Store
    from measure.options import config_from_dict
    from measure.run.runner import journal_path

    module = probe_module(point["probe"])
    config = config_from_dict(module.Config, point["config"])
    archive = Path(folder) / "archive"
    journal = journal_path(archive, point["probe"])
    lock: Any = FileLock(str(Path(folder) / "gpu.lock")) if gpu_lock else contextlib.nullcontext()
    with sharing(folder, gpu_lock), lock:
        evidence = module.run(config, journal=journal, progress=False)
        _return_device_memory()  # before the next point's job takes the lock
    ident = Store(archive).put(evidence)
    journal.unlink(missing_ok=True)
    return {
        "evidence": ident,
        "status": "ok" if evidence.status in MEASURED else "failed",  # unstable: measured, its rows flagged
        "error": evidence.error if evidence.status not in MEASURED else None,
        "probe": point["probe"],
        "pid": os.getpid(),
        "job_started_unix": started,
        "job_ended_unix": time.time(),
    }


def _return_device_memory() -> None:
    """Give back the CUDA memory this process cached, where it used CUDA at all (a CPU point never imports it)."""
    import sys

    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        from measure.probes.common import release_device

        release_device("cuda")
