"""The library of derivations one build shares: evidence documents by id, and each derivation computed once.

Every page's functions read their evidence and memoise their fits, tables and charts here; the build keeps
what it computed for the next build (``render.assemble.incremental.DerivedCache``).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from typing import Any

from render.derive import fit_numerics, replication
from render.evidence import series
from render.pages.bounded import untimed


class Library:
    """Evidence documents by id, their between-session pools, and derivations computed so far (shared by every
    page of a build).

    A derivation is keyed by what it is computed from: its kind, evidence ids (each names its document's
    bytes) and options, never a page or an alias. So ``kept``, the derivations an earlier build computed
    with the same render code and libraries (``render.assemble.incremental.DerivedCache``), are reused as they are:
    an author's edit to one page's prose renders that page without fitting or drawing anything again.
    """

    def __init__(
        self,
        docs: dict[str, dict[str, Any]],
        kept: dict[tuple, Any] | None = None,
        pools: dict[str, replication.Spread] | None = None,
    ):
        self.docs = docs
        self.pools = series.class_pools(docs.values()) if pools is None else pools
        """Each probe class's between-session SD (``render.evidence.series.class_pools``), once per build: those of
        ``docs``, or the ones given (a reproduction's render of a few documents takes the whole archive's, so its
        intervals are the ones the site publishes)."""
        self._memo: dict[tuple, Any] = {}
        self._kept = kept or {}
        self.computed: dict[tuple, Any] = {}
        """The derivations this build computed (not taken from ``kept``), in the order it computed them."""
        self.later = False
        """Set by a build that draws charts while the site engine runs (``render.assemble.deferred``): a derivation that
        can wait is computed as what stands in for it (a chart's alt text and placeholders) until then."""

    def memo(self, key: tuple, compute: Callable[[], Any], later: Callable[[str], Any] | None = None) -> Any:
        """The derivation ``key``: kept, else computed (``later(token)`` instead, when it can wait and this
        build makes such derivations later; ``token`` names the key)."""
        if key not in self._memo:
            if key in self._kept:
                self._memo[key] = self._kept[key]
            else:
                load_libraries(
                    draw=False
                )  # a chart drawn now loads vl-convert itself (``render.functions.blocks.chart``)
                if later is not None and self.later:
                    self._memo[key] = self.computed[key] = later(hashlib.sha256(repr(key).encode()).hexdigest())
                else:
                    self._memo[key] = self.computed[key] = compute()
        return self._memo[key]

    def settle(self, made: dict[tuple, Any]) -> None:
        """Put what was made later in place of what stood in for it (``render.assemble.deferred``)."""
        for key, value in made.items():
            self._memo[key] = self.computed[key] = value

    def computed_since(self, count: int) -> dict[tuple, Any]:
        """The derivations computed after the first ``count`` (``len(computed)`` before a page was rendered)."""
        return dict(list(self.computed.items())[count:])

    def adopt(self, computed: dict[tuple, Any]) -> None:
        """Take derivations another process computed for this build (``render.assemble.parallel``) as this one's own."""
        for key, value in computed.items():
            self._memo.setdefault(key, value)
            self.computed.setdefault(key, value)

    def derived(self) -> dict[tuple, Any]:
        """Every derivation known to this build: those it kept and those it computed."""
        return {**self._kept, **self._memo}


@functools.lru_cache(maxsize=2)
def load_libraries(draw: bool = True) -> None:
    """Import what the derivations load lazily (altair, pandas, vl-convert, scipy) and start vl-convert's
    runtime, once per process, off the clock of the page that first needs them.

    The CLI imports this module to list the functions in its help, so the heavy libraries load where
    they are used, not at the top (about 1.6 s of CPU per ``probebook`` process), and only when a
    derivation is computed rather than reused (``Library``); a page's template runs under a time limit
    (bounded.time_limit), which must never count a library's import time (``bounded.untimed``).
    ``draw=False``: only what describing a chart needs (``render.charts.draw.describe``), not vl-convert.
    """
    with untimed():
        import render.charts.draw  # noqa: F401  (loads altair)
        from render.charts import svg as chart_svg

        if draw:
            chart_svg.warm()
        fit_numerics.load_scipy()
