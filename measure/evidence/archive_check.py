"""One pass over an archive for ``probebook archive verify`` (ARCHITECTURE.md §Evidence).

The archive's folders are listed once (``Store.tree``). Each stored file is read once: its bytes are
hashed and compared with its name, and a file whose bytes match is parsed and validated from the same
bytes (``measure.evidence.reading.parse_archived``: orjson where writing its reading back gives the same bytes,
the strict reader otherwise, so integers stay exact and a duplicate key is refused as before). The same
pass names what is not evidence (``Store.stray_entry``) and counts the temp files of writes.

Where there are enough files to pay for it, the shard folders are shared among copies of this process
made with ``os.fork``, one per CPU core this process may use, each taking the next folder from one queue
when done with one (``_ShardQueue``); each copy sends back what it found as
plain tuples (``marshal``) through a pipe. A bare fork is used rather than ``multiprocessing``: importing
and starting a pool cost about 30 ms here, against about 2 ms for a fork and its pipe, in a command whose
whole budget is a few hundred milliseconds (``bench/archive.py`` times it beside ``sha256sum``).
"""

from __future__ import annotations

import marshal
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from measure.errors import EvidenceError
from measure.evidence.reading import parse_archived, read_hashed
from measure.evidence.store import Invalid, Mismatch, Shard, Store, Stray, stored_entry, stored_id
from measure.lifetime import die_with_parent

# Below this many files per extra process, forking one costs more than it saves: a fork and its pipe take
# about 2 ms against about 30 µs a file. Measured with 2 cores: 100 files took 4.1 ms in one process and
# 4.7 ms in two, 200 files 12.6 ms and 9.8 ms (``check(store, workers=1)`` and ``workers=2``, fastest of 30).
FILES_PER_WORKER = 100


@dataclass
class Check:
    """What one pass found."""

    count: int = 0
    """Stored files looked at (final-named regular files, links and strays aside)."""
    mismatches: list[Mismatch] = field(default_factory=list)
    """Files whose bytes do not hash to their names."""
    invalid: list[Invalid] = field(default_factory=list)
    """Files whose bytes match but which are not valid current-schema evidence."""
    strays: list[Stray] = field(default_factory=list)
    """Everything under ``evidence/`` that is not evidence, as ``Store.strays`` names it, in its order."""
    temps: list[Path] = field(default_factory=list)
    """Temp files of writes in the shard folders, as ``Store.temp_files`` lists them."""
    processes: int = 1
    """How many processes shared the work (this one and its forked copies)."""


# What one shard folder holds, as plain tuples that ``marshal`` carries between processes: its position in
# the tree, the count of stored files, then (path, expected, actual) mismatches, (path, message) invalid
# files, (path, why) strays and temp file paths.
ShardResult = tuple[int, int, list[tuple[str, str, str]], list[tuple[str, str]], list[tuple[str, str]], list[str]]


def check_shards(store: Store, shards: Iterable[tuple[int, Shard]]) -> list[ShardResult]:
    """Hash, then parse and validate, every stored file of each (position, shard); name its strays and temps."""
    out: list[ShardResult] = []
    limit = store.limit
    for position, shard in shards:
        count = 0
        mismatches: list[tuple[str, str, str]] = []
        invalid: list[tuple[str, str]] = []
        strays: list[tuple[str, str]] = []
        for entry in shard.entries:
            if stored_entry(entry):
                read = read_hashed(entry.path, limit)
                if read is None:
                    continue  # no longer a regular file (replaced since it was listed): not evidence
                count += 1
                raw, actual = read
                expected = stored_id(shard.name, entry.name)
                if raw is None or actual != expected:
                    mismatches.append((entry.path, expected, actual))
                    continue
                try:
                    parse_archived(raw, entry.path)
                except EvidenceError as exc:
                    invalid.append((entry.path, str(exc)))
            else:
                stray = store.stray_entry(entry)
                if stray is not None:
                    strays.append((str(stray.path), stray.why))
        out.append((position, count, mismatches, invalid, strays, shard.temp_files()))
    return out


