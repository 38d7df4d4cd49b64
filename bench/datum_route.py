"""One datum's route through the build: the project files a ``step_s`` sample passes through, from the archive's
bytes to its row in ``ledger.json``, with the hops between files and the files visited more than once.

Run: ``python bench/datum_route.py [--walk] [--json]``.

It makes, in a temporary folder, an archive holding one document (the site fixture's step-time sweep) and one
record page whose only number is ``{{ fit(sweep).c }}``, and renders the tree once (``render_tree``, one process:
``PROBEBOOK_JOBS=1``) to import everything, then again, from an empty build folder, under ``sys.setprofile``.

What the datum is, is found by following the data, not named by hand: the bytes a project function returns
holding ``"step_s"`` are the seed; an object a project function returns is derived from the seed when a value
derived from it (or a container holding one, two levels down) was among its locals as it returned; the sink is
the ledger's bytes (``render.numbers.ledger.to_bytes``). Walking back from the sink over what each call took gives
the calls the datum's lineage passed through. Its route is the walk through the call tree that reaches each of
those calls' distinct call paths in turn (up to the frame shared with the last, then down), counting project
frames only, and a hop each time the walk moves to another file: the datum goes down into a callee and comes back
up through its callers, as a value passed along and returned does. A loop that calls the same path again (a
bootstrap's resamples) is one visit.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # the project's render package, not bench/render.py beside this file
SWEEP = "sha256:08e78675deb8fd5dd2f23023a7b01a3f923ee546a24aba8d2990210900bc4c1d"
"""The site fixture's step-time sweep (tests/fixtures/site): samples with ``step_s`` at seven token counts."""
PROJECT = ("render", "measure", "probebook")
SINK = ("render/numbers/ledger.py", "to_bytes")
DEPTH = 2
"""How far into containers (dicts, lists, an object's attributes) a local is searched for a derived value."""
WIDE = 64
"""Elements of one container searched, at most: a derived value sits near the top of what carries it."""


def fixture(root: Path) -> Any:
    """The one-document archive and one-page sources under ``root``, as the build's paths."""
    from render.assemble.types import BuildPaths

    digest = SWEEP.split(":")[1]
    folder = Path("evidence", "sha256", digest[:2])
    source = REPO / "tests" / "fixtures" / "site" / "archive" / folder / f"{digest[2:]}.json"
    target = root / "archive" / folder / source.name
    target.parent.mkdir(parents=True)
    shutil.copy(source, target)
    record = root / "docs" / "records" / "r"
    record.mkdir(parents=True)
    (root / "docs" / "index.md").write_text("# Home\n")
    front = f"---\ntitle: A record\nversion: 1\ndate: 2026-11-30\nevidence:\n  sweep: {SWEEP}\n---\n"
    (record / "v1.md").write_text(front + "{{ fit(sweep).c }}\n")
    return BuildPaths(
        docs=root / "docs",
        archive=root / "archive",
        build=root / "build",
        site=root / "site",
        config=REPO / "mkdocs.yml",
        published=root / "none.json",
    )


def _derivable(value: Any) -> bool:
    """Whether ``value``'s identity can stand for derived data: not a shared constant (None, a bool, an int, a
    str: ids and keys are interned and passed everywhere)."""
    return value is not None and not isinstance(value, (bool, int, str))


