"""The probe registry: one line per probe, its name and its module.

See ARCHITECTURE.md §Probes, §A probe.

Each module exports ``PROBE``, ``VERSION``, ``HELP``, ``EXAMPLE``, a ``Config`` dataclass (its
command-line options) and ``run(config, journal=None, progress=False) -> Evidence``. Probe modules
import torch only inside ``run`` so that the CLI's ``--help`` never loads it. A probe never imports
another probe; shared helpers live in ``common.py``.
"""

PROBES = {
    "gemm": "measure.probes.gemm",
    "copy": "measure.probes.copy",
    "step-scaling": "measure.probes.step_scaling",
    "kernels": "measure.probes.kernels",
    "ablate": "measure.probes.ablate",
    "optimizer": "measure.probes.optimizer",
    "batch-sweep": "measure.probes.batch_sweep",
    "loss-memory": "measure.probes.loss_memory",
    "mask": "measure.probes.mask",
    "padding": "measure.probes.padding",
    "ddp": "measure.probes.ddp",
    "agreement": "measure.probes.agreement",
    "hvp": "measure.probes.hvp",
    "stream": "measure.probes.stream",
}
