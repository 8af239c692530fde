"""No import cycle among product modules (``pincompile/`` and ``reconciler/``), so each
module can be read, tested and moved with only the modules below it; and no product module
imports the local fleet (``reconciler/fleet/``, for trying things and for the tests) but the
fleet's own.

Every ``import`` statement counts, wherever it stands: at module level, inside a function
(a lazy import, kept lazy for start-up time), and under ``if TYPE_CHECKING:``. A cycle that
laziness or a type-checking guard hides is still two modules that need each other, one
refactor away from an ``ImportError`` at import time; the lazy import stays allowed, the
cycle does not. Two things are not edges: the packages a module sits in (importing
``a.b.c`` runs ``a/__init__`` and ``a/b/__init__``, so a package's ``__init__`` may
re-export its own submodules), and modules named by a string (``pincompile.cli``'s table
of lazily loaded commands). ``from a.b import c`` where ``c`` is a module imports ``a.b.c``
(and, from outside ``a.b``, runs ``a/b/__init__``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("pincompile", "reconciler")


def modules(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """Dotted module name → its file, for every module of ``packages`` under ``root``."""
    found = {}
    for package in packages:
        for path in (root / package).rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts).removesuffix(".__init__")] = path
    return found


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool,
              known: dict[str, Path]) -> Iterator[str]:
    """The dotted names one import statement of ``module`` imports."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:  # relative: from the package ``module`` is in (or is)
        parts = module.split(".")
        parts = parts[:len(parts) - node.level + (1 if is_package else 0)]
        base = ".".join([*parts, *([node.module] if node.module else [])])
    for alias in node.names:
        yield f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base


def _edges(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The product modules ``module`` imports, the packages of each included, except the
    packages ``module`` itself sits in."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        for name in _imported(node, module, path.name == "__init__.py", known):
            parts = name.split(".")
            for end in range(1, len(parts) + 1):
                target = ".".join(parts[:end])
                if (target in known and target != module
                        and not module.startswith(target + ".")):
                    found.add(target)
    return found


def import_graph(root: Path, packages: Iterable[str]) -> dict[str, set[str]]:
    """Module → the product modules it imports (see the module docstring)."""
    known = modules(root, packages)
    return {name: _edges(name, path, known) for name, path in known.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (as a path that ends where it starts) per strongly connected group of
    modules that import each other (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = stack[stack.index(node):]
                    del stack[stack.index(node):]
                    if len(group) > 1:
                        groups.append(group)
            elif target not in index:
                index[target] = low[target] = len(index)
                stack.append(target)
                work.append((target, iter(sorted(graph[target]))))
            elif target in stack:
                low[node] = min(low[node], index[target])
    return [_path_within(sorted(group), graph) for group in groups]


def _path_within(group: list[str], graph: dict[str, set[str]]) -> list[str]:
    """A cycle through the first module of ``group`` (breadth first, inside the group)."""
    first, members = group[0], set(group)
    came_from: dict[str, str] = {}
    frontier = [first]
    while frontier:
        step = []
        for node in frontier:
            for target in sorted(graph[node] & members):
                if target == first:
                    path = [node]
                    while path[-1] != first:
                        path.append(came_from[path[-1]])
                    return [first, *reversed(path[:-1]), first]
                if target not in came_from:
                    came_from[target] = node
                    step.append(target)
        frontier = step
    return group


def test_no_import_cycle_among_product_modules() -> None:
    graph = import_graph(REPO, PACKAGES)
    assert len(graph) > 200  # the walk found the product
    # module-level, function-local and type-checking imports all seen
    assert {"pincompile.pipeline", "pincompile.incremental.stored",
            "pincompile.emit.parallel"} <= graph["pincompile.compiler"]
    assert [" → ".join(cycle) for cycle in cycles(graph)] == []


def test_no_product_module_imports_the_local_fleet() -> None:
    graph = import_graph(REPO, PACKAGES)
    fleet = "reconciler.fleet"
    assert {module: sorted(t for t in targets if t == fleet or t.startswith(fleet + "."))
            for module, targets in graph.items()
            if module != fleet and not module.startswith(fleet + ".")
            and any(t == fleet or t.startswith(fleet + ".") for t in targets)} == {}


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_a_cycle_hidden_by_a_lazy_or_type_checking_import_is_found(tmp_path: Path) -> None:
    root = _write(tmp_path, {
        "app/__init__.py": "from app.low import helper\n",  # re-exports: no cycle
        "app/low.py": "def helper() -> None:\n    pass\n",
        "app/high.py": "from app import low\n"
                       "def run() -> None:\n    from app.mid import step\n",
        "app/mid.py": "from typing import TYPE_CHECKING\n"
                      "if TYPE_CHECKING:\n    from app.high import run\n",
        "app/sub/__init__.py": "from . import leaf\n",
        "app/sub/leaf.py": "from .. import low\n",
    })
    graph = import_graph(root, ["app"])
    assert graph["app"] == {"app.low"} and graph["app.low"] == set()
    assert graph["app.sub"] == {"app.sub.leaf"} and graph["app.sub.leaf"] == {"app.low"}
    assert cycles(graph) == [["app.high", "app.mid", "app.high"]]