class Lineage:
    """``sys.setprofile``'s hook: every project call's path and the derived values it took and returned."""

    def __init__(self, root: FrameType | None = None) -> None:
        self.root = root
        self.paths: list[tuple[tuple[str, str], ...]] = []
        """Call index -> its project frames from the root down, each (file, function)."""
        self.took: dict[int, set[int]] = {}
        """Call index -> the calls that produced the derived values among its locals as it returned."""
        self.made: dict[int, tuple[Any, int]] = {}
        """id(value) -> (the value, kept alive so its id is not reused; the last call that returned it)."""
        self.open: dict[int, int] = {}
        """id(frame) -> its call index, while it runs."""
        self.sink: int | None = None

    @staticmethod
    def _file(frame: FrameType) -> str | None:
        name = frame.f_code.co_filename
        if not name.startswith(str(REPO) + os.sep):
            return None
        rel = Path(name).relative_to(REPO).as_posix()
        return rel if rel.split("/")[0] in PROJECT else None

    def _path(self, frame: FrameType | None) -> tuple[tuple[str, str], ...]:
        found = []
        while frame is not None:
            rel = self._file(frame)
            if rel is not None:
                found.append((rel, frame.f_code.co_name))
            if frame is self.root:
                break
            frame = frame.f_back
        return tuple(reversed(found))

    def _producers(self, value: Any, depth: int, seen: set[int], out: set[int]) -> None:
        if id(value) in seen or not _derivable(value):
            return
        seen.add(id(value))
        made = self.made.get(id(value))
        if made is not None and made[0] is value:
            out.add(made[1])
        if depth == 0:
            return
        if isinstance(value, dict):
            inner: Any = list(value.values())
        elif isinstance(value, (list, tuple, set, frozenset)):
            inner = list(value)
        elif hasattr(value, "__dict__") and not isinstance(value, type):
            inner = list(vars(value).values())
        else:
            return
        for item in inner[:WIDE]:
            self._producers(item, depth - 1, seen, out)

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event not in ("call", "return"):
            return
        rel = self._file(frame)
        if rel is None:
            return
        if event == "call":
            self.open[id(frame)] = len(self.paths)
            self.paths.append(self._path(frame))
            return
        index = self.open.pop(id(frame), None)
        if index is None:
            return
        took: set[int] = set()
        seen: set[int] = set()
        for value in list(frame.f_locals.values()):
            self._producers(value, DEPTH, seen, took)
        took.discard(index)
        seed = isinstance(arg, bytes) and b'"step_s"' in arg and not self.made
        if not took and not seed:
            return
        self.took[index] = took
        if _derivable(arg):
            self.made[id(arg)] = (arg, index)
        if frame.f_code.co_name == "__init__" and "self" in frame.f_locals:  # a constructor's result is its self
            this = frame.f_locals["self"]
            self.made[id(this)] = (this, index)
        if (rel, frame.f_code.co_name) == SINK and self.sink is None:
            self.sink = index

    def lineage(self) -> list[int]:
        """The calls the sink's bytes derive from, in the order they started."""
        if self.sink is None:
            raise SystemExit("the ledger's bytes were never derived from the sample: nothing to trace")
        todo, found = [self.sink], {self.sink}
        while todo:
            for before in self.took.get(todo.pop(), ()):
                if before not in found:
                    found.add(before)
                    todo.append(before)
        return sorted(found)


def walk(paths: list[tuple[tuple[str, str], ...]]) -> list[str]:
    """The files the walk through ``paths`` (each distinct path once, in order) visits: up to the frame it shares
    with the path before, then down; consecutive frames in one file are one visit."""
    frames: list[tuple[str, str]] = []
    here: tuple[tuple[str, str], ...] = ()
    done: set[tuple[tuple[str, str], ...]] = set()
    for path in paths:
        if path in done:
            continue
        done.add(path)
        shared = 0
        while shared < min(len(here), len(path)) and here[shared] == path[shared]:
            shared += 1
        frames += list(reversed(here[shared:-1])) if shared < len(here) else []  # back up to the shared frame
        if shared and shared < len(here):
            frames.append(here[shared - 1])
        frames += list(path[shared:])
        here = path
    files: list[str] = []
    for rel, _func in frames:
        if not files or files[-1] != rel:
            files.append(rel)
    return files


def trace() -> dict[str, Any]:
    os.environ["PROBEBOOK_JOBS"] = "1"  # every page in this process, where the profiler sees it
    from render.assemble import stages
    from render.pages import sandbox

    sandbox.MAX_TEMPLATE_SECONDS = 3600.0  # the profiler makes the fit's bootstrap far slower than a page may be
    with tempfile.TemporaryDirectory() as tmp:
        paths = fixture(Path(tmp))
        stages.render_tree(paths)  # every import made and every lazy table built before the traced build
        shutil.rmtree(paths.build)
        tracer = Lineage()

        def traced() -> None:
            tracer.root = sys._getframe()
            sys.setprofile(tracer)
            try:
                stages.render_tree(paths)
            finally:
                sys.setprofile(None)

        traced()
    calls = tracer.lineage()
    visits = walk([tracer.paths[i] for i in calls])
    counts = Counter(visits)
    return {
        "hops": len(visits) - 1,
        "files": len(counts),
        "render_files_visited_twice": sorted(f for f, n in counts.items() if n > 1 and f.startswith("render/")),
        "visits": dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))),
        "walk": visits,
        "lineage_calls": len(calls),
        "calls": [":".join(tracer.paths[i][-1]) for i in calls],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--walk", action="store_true", help="print the files in the order the datum visits them")
    parser.add_argument("--calls", action="store_true", help="print the calls in its lineage, file:function")
    parser.add_argument("--json", action="store_true", help="print the whole result as JSON")
    args = parser.parse_args()
    result = trace()
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(f"{result['hops']} hops over {result['files']} files ({result['lineage_calls']} calls in its lineage)")
    twice = result["render_files_visited_twice"]
    print(f"render files visited more than once: {len(twice)}")
    for rel, n in result["visits"].items():
        print(f"  {n}x {rel}")
    if args.walk:
        print(" -> ".join(result["walk"]))
    if args.calls:
        print("\n".join(result["calls"]))


if __name__ == "__main__":
    main()
