"""Slurm's own answers about a campaign's jobs: batched ``sacct`` queries and ``sbatch --test-only``.

submitit learns a job's state only from ``sacct``; the runner asks it directly instead, so it can
ask once per ``poll_s`` for every live job together (``query``), read each job's own start and end
(queue time is not run time) and its State (``CANCELLED by 0``, ``TIMEOUT``: the cause of a job
that left no result). Every call passes a start time (``-S``): without one ``sacct`` looks only
at jobs since midnight, and a campaign resumed the next day would not find its jobs. A failed
``sacct`` (slurmdbd down, a timeout) raises: an empty answer is never read as "no such job".
"""

from __future__ import annotations

import logging
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from measure.errors import ProbebookError

log = logging.getLogger(__name__)

FIELDS = ("JobID", "JobName", "State", "Submit", "Start", "End", "ExitCode")
ENDED = frozenset(
    ("BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "TIMEOUT")
)
SLACK_S = 300.0  # -S this long before the earliest submission: clocks of the runner and the controller differ
CALL_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class JobInfo:
    """One job as ``sacct`` reports its allocation (``-X``)."""

    job_id: str
    name: str
    state: str
    """sacct's State, as written: ``RUNNING``, ``COMPLETED``, ``CANCELLED by 0``, ``TIMEOUT``..."""
    submit_unix: float | None
    start_unix: float | None
    """When the job started running; None while it waits in the queue."""
    end_unix: float | None
    exit_code: str

    @property
    def ended(self) -> bool:
        return self.state.split(" ")[0] in ENDED

    @property
    def started(self) -> bool:
        return self.start_unix is not None


def stamp(unix: float) -> str:
    """A time as sacct's ``-S``/``-E`` read it (the local time zone, like its output)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(unix))


def _unix(text: str) -> float | None:
    if not text or text in ("Unknown", "None"):
        return None
    return time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%S"))


def _answer(command: list[str], asking: str, retry: str, need: str) -> str:
    """The stdout of a Slurm query ``command``; refused in one line when it cannot run or fails, never read as
    "no jobs": ``cannot ask {asking} (why){retry}`` or ``{command[0]} failed (its last stderr line); {need}``."""
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=CALL_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ProbebookError(f"cannot ask {asking} ({exc}){retry}") from None
    if out.returncode != 0:
        why = (out.stderr.strip().splitlines() or [f"exit status {out.returncode}"])[-1]
        raise ProbebookError(f"{command[0]} failed ({why}); {need}")
    return out.stdout


def sacct(args: list[str], counter: list[int] | None = None) -> list[JobInfo]:
    """Run ``sacct -n -X -P -o FIELDS ARGS``; refuse (one line) when it fails rather than read "no jobs"."""
    command = ["sacct", "-n", "-X", "-P", "-o", ",".join(FIELDS), *args]
    if counter is not None:
        counter[0] += 1
    text = _answer(
        command,
        "Slurm about the campaign's jobs",
        "; retry where sacct works",
        "Slurm's accounting must answer before jobs are judged",
    )
    jobs = []
    for line in text.splitlines():
        cells = line.split("|")
        if len(cells) != len(FIELDS):
            continue  # sacct prints nothing else with -n -P; a stray line is not a job
        job_id, name, state, submit, start, end, code = cells
        jobs.append(JobInfo(job_id, name, state, _unix(submit), _unix(start), _unix(end), code))
    return jobs


def query(ids: list[str], since_unix: float, counter: list[int] | None = None) -> dict[str, JobInfo]:
    """The jobs ``ids`` (one call for all of them), submitted no earlier than ``since_unix``."""
    if not ids:
        return {}
    args = ["-j", ",".join(sorted(ids)), "-S", stamp(since_unix - SLACK_S), "-E", "now"]
    return {j.job_id: j for j in sacct(args, counter)}


def by_name(name: str, since_unix: float) -> list[str]:
    """Ids of the jobs Slurm knows under ``name`` since ``since_unix``: an id submitit never wrote down.

    Both the controller (``squeue``: a job it just took, before accounting has its record) and
    accounting (``sacct``: a job that ended long ago) are asked; either failing refuses.
    """
    text = _answer(
        ["squeue", "-h", "-n", name, "-o", "%i"],
        f"Slurm about job {name}",
        "; retry where squeue works",
        "Slurm's controller must answer before jobs are judged",
    )
    queued = {line.strip() for line in text.splitlines() if line.strip()}
    accounted = {j.job_id for j in sacct(["--name", name, "-S", stamp(since_unix - SLACK_S), "-E", "now"])}
    return sorted(queued | accounted)


def test_only(script: Path) -> str | None:
    """``sbatch --test-only SCRIPT``: None when Slurm would take the job, else its one-line refusal.

    Raises ``FileNotFoundError`` where there is no ``sbatch`` (a dry run on a laptop still prints).

    It catches what a submission would not: a request no node can satisfy (more memory or CPUs
    than any node has) is queued and pends forever; GPUs a partition lacks are refused outright.
    """
    try:
        out = subprocess.run(
            ["sbatch", "--test-only", str(script)], capture_output=True, text=True, timeout=CALL_TIMEOUT_S
        )
    except FileNotFoundError:
        raise
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"sbatch --test-only could not run ({exc})"
    if out.returncode == 0:
        return None
    lines = [ln.strip() for ln in out.stderr.splitlines() if ln.strip()]
    return lines[-1] if lines else f"sbatch --test-only exited {out.returncode}"


ACCOUNTING = ("JobID", "State", "ElapsedRaw", "TimelimitRaw", "AllocTRES", "Start", "End")


@dataclass(frozen=True)
class Accounting:
    """What Slurm's accounting says a job was given and used (``sacct -X``)."""

    job_id: str
    state: str
    elapsed_s: int
    time_limit_min: int | None
    tres: dict[str, str]
    """``AllocTRES`` as a mapping: ``cpu``, ``mem``, ``gres/gpu``..."""
    start_unix: float | None
    end_unix: float | None

    def mem_mb(self) -> float | None:
        """Allocated memory in MB (``mem=2G``, ``2048M``, ``1T``)."""
        text = self.tres.get("mem")
        if not text:
            return None
        scale = {"K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0**2}
        return float(text[:-1]) * scale[text[-1]] if text[-1] in scale else float(text)


def accounting(ids: list[str], since_unix: float) -> dict[str, Accounting]:
    """Accounting of the jobs ``ids`` in one ``sacct`` call (the audit's; refuses when sacct fails)."""
    if not ids:
        return {}
    command = ["sacct", "-n", "-X", "-P", "-o", ",".join(ACCOUNTING), "-j", ",".join(sorted(ids))]
    command += ["-S", stamp(since_unix - SLACK_S), "-E", "now"]
    text = _answer(
        command, "Slurm's accounting about the campaign's jobs", "", "the audit needs Slurm's accounting of the jobs"
    )
    found = {}
    for line in text.splitlines():
        cells = line.split("|")
        if len(cells) != len(ACCOUNTING):
            continue
        job_id, state, elapsed, limit, tres, start, end = cells
        pairs = dict(p.split("=", 1) for p in tres.split(",") if "=" in p)
        found[job_id] = Accounting(
            job_id,
            state,
            int(elapsed or 0),
            int(limit) if limit.isdigit() else None,
            pairs,
            _unix(start),
            _unix(end),
        )
    return found
