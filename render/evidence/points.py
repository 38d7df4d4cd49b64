"""A campaign document's points as one table on its evidence page (issue 28, item 3): a row per point, its last
attempt's result in its columns, and an anchor on every cell a number links to.

The generic "Other data" table flattens ``data.points`` into one row per field and stops at
``render.numbers.links.MAX_OTHER`` fields, so a campaign of 34 points showed only some of them, each value many
rows away from the point it belongs to. Here a follow-up's ``optimizer_share`` of point 12 is the cell
``point-12-optimizer_share`` (``render.numbers.links.point_anchor``) in point 12's row. The anchor is a span
around the value, not an empty one beside it: a browser following a link scrolls a wide table only until the
anchor is in view, so on a phone the value itself comes into view, whichever way the table had to scroll.
"""

from __future__ import annotations

from typing import Any

from render.evidence import fields
from render.numbers.links import POINTS, escape_text, point_anchor

MAX_POINTS = 500
"""Points a page shows; the JSON download holds every one."""
_FIRST = ("tok_s", "optimizer_share", "optimizer_median_s", "instrumentation_overhead", "peak_bytes", "params")
"""Result columns in the order a reader compares them; any other numeric result follows, by name."""


def last_result(point: dict[str, Any]) -> dict[str, Any]:
    """The result of a point's last attempt (empty when it has none)."""
    attempts = point.get("attempts") or [{}]
    last = attempts[-1] if isinstance(attempts[-1], dict) else {}
    result = last.get("result")
    return result if isinstance(result, dict) else {}


def _columns(points: list[dict[str, Any]]) -> list[str]:
    """The numeric result fields any point records, less process ids and times of day (the JSON has them)."""
    found = {
        k
        for p in points
        for k, v in last_result(p).items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "pid" and not k.endswith("_unix")
    }
    return [k for k in _FIRST if k in found] + sorted(found - set(_FIRST))


def section(doc: dict[str, Any]) -> str | None:
    """The "Points" section of a ``campaign`` document's page; None for any other document or one without points."""
    points = [p for p in ((doc.get("data") or {}).get("points") or []) if isinstance(p, dict)]
    if doc.get("probe") != "campaign" or not points:
        return None
    columns = _columns(points)
    out = [f"## Points ({len(points)})", ""]
    out += [
        f'<span id="{POINTS}"></span>{len(points)} points, each with its last attempt\'s result; every attempt, with '
        "its job and times, is in the JSON download.",
        "",
    ]
    out.append("| # | point | state | attempts | " + " | ".join(escape_text(fields.label(c)) for c in columns) + " |")
    out.append("|---:|---|---|---:|" + "---:|" * len(columns))
    for i, point in enumerate(points[:MAX_POINTS]):
        result = last_result(point)
        cells = [
            f'<span id="{point_anchor(i, c)}">{fields.value_text(c, result[c])}</span>' if c in result else "—"
            for c in columns
        ]
        name = f'<span id="{point_anchor(i)}">{escape_text(point.get("point") or "")}</span>'
        attempts = len(point.get("attempts") or [])
        out.append(
            f"| {i} | {name} | {escape_text(point.get('state') or '')} | {attempts} | " + " | ".join(cells) + " |"
        )
    if len(points) > MAX_POINTS:
        out.append(f"\n*{len(points) - MAX_POINTS} more points in the JSON download.*")
    return "\n".join(out) + "\n"
