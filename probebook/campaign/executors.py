"""submitit executors for campaign points, their exact submission parameters, and job state on resume.

``local``: submitit's ``LocalExecutor`` (a controller process per job, which starts the job's
process and enforces its time limit). ``slurm``: submitit's ``SlurmExecutor`` (one ``sbatch`` per
point). Either way a job's id and its result pickle live in the attempt's own folder, so a
resumed runner can find both without the process that submitted it.
"""

from __future__ import annotations

import math
import os
import signal
from pathlib import Path
from typing import Any

from measure.errors import ProbebookError
from probebook.campaign.spec import Executor

KINDS = ("local", "slurm")


def job_name(campaign: str, manifest_id: str, key: str, attempt: int) -> str:
    """The scheduler-visible name of one attempt: a resumed runner can look it up by name.

    It carries the start of the manifest's id: two campaigns of one name (planned twice, by two
    people) share a cluster's job names otherwise, and a look-up by name would adopt the other's job.
    """
    return f"pb-{campaign}-{manifest_id.removeprefix('sha256:')[:12]}-{key}-a{attempt}"


def runner_machine() -> dict[str, str | None]:
    """Where the runner submits from: its host name and this boot's id (Linux), recorded in every attempt.

    A local job's id is a process id, unique only on one boot of one machine; the audit tells two
    attempts' jobs apart by these (``audit.repeated_jobs``). Containers may share a host name, not a boot id.
    """
    import platform

    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="utf-8").strip() or None
    except OSError:
        boot = None
    return {"host": platform.node() or None, "boot_id": boot}


def local_gpus(device: str, visible: str | None) -> dict[str, Any]:
    """The local executor's GPU settings: the first GPU this runner sees, or none for a CPU point.

    submitit's local executor sets ``CUDA_VISIBLE_DEVICES`` for each job from these (empty without
    GPUs), so a runner started with ``CUDA_VISIBLE_DEVICES=1`` must pass GPU 1 on explicitly.
    """
    if device == "cpu":
        return {"gpus_per_node": 0}
    ids = [int(v) for v in (visible or "").split(",") if v.strip().isdigit()]
    return {"gpus_per_node": 1, "visible_gpus": ids[:1] or [0]}


def parameters(kind: str, settings: Executor, name: str, setup: list[str], device: str = "cuda") -> dict[str, Any]:
    """What ``update_parameters`` receives for one point's job (the job's limit leaves the watchdog its grace)."""
    limit_min = math.ceil((settings.point_timeout_s + settings.grace_s) / 60)
    if kind == "local":
        gpus = local_gpus(device, os.environ.get("CUDA_VISIBLE_DEVICES"))
        return {"timeout_min": limit_min, **gpus, "setup": setup}
    s = settings.slurm
    out: dict[str, Any] = {
        "job_name": name,
        "time": max(limit_min, s.time_min),
        "nodes": 1,
        "ntasks_per_node": 1,
        "gpus_per_node": s.gpus,
        "cpus_per_task": s.cpus,
        "mem": f"{s.mem_gb}GB",
        "signal_delay_s": int(settings.grace_s),
        "setup": setup,
    }
    for key in ("partition", "account", "constraint"):
        if getattr(s, key) is not None:
            out[key] = getattr(s, key)
    return out


def make(kind: str, folder: Path, params: dict[str, Any]) -> Any:
    """A submitit executor for one attempt's folder."""
    try:
        import submitit
    except ModuleNotFoundError:
        # a dependency of the package (pyproject.toml), missing from a bare interpreter: say how to get it
        raise ProbebookError(
            "campaigns and reproductions run their jobs through submitit, which is not installed "
            "(python3 -m pip install submitit)"
        ) from None

    if kind == "local":
        executor: Any = submitit.LocalExecutor(folder=folder)
    elif kind == "slurm":
        executor = submitit.SlurmExecutor(folder=folder, max_num_timeout=0)
    else:
        raise ProbebookError(f"--executor must be one of {', '.join(KINDS)}, got {kind!r}")
    executor.update_parameters(**params)
    return executor


def submission_text(kind: str, folder: Path, params: dict[str, Any]) -> str:
    """The exact submission: for Slurm the sbatch script submitit would write; for local the controller's settings."""
    if kind == "slurm":
        import sys

        from submitit.slurm.slurm import _make_sbatch_string

        command = f"{sys.executable} -u -m submitit.core._submit {folder}"
        return _make_sbatch_string(command=command, folder=folder, **params)
    return "\n".join(f"{k}={v!r}" for k, v in sorted(params.items()))


