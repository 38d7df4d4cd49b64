"""Load a user's training harness from ``package.module:factory`` (``--workload``).

The factory is called as ``factory(options)`` with a ``WorkloadOptions``. It returns a
``Workload`` or a tuple ``(model, make_batch, step[, optimizer])``. Every way this can go
wrong (bad spec, missing module, factory raising, wrong return shape) is one clear line.

Two facts are recorded about the harness itself (issue 27): its source, hashed (the module
file, and every Python file of its top-level package, recursively), so two harnesses under one
name are told apart; and which options the factory read, so a preset the plug-in ignored is not
recorded as if it had shaped the run, and an option set on the command line that the factory never
read is named in a warning and in the evidence (``Workload.ignored``; README "Measure your own model").
"""

from __future__ import annotations

import hashlib
import importlib
import re
from dataclasses import fields
from pathlib import Path
from types import ModuleType
from typing import Any

from measure.errors import ProbebookError
from measure.workload import Workload, WorkloadOptions

_SPEC = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
SOURCE_SUFFIXES = (".py",)  # a package's code; data files or checkpoints beside it are not hashed


_NAMES = frozenset(f.name for f in fields(WorkloadOptions))
OBSERVED_OPTIONS = ("compile", "dtype", "device")
"""Options whose effect is read from the step itself (``measure.workload.observe``), not from the factory's reads."""


class _WatchedOptions(WorkloadOptions):
    """The options handed to a factory, noting which of them it read."""

    def __getattribute__(self, name: str) -> Any:
        if name in _NAMES:
            object.__getattribute__(self, "__dict__").setdefault("_read", set()).add(name)
        return super().__getattribute__(name)


def watched(options: WorkloadOptions) -> _WatchedOptions:
    """A copy of ``options`` that records the options read (construction's own checks reset)."""
    copy = _WatchedOptions(**{f.name: getattr(options, f.name) for f in fields(WorkloadOptions)})
    object.__setattr__(copy, "_read", set())
    return copy


def options_read(options: WorkloadOptions) -> set[str]:
    """The option names ``options`` (made by ``watched``) had read since; every name for plain options."""
    return set(object.__getattribute__(options, "__dict__").get("_read", _NAMES))


def preset_read(options: WorkloadOptions) -> bool:
    """Whether ``options`` (made by ``watched``) had its ``preset`` read since."""
    return "preset" in options_read(options)


def ignored_options(options: WorkloadOptions, read: set[str]) -> dict[str, Any]:
    """Options set away from their default that the factory never read (pure): they cannot have shaped the run.

    ``compile``, ``dtype`` and ``device`` are left out: what ran is observed from the step (a harness may honour
    bf16 without reading ``options.dtype``), and the device is where the probe puts its own tensors.
    """
    return {
        f.name: getattr(options, f.name)
        for f in fields(WorkloadOptions)
        if f.name not in OBSERVED_OPTIONS and f.name not in read and getattr(options, f.name) != f.default
    }


def source_fingerprint(spec: str, module: ModuleType) -> dict[str, Any]:
    """SHA-256 of the plug-in's module file and of its top-level package's Python files (recursively).

    ``package_sha256`` is ``measure.machine.source_tree_sha256`` over the package folder(s) with
    ``SOURCE_SUFFIXES`` only; ``None`` when the module is not inside a package (a lone file).
    """
    from measure.machine import source_files, source_tree_sha256

    module_file = getattr(module, "__file__", None)
    out: dict[str, Any] = {
        "spec": spec,
        "module": module.__name__,
        "module_file": Path(module_file).name if module_file else None,
        "module_sha256": hashlib.sha256(Path(module_file).read_bytes()).hexdigest() if module_file else None,
        "package": None,
        "package_sha256": None,
        "package_files": None,
    }
    top = module.__name__.split(".")[0]
    package = importlib.import_module(top)
    roots = sorted(str(p) for p in getattr(package, "__path__", []))
    if roots:
        digests = [source_tree_sha256(Path(r), SOURCE_SUFFIXES) for r in roots]
        joined = digests[0] if len(digests) == 1 else hashlib.sha256("".join(digests).encode()).hexdigest()
        # a namespace package may span folders: one digest of their digests, in path order
        out.update(
            {
                "package": top,
                "package_sha256": joined,
                "package_files": sum(len(source_files(Path(r), SOURCE_SUFFIXES)) for r in roots),
            }
        )
    return out


def load_plugin(spec: str, options: WorkloadOptions) -> Workload:
    """Import ``package.module`` and call its ``factory(options)``; wrap the result as a ``Workload``."""
    if not _SPEC.match(spec):
        raise ProbebookError(f"--workload {spec!r}: expected package.module:factory")
    module_name, attr = spec.split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ProbebookError(
            f"--workload {spec!r}: cannot import {module_name!r} ({exc}); is it on PYTHONPATH?"
        ) from None
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise ProbebookError(f"--workload {spec!r}: {module_name} has no callable {attr!r}")
    seen = watched(options)
    try:
        result = factory(seen)
    except ProbebookError:
        raise
    except Exception as exc:  # the user's code failed: say where, keep it to one line
        raise ProbebookError(f"--workload {spec!r}: the factory raised {type(exc).__name__}: {exc}") from None
    workload = _as_workload(spec, result)
    read = options_read(seen)
    workload.uses_preset = "preset" in read
    workload.ignored = ignored_options(options, read)
    workload.source = source_fingerprint(spec, module)
    return workload


def _as_workload(spec: str, result: Any) -> Workload:
    if isinstance(result, Workload):
        result.name = spec
        return result
    if isinstance(result, tuple) and len(result) in (3, 4):
        model, make_batch, step = result[:3]
        optimizer = result[3] if len(result) == 4 else None
        if not (callable(make_batch) and callable(step) and hasattr(model, "parameters")):
            raise ProbebookError(
                f"--workload {spec!r}: expected (model, make_batch, step[, optimizer]) "
                "with a torch module and two callables"
            )
        return Workload(name=spec, model=model, make_batch=make_batch, step=step, optimizer=optimizer)
    raise ProbebookError(
        f"--workload {spec!r}: the factory returned {type(result).__name__}; "
        "return a measure.workload.Workload or (model, make_batch, step[, optimizer])"
    )
