"""What one reproduction job runs: one probe run, in the job's own process, stored in the campaign's archive.

It imports only ``measure`` (a job runs the campaign folder's frozen ``source/`` snapshot, which holds
``measure`` and ``probebook``, never ``render``). With the local executor's ``gpu_lock`` the run holds the
campaign's device lock file, so two runs never share one GPU.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any

RUNNER_ENV = "PROBEBOOK_REPRODUCE_RUNNER"
"""Set by a local ``reproduce`` for its jobs: the runner's ``measure.lifetime.process_token``. A job ends when that
runner does (killed, even by SIGKILL), so no job outlives the ``reproduce`` that started it."""


def run_one(point: dict[str, Any], folder: str, gpu_lock: bool) -> dict[str, Any]:
    """Run the point's probe with its config; store the evidence; return what the receipt records."""
    started = time.time()
    from filelock import FileLock

    from measure.lifetime import watch_token

    watch_token(os.environ.get(RUNNER_ENV))  # on another machine (a Slurm node) it watches nothing

    from measure.cli import probe_module
    from measure.evidence.envelope import MEASURED
    from measure.evidence.store import Store
    from measure.options import config_from_dict
    from measure.run.runner import journal_path

    module = probe_module(point["probe"])
    config = config_from_dict(module.Config, point["config"])
    archive = Path(folder) / "archive"
    journal = journal_path(archive, point["probe"])
    lock: Any = FileLock(str(Path(folder) / "gpu.lock")) if gpu_lock else contextlib.nullcontext()
    with lock:
        evidence = module.run(config, journal=journal, progress=False)
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
