"""Page functions called from the shell: ``probebook derive NAME ID [ARGS...] [--KEY VALUE...]``.

The functions are the page's own: ``render.functions.registry``'s, their parameters read from their
signatures. So a function added for pages is callable here with no second list, and the shell prints
the very Quantity a page would show.

Evidence named on the command line becomes aliases: the first id is ``ev``, further ids among the
arguments ``ev2``, ``ev3`` ... The first id fills the function's evidence parameter (``ref``, or
the first of ``*refs`` for ``chart`` and ``table``); functions that take a measured quantity
instead (``project``, ``mfu``, ``share_of``) take it as an argument written like a page's
placeholder, e.g. ``"batch_summary(ev).fastest_tok_s"``, evaluated in the page sandbox.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
from jinja2.sandbox import SecurityError

from measure.errors import ProbebookError
from render.functions.derivations import Library
from render.functions.page import Page
from render.functions.registry import registry
from render.numbers.claims import Claim
from render.numbers.quantity import Quantity
from render.pages.sandbox import Asset, Block, PageEnvironment, make_environment
from render.pages.template_errors import raised_by_template

ALIAS = "ev"
"""The alias of the first evidence id on the command line."""
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


@dataclass(frozen=True)
class Call:
    """One page function call, ready to run."""

    name: str
    """The page function's name."""
    args: tuple[Any, ...]
    """Positional arguments, evidence already bound."""
    options: dict[str, Any]
    """Keyword arguments."""


def aliases(ids: list[str]) -> dict[str, str]:
    """Alias -> evidence id for the ids named on the command line, in order (``ev``, ``ev2``, ...)."""
    return {ALIAS if i == 0 else f"{ALIAS}{i + 1}": ident for i, ident in enumerate(ids)}


def signature(name: str) -> inspect.Signature:
    """The page function's signature, without the page; an unknown name lists the valid ones."""
    functions = registry()
    if name not in functions:
        raise ProbebookError(f"no page function {name!r}; the page functions are {', '.join(sorted(functions))}")
    return functions[name].signature


def usage(name: str) -> str:
    """``fit(ref, tokens=None, terms='auto', at=(), mode=None)``: how a page calls the function."""
    signature(name)  # an unknown name: the one-line refusal
    return registry()[name].usage()


def plan(name: str, args: list[str], options: dict[str, str]) -> Call:
    """Bind shell words to a page function's parameters (the first evidence id fills its evidence parameter)."""
    sig = signature(name)
    params = list(sig.parameters.values())
    words: list[Any] = [parse_word(a) for a in args]
    if params and params[0].name == "ref":
        words.insert(0, _Alias(ALIAS))
    else:
        star = next((i for i, p in enumerate(params) if p.kind is p.VAR_POSITIONAL and p.name == "refs"), None)
        if star is not None:
            words.insert(min(star, len(words)), _Alias(ALIAS))
    named = {key: parse_word(value) for key, value in options.items()}
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
    known = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "ref"]
    for key in named:
        if key not in known and not takes_any:
            shown = ", ".join(f"--{k}" for k in known) or "none"
            raise ProbebookError(f"{name}() has no option --{key}; its options are {shown} (call: {usage(name)})")
    try:
        sig.bind(*words, **named)
    except TypeError as exc:
        raise ProbebookError(f"{name}(): {exc}; call it as {usage(name)}") from None
    return Call(name, tuple(words), named)


def run(call: Call, docs: dict[str, dict[str, Any]], ids: list[str]) -> Any:
    """Call the page function on the named evidence; what it returns (a Quantity, a view, an asset)."""
    context = Page(Library(docs), aliases(ids)).context()
    env = make_environment({})

    def value(word: Any) -> Any:
        if isinstance(word, _Alias):
            if word.name not in context:
                raise ProbebookError(f"no evidence {word.name}: give its id on the command line")
            return context[word.name]
        if isinstance(word, _Expression):
            return _evaluate(env, word.text, context)
        return word

    return context[call.name](*(value(w) for w in call.args), **{k: value(v) for k, v in call.options.items()})


@dataclass(frozen=True)
class _Alias:
    name: str


@dataclass(frozen=True)
class _Expression:
    text: str


