"""Machine and code fingerprints recorded in every evidence envelope (ARCHITECTURE.md §Evidence).

GPU facts come from torch and, where installed, nvidia-ml-py (``pynvml``). Each reading that
fails is recorded as ``null`` rather than guessed; a machine without CUDA says so.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

import measure

REPO = Path(__file__).resolve().parent.parent


CPU_MODEL_KEYS = ("model name", "Model Name", "Hardware", "cpu model", "Processor")
"""/proc/cpuinfo's name for the CPU model: x86 says ``model name``; ARM and others one of the rest."""


def cpu_model_from(cpuinfo: str) -> str | None:
    """The CPU model named in the text of /proc/cpuinfo (pure): the first of ``CPU_MODEL_KEYS`` with a value."""
    found: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in CPU_MODEL_KEYS and value.strip():
            found.setdefault(key.strip(), value.strip())
    return next((found[k] for k in CPU_MODEL_KEYS if k in found), None)


def _cpu_model() -> str | None:
    try:
        named = cpu_model_from(Path("/proc/cpuinfo").read_text())
    except OSError:
        named = None
    return named or platform.processor() or platform.machine() or None


def _nvml(index: int) -> dict[str, Any]:
    """Clock, power, MIG, ECC and PCIe readings from NVML; empty if NVML is absent."""
    try:
        import pynvml  # nvidia-ml-py
    except ImportError:
        return {"nvml": None}
    out: dict[str, Any] = {}
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # NVML missing its driver library, or no GPU visible to it
        return {"nvml": f"unavailable: {type(exc).__name__}"}
    try:
        h = pynvml.nvmlDeviceGetHandleByIndex(index)
        readers = {
            "driver": lambda: pynvml.nvmlSystemGetDriverVersion(),
            "sm_clock_mhz": lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
            "sm_clock_max_mhz": lambda: pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM),
            "mem_clock_mhz": lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM),
            "power_limit_w": lambda: pynvml.nvmlDeviceGetPowerManagementLimit(h) / 1000.0,
            "mig_mode": lambda: pynvml.nvmlDeviceGetMigMode(h)[0],
            "ecc_mode": lambda: pynvml.nvmlDeviceGetEccMode(h)[0],
            "pcie_gen": lambda: pynvml.nvmlDeviceGetCurrPcieLinkGeneration(h),
            "pcie_width": lambda: pynvml.nvmlDeviceGetCurrPcieLinkWidth(h),
            "temperature_c": lambda: pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU),
        }
        for key, read in readers.items():
            try:
                value = read()
                out[key] = value.decode() if isinstance(value, bytes) else value
            except Exception:  # a reading the driver does not support on this card
                out[key] = None
    finally:
        pynvml.nvmlShutdown()
    return out


def sm_clock_mhz(index: int = 0) -> int | None:
    """The current SM clock in MHz, or None where NVML cannot say."""
    return _nvml(index).get("sm_clock_mhz")


def _version(read: Any) -> Any:
    """One software version, or None where it cannot be read (a CPU build has no NCCL): never raises."""
    try:
        value = read()
    except Exception:  # a piece missing from this install is recorded as unknown, never fails the run
        return None
    if isinstance(value, tuple):  # torch.cuda.nccl.version() is (major, minor, patch) on recent torch
        return ".".join(str(v) for v in value)
    return value if value is None or isinstance(value, (str, int)) else str(value)


def _dist_version(name: str) -> str | None:
    """An installed distribution's version (triton ships as ``triton`` or ``pytorch-triton``), without importing it."""
    from importlib import metadata

    for dist in (name, f"pytorch-{name}"):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


def software(torch: Any) -> dict[str, Any]:
    """The stack under torch a number depends on: torch's own commit, cuDNN, Triton and NCCL versions (issue 43).

    Each is None where this install lacks it (a CPU build: no NCCL; no Triton installed); never raises.
    """
    return {
        "torch_git": _version(lambda: torch.version.git_version),
        "cudnn": _version(lambda: torch.backends.cudnn.version()),
        "triton": _version(lambda: _dist_version("triton")),
        "nccl": _version(lambda: torch.cuda.nccl.version()),
    }


