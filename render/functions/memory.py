"""Page functions of the memory records: ``loss_memory``, ``logit_bytes``, ``phase_peak`` (ARCHITECTURE.md §Pages).

Plain functions registered by ``render.functions.registry.page_function``, each called with the page first; the
derivations are in ``render/derive/lossmem.py``.
"""

from __future__ import annotations

from typing import Any

from measure.errors import ProbebookError
from render.derive import basis, lossmem
from render.functions.page import Page
from render.functions.registry import page_function
from render.functions.views import LossMemoryView, call_text, number, quantity
from render.numbers.quantity import Quantity


@page_function
def loss_memory(page: Page, ref: Any, arm: str) -> LossMemoryView:
    """Peak memory per extra microbatch of one loss arm, and its largest usable microbatch."""
    ref = page.ref(ref, "loss-memory", "loss_memory()")
    rows = page.rows(ref)
    slope = page.library.memo(("lossmem", ref.id, arm), lambda: lossmem.marginal_bytes_per_microbatch(rows, arm))
    values: dict[str, Any] = dict(vars(slope))
    notes = {}
    try:
        values["largest_usable_microbatch"] = lossmem.largest_usable_microbatch(
            rows, arm, device_bytes=lossmem.machine_bytes([page.doc(ref)])
        )
    except ProbebookError as exc:
        notes["largest_microbatch"] = str(exc)
    return LossMemoryView(
        values,
        (ref.id,),
        f"loss-kernel memory of arm {arm}, least-squares over microbatch",
        f"loss_memory({ref.alias}, {arm})",
        notes,
    )


@page_function
def logit_bytes(page: Page, ref: Any, heavy: str, light: str, vocab: Any = None) -> Quantity:
    """Bytes per logit element that arm ``heavy`` holds beyond arm ``light``."""
    ref = page.ref(ref, "loss-memory", "logit_bytes()")
    v = None if vocab is None else int(number(vocab, "vocab"))
    value = lossmem.bytes_per_logit_element(page.rows(ref), heavy, light, vocab=v)
    return quantity(
        value,
        "B",
        ref,
        f"(slope {heavy} − slope {light}) / (tokens_per_step × vocab)",
        f"logit_bytes({ref.alias}, {heavy}, {light})",
        fmt=".3g",
        basis=basis.OBSERVED,  # arithmetic on two lines through peaks (LossMemoryView says why peaks are readings)
    )


@page_function
def phase_peak(
    page: Page,
    ref: Any,
    phase: str,
    arm: str | None = None,
    context: int | None = None,
    batch: int | None = None,
    microbatch: int | None = None,
) -> Quantity:
    """Peak memory of a phase before the measurement (``setup``, ``warmup``, ``capture``), the largest over the
    rows that match the given arm, context, batch and microbatch (issue 27: kept apart from the timed peak)."""
    ref = page.ref(ref, None, "phase_peak()")
    where: dict[str, Any] = {"arm": str(arm)} if arm is not None else {}
    for name, given in (("context", context), ("batch", batch), ("microbatch", microbatch)):
        if given is not None:
            where[name] = int(number(given, name))
    try:
        value, n = lossmem.phase_peak_bytes(page.rows(ref), str(phase), where)
    except ProbebookError as exc:
        raise ProbebookError(f"phase_peak(): {ref.alias} ({ref.short}): {exc}") from None
    return quantity(
        value,
        "B",
        ref,
        f"largest {phase}_peak_bytes over {n} row(s)" + "".join(f", {k} {v}" for k, v in where.items()),
        f"phase_peak({call_text(ref.alias, phase, **where)})",
        display="MiB",
        fmt=".4g",
        basis=basis.OBSERVED,  # a peak: the largest reading, not an estimate from windows
    )
