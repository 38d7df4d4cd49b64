"""What a page must say about the evidence it cites, beyond its numbers.

- Evidence whose status is ``failed`` is never published: a page naming it in its front matter
  stops the build with one line naming the page, the alias and the evidence's ``error``.
- Evidence whose status is ``partial`` (the run stopped early; what it holds is valid) may be
  published, but every number from it carries a visible "partial" mark (``PageState.partial``)
  and the page opens with a note naming it.
- Kernels evidence whose kernel names carry an architecture tag other than the device's compute
  capability (kernels built for another GPU, run through compatibility or JIT) gets a warning.
- Evidence of a plug-in harness names it and its source hash; an option requested but not engaged and a
  device found busy before timing get a warning (``render.derive.marks``, issue 27).

The numbers these notes quote from the evidence (a partial run's budget, a harness's file count) are ledger rows
of the page (``render.numbers.said``, issue 23), linked to the evidence they are quoted from.
"""

from __future__ import annotations

from typing import Any

from render.derive import kernels, marks
from render.numbers import said
from render.numbers.links import escape_text, short_id


def failed_evidence(where: str, aliases: dict[str, str], docs: dict[str, dict[str, Any]]) -> str | None:
    """The one-line refusal when an alias of the page names ``failed`` evidence (``where``: the page's file)."""
    for alias in sorted(aliases):
        doc = docs[aliases[alias]]
        if doc.get("status") == "failed":
            return (
                f"{where}: evidence {alias} ({short_id(aliases[alias])}) has status failed "
                f"({doc.get('error') or 'no error recorded'}); failed evidence is never published"
            )
    return None


def partial_ids(docs: dict[str, dict[str, Any]]) -> frozenset[str]:
    """The ids of every ``partial`` evidence document."""
    return frozenset(ident for ident, doc in docs.items() if doc.get("status") == "partial")


def foreign_tags(doc: dict[str, Any]) -> list[str]:
    """Architecture tags in a kernels document's kernel names that differ from its device; [] otherwise."""
    rows = (doc.get("data") or {}).get("samples")
    if doc.get("probe") != "kernels" or not isinstance(rows, list):
        return []
    named = [r for r in rows if isinstance(r, dict) and isinstance(r.get("device_time_s"), (int, float))]
    capability = (doc.get("machine") or {}).get("compute_capability")
    return kernels.foreign_arch_tags(kernels.arch_tags(named), capability if isinstance(capability, str) else None)


def stop_reason(error: Any) -> str:
    """Why a partial run stopped, as a clause a sentence can end with a full stop: an exception's name with an empty
    message (``KeyboardInterrupt:``) loses its colon, and trailing punctuation goes (issue 28, item 8)."""
    text = " ".join(str(error or "").split()).rstrip(" :;,.")
    return text or "stopped early"


def sentences(aliases: dict[str, str], docs: dict[str, dict[str, Any]]) -> dict[str, said.Said]:
    """The evidence's own words the notes quote, by alias and kind (``stop:run``, ``mark:run:1``), as sentences
    whose numbers are ledger rows."""
    out = {}
    for alias in sorted(aliases):
        ident, doc = aliases[alias], docs[aliases[alias]]
        if doc.get("status") == "partial":
            out[f"stop:{alias}"] = said.Said(
                f"notice({alias}).stopped", stop_reason(doc.get("error")), (ident,), "the partial run's error field"
            )
        for i, mark in enumerate(marks.marks(doc)):
            out[f"mark:{alias}:{i}"] = said.Said(f"notice({alias}).{mark.kind}[{i}]", mark.text, (ident,), mark.title)
    return out


def ledger_rows(page: str, aliases: dict[str, str], docs: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The ledger rows of the numbers the page's notes quote from its evidence."""
    return [row for sentence in sentences(aliases, docs).values() for row in said.rows(page, sentence)]


def markdown(aliases: dict[str, str], docs: dict[str, dict[str, Any]], page: str = "") -> str:
    """Admonitions for the top of a page: its partial evidence, its kernels built for another architecture;
    ``page`` (its tree path) links the numbers they quote to the evidence."""
    quoted = sentences(aliases, docs)

    def shown(key: str) -> str:
        text = escape_text(quoted[key].text)
        return said.linked(page, text, quoted[key]) if page else text

    out = []
    partial = [a for a in sorted(aliases) if docs[aliases[a]].get("status") == "partial"]
    if partial:
        out += ['!!! warning "Partial evidence"', ""]
        for alias in partial:
            out.append(
                f"    - `{alias}` ({short_id(aliases[alias])}) stopped before it finished: {shown(f'stop:{alias}')}. "
                "What it holds is valid; numbers from it are marked *partial*."
            )
        out.append("")
    for alias in sorted(aliases):
        doc = docs[aliases[alias]]
        tags = foreign_tags(doc)
        if tags:
            device = (doc.get("machine") or {}).get("compute_capability")
            out += [
                '!!! warning "Kernels built for another architecture"',
                "",
                f"    `{alias}` ({short_id(aliases[alias])}) ran on a device of compute capability "
                f"{escape_text(device)}, but kernels tagged {escape_text(', '.join(tags))} ran on it: they were "
                "built for another architecture, so their times may not be what a native build achieves.",
                "",
            ]
    out += run_marks(aliases, docs, shown)
    return "\n".join(out) + ("\n" if out else "")


def run_marks(aliases: dict[str, str], docs: dict[str, dict[str, Any]], shown: Any = None) -> list[str]:
    """Admonition lines for the cited evidence's marks: one note per harness (naming every alias that ran it),
    then each warning as a warning; ``shown(key)`` writes a mark's text (``markdown``'s, linking its numbers)."""
    harnesses: dict[str, list[str]] = {}
    texts: dict[str, str] = {}
    warned = []
    for alias in sorted(aliases):
        for i, mark in enumerate(marks.marks(docs[aliases[alias]])):
            named = f"`{alias}` ({short_id(aliases[alias])})"
            text = shown(f"mark:{alias}:{i}") if shown else escape_text(mark.text)
            if mark.kind == "harness":
                harnesses.setdefault(mark.text, []).append(named)
                texts.setdefault(mark.text, text)
            else:
                warned += [f'!!! warning "{mark.title}"', "", f"    {named}: {text}.", ""]
    out: list[str] = []
    for same, runs in harnesses.items():
        out += ['!!! note "Plug-in harness"', "", f"    {', '.join(runs)} {texts[same]}.", ""]
    return out + warned
