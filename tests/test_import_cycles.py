"""No drlhp module imports, directly or through others, a module that imports it back.

A cycle makes what a module may use at import time depend on which of the two was imported first,
and hides which part sits above which. The graph is read statically (``ast``): every import of a
drlhp module, at the top of a module or inside a function, with the package ``__init__`` files and
the re-export modules of the old import paths as modules of their own. Imports under
``if TYPE_CHECKING:`` are left out: they never run.
"""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "drlhp"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def is_type_checking_block(node: ast.AST) -> bool:
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imported_names(tree: ast.AST, name: str, is_package: bool) -> list[str]:
    """The absolute names of the modules (or of the objects within them) that ``tree`` imports when it runs."""
    found: list[str] = []

    def visit(node: ast.AST) -> None:
        if is_type_checking_block(node):
            for child in node.orelse:  # type: ignore[attr-defined]
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the module's package
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[:len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.append(module)
            found.extend(f"{module}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the drlhp modules it imports (``from drlhp.a import b`` imports the package drlhp.a, and
    drlhp.a.b too if that is a module)."""
    known = modules()
    return {name: {t for t in imported_names(ast.parse(path.read_text()), name, path.name == "__init__.py")
                   if t in known and t != name}
            for name, path in known.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path that ends where it starts, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_the_graph_is_read():
    graph = import_graph()
    assert "drlhp.reward.predictor" in graph["drlhp.reward_predictor"]  # a re-export module
    assert "drlhp.reward.inference" in graph["drlhp.reward.predictor"]
    assert "drlhp.labelling.human" in graph["drlhp.runtime.pipeline"]  # imported inside a function
    assert "drlhp.labelling.web.pool" not in graph["drlhp.labelling.interface"]  # under TYPE_CHECKING only


def test_find_cycle_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_no_import_cycle_inside_drlhp():
    cycle = find_cycle(import_graph())
    assert cycle is None, "drlhp modules import each other in a cycle: " + " -> ".join(cycle or [])
