"""The state of Inductor's on-disk compiler cache before a run: cold or warm, and how many files it held.

Why a probe records it: a warm cache lets a compiled run load compiled graphs instead of compiling them, so its
first call holds less compile time (issue 43: H·v's first-call cost said nothing of the cache it met). Reading
it creates nothing and never imports torch unless asked for the default folder (``cache_folder``).
"""

from __future__ import annotations

import os
from typing import Any

CACHE_ENV = "TORCHINDUCTOR_CACHE_DIR"
CACHE_COUNT_LIMIT = 100_000
"""Files counted in the cache at most: enough to tell cold from warm without walking a huge shared cache."""


def cache_entries(folder: str | None) -> int | None:
    """Files under the compiler cache ``folder`` (at most ``CACHE_COUNT_LIMIT``); None where it is no folder."""
    if not folder or not os.path.isdir(folder):
        return None
    n = 0
    for _root, _dirs, files in os.walk(folder):
        n += len(files)
        if n >= CACHE_COUNT_LIMIT:
            return CACHE_COUNT_LIMIT
    return n


def compiler_cache(environ: Any, default_dir: str | None) -> dict[str, Any]:
    """The state of Inductor's on-disk cache before the run: where its folder came from (``TORCHINDUCTOR_CACHE_DIR``
    or torch's default), whether it existed, the files in it, and ``warm`` (files there: a compiled candidate may
    load compiled graphs rather than compile them, so its first call holds less compile time) or ``cold``.
    ``torch.compiler.reset()`` between candidates clears the in-memory caches, not this folder: a later candidate
    may reuse what an earlier one wrote (each compiled candidate records ``cache_entries_before``). The folder's
    path is not recorded (it names the machine's user)."""
    folder = environ.get(CACHE_ENV) or default_dir
    entries = cache_entries(folder)
    return {
        "dir_from": CACHE_ENV if environ.get(CACHE_ENV) else "torch default" if default_dir else "unknown",
        "existed": entries is not None,
        "entries_before": entries or 0,
        "state": "warm" if entries else "cold",
    }


def cache_folder() -> str | None:
    """The folder Inductor caches in, read without creating it (``cache_dir()`` would make it)."""
    try:
        from torch._inductor.runtime.cache_dir_utils import default_cache_dir
    except ImportError:  # a torch without the helper: the state is then said as unknown
        return os.environ.get(CACHE_ENV)
    return os.environ.get(CACHE_ENV) or default_cache_dir()
