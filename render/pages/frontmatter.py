"""A source page's YAML front matter, read strictly: duplicate keys, anchors nested past a depth and a front
matter that is not a mapping are refused, each in one line naming the file and line (``render.pages.sources``
reads the fields)."""

from __future__ import annotations

import datetime as _dt
import re
from pathlib import Path
from typing import Any

import yaml

from measure.errors import ProbebookError
from measure.evidence.envelope import MAX_DEPTH, nesting_depth

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class SourceError(ProbebookError):
    """A source page or its front matter is malformed."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice (YAML would silently keep the last), a key that is not
    text or a number, and aliases (``*name``: a few lines of them can expand to billions of nodes)."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise yaml.composer.ComposerError(None, None, "aliases (*name) are not allowed in front matter", mark)
        return super().compose_node(parent, index)


def _unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if not isinstance(key, (str, int, float, bool)) and key is not None:
            raise yaml.constructor.ConstructorError(
                None, None, f"a key must be text, not a {type(key).__name__}", key_node.start_mark
            )
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"key {key!r} is given twice", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping)
# Dates stay text, so a bad one is reported by field and line (YAML's own timestamp parser raises bare errors).
_UniqueKeyLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def split_front_matter(text: str, path: Path) -> tuple[dict[str, Any], str, list[str]]:
    """(front matter mapping, body with front matter lines blanked, front matter lines)."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, text, []
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() in ("---", "..."))
    except StopIteration:
        raise SourceError(f"{path} line 1: front matter opened with '---' is never closed") from None
    fm_lines = lines[1:end]
    try:
        meta = yaml.load("\n".join(fm_lines), Loader=_UniqueKeyLoader)
    except RecursionError:
        raise SourceError(f"{path} line 2: front matter nests too deeply (at most {MAX_DEPTH} levels)") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = f" line {mark.line + 2}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SourceError(f"{path}{line}: front matter is not valid YAML: {problem}") from None
    if meta is None:
        meta = {}
    if nesting_depth(meta) > MAX_DEPTH:
        raise SourceError(f"{path} line 2: front matter nests more than {MAX_DEPTH} levels deep")
    if not isinstance(meta, dict):
        raise SourceError(f"{path} line 2: front matter must be a mapping of field: value")
    body = "\n" * (end + 1) + "\n".join(lines[end + 1 :])
    return meta, body, fm_lines


def field_lines(fm_lines: list[str]) -> dict[str, int]:
    """File line numbers of top-level fields and of ``evidence`` aliases."""
    out: dict[str, int] = {}
    section = None
    for i, line in enumerate(fm_lines, start=2):
        top = re.match(r"^([A-Za-z_][\w-]*)\s*:", line)
        if top:
            section = top.group(1)
            out.setdefault(section, i)
            continue
        nested = re.match(r"^\s+([A-Za-z_][\w-]*)\s*:", line)
        if nested and section == "evidence":
            out.setdefault(f"evidence.{nested.group(1)}", i)
    return out


def date_field(value: Any, where: str, name: str) -> str:
    if isinstance(value, _dt.datetime):
        value = value.date()
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, str) and _DATE.match(value.strip()):
        try:
            return _dt.date.fromisoformat(value.strip()).isoformat()
        except ValueError:
            pass
    raise SourceError(f"{where}: field '{name}' must be a date like 2026-12-01, got {value!r}")


def text_field(value: Any, where: str, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SourceError(f"{where}: field '{name}' must be non-empty text")
    return " ".join(value.split())


def first_heading(body: str) -> str | None:
    in_fence = False
    for line in body.split("\n"):
        if re.match(r"^\s*(```|~~~)", line):
            in_fence = not in_fence
        elif not in_fence and line.startswith("# "):
            return line[2:].strip() or None
    return None
