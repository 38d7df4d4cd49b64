"""A probe's options, declared once: its ``Config`` dataclass becomes its command-line options.

Each field of a probe's ``Config`` (defaults and a one-line docstring right below the field) is one
option ``--field-name``: its help is the field's docstring, its default the field's default, its
type read from the annotation (``int``, ``float``, ``str``, ``bool`` as a flag, and ``tuple[int,
...]``, ``tuple[float, ...]``, ``tuple[str, ...]`` as comma lists, each optionally ``| None``).
What a type cannot say goes in the field's metadata through ``option(...)``: ``choices`` (checked
by argparse for a single value and by ``check_choices`` for every item of a list), ``aliases``
such as ``--rounds``, and a ``metavar``. ``config_from_args`` builds the ``Config`` back from
parsed arguments, so the dataclass validates every value and a default exists in one place
(ARCHITECTURE.md §Probes). No torch is imported here.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import inspect
import textwrap
import types
import typing
from collections.abc import Callable
from typing import Any

from measure.errors import ProbebookError


def option(
    default: Any, *, choices: tuple[Any, ...] | None = None, aliases: tuple[str, ...] = (), metavar: str | None = None
) -> Any:
    """A dataclass field whose default is ``default``, with CLI ``choices``, extra option names and a metavar."""
    return dataclasses.field(default=default, metadata={"choices": choices, "aliases": aliases, "metavar": metavar})


def flag_name(name: str) -> str:
    """``seq_lens`` -> ``--seq-lens``: the option a field is given as."""
    return "--" + name.replace("_", "-")


def check_choices(config: Any) -> None:
    """Refuse a value (or a list item) outside the choices a field declares, with one line naming it."""
    for f in dataclasses.fields(config):
        choices = f.metadata.get("choices")
        value = getattr(config, f.name)
        if choices is None or value is None:
            continue
        if isinstance(value, tuple):
            if not value or any(v not in choices for v in value):
                raise ProbebookError(
                    f"{flag_name(f.name)} must be a comma list of {', '.join(choices)}, got {list(value)}"
                )
        elif value not in choices:
            raise ProbebookError(f"{flag_name(f.name)} must be one of {', '.join(choices)}, got {value!r}")


@functools.cache
def field_docs(cls: type) -> dict[str, str]:
    """Each field's docstring (the string literal right below it), through the class's dataclass bases."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        class_def = tree.body[0]
        assert isinstance(class_def, ast.ClassDef)
        body = class_def.body
        for stmt, nxt in zip(body, [*body[1:], None], strict=True):
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant)
                and isinstance(nxt.value.value, str)
            ):
                docs[stmt.target.id] = " ".join(nxt.value.value.split())
    return docs


def _numbers(text: str, cast: Callable[[str], Any], noun: str) -> tuple[Any, ...]:
    try:
        values = tuple(cast(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated {noun}s, got {text!r}") from None
    if not values:
        raise argparse.ArgumentTypeError(f"expected at least one {noun}")
    return values


def _int_list(text: str) -> tuple[int, ...]:
    return _numbers(text, int, "integer")


def _float_list(text: str) -> tuple[float, ...]:
    return _numbers(text, float, "number")


def _str_list(text: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in text.split(",") if v.strip())


# (annotation without None) -> (argparse type, metavar)
_TYPES: dict[Any, tuple[Any, str | None]] = {
    int: (int, "N"),
    float: (float, "X"),
    str: (str, None),
    tuple[int, ...]: (_int_list, "N,N,..."),
    tuple[float, ...]: (_float_list, "X,X,..."),
    tuple[str, ...]: (_str_list, "A,B,..."),
}


def _base_type(annotation: Any) -> Any:
    """``int | None`` -> ``int``; anything else unchanged."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def _shown(value: Any) -> str:
    return ",".join(str(v) for v in value) if isinstance(value, tuple) else str(value)


def _help(doc: str, default: Any) -> str:
    text = doc.replace("``", "").replace("%", "%%")
    if default in (None, "", ()) or isinstance(default, bool) or "default" in doc.lower():
        return text
    return f"{text} (default: {_shown(default)})"


def add_options(parser: argparse.ArgumentParser, cls: type) -> None:
    """One option per field of the dataclass ``cls``, with help, default, type and choices from the field."""
    docs = field_docs(cls)
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        if f.name not in docs:
            raise TypeError(f"{cls.__module__}.{cls.__qualname__}.{f.name} has no docstring below it")
        names = [flag_name(f.name), *f.metadata.get("aliases", ())]
        kind = _base_type(hints[f.name])
        if kind is bool:
            action = "store_true" if f.default is False else argparse.BooleanOptionalAction
            parser.add_argument(*names, dest=f.name, action=action, default=f.default, help=_help(docs[f.name], None))
            continue
        if kind not in _TYPES:
            raise TypeError(f"{cls.__qualname__}.{f.name}: no command-line type for {hints[f.name]}")
        convert, metavar = _TYPES[kind]
        choices = f.metadata.get("choices")
        single = not isinstance(kind, types.GenericAlias)
        parser.add_argument(
            *names,
            dest=f.name,
            type=convert,
            default=f.default,
            choices=choices if single else None,
            metavar=f.metadata.get("metavar") or (None if (single and choices) else metavar),
            help=_help(docs[f.name], f.default),
        )


def declared(cls: type) -> dict[str, dict[str, Any]]:
    """Each field of ``cls`` as plain data, ``{name: {"flag", "kind", "default"}}``.

    What render needs to write a probe's command back from the params an evidence document recorded
    (its reproduce block) without importing the probe: the same flags ``add_options`` gives, and
    whether a boolean is a plain flag (default False) or ``--x/--no-x`` (default True).
    """
    hints = typing.get_type_hints(cls)
    out: dict[str, dict[str, Any]] = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        kind = _base_type(hints[f.name])
        shape = "flag" if kind is bool else "list" if isinstance(kind, types.GenericAlias) else "value"
        default = list(f.default) if isinstance(f.default, tuple) else f.default
        out[f.name] = {"flag": flag_name(f.name), "kind": shape, "default": default}
    return out


def config_from_args(cls: type, args: argparse.Namespace) -> Any:
    """The dataclass ``cls`` from parsed arguments (it validates the values)."""
    return cls(**{f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if f.init})


def config_from_dict(cls: type, values: dict[str, Any]) -> Any:
    """The dataclass ``cls`` from ``dataclasses.asdict`` of one that went through JSON (lists back to tuples)."""
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()})