def fingerprint() -> dict[str, Any]:
    """What machine this is. Never raises; a CPU-only machine says ``"gpu": null``."""
    info: dict[str, Any] = {
        "hostname_hash": hashlib.sha256(platform.node().encode()).hexdigest()[:12],
        "os": platform.platform(),
        "python": platform.python_version(),
        "cpu_model": _cpu_model(),
        "cpu_cores": os.cpu_count(),
        "torch": None,
        "cuda": None,
        "gpu": None,
        "gpu_count": 0,
    }
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        info["note"] = "torch not installed"
        return info
    except Exception as exc:  # a broken install (e.g. a CUDA library torch cannot load) must not stop a run
        info["note"] = f"torch could not be imported: {type(exc).__name__}"
        return info
    info["torch"] = torch.__version__
    info["cuda"] = torch.version.cuda
    info.update(software(torch))
    try:
        has_cuda = bool(torch.cuda.is_available())
    except Exception as exc:  # a driver/runtime mismatch raises here on some machines: record, don't fail
        info["note"] = f"CPU only: CUDA check failed ({type(exc).__name__})"
        return info
    if not has_cuda:
        info["note"] = "CPU only: no CUDA device visible"
        return info
    props = torch.cuda.get_device_properties(0)
    info.update(
        {
            "gpu": props.name,
            "gpu_count": torch.cuda.device_count(),
            "gpu_memory_bytes": props.total_memory,
            "sm_count": props.multi_processor_count,
            "compute_capability": f"{props.major}.{props.minor}",
        }
    )
    info.update(_nvml(0))
    from measure.utilisation import energy_facts

    info["energy"] = energy_facts()  # what each window's energy_j is read from, and the counter's resolution
    return info


def _git(*args: str, repo: Path = REPO) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def source_files(root: Path, suffixes: tuple[str, ...] | None = None) -> list[Path]:
    """Every file under ``root`` (``__pycache__`` and ``.pyc`` left out; only ``suffixes`` if given), sorted."""
    return sorted(
        (
            p
            for p in Path(root).rglob("*")
            if p.is_file()
            and "__pycache__" not in p.parts
            and p.suffix != ".pyc"
            and (suffixes is None or p.suffix in suffixes)
        ),
        key=lambda p: p.relative_to(root).as_posix(),
    )


def source_tree_sha256(root: Path, suffixes: tuple[str, ...] | None = None) -> str:
    """SHA-256 over every file under ``root`` (``__pycache__`` and ``.pyc`` left out), in sorted path order.

    Each file contributes its path relative to ``root`` (POSIX form), a NUL byte, its size in
    decimal, a NUL byte and its bytes, so a renamed, moved or edited file changes the hash.
    ``suffixes`` keeps only files ending so (a plug-in's package: its Python source, not data beside it).
    """
    h = hashlib.sha256()
    files = source_files(root, suffixes)
    for path in files:
        data = path.read_bytes()
        h.update(f"{path.relative_to(root).as_posix()}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def code_fingerprint(module_file: str | None = None, repo: Path = REPO) -> dict[str, Any]:
    """Package version, git commit with a dirty flag, and SHA-256 hashes of the measuring source.

    ``measure_source_sha256`` covers every file of the ``measure`` package (the timing core, the
    workload and the probes all shape a measurement, not only the probe's own module). Without a
    git commit (no git, or a copy of the tree outside its repository) ``git_commit`` and ``dirty``
    are ``None``: unknown, never a guessed ``false``.
    """
    commit = _git("rev-parse", "--verify", "--quiet", "HEAD", repo=repo)
    status = _git("status", "--porcelain", "--untracked-files=no", repo=repo) if commit else None
    code: dict[str, Any] = {
        "probebook": measure.__version__,
        "git_commit": commit,
        "dirty": None if status is None else bool(status),
        "measure_source_sha256": source_tree_sha256(Path(measure.__file__).resolve().parent),
    }
    if module_file is not None:
        code["probe_source_sha256"] = hashlib.sha256(Path(module_file).read_bytes()).hexdigest()
    return code
