"""axe-core in the tour's Chromium: the accessibility rules a page breaks, counted by rule and impact (issue 42).

axe-core comes from a package registry, as the ``axe-playwright-python`` wheel ships it (``axe.min.js``, the dev
extra in pyproject.toml): the site is checked offline, the script injected into each page from the installed
package, never fetched. ``SERIOUS`` are the impacts the tour refuses; ``run`` returns every violation so a report
can count the rest too.
"""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

SERIOUS = ("serious", "critical")
"""The impacts the tour refuses (axe-core's four are minor, moderate, serious, critical)."""

RUN_JS = """async () => {
  const result = await axe.run(document, {resultTypes: ["violations"]});
  return result.violations.map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.length,
    targets: v.nodes.slice(0, 3).map(n => n.target.join(" "))}));
}"""


def axe_script() -> str:
    """axe-core's source as the installed ``axe-playwright-python`` package ships it."""
    import axe_playwright_python

    return (Path(axe_playwright_python.__file__).parent / "axe.min.js").read_text(encoding="utf-8")


def run(tab: Any, script: str) -> list[dict[str, Any]]:
    """The violations axe-core finds on the page open in ``tab``: ``{id, impact, nodes, targets}`` each."""
    tab.add_script_tag(content=script)
    found: list[dict[str, Any]] = tab.evaluate(RUN_JS)
    return found


def by_rule(violations: list[dict[str, Any]]) -> dict[str, int]:
    """Violation nodes per ``rule (impact)``, most first."""
    counts: collections.Counter[str] = collections.Counter()
    for v in violations:
        counts[f"{v['id']} ({v['impact']})"] += v["nodes"]
    return dict(counts.most_common())


def serious(violations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [v for v in violations if v["impact"] in SERIOUS]