def submitted_ids(folder: Path) -> list[str]:
    """Job ids submitit left in an attempt folder (``<id>_submitted.pkl``, ``<id>_submission.sh``, parent ids)."""
    found: set[str] = set()
    if not folder.is_dir():
        return []
    for entry in folder.iterdir():
        for suffix in ("_submitted.pkl", "_submission.sh"):
            if entry.name.endswith(suffix):
                found.add(entry.name[: -len(suffix)])
        if entry.name.startswith("parent_job_id_"):
            found.add(entry.read_text(encoding="utf-8").strip())
    return sorted(found)


def adopt_submission(folder: Path, job_id: str) -> list[str]:
    """Give a job found by name the files submitit names after its id; the names it renamed, if any.

    submitit writes the job's pickle as ``<uuid>.pkl`` and renames it ``<id>_submitted.pkl`` only
    after ``sbatch`` returns; a runner killed inside ``sbatch`` leaves the job waiting (60 s) for a
    file that never appears. The attempt folder holds one attempt's files only, so a lone
    ``<uuid>.pkl`` is that job's.
    """
    target = folder / f"{job_id}_submitted.pkl"
    pending = [p for p in folder.glob("*.pkl") if len(p.stem) == 32 and all(c in "0123456789abcdef" for c in p.stem)]
    if target.exists() or len(pending) != 1:
        return []
    pending[0].rename(target)
    renamed = [pending[0].name]
    scripts = list(folder.glob(".submission_file_*.sh"))
    if len(scripts) == 1 and not (folder / f"{job_id}_submission.sh").exists():
        scripts[0].rename(folder / f"{job_id}_submission.sh")
        renamed.append(scripts[0].name)
    return renamed


def _local_alive(job_id: str) -> bool:
    """Whether the local job's controller (its pid is the job id) still runs."""
    try:
        cmdline = Path(f"/proc/{int(job_id)}/cmdline").read_bytes()
    except (OSError, ValueError):
        return False
    return b"submitit" in cmdline


def job(kind: str, folder: Path, job_id: str) -> Any:
    """A submitit job handle for an id read back from a receipt (no process object needed)."""
    import submitit

    cls = submitit.LocalJob if kind == "local" else submitit.SlurmJob
    return cls(folder=folder, job_id=job_id)


def finished_local(handle: Any) -> bool | None:
    """A local job: True when it ended (result or not), False while it runs, None when it is gone without a trace.

    (A Slurm job's state comes from the runner's batched ``sacct`` query instead: ``slurm.query``.)
    """
    if handle.paths.result_pickle.exists():
        return True
    if getattr(handle, "_process", None) is not None:
        return handle._process.poll() is not None
    return False if _local_alive(handle.job_id) else None


def process_tree(pid: int) -> list[int]:
    """``pid`` and every process below it, parents first (from ``/proc``'s parent links; just ``pid`` without it)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text(encoding="ascii", errors="replace").rpartition(")")[2].split()
        except OSError:  # ended while listed
            continue
        if len(fields) > 1 and fields[1].isdigit():
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        out.append(todo.pop(0))
        todo += children.get(out[-1], [])
    return out


def _controls(pid: int) -> bool:
    """Whether ``pid`` is a local job's shell or submitit controller (not the job's own process)."""
    try:
        return b"submitit.local._local" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def cancel(kind: str, handle: Any, force: bool = False) -> None:
    """Stop a job. Local: interrupt the job's own process (and any it started), below the shell that runs the job's
    setup lines and submitit's controller: neither passes a signal on, and an interrupted controller prints a
    traceback on the runner's stderr, while the job's goes to its own log. The controller ends once the job has.
    ``force``: kill the whole tree, shell and controller included (a job that did not end when interrupted)."""
    if kind == "local":
        try:
            tree = process_tree(int(handle.job_id))
        except ValueError:
            return
        for pid in tree:
            if not force and _controls(pid):
                continue
            try:
                os.kill(pid, signal.SIGKILL if force else signal.SIGINT)
            except OSError:  # already gone
                pass
        return
    handle.cancel(check=False)
