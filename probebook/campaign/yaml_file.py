"""Reading a campaign's YAML file (a spec, or the executor section ``probebook reproduce --executor-spec`` takes):
a regular file of bounded size, UTF-8, parsed by PyYAML's ``SafeLoader`` made stricter.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from measure.errors import ProbebookError
from measure.evidence.reading import read_given

MAX_SPEC_BYTES = 1 << 20
"""The largest spec file read (a spec is a few hundred bytes)."""
MAX_DEPTH = 16
"""The deepest nesting of mappings and lists a spec may have (a spec needs 3)."""


def read_yaml(path: Path) -> Any:
    """A YAML file's document; one line when it cannot be read or parsed.

    Only a regular file is read (a FIFO would block, a device never end), of at most ``MAX_SPEC_BYTES``, as UTF-8;
    aliases are refused (an alias bomb expands a few hundred bytes into gigabytes), as are a key given twice (the
    last would win silently) and nesting past ``MAX_DEPTH`` (the parser recurses)."""
    import yaml

    raw = read_given(path, MAX_SPEC_BYTES)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProbebookError(f"{path}: not UTF-8 text (byte {exc.start} is {raw[exc.start]:#04x})") from None
    try:
        return yaml.load(text, Loader=_strict_loader(str(path)))  # a SafeLoader, made stricter
    except yaml.YAMLError as exc:
        raise ProbebookError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None


def _strict_loader(where: str) -> Any:
    """PyYAML's ``SafeLoader`` that refuses aliases, duplicate keys and nesting deeper than ``MAX_DEPTH``."""
    import yaml

    class StrictLoader(yaml.SafeLoader):
        depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                mark = self.peek_event().start_mark
                raise ProbebookError(f"{where} line {mark.line + 1}: a YAML alias (*name); write the value out")
            self.depth += 1
            if self.depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise ProbebookError(f"{where} line {mark.line + 1}: nested more than {MAX_DEPTH} levels deep")
            try:
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: set[Any] = set()
            for key_node, _value in node.value:
                key = self.construct_object(key_node, deep=True)
                if isinstance(key, list | dict):
                    raise ProbebookError(f"{where} line {key_node.start_mark.line + 1}: a key that is not a name")
                if key in seen:
                    raise ProbebookError(f"{where} line {key_node.start_mark.line + 1}: key {key!r} is given twice")
                seen.add(key)
            return super().construct_mapping(node, deep)

    return StrictLoader
