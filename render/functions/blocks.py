"""The page functions that return a block of the page: ``chart`` (an SVG, with its Vega-Lite spec) and
``table`` (Markdown, with CSV and JSON downloads), each saved beside the page.
"""

from __future__ import annotations

from typing import Any

from render.charts import theme as chart_theme
from render.charts.output import PendingChart, chart_files
from render.functions.derivations import load_libraries
from render.functions.page import Page
from render.functions.registry import page_function
from render.numbers import said
from render.numbers.links import title_text
from render.pages.sandbox import Asset
from render.tables import cells, kinds
from render.tables.columns import escape


@page_function
def chart(page: Page, kind: str, *refs: Any, **options: Any) -> Asset:
    """An SVG chart of the evidence, saved beside the page, with its Vega-Lite spec as a download."""
    picked = [page.ref(r, None, f"chart({kind!r})") for r in refs]
    docs = [page.doc(r) for r in picked]

    def draw() -> Any:
        from render.charts import draw as charts  # here, not at the top: see load_libraries

        load_libraries()
        return charts.render(kind, docs, **options)

    def describe(token: str) -> PendingChart:
        from render.charts import draw as charts

        ids = tuple(r.id for r in picked)
        return PendingChart(token, charts.describe(kind, docs, **options), kind, ids, options)

    out = page.derived("chart", kind, picked, options, draw, describe)
    alt = title_text(out.alt).replace("[", "(").replace("]", ")")
    ids = tuple(r.id for r in picked)
    # the alt text's numbers (samples counted, the range fitted) are ledger rows, though an image cannot link them
    sentence = said.Said(
        f"{block_key('chart', kind, [r.alias for r in picked], options)}.alt", alt, ids, f"chart {kind!r} alt text"
    )
    return Asset(
        kind,
        chart_files(out),
        lambda name: chart_theme.markdown(name, alt),
        ids,
        ledger=lambda page_rel: said.rows(page_rel, sentence),
    )


@page_function
def table(page: Page, kind: str, *refs: Any, **options: Any) -> Asset:
    """A table of the evidence with CSV and JSON downloads saved beside the page."""
    picked = [page.ref(r, None, f"table({kind!r})") for r in refs]
    return table_asset(page, kind, picked, options, block_key("table", kind, [r.alias for r in picked], options))


def table_asset(page: Page, kind: str, picked: list[Any], options: dict[str, Any], key: str) -> Asset:
    """Table ``kind`` of the evidence ``picked`` as a page block, its ledger rows under ``key`` (the call the
    template wrote)."""
    out = page.derived(
        "table", kind, picked, options, lambda: kinds.render(kind, [page.doc(r) for r in picked], **options)
    )
    ids = tuple(r.id for r in picked)

    def shown(page_rel: str, name: str) -> str:
        body = out.markdown if out.layout is None else cells.page_markdown(out.layout, page_rel, key, ids, escape)
        return f"{body}\n\nDownload: [CSV]({name}.csv) · [JSON]({name}.json)\n"

    return Asset(
        kind,
        {"csv": out.csv.encode("utf-8"), "json": out.json.encode("utf-8")},
        lambda name: shown("", name),
        ids,
        linked=shown,
        ledger=None if out.layout is None else lambda page_rel: cells.ledger_rows(out.layout, page_rel, key, ids),
    )


def block_key(function: str, kind: str, aliases: list[str], options: dict[str, Any]) -> str:
    """The ledger key of a table or chart on its page, as the template calls it: ``table('batch-sweep', sweep,
    view='rows')``."""
    args = [repr(kind), *aliases, *(f"{k}={v!r}" for k, v in sorted(options.items()))]
    return f"{function}({', '.join(args)})"
