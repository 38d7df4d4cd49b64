"""What every page function stands on: a page's evidence aliases bound to the build's library of derivations.

Each family of page functions (``render/functions/{batch,correctness,kernels,memory,pipeline,scaling}.py``)
is a class on this base; ``render.functions.library.PageFunctions`` combines them.
"""

from __future__ import annotations

from typing import Any

from measure.errors import ProbebookError
from render.functions.derivations import Library
from render.functions.views import EvidenceRef, defined
from render.tables.columns import probe_of


class FunctionsBase:
    """A page's evidence aliases and the build's ``Library``, and the lookups every page function makes."""

    def __init__(self, library: Library, aliases: dict[str, str]):
        self.library = library
        self.refs = {alias: EvidenceRef(alias, ident, library.docs[ident]["probe"]) for alias, ident in aliases.items()}

    def _ref(self, ref: Any, probe: str | None, what: str) -> EvidenceRef:
        defined(ref)
        if isinstance(ref, str):
            if ref not in self.refs:
                known = ", ".join(sorted(self.refs)) or "none"
                raise ProbebookError(f"{what}: no evidence alias {ref!r} on this page (its aliases: {known})")
            ref = self.refs[ref]
        if not isinstance(ref, EvidenceRef):
            raise ProbebookError(f"{what} takes an evidence alias from the front matter, got {type(ref).__name__}")
        if probe is not None and probe_of(self.library.docs[ref.id]) != probe:
            raise ProbebookError(f"{what} needs {probe} evidence; {ref.alias} ({ref.short}) is {ref.probe} evidence")
        return ref

    def _doc(self, ref: EvidenceRef) -> dict[str, Any]:
        return self.library.docs[ref.id]

    def _rows(self, ref: EvidenceRef) -> list[dict[str, Any]]:
        rows = (self._doc(ref).get("data") or {}).get("samples")
        if not isinstance(rows, list) or not rows:
            raise ProbebookError(f"{ref.alias} ({ref.short}) has no data.samples")
        return rows
