"""The build's history pages (``render.evidence.historypage``): one per configuration key, kept between builds as
one unit (``render.assemble.incremental.save_units``) while the archive and the pages citing it are unchanged, their
charts drawn now or while the site engine runs (``render.assemble.deferred``)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from render.assemble import incremental
from render.assemble.types import BuildRun, Tree
from render.charts.output import PendingChart
from render.evidence import historypage
from render.evidence.archive import Archive
from render.functions.derivations import load_libraries

HISTORY_UNIT = "history"
"""The unit (``render.assemble.incremental.save_units``) the history pages are kept under between builds."""


def pages(tree: Tree, evidence: Archive, run: BuildRun) -> None:
    """The configuration keys' history pages and their charts (``render.evidence.historypage``): kept as the last
    build made them (``run.previous``) while the archive and the pages citing it are unchanged, else made afresh,
    their charts drawn now or, with ``run.later``, described now and drawn while the engine runs
    (``render.assemble.deferred``)."""
    from render.evidence import series

    previous, later = run.previous, run.later

    cited = {i: tree.cited[i] for i in sorted(tree.cited) if i in evidence.docs}
    key = incremental.page_key(
        [
            ("ids", "\n".join(sorted(evidence.docs)).encode()),
            ("cited", json.dumps(cited, sort_keys=True).encode()),
        ]
    )
    before = (previous or {}).get(HISTORY_UNIT)
    if before is not None and before[0] == key:
        tree.kept.update(before[1])
        tree.units[HISTORY_UNIT] = before
        return

    def chart(kind: str, ids: tuple[str, ...], options: dict[str, Any]) -> Any:
        from render.charts import draw

        docs = [evidence.docs[i] for i in ids]
        if later is None:
            load_libraries()
            return draw.render(kind, docs, **options)
        derivation = ("history-chart", kind, ids, json.dumps(options, sort_keys=True))
        token = hashlib.sha256(repr(derivation).encode()).hexdigest()
        pending = PendingChart(token, draw.describe(kind, docs, **options), kind, ids, options)
        later.charts[derivation] = pending
        return pending

    files = historypage.pages(evidence.docs, cited, series.class_pools(evidence.docs.values()), chart)
    tree.files.update(files)
    tree.units[HISTORY_UNIT] = [key, sorted(files)]