def parse_word(text: str) -> Any:
    """A shell word as a page would write it: a number, a list of numbers (``2048,8192``), an expression
    (``fit(ev).a``, anything with a parenthesis), an evidence alias (``ev2``), or text."""
    if "(" in text:
        return _Expression(text)
    if re.fullmatch(rf"{ALIAS}\d*", text):
        return _Alias(text)
    if _NUMBER.match(text):
        number = float(text)
        return int(number) if number.is_integer() and re.fullmatch(r"[+-]?\d+", text) else number
    parts = text.split(",")
    if len(parts) > 1 and all(_NUMBER.match(p.strip()) for p in parts):
        return [parse_word(p.strip()) for p in parts]
    if text in ("true", "false"):
        return text == "true"
    return text


def _evaluate(env: PageEnvironment, text: str, context: dict[str, Any]) -> Any:
    try:
        result = env.compile_expression(text, undefined_to_none=False)(**context)
        if isinstance(result, jinja2.Undefined):  # an unsafe or missing attribute: its own error, raised here
            str(result)
        return result
    except jinja2.TemplateSyntaxError as exc:
        raise ProbebookError(f"argument {text!r}: {exc.message}") from None
    except jinja2.UndefinedError as exc:
        raise ProbebookError(f"argument {text!r}: {exc} (known: {', '.join(sorted(context))})") from None
    except SecurityError as exc:  # ``(1).__class__``: the sandbox refuses it, as it does in a page
        raise ProbebookError(f"argument {text!r}: not allowed in a page: {exc}") from None
    except (ArithmeticError, LookupError) as exc:  # ``(1/0)``, ``[1][5]``: the expression's own, as in a page
        if not raised_by_template(exc.__traceback__, "<template>"):
            raise
        raise ProbebookError(f"argument {text!r}: {type(exc).__name__}: {exc}") from None


# -- what a result shows ------------------------------------------------------------------


def attributes(result: Any, at: Any = ()) -> list[tuple[str, Any]]:
    """``(name, value)`` of everything a page could show of ``result``: the result itself when it is a
    Quantity, else each template attribute (Quantities, warnings), with ``share(W)`` for each ``at`` width."""
    if isinstance(result, Quantity):
        return [("value", result)]
    if isinstance(result, Claim):
        return [(f"{c.op} ({i + 1})", c) for i, c in enumerate(result.comparisons)]
    if isinstance(result, list):  # views a page loops over (optimizer_timing): each one's attributes, numbered
        return [(f"{i}.{name}", v) for i, view in enumerate(result) for name, v in attributes(view, at)]
    cls = type(result)
    allowed: frozenset[str] = getattr(cls, "TEMPLATE_ATTRS", frozenset())
    ordered = list(getattr(cls, "FIELDS", {})) + [n for n in vars(cls) if n in allowed]
    names = list(dict.fromkeys(ordered + sorted(allowed)))
    out: list[tuple[str, Any]] = []
    for name in names:
        attr = getattr(result, name)
        if callable(attr) and not isinstance(attr, (Quantity, Block)):
            for w in at if isinstance(at, (list, tuple)) else [at]:
                out.append((f"{name}({w})", attr(w)))
            continue
        out.append((name, attr))
    return out


def quantity_json(q: Quantity) -> dict[str, Any]:
    """A Quantity as ``{"value", "unit", "interval", "basis", "derivation", "evidence"}`` (value null when it has
    none): ``interval`` is its 95% interval ``{"low", "high"}`` as the page shows it, or null with ``basis`` saying
    why it has none (``render/derive/basis.py``)."""
    low_high = None if q.uncertainty is None or q.value is None else {"low": q.uncertainty[0], "high": q.uncertainty[1]}
    return {
        "value": q.value,
        "unit": q.unit,
        "interval": low_high,
        "basis": q.basis or None,
        "derivation": q.derivation,
        "evidence": list(q.evidence),
    }


def claim_json(claim: Claim) -> dict[str, Any]:
    """A checked claim: its sentence and each comparison with both sides as Quantities (it holds, or
    ``claim()`` would have refused it)."""
    return {
        "sentence": claim.sentence,
        "comparisons": [
            {"left": quantity_json(c.left), "op": c.op, "right": quantity_json(c.right), "holds": c.holds}
            for c in claim.comparisons
        ],
    }


def save_asset(asset: Asset, out: Path, stem: str) -> tuple[list[str], str]:
    """Write an asset's files into ``out`` as ``<stem>.<suffix>``; return their paths and its Markdown."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for suffix, data in asset.files.items():
        path = out / f"{stem}.{suffix}"
        path.write_bytes(data)
        written.append(str(path))
    return written, asset.markdown(stem)
