"""What one reproduction job runs: one probe run, in the job's own process, stored in the campaign's archive.

It imports only ``measure`` (a job runs the campaign folder's frozen ``source/`` snapshot, which holds
``measure`` and ``probebook``, never ``render``). With the local executor's ``gpu_lock`` the run holds the
campaign's device lock file, so two runs never share one GPU.
"""

from __future__ import annotations

import os
from typing import Any

RUNNER_ENV = "PROBEBOOK_REPRODUCE_RUNNER"
"""Set by a local ``reproduce`` for its jobs: the runner's ``measure.lifetime.process_token``. A job ends when that
runner does (killed, even by SIGKILL), so no job outlives the ``reproduce`` that started it."""


def run_one(point: dict[str, Any], folder: str, gpu_lock: bool) -> dict[str, Any]:
    """Run the point's probe with its config (``probebook.campaign.job.run_probe``), ending with the runner."""
    from measure.lifetime import watch_token
    from probebook.campaign.job import run_probe

    watch_token(os.environ.get(RUNNER_ENV))  # on another machine (a Slurm node) it watches nothing
    return run_probe(point, folder, gpu_lock)
