"""Names the CLI shows in its help, kept apart from the code that uses them so the CLI loads no numerics.

``probebook derive --help`` lists the page functions; importing ``render.functions.library`` for that would
load numpy, jinja2 and the page machinery into every ``probebook`` process (ARCHITECTURE.md §10,
fast processes).
"""

from __future__ import annotations

FUNCTIONS = (
    "fit",
    "value",
    "median",
    "saving",
    "batch_summary",
    "batch_models",
    "campaign_time",
    "loss_memory",
    "logit_bytes",
    "gemm_ceiling",
    "kernel_share",
    "kernel_time",
    "project",
    "mfu",
    "share_of",
    "constant",
    "padding",
    "mask_cost",
    "ddp",
    "agreement",
    "hvp",
    "hvp_speedup",
    "stream",
    "utilisation",
    "claim",
    "chart",
    "table",
)
"""The names a page's templates may call: each a method of ``render.functions.library.PageFunctions``."""
