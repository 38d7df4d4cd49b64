"""The import layout: no cycle among the project's modules, render's and measure's floors, and render/ holds only
sub-packages at its top.

Every import is counted, wherever it sits (at the top, inside a function, under ``TYPE_CHECKING``), so
a cycle cannot hide behind a deferred import. The one exception is ``measure/workload``'s lazy-torch
façade, whose package ``__init__`` reaches its modules by name only when an attribute is asked for.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("measure", "render", "probebook")
ALLOWED_CYCLE_PACKAGES = ("measure.workload",)
"""The deliberate lazy-torch façade: its ``__init__`` and its modules import each other on purpose."""

FLOORS: dict[str, tuple[tuple[str, ...], ...]] = {
    "render": (
        ("errors",),
        ("derive",),
        ("numbers",),
        ("charts", "tables"),
        ("pages",),
        ("evidence",),
        ("functions", "site"),
        ("assemble",),
    ),
    "measure": (
        (
            *("batching", "compare", "compiler_cache", "constants", "curvature", "device_check", "errors"),
            *("graphs", "host_load", "integrity", "lifetime", "machine", "options", "peakmem", "progress"),
            *("timing", "utilisation"),
        ),
        ("evidence",),
        ("corpus", "workload"),
        ("run",),
        ("probes",),
        ("cli", "__main__"),
    ),
}
"""Each top package's sub-packages and top-level modules, lowest floor first: an import may go to its own floor
or a lower one, never up, and the parts form no cycle (ARCHITECTURE.md §Which way imports go)."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The project modules ``name`` imports: ``from a.b import c`` counts ``a.b.c`` when that is a module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*up, base] if base else up)
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        found.update(t for t in targets if t in known and t != name)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(name, path, known) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _allowed(component: list[str]) -> bool:
    return all(m == p or m.startswith(p + ".") for m in component for p in ALLOWED_CYCLE_PACKAGES)


def test_finds_a_cycle_when_there_is_one() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_among_the_project_modules() -> None:
    graph = _graph()
    assert len(graph) > 100 and graph["render.assemble.stages"], "the graph must see the project's modules and imports"
    cycles = [c for c in _cycles(graph) if not _allowed(c)]
    assert cycles == []


def test_render_top_level_holds_only_errors_and_init() -> None:
    top = sorted(p.name for p in (ROOT / "render").glob("*.py"))
    assert top == ["__init__.py", "errors.py"]
    packages = sorted(p.name for p in (ROOT / "render").iterdir() if (p / "__init__.py").is_file())
    assert packages == ["assemble", "charts", "derive", "evidence", "functions", "numbers", "pages", "site", "tables"]


def _floor_of(top: str) -> dict[str, int]:
    floors: dict[str, int] = {}
    for i, parts in enumerate(FLOORS[top]):
        for part in parts:
            floors[part] = i
    return floors


def _part(module: str, top: str) -> str | None:
    """The sub-package or top-level module of ``top`` that ``module`` belongs to; None outside ``top`` or for
    ``top``'s own ``__init__``."""
    parts = module.split(".")
    return parts[1] if parts[0] == top and len(parts) > 1 else None


def _upward(graph: dict[str, set[str]], top: str, floors: dict[str, int]) -> list[str]:
    """Every import of one part of ``top`` from another on a higher floor, as ``module imports target``."""
    found = []
    for module, targets in sorted(graph.items()):
        here = _part(module, top)
        if here is None:
            continue
        for target in sorted(targets):
            there = _part(target, top)
            if there is not None and there != here and floors[there] > floors[here]:
                found.append(f"{module} (floor {floors[here]}) imports {target} (floor {floors[there]})")
    return found


def _parts_graph(graph: dict[str, set[str]], top: str) -> dict[str, set[str]]:
    parts: dict[str, set[str]] = {}
    for module, targets in graph.items():
        here = _part(module, top)
        if here is None:
            continue
        edges = parts.setdefault(here, set())
        for target in targets:
            there = _part(target, top)
            if there is not None and there != here:
                edges.add(there)
                parts.setdefault(there, set())
    return parts


def test_the_floor_check_finds_an_import_that_goes_up() -> None:
    floors = {"low": 0, "high": 1}
    graph = {"t.low.a": {"t.high.b"}, "t.high.b": {"t.low.c"}, "t.low.c": set()}
    assert _upward(graph, "t", floors) == ["t.low.a (floor 0) imports t.high.b (floor 1)"]
    assert _upward({"t.high.b": {"t.low.c"}, "t.low.c": set()}, "t", floors) == []


def test_every_part_of_render_and_measure_has_a_floor() -> None:
    for top, rows in FLOORS.items():
        listed = [part for parts in rows for part in parts]
        assert len(listed) == len(set(listed)), f"{top}: a part is on two floors"
        present = {p.stem if p.is_file() else p.name for p in (ROOT / top).iterdir()}
        present = {
            name
            for name in present
            if ((ROOT / top / name / "__init__.py").is_file() or (ROOT / top / f"{name}.py").is_file())
            and name != "__init__"
        }
        assert sorted(present) == sorted(listed), f"{top}: place each sub-package and module on a floor in FLOORS"


def test_imports_go_to_the_same_floor_or_a_lower_one() -> None:
    graph = _graph()
    for top in FLOORS:
        assert _upward(graph, top, _floor_of(top)) == [], f"{top}: an import goes up a floor"


def test_no_cycle_among_the_sub_packages() -> None:
    graph = _graph()
    for top in FLOORS:
        parts = _parts_graph(graph, top)
        assert len(parts) > 5, f"{top}: the graph must see its parts"
        assert _cycles(parts) == [], f"{top}: its sub-packages import each other in a loop"
