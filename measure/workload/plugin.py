"""Load a user's training harness from ``package.module:factory`` (``--workload``).

The factory is called as ``factory(options)`` with a ``WorkloadOptions``. It returns a
``Workload`` or a tuple ``(model, make_batch, step[, optimizer])``. Every way this can go
wrong (bad spec, missing module, factory raising, wrong return shape) is one clear line.
"""

from __future__ import annotations

import importlib
import re

from measure.errors import ProbebookError
from measure.workload import Workload, WorkloadOptions

_SPEC = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


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
    try:
        result = factory(options)
    except ProbebookError:
        raise
    except Exception as exc:  # the user's code failed: say where, keep it to one line
        raise ProbebookError(f"--workload {spec!r}: the factory raised {type(exc).__name__}: {exc}") from None
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
