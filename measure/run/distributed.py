"""Start a data-parallel worker under ``torchrun``, one process per GPU, and read back rank 0's result.

The parent never touches a device: it starts ``python -m torch.distributed.run --standalone
--nproc-per-node N -m <module> SPEC RESULT``, where ``SPEC`` is the probe config as
``dataclasses.asdict`` JSON (plus what the phase needs) and ``RESULT`` a file rank 0 writes its
JSON into. Every child gets the multicast switches of ``MULTICAST_OFF`` in its environment, and
``NCCL_DEBUG=INFO`` so that the transport NCCL chose is printed by the workers themselves and can
be recorded as observed (``nccl_observed``), never assumed from the topology.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from measure.errors import ProbebookError

REPO = Path(__file__).resolve().parents[2]

MULTICAST_OFF = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}
"""NVLink multicast (NVLS) stays off on the lent machines (issue 13): NCCL, torch symmetric memory, NVSHMEM."""

_VIA = re.compile(r"\bvia (\S+)")
_VERSION = re.compile(r"NCCL version (\S+)")
KEPT_LINES = 40  # NCCL INFO lines kept verbatim in the evidence (the rest is counted, not kept)


def child_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of every worker: ``base`` (default: this one), multicast off, NCCL's INFO log on.

    The multicast switches are forced even when ``base`` sets them otherwise; ``NCCL_DEBUG`` and
    ``OMP_NUM_THREADS`` are only set when the caller has not chosen them. ``PYTHONPATH`` leads with
    this repository so the workers import the same ``measure`` as the parent.
    """
    env = dict(os.environ if base is None else base)
    env.update(MULTICAST_OFF)
    env.setdefault("NCCL_DEBUG", "INFO")
    # torchrun sets 1 thread per worker only when it starts several; the 1-process baseline gets the same
    env.setdefault("OMP_NUM_THREADS", "1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    return env


def torchrun_command(module: str, nproc: int, spec_path: Path, result_path: Path) -> list[str]:
    """The ``torchrun`` argv for ``nproc`` local workers running ``python -m module SPEC RESULT``."""
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nnodes",
        "1",
        "--nproc-per-node",
        str(nproc),
        "-m",
        module,
        str(spec_path),
        str(result_path),
    ]


def nccl_observed(log: str) -> dict[str, Any]:
    """What NCCL said about itself in the workers' log: version, transports (``via P2P/CUMEM`` ...), lines.

    ``transports`` are the distinct words after ``via`` on NCCL's channel-connection lines, i.e. the
    transport NCCL chose for each peer (P2P, SHM, NET). Empty on gloo, or where NCCL printed nothing.
    """
    lines = [line.strip() for line in log.splitlines() if "NCCL INFO" in line or "NCCL version" in line]
    versions = sorted({m.group(1) for line in lines for m in [_VERSION.search(line)] if m})
    transports = sorted({m.group(1) for line in lines for m in [_VIA.search(line)] if m})
    return {
        "nccl_version": versions[0] if len(versions) == 1 else (",".join(versions) or None),
        "transports": transports,
        "nccl_info_lines": len(lines),
        "nccl_info_kept": [line[:300] for line in lines[:KEPT_LINES]],
    }


def _stop(proc: subprocess.Popen[str]) -> str:
    """SIGTERM to the launch's process group, SIGKILL after 10 s; what it printed."""
    for sig, wait_s in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            out, _ = proc.communicate(timeout=wait_s)
            return out or ""
        except subprocess.TimeoutExpired:
            continue
    return ""


def worker_error(log: str) -> str:
    """The line of the workers' log that says why they failed: a rank's exception, else the last line."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    raised = [line for line in lines if line.startswith("[rank") and ("Error" in line or "Exception" in line)]
    return ((raised or lines or ["(no output)"])[-1])[:300]


@dataclass(frozen=True)
class Launched:
    """What one ``torchrun`` launch gave back."""

    result: dict[str, Any]
    """The JSON rank 0 wrote."""
    log: str
    """Everything the workers printed (stdout and stderr together)."""
    wall_s: float
    """Seconds from start to the last worker's exit."""


def launch(
    module: str, nproc: int, spec: dict[str, Any], timeout_s: float = 600.0, log_path: Path | None = None
) -> Launched:
    """Run ``module`` under torchrun with ``nproc`` workers on ``spec``; rank 0's result, or a one-line error."""
    if nproc < 1:
        raise ProbebookError(f"--gpus must be >= 1, got {nproc}")
    with tempfile.TemporaryDirectory(prefix="probebook-ddp-") as tmp:
        spec_path, result_path = Path(tmp) / "spec.json", Path(tmp) / "result.json"
        spec_path.write_text(json.dumps(spec, sort_keys=True), encoding="utf-8")
        started = time.perf_counter()
        # a session of its own: on a timeout or Ctrl-C the whole worker tree is stopped, not only torchrun
        proc = subprocess.Popen(
            torchrun_command(module, nproc, spec_path, result_path),
            env=child_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=str(REPO),
            start_new_session=True,
        )
        try:
            log, _ = proc.communicate(timeout=timeout_s)
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            log, code = _stop(proc), None
        except BaseException:
            _stop(proc)
            raise
        wall = time.perf_counter() - started
        if log_path is not None:
            log_path.parent.mkdir(parents=True, exist_ok=True)
            with open(log_path, "a", encoding="utf-8") as fh:
                fh.write(log)
        if code is None:
            raise RuntimeError(f"torchrun with {nproc} workers ran past {timeout_s:g} s and was stopped")
        if code != 0 or not result_path.exists():
            raise RuntimeError(f"torchrun with {nproc} workers exited with status {code}: {worker_error(log)}")
        result = json.loads(result_path.read_text(encoding="utf-8"))
    return Launched(result=result, log=log, wall_s=wall)
