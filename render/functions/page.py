"""What every page function stands on: one page's evidence aliases bound to the build's library of derivations.

A page function (``render.functions.registry``) takes the ``Page`` first; a template never sees it, for
``Page.context`` binds it. The lookups here (an alias to its evidence, a document's samples) are the ones
every page function makes, with the one-line refusals a page's author reads.
"""

from __future__ import annotations

import json
import types
from collections.abc import Callable
from typing import Any

from measure.errors import ProbebookError
from render.functions.derivations import Library
from render.functions.registry import registry
from render.functions.views import EvidenceRef, defined
from render.tables.columns import probe_of


class Page:
    """A page's evidence aliases and the build's ``Library``: what a page function is called with."""

    def __init__(self, library: Library, aliases: dict[str, str]):
        self.library = library
        self.refs = {alias: EvidenceRef(alias, ident, library.docs[ident]["probe"]) for alias, ident in aliases.items()}
        self.reads: dict[str, set[str]] = {}
        """Each stored field ``value()`` read on this page -> the ids read (``render.derive.nominal``'s settings
        rule: a setting read from one run must agree with every run of that probe the page cites, or be read
        from each)."""

    def context(self) -> dict[str, Any]:
        """Names a template sees: every registered page function, bound to this page, and the evidence aliases."""
        # bound as methods of the page, as they were when they were methods: a placeholder that shows one
        # unbound is refused as "a method", and a wrong call's TypeError names the function alone
        names: dict[str, Any] = {name: types.MethodType(f.function, self) for name, f in registry().items()}
        clash = sorted(set(names) & set(self.refs))
        if clash:
            raise ProbebookError(f"evidence alias {clash[0]!r} has the name of a page function; rename the alias")
        names.update(self.refs)
        return names

    def ref(self, ref: Any, probe: str | None, what: str) -> EvidenceRef:
        """The evidence an argument names (an alias or an ``EvidenceRef``), refused unless it is ``probe``'s."""
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

    def doc(self, ref: EvidenceRef) -> dict[str, Any]:
        """The evidence document ``ref`` names."""
        return self.library.docs[ref.id]

    def data(self, ref: EvidenceRef) -> dict[str, Any]:
        """The document's ``data`` (empty when it has none)."""
        return self.doc(ref).get("data") or {}

    def rows(self, ref: EvidenceRef) -> list[dict[str, Any]]:
        """The document's ``data.samples``, refused when there are none."""
        rows = (self.doc(ref).get("data") or {}).get("samples")
        if not isinstance(rows, list) or not rows:
            raise ProbebookError(f"{ref.alias} ({ref.short}) has no data.samples")
        return rows

    def derived(
        self,
        what: str,
        kind: str,
        picked: list[EvidenceRef],
        options: dict[str, Any],
        make: Any,
        later: Callable[[str], Any] | None = None,
    ) -> Any:
        """``make()``, kept in the library under (what, kind, ids, options) when the options are plain JSON;
        ``later``: what stands in for it until it is made, in a build that makes it later (``Library.memo``)."""
        try:
            opts = json.dumps(options, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError):
            return make()  # an option that is not plain data: computed, never kept under a lossy key
        return self.library.memo((what, kind, tuple(r.id for r in picked), opts), make, later)
