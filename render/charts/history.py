"""Chart kind ``history``: one configuration key's sessions, each point's figure against the session it came from.

Registered in ``render.charts.draw.KINDS``. A key often has many points (a GEMM run times twenty shapes), each in its
own unit and size, so each session's figure is drawn relative to its point's own median across the sessions
shown (1.0 is that median): a session that moved every point moves the whole column, one point that moved stands
apart. Each figure carries its run's 95% interval as a bar; a dashed rule marks a change point (a software-stack
change the series moved across, ``render.evidence.history.change_points``). The rows are the history page's own
(``render.evidence.historypage``), passed as the ``rows`` option; the evidence documents are the key's runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from measure.errors import ProbebookError
from render.charts.marks import Draw
from render.charts.theme import LIGHT, PLOT_WIDTH_PX, ChartTheme, wrap_title

if TYPE_CHECKING:
    import altair as alt

HEIGHT = 220
"""Plot height, px."""
FIELDS = ("session", "point", "ratio", "low", "high")


def history(
    docs: list[dict[str, Any]],
    *,
    theme: ChartTheme = LIGHT,
    rows: list[dict[str, Any]] | None = None,
    changes: list[int] | None = None,
    title: str | None = None,
) -> tuple[str, Draw]:
    """Each point's session figure over its own median (``rows``: ``session`` (1, 2, …), ``point``, ``ratio``,
    ``low``, ``high``), a dashed rule before each session of ``changes`` (change points)."""
    if not rows:
        raise ProbebookError("chart 'history' needs rows= (a history page's sessions)")
    for row in rows:
        if not isinstance(row, dict) or any(name not in row for name in FIELDS):
            raise ProbebookError(f"chart 'history': each row needs the fields {', '.join(FIELDS)}")
    marks = sorted(set(changes or []))
    sessions = max(int(r["session"]) for r in rows)
    points = list(dict.fromkeys(str(r["point"]) for r in rows))
    heading = title or "Each session's figure over its point's median across sessions"
    text = (
        f"{heading}: {_many(len(docs), 'run')} as {_many(sessions, 'session')}, {_many(len(points), 'point')}, "
        "each session's median over the point's median across sessions, with its run's 95% interval"
        + (f"; change points before sessions {', '.join(map(str, marks))}" if marks else "")
        + "."
    )
    columns = {name: [r[name] for r in rows] for name in FIELDS}

    def draw() -> alt.TopLevelMixin:
        import altair as alt
        import pandas as pd

        frame = pd.DataFrame(columns)
        # whole sessions only: a change point's rule sits between two, at n - 0.5, and must not add a tick there
        x = alt.X(
            "session:Q",
            title="session (in the order written)",
            axis=alt.Axis(values=list(range(1, sessions + 1)), format="d"),
            scale=alt.Scale(domain=[0.5, sessions + 0.5], nice=False),
        )
        y = alt.Y("ratio:Q", title="figure / point's median across sessions", scale=alt.Scale(zero=False))
        color = alt.Color(
            "point:N",
            title="point",
            sort=points,
            scale=alt.Scale(range=list(theme.series)),
            legend=alt.Legend(symbolLimit=24, labelLimit=160, columns=1 if len(points) <= 6 else 3),
        )
        tip = [
            alt.Tooltip("point:N"),
            alt.Tooltip("session:Q"),
            alt.Tooltip("ratio:Q", format=".4f", title="over median"),
        ]
        bars = alt.Chart(frame).mark_rule().encode(x=x, y=alt.Y("low:Q"), y2=alt.Y2("high:Q"), color=color)
        dots = alt.Chart(frame).mark_point(filled=True, size=40).encode(x=x, y=y, color=color, tooltip=tip)
        layers = [bars, dots]
        if marks:
            rules = pd.DataFrame({"session": [m - 0.5 for m in marks]})
            layers.append(
                alt.Chart(rules)
                .mark_rule(strokeDash=[6, 3], color=theme.muted)
                .encode(x=alt.X("session:Q"), tooltip=[alt.Tooltip("session:Q", title="change point before")])
            )
        return alt.layer(*layers).properties(width=PLOT_WIDTH_PX, height=HEIGHT, title=wrap_title(heading))

    return text, draw


def _many(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"
