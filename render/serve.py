"""Live preview: build, serve the site folder over HTTP, rebuild when sources or evidence change.

A polling watcher (no extra dependency, works on every filesystem) compares a fingerprint of
the watched files (path, size, mtime) every ``interval`` seconds. A build that fails prints its
one-line error and keeps the last good site in place until the next change.
"""

from __future__ import annotations

import functools
import http.server
import os
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Iterable

from measure.errors import ProbebookError
from render.build import BuildPaths, build


def fingerprint(roots: Iterable[Path]) -> tuple[tuple[str, int, int], ...]:
    """(path, size, mtime in ns) of every file under ``roots``, sorted; temp and hidden files skipped."""
    out = []
    for root in roots:
        if root.is_file():
            st = root.stat()
            out.append((str(root), st.st_size, st.st_mtime_ns))
            continue
        if not root.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in sorted(filenames):
                if name.startswith("."):
                    continue
                path = Path(dirpath) / name
                try:
                    st = path.stat()
                except FileNotFoundError:
                    continue  # removed while we walked
                out.append((str(path), st.st_size, st.st_mtime_ns))
    return tuple(sorted(out))


def watched(paths: BuildPaths) -> list[Path]:
    """What a change to triggers a rebuild: sources, evidence, the published ledger, the config."""
    return [paths.docs, paths.archive / "evidence", paths.published_ledger, paths.config]


def rebuild(paths: BuildPaths, log: Callable[[str], None]) -> bool:
    """One build; report its outcome in one line. True when it succeeded."""
    started = time.monotonic()
    try:
        result = build(paths, reuse=True)
    except ProbebookError as exc:
        log(f"probebook: error: {exc}")
        return False
    log(
        f"built {paths.site} in {time.monotonic() - started:.1f} s: {len(result.ledger)} numbers, "
        f"{result.evidence} evidence file(s)"
    )
    return True


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def serve(
    paths: BuildPaths,
    host: str = "127.0.0.1",
    port: int = 8000,
    interval: float = 1.0,
    log: Callable[[str], None] = lambda s: print(s, file=sys.stderr, flush=True),
    stop: threading.Event | None = None,
) -> None:
    """Build, then serve ``paths.site`` and rebuild on change until ``stop`` is set (or Ctrl-C)."""
    stop = stop or threading.Event()
    rebuild(paths, log)
    paths.site.mkdir(parents=True, exist_ok=True)
    handler = functools.partial(_Quiet, directory=str(paths.site.resolve()))
    server = http.server.ThreadingHTTPServer((host, port), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    log(
        f"serving {paths.site} at http://{host}:{server.server_address[1]}/ (Ctrl-C stops); "
        f"watching {', '.join(str(p) for p in watched(paths))}"
    )
    seen = fingerprint(watched(paths))
    try:
        while not stop.wait(interval):
            now = fingerprint(watched(paths))
            if now != seen:
                seen = now
                log("change detected: rebuilding")
                rebuild(paths, log)
                seen = fingerprint(watched(paths))  # a build may touch nothing watched, but be sure
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        server.server_close()