def default_workers(files: int) -> int:
    """Processes worth using for ``files`` files: one per usable core, at most one per ``FILES_PER_WORKER``."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, files // FILES_PER_WORKER))


def check(store: Store, workers: int | None = None) -> Check:
    """Every stored file of ``store`` hashed and, where it matches its name, parsed and validated; and every
    stray and temp file named, in the order ``Store.strays`` and ``Store.temp_files`` give them.

    ``workers`` processes share the shard folders (default ``default_workers``); this process is one of them.
    Forking is used only where the platform has it and no other thread runs (a fork copies one thread).
    """
    tree = store.tree()
    shards = [(i, item) for i, item in enumerate(tree) if isinstance(item, Shard)]
    n = default_workers(sum(len(s.entries) for _, s in shards)) if workers is None else max(1, workers)
    if n == 1 or not hasattr(os, "fork") or threading.active_count() > 1:
        n, results = 1, check_shards(store, shards)
    else:
        # Shared, not split up front: each process takes the next shard folder from one queue when done with one,
        # so a process the scheduler holds back (a busy machine) leaves its folders to the others instead of
        # making the whole pass wait for its fixed half.
        queue = _ShardQueue(len(shards))
        others = [_forked(check_shards, store, queue.take(shards)) for _ in range(1, n)]
        try:
            results = check_shards(store, queue.take(shards))
        finally:
            queue.close()
        for result in others:
            results += result()
    by_position = {r[0]: r for r in results}
    found = Check(processes=n)
    for i, item in enumerate(tree):
        if isinstance(item, Stray):
            found.strays.append(item)
            continue
        _, count, mismatches, invalid, strays, temps = by_position[i]
        found.count += count
        found.mismatches += [Mismatch(Path(p), expected, actual) for p, expected, actual in mismatches]
        found.invalid += [Invalid(Path(p), message) for p, message in invalid]
        found.strays += [Stray(Path(p), why) for p, why in strays]
        found.temps += map(Path, temps)
    return found


class _ShardQueue:
    """The indices of the shard folders still to check, in a pipe that this process and its forked copies share.

    Every index is written (two bytes each) before the first fork and the writing end closed, so a read finds
    the next index or the end: a pipe read of two bytes is one step under the kernel's lock, and the pipe only
    ever holds whole indices, so each index goes to exactly one reader. At most 256 shard folders (two hex
    digits) fit the pipe's buffer (4 KiB at least, POSIX) many times over.
    """

    def __init__(self, count: int) -> None:
        self.read_end, write_end = os.pipe()
        try:
            with open(write_end, "wb") as pipe:
                pipe.write(b"".join(i.to_bytes(2, "little") for i in range(count)))
        except BaseException:
            os.close(self.read_end)
            raise

    def take(self, shards: list[tuple[int, Shard]]) -> Iterator[tuple[int, Shard]]:
        """The shard folders this process gets, one at a time, until none is left."""
        while len(index := os.read(self.read_end, 2)) == 2:
            yield shards[int.from_bytes(index, "little")]

    def close(self) -> None:
        os.close(self.read_end)


def _forked(fn: Callable[..., Any], *args: Any) -> Callable[[], Any]:
    """Start ``fn(*args)`` in a forked copy of this process; the function returned waits for its result.

    The result must be plain data ``marshal`` writes (tuples, lists, strings, numbers). The copy leaves with
    ``os._exit``, so it flushes no buffer and runs no exit handler of this process.
    """
    read_end, write_end = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the copy
        status = 1
        try:
            die_with_parent(parent)
            os.close(read_end)
            with open(write_end, "wb") as pipe:
                pipe.write(marshal.dumps(fn(*args)))
            status = 0
        except KeyboardInterrupt:
            status = 130  # Ctrl-C reached both processes; the parent says so
        except BrokenPipeError:
            pass  # the parent left before reading (interrupted on its own): nothing to tell
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            os._exit(status)
    os.close(write_end)

    def result() -> Any:
        with open(read_end, "rb") as pipe:
            payload = pipe.read()
        _, status = os.waitpid(pid, 0)
        if status:
            sys.stderr.flush()
            raise RuntimeError(f"archive check: the forked worker (pid {pid}) failed (wait status {status})")
        return marshal.loads(payload)

    return result
