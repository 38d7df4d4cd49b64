"""Live preview: build, serve the site folder over HTTP, rebuild when sources or evidence change.

A polling watcher (no extra dependency, works on every filesystem) compares a fingerprint of
the watched files (path, size, mtime) every ``interval`` seconds (the archive's every
``EVIDENCE_EVERY_S``). Builds are incremental (ARCHITECTURE.md §The build) and the parsed archive is kept
between them, so a save rebuilds the edited page only. A build that fails prints its
one-line error and keeps the last good site in place until the next change.
"""

from __future__ import annotations

import functools
import http
import http.server
import logging
import os
import re
import stat
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from measure.errors import ProbebookError
from render.assemble.stages import BuildPaths, build
from render.pages import limits
from render.site.engines import DEFAULT


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
    return [*_authored(paths), paths.archive / "evidence"]


def _authored(paths: BuildPaths) -> list[Path]:
    # checked every interval: what an author saves; the archive (thousands of files) only every EVIDENCE_EVERY_S
    return [paths.docs, paths.published_ledger, paths.config]


EVIDENCE_EVERY_S = 2.0
"""Seconds between looks at the archive's files (a walk of thousands of files is not done four times a second)."""


def rebuild(paths: BuildPaths, log: Callable[[str], None], engine: str = DEFAULT) -> bool:
    """One build; report its outcome in one line. True when it succeeded."""
    started = time.monotonic()
    try:
        result = build(paths, reuse=True, engine=engine)
    except ProbebookError as exc:
        log(f"error: {exc}")  # the logger adds "probebook: ", as for every CLI error line
        return False
    log(
        f"built {paths.site} in {time.monotonic() - started:.1f} s: {len(result.ledger)} numbers, "
        f"{result.evidence} evidence file(s)"
    )
    return True


class _Quiet(http.server.SimpleHTTPRequestHandler):
    """The site's files, quietly; a request path holding a NUL byte is a 400, not a traceback (``GET /%00``).

    Only the site's own files and folders are served: a symbolic link anywhere on the path (one planted in
    ``site/`` would hand out any file of the host) and a FIFO or device (opening one blocks the thread) are a 404."""

    timeout = limits.SERVE_TIMEOUT  # socketserver.StreamRequestHandler: a client that sends nothing is let go

    def log_message(self, format: str, *args: object) -> None:
        pass

    def send_head(self) -> Any:
        if "\0" in urllib.parse.unquote(self.path):
            self.send_error(http.HTTPStatus.BAD_REQUEST, "a path with a NUL byte")
            return None
        if not self._own(Path(self.translate_path(self.path))):
            self.send_error(http.HTTPStatus.NOT_FOUND, "not a file of the site")
            return None
        current = current_version(Path(self.translate_path(self.path)))
        if current is not None:  # a record's folder: its current version, not a directory listing (issue 40)
            path = urllib.parse.urlsplit(self.path).path
            self.send_response(http.HTTPStatus.FOUND)
            self.send_header("Location", f"{path.rstrip('/')}/{current}/")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        return super().send_head()

    def _own(self, path: Path) -> bool:
        """Whether ``path`` (under the served folder, as ``translate_path`` makes it) is reached through real
        folders only and is a folder or a regular file; a path that is not there is the parent's 404 to give."""
        root = Path(self.directory)
        try:
            parts = path.relative_to(root).parts
        except ValueError:
            return False
        current = root
        mode = os.lstat(root).st_mode
        for part in parts:
            current = current / part
            try:
                mode = os.lstat(current).st_mode
            except OSError:
                return True
            if stat.S_ISLNK(mode):
                return False
        return stat.S_ISDIR(mode) or stat.S_ISREG(mode)


_VERSION_FOLDER = re.compile(r"v([1-9]\d*)")


def current_version(folder: Path) -> str | None:
    """``vN``, the highest version page under a folder that has no page of its own (a record's folder,
    ``records/<slug>/``, whose versions the build writes as ``vN/index.html``); None for any other path."""
    if not folder.is_dir() or (folder / "index.html").exists():
        return None
    versions = [
        int(m.group(1))
        for child in folder.iterdir()
        if (m := _VERSION_FOLDER.fullmatch(child.name)) and (child / "index.html").is_file()
    ]
    return f"v{max(versions)}" if versions else None


class _Server(http.server.ThreadingHTTPServer):
    """One thread per connection; a client that disconnects early or stalls past the timeout ends its own
    connection without a traceback (socketserver's ``handle_error`` prints one for every exception)."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return  # the client left (a reset, a broken pipe) or stalled: nothing is wrong with the site
        super().handle_error(request, client_address)


def make_server(site: Path, host: str, port: int) -> http.server.ThreadingHTTPServer:
    """The HTTP server of ``site``'s files at ``host:port`` (0: a free port), not yet serving."""
    return _Server((host, port), functools.partial(_Quiet, directory=str(site.resolve())))


def serve(
    paths: BuildPaths,
    host: str = "127.0.0.1",
    port: int = 8000,
    interval: float = 0.25,
    log: Callable[[str], None] | None = None,
    stop: threading.Event | None = None,
    engine: str = DEFAULT,
) -> None:
    """Build, then serve ``paths.site`` and rebuild on change until ``stop`` is set (or Ctrl-C); ``log`` gets each
    line (default: this module's logger at INFO)."""
    log = log or logging.getLogger(__name__).info
    stop = stop or threading.Event()
    evidence = [paths.archive / "evidence"]
    # taken before each build reads the files: a save made while it runs differs, and builds again
    seen = (fingerprint(_authored(paths)), fingerprint(evidence))
    rebuild(paths, log, engine)
    paths.site.mkdir(parents=True, exist_ok=True)
    server = make_server(paths.site, host, port)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    log(
        f"serving {paths.site} at http://{host}:{server.server_address[1]}/ (Ctrl-C stops); "
        f"watching {', '.join(str(p) for p in watched(paths))}"
    )
    every = max(1, round(EVIDENCE_EVERY_S / interval))
    tick = 0
    try:
        while not stop.wait(interval):
            tick += 1
            now = (fingerprint(_authored(paths)), fingerprint(evidence) if tick % every == 0 else seen[1])
            if now != seen:
                log("change detected: rebuilding")
                seen = (fingerprint(_authored(paths)), fingerprint(evidence))
                rebuild(paths, log, engine)
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        server.server_close()
