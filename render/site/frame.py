"""The whole page is the boundary: what a page holds outside its content area (the theme's frame) is checked
against what the theme itself emits, learnt from a clean build of the same engine (issue 25).

nh3 cleans each page's content area (``render.site.sanitize``); the head, header, navigation and footer around
it are the theme's, filled from page titles, page meta and the config. Issue 25 found script reaching all of
them (a ``</title><script>`` through ``striptags``, ``title:``/``description:`` page meta). Those inputs are now
plain text by construction; this check makes sure of it, failing closed. A page's frame may hold only:

- tags, and attributes on each tag, that a clean build of this theme wrote (``Frame.tags``,
  ``Frame.attributes``); every ``<`` followed by a letter must open a well-formed tag (quoted values or
  unquoted ones without quotes, as the HTML tokenizer reads them), so nothing hides inside a malformed one;
- inline scripts whose text (with the page's relative root, ``"."``, ``".."``..., written as one word) a
  clean build wrote (``Frame.scripts``, SHA-256 each), data scripts (``type="application/json"``) with an id the
  clean build used, and script files it loaded (``Frame.sources``, below the site root);
- links to http(s), mailto or the site itself: no ``javascript:`` or ``data:`` URL.

The frame of each engine's theme is kept in ``frames/<theme>.json``, made from a clean build of the fixture site
(``python -m render.site.sanitize --frame SITE THEME``, which ``tests/test_whole_page.py`` checks against a fresh clean
build, so a theme update that emits something new is noticed: the build refuses it, naming the page and what).
Only distinct tags are parsed (a site's navigation repeats the same few hundred in every page), so checking a
page costs a regular-expression scan of its bytes.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from measure.errors import ProbebookError

FOLDER = Path(__file__).resolve().parent / "frames"

# Candidate start tags: ``<`` and a letter, to the ``>`` that ends it outside quotes. Each distinct one must then
# match _TAG whole (the tokenizer's grammar: unquoted values hold no quotes), or the page is refused.
_CANDIDATE = re.compile(rb"""<[a-zA-Z](?:[^>"']|"[^"]*"|'[^']*')*>""")
_TAG = re.compile(
    rb"""<([a-zA-Z][a-zA-Z0-9:-]*)((?:\s+[^\s"'>/=]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'=<>`]+))?)*)\s*/?>"""
)
_ATTRIBUTE = re.compile(rb"""([^\s"'>/=]+)(?:\s*=\s*("[^"]*"|'[^']*'|[^\s"'=<>`]+))?""")
_SCRIPT = re.compile(rb"<script\b((?:[^>\"']|\"[^\"]*\"|'[^']*')*)>(.*?)</script\s*>", re.S | re.I)
_RELATIVE_ROOT = re.compile(r'"(?:\.\./)*\.\.?/?"|"/"')
_URL_ATTRIBUTES = frozenset({"href", "src", "action", "formaction", "xlink:href", "srcset", "poster", "data"})
_SAFE_URL = re.compile(r"^(?:https?:|mailto:|[^:]*$|[^:/?#]*[/?#])", re.I)
_UP = re.compile(r"^(?:/|\./|(?:\.\./)+)")


class FrameError(ProbebookError):
    """A built page holds, outside its content area, something its theme's clean build never wrote."""


@dataclass(frozen=True)
class Frame:
    """What a theme writes around a page's content, as learnt from a clean build."""

    theme: str
    tags: frozenset[str]
    attributes: frozenset[str]
    """``tag.attribute`` each."""
    scripts: frozenset[str]
    """SHA-256 of each inline script's text, its relative root written ``"ROOT"``."""
    data: frozenset[str]
    """Ids of data scripts (``type="application/json"``): read by the theme, never run."""
    sources: frozenset[str]
    """Script files, as paths below the site root."""

    def to_json(self) -> str:
        fields = ("tags", "attributes", "scripts", "data", "sources")
        doc = {"theme": self.theme, **{f: sorted(getattr(self, f)) for f in fields}}
        return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def _attributes(raw: bytes) -> dict[str, str]:
    return {
        m.group(1).decode("utf-8", "replace").lower(): html.unescape(
            (m.group(2) or b"").strip(b"\"'").decode("utf-8", "replace")
        )
        for m in _ATTRIBUTE.finditer(raw)
    }


@lru_cache(maxsize=65536)
def _parsed(candidate: bytes) -> tuple[str, tuple[tuple[str, str], ...]] | None:
    """A candidate start tag as (tag, attributes), or None when it is not one well-formed tag."""
    match = _TAG.fullmatch(candidate)
    if match is None:
        return None
    return match.group(1).decode().lower(), tuple(sorted(_attributes(match.group(2)).items()))


def _script_digest(text: bytes) -> str:
    return hashlib.sha256(_RELATIVE_ROOT.sub('"ROOT"', text.decode("utf-8", "replace")).encode()).hexdigest()


@dataclass
class Outline:
    """What one frame holds: the same fields as ``Frame``, plus what no theme writes (malformed tags, bad URLs)."""

    tags: set[str]
    attributes: set[str]
    scripts: set[str]
    data: set[str]
    sources: set[str]
    malformed: list[str]
    urls: list[str]


def outline(parts: list[bytes]) -> Outline:
    """The outline of a page's frame, given as the byte ranges outside its content area."""
    out = Outline(set(), set(), set(), set(), set(), [], [])
    for part in parts:
        for candidate in set(_CANDIDATE.findall(part)):
            parsed = _parsed(candidate)
            if parsed is None:
                out.malformed.append(candidate[:80].decode("utf-8", "replace"))
                continue
            tag, attributes = parsed
            out.tags.add(tag)
            for name, value in attributes:
                out.attributes.add(f"{tag}.{name}")
                if name in _URL_ATTRIBUTES and not _SAFE_URL.match("".join(value.split())):
                    out.urls.append(f"<{tag} {name}={value[:60]!r}>")
            if tag == "script" and "src" in dict(attributes):
                out.sources.add(_UP.sub("", dict(attributes)["src"]))
        for match in _SCRIPT.finditer(part):
            given = _attributes(match.group(1))
            if "src" in given:
                continue
            if given.get("type", "").lower() == "application/json":
                out.data.add(given.get("id", ""))
            else:
                out.scripts.add(_script_digest(match.group(2)))
    return out


def learn(theme: str, pages: list[tuple[bytes, bytes]]) -> Frame:
    """The frame of a clean build: the union of its pages' outlines (each page as the parts outside its area)."""
    seen = Outline(set(), set(), set(), set(), set(), [], [])
    for before, after in pages:
        one = outline([before, after])
        if one.malformed or one.urls:
            raise FrameError(f"the clean build is not clean: {(one.malformed + one.urls)[0]}")
        for name in ("tags", "attributes", "scripts", "data", "sources"):
            getattr(seen, name).update(getattr(one, name))
    return Frame(
        theme, frozenset(seen.tags), frozenset(seen.attributes), frozenset(seen.scripts), frozenset(seen.data),
        frozenset(seen.sources),
    )  # fmt: skip


@lru_cache(maxsize=4)
def frame_of(theme: str) -> Frame:
    """The kept frame of ``theme`` (``frames/<theme>.json``); a theme with none fails closed."""
    path = FOLDER / f"{theme}.json"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise FrameError(f"{path}: no frame kept for the theme {theme} ({exc}); see render/site/frame.py") from None
    fields = ("tags", "attributes", "scripts", "data", "sources")
    return Frame(theme, *(frozenset(doc[f]) for f in fields))


def check(parts: list[bytes], where: str, frame: Frame) -> None:
    """Refuse, in one line naming the page, a frame holding anything ``frame`` does not."""
    one = outline(parts)
    problems = [f"a malformed tag {m!r}" for m in one.malformed] + [f"a script URL in {u}" for u in one.urls]
    problems += [f"a <{t}> element" for t in sorted(one.tags - frame.tags)]
    problems += [f"the attribute {a}" for a in sorted(one.attributes - frame.attributes)]
    problems += [f"an inline script (sha256 {s[:12]})" for s in sorted(one.scripts - frame.scripts)]
    problems += [f"a data script with id {d!r}" for d in sorted(one.data - frame.data)]
    problems += [f"the script file {s!r}" for s in sorted(one.sources - frame.sources)]
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise FrameError(
            f"{where}: outside its content area the page holds {problems[0]}{more}, which a clean build of "
            f"{frame.theme} never writes (render/site/frames/{frame.theme}.json; a theme update: see "
            "render/site/frame.py)"
        )
