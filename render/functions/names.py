"""The page functions' names for the CLI's help, kept apart from the functions so the CLI loads no numerics.

``probebook derive --help`` lists the page functions; importing the registry for that
(``render.functions.registry.registry``) would load numpy, jinja2 and the page machinery into every
``probebook`` process (ARCHITECTURE.md §10, fast processes). So this is a copy, in the registry's order,
that ``tests/test_page_function_lists.py`` holds equal to the registry: a function added there and not
here fails that test, not a page.
"""

from __future__ import annotations

FUNCTIONS = (
    "batch_summary",
    "batch_models",
    "campaign_time",
    "chart",
    "table",
    "agreement",
    "hvp",
    "hvp_speedup",
    "stream",
    "utilisation",
    "fit",
    "value",
    "project",
    "mfu",
    "constant",
    "share_of",
    "median",
    "saving",
    "claim",
    "gemm_ceiling",
    "kernel_share",
    "kernel_time",
    "loss_memory",
    "logit_bytes",
    "padding",
    "mask_cost",
    "ddp",
)
"""The names a page's templates may call, as ``render.functions.registry.registry()`` lists them."""
