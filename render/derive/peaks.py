"""Hardware peaks: the one lookup table of vendor datasheet figures, keyed by GPU name.

Keys are the names ``torch.cuda.get_device_name()`` reports (what the machine fingerprint
records). Values are dense BF16 tensor-core TFLOP/s and memory bandwidth in TB/s (1e12 bytes/s),
each with the datasheet it comes from. NVIDIA's Hopper, Ada and Ampere-generation datasheets
list the BF16 tensor figure *with 2:4 structured sparsity* (footnote "*With sparsity"); the dense
peak is half of it, and the table keeps the halving visible (``sparse / 2``) so the datasheet
number can be checked as printed. An unknown GPU gets ``UNKNOWN`` and an ``UnknownGPUWarning``,
never a guess from a similar name: add a row with its datasheet instead.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

# NVIDIA's datasheets, as cited in each row
_H200 = "NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200)"
_H100 = "NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100)"
_A100 = "NVIDIA A100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/a100)"
_L40S = "NVIDIA L40S GPU datasheet (nvidia.com/en-us/data-center/l40s)"
_L4 = "NVIDIA L4 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/l4)"
_A10 = "NVIDIA A10 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/products/a10-gpu)"


@dataclass(frozen=True)
class Peak:
    """A GPU's datasheet peaks; all None for an unknown GPU."""

    bf16_dense_tflop_s: float | None
    """Dense (no sparsity) BF16 tensor-core peak, TFLOP/s (1e12 FLOP/s)."""
    memory_tb_s: float | None
    """Memory bandwidth, TB/s (1e12 bytes/s)."""
    source: str | None
    """Datasheet and the figures read from it."""

    @property
    def known(self) -> bool:
        """Whether the table has this GPU."""
        return self.bf16_dense_tflop_s is not None

    @property
    def bf16_dense_flop_s(self) -> float | None:
        """Dense BF16 peak in FLOP/s, for ``mfu.mfu``."""
        return None if self.bf16_dense_tflop_s is None else self.bf16_dense_tflop_s * 1e12

    @property
    def memory_bytes_s(self) -> float | None:
        """Memory bandwidth in bytes/s."""
        return None if self.memory_tb_s is None else self.memory_tb_s * 1e12


UNKNOWN = Peak(bf16_dense_tflop_s=None, memory_tb_s=None, source=None)
"""The sentinel for a GPU the table lacks: every figure None."""


class UnknownGPUWarning(UserWarning):
    """A GPU has no row in the peaks table; numbers relative to its peak are left blank."""


PEAKS: dict[str, Peak] = {
    # Hopper
    "NVIDIA H200": Peak(
        1979 / 2, 4.8, f"{_H200}, H200 SXM: BF16 Tensor Core 1,979 TFLOPS with sparsity; GPU memory bandwidth 4.8 TB/s"
    ),
    "NVIDIA H200 NVL": Peak(
        1671 / 2, 4.8, f"{_H200}, H200 NVL: BF16 Tensor Core 1,671 TFLOPS with sparsity; GPU memory bandwidth 4.8 TB/s"
    ),
    "NVIDIA H100 80GB HBM3": Peak(
        1979 / 2,
        3.35,
        f"{_H100}, H100 SXM: BF16 Tensor Core 1,979 TFLOPS with sparsity; GPU memory bandwidth 3.35 TB/s",
    ),
    "NVIDIA H100 PCIe": Peak(
        1513 / 2, 2.0, f"{_H100}, H100 PCIe: BF16 Tensor Core 1,513 TFLOPS with sparsity; GPU memory bandwidth 2 TB/s"
    ),
    "NVIDIA H100 NVL": Peak(
        1671 / 2, 3.9, f"{_H100}, H100 NVL: BF16 Tensor Core 1,671 TFLOPS with sparsity; GPU memory bandwidth 3.9 TB/s"
    ),
    # Ampere (the A100 datasheet prints the dense figure first: "312 TFLOPS | 624 TFLOPS*")
    "NVIDIA A100-SXM4-80GB": Peak(
        312.0, 2.039, f"{_A100}, A100 80GB SXM: BF16 Tensor Core 312 TFLOPS dense; GPU memory bandwidth 2,039 GB/s"
    ),
    "NVIDIA A100-SXM4-40GB": Peak(
        312.0, 1.555, f"{_A100}, A100 40GB SXM: BF16 Tensor Core 312 TFLOPS dense; GPU memory bandwidth 1,555 GB/s"
    ),
    "NVIDIA A100 80GB PCIe": Peak(
        312.0, 1.935, f"{_A100}, A100 80GB PCIe: BF16 Tensor Core 312 TFLOPS dense; GPU memory bandwidth 1,935 GB/s"
    ),
    "NVIDIA A100-PCIE-40GB": Peak(
        312.0, 1.555, f"{_A100}, A100 40GB PCIe: BF16 Tensor Core 312 TFLOPS dense; GPU memory bandwidth 1,555 GB/s"
    ),
    "NVIDIA A10": Peak(
        125.0, 0.6, f"{_A10}: BF16 Tensor Core 125 TFLOPS dense (250 with sparsity); GPU memory bandwidth 600 GB/s"
    ),
    # Ada
    "NVIDIA L40S": Peak(
        362.05,
        0.864,
        f"{_L40S}: BF16 Tensor Core 362.05 TFLOPS dense (733 with sparsity); GPU memory bandwidth 864 GB/s",
    ),
    "NVIDIA L4": Peak(242 / 2, 0.3, f"{_L4}: BF16 Tensor Core 242 TFLOPS with sparsity; GPU memory bandwidth 300 GB/s"),
}
"""GPU name (as torch reports it) -> datasheet peaks."""


def lookup(gpu_name: str | None) -> Peak:
    """The peaks for ``gpu_name``; ``UNKNOWN`` with an ``UnknownGPUWarning`` if the table lacks it."""
    name = (gpu_name or "").strip()
    peak = PEAKS.get(name)
    if peak is None:
        what = f"GPU {name!r}" if name else "a machine with no GPU name recorded"
        warnings.warn(
            f"no hardware peak on record for {what}; figures relative to its peak are left blank "
            "(add a datasheet row to render/derive/peaks.py)",
            UnknownGPUWarning,
            stacklevel=2,
        )
        return UNKNOWN
    return peak
