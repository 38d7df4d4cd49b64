"""The page functions, registered once: name -> function, its one-line help and the call a page writes.

A page function is a plain module-level function whose first parameter is the ``Page`` it is called
from (``render.functions.page``); ``@page_function`` enters it here. Everything that lists page
functions reads this registry: the template context (``Page.context``), ``probebook derive``'s calls
(``render.functions.calls``), and the tests that check the CLI's help (``render.functions.names``) and
README's table against it.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import render.functions

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class PageFunction:
    """One page function as the registry knows it."""

    name: str
    """The name a template calls."""
    function: Callable[..., Any]
    """The function; its first argument is the page's ``Page``."""
    help: str
    """The first paragraph of its docstring, on one line."""
    signature: inspect.Signature
    """Its parameters as a page writes them: without the ``Page``."""

    def usage(self) -> str:
        """``fit(ref, tokens=None, terms='auto', at=(), mode=None)``: how a page calls the function."""
        plain = [p.replace(annotation=inspect.Parameter.empty) for p in self.signature.parameters.values()]
        return f"{self.name}{inspect.Signature(plain)}"


REGISTRY: dict[str, PageFunction] = {}
"""Name -> page function, as the decorator entered them (in import order); read it through ``registry()``."""


def page_function(function: F) -> F:
    """Register ``function`` as the page function of its own name (a decorator); a second one of that name is a bug."""
    name = function.__name__
    if name in REGISTRY:
        raise RuntimeError(f"page function {name!r} registered twice ({REGISTRY[name].function.__module__})")
    sig = inspect.signature(function)
    doc = inspect.getdoc(function) or ""
    REGISTRY[name] = PageFunction(
        name,
        function,
        " ".join(doc.split("\n\n")[0].split()),
        sig.replace(parameters=list(sig.parameters.values())[1:]),
    )
    return function


def registry() -> dict[str, PageFunction]:
    """Every page function, by module name and then by line: each module of ``render.functions`` imported
    first, so none is missing for want of an import and a new module of page functions needs no list."""
    for module in pkgutil.iter_modules(render.functions.__path__):
        importlib.import_module(f"render.functions.{module.name}")
    return dict(sorted(REGISTRY.items(), key=lambda item: _place(item[1].function)))


def _place(function: Callable[..., Any]) -> tuple[str, int]:
    return function.__module__, function.__code__.co_firstlineno
