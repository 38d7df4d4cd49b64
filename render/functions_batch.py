"""Page function of the batch-sweep records: ``batch_models()`` (ARCHITECTURE.md §6.4).

A mixin of ``render.functions.PageFunctions``, kept apart so that each module stays small; the
summaries themselves are ``render.derive.batchsweep.summarize`` (``batch_summary()`` shows one).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from render.derive import batchsweep, lossmem
from render.views import EvidenceRef

if TYPE_CHECKING:
    from render.functions import Library


class BatchFunctions:
    """``batch_models``; the helpers it uses are PageFunctions' own."""

    library: Library

    if TYPE_CHECKING:

        def _ref(self, ref: Any, probe: str | None, what: str) -> EvidenceRef: ...
        def _doc(self, ref: EvidenceRef) -> dict[str, Any]: ...
        def _rows(self, ref: EvidenceRef) -> list[dict[str, Any]]: ...

    def batch_models(self, ref: Any, stable: bool = False) -> list[str]:
        """The models (presets) a batch sweep covers, smallest first; ``stable=True``: only those with a
        fastest stable batch at some context, i.e. those ``batch_summary(ref, model=m, context="fastest")`` takes.

        Names, not numbers: a page loops over them (a record's per-preset charts and rows), so a
        preset with no stable point drops out of a projection table instead of failing the build.
        """
        ref = self._ref(ref, "batch-sweep", "batch_models()")
        card = lossmem.machine_bytes([self._doc(ref)])
        groups = self.library.memo(("batch", ref.id), lambda: batchsweep.summarize(self._rows(ref), device_bytes=card))
        return batchsweep.models(groups, stable=bool(stable))
