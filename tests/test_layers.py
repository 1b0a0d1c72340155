"""drlhp's folders are layers whose imports point one way, and no module imports one that imports it back.

The written order, lowest first (``LAYERS``): a module may import modules of its own layer or of lower
ones, never of a higher one. The engines (clips, storage, labels, reward, labelling) know nothing of
processes or of the run's settings; ``config`` names the engines' settings types; ``runtime`` is the
only folder that knows processes; the front-ends, the ``drlhp`` command and the Ray cluster stand on
top; the package's face (``drlhp/__init__.py``) and the seed's import paths re-export from all of them.
docs/architecture.md draws the same order.

The graph is read statically (``ast``): every import of a drlhp module, at the top of a module, inside
a function, and under ``if TYPE_CHECKING:`` -- a name imported only for the type checker still ties
one module to the other, and a reader follows it like any import. The package ``__init__`` files and
the re-export modules are modules of their own.
"""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "drlhp"

#: drlhp's layers, lowest first, each a folder or a module of the package. ``face`` is the package itself
#: (``drlhp/__init__.py``) and the seed's import paths that re-export from the folders.
LAYERS = ("version", "errors", "envs", "clips", "storage", "label_store", "reward", "datasets", "labelling", "config",
          "runtime", "frontends", "cli", "cluster", "face")
FACE = ("drlhp", "drlhp.pref_db", "drlhp.reward_predictor", "drlhp.pref_interface", "drlhp.labellers",
        "drlhp.sb3", "drlhp.learning_curve")
#: The only layers that may import ``multiprocessing``: the runtime, and config, which checks ``mp_start_method``
#: against the start methods this platform has.
PROCESS_LAYERS = ("config", "runtime")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def layer_of(module: str) -> str:
    """The layer of a drlhp module: its folder (or top-level module) under ``drlhp``, or ``face``."""
    if module in FACE:
        return "face"
    layer = module.split(".")[1]
    assert layer in LAYERS, f"{module} is in no layer: add {layer!r} to LAYERS (and to docs/architecture.md)"
    return layer


def imported_names(tree: ast.AST, name: str, is_package: bool) -> list[str]:
    """The absolute names of the modules (or of the objects within them) that ``tree`` imports anywhere."""
    found: list[str] = []
    for node in ast.walk(tree):
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
    return found


def all_imports() -> dict[str, set[str]]:
    """Module -> every module name it imports (drlhp's and others, e.g. ``multiprocessing``)."""
    return {name: set(imported_names(ast.parse(path.read_text()), name, path.name == "__init__.py"))
            for name, path in modules().items()}


def import_graph() -> dict[str, set[str]]:
    """Module -> the drlhp modules it imports (``from drlhp.a import b`` imports the package drlhp.a, and
    drlhp.a.b too if that is a module)."""
    known = modules()
    return {name: {t for t in targets if t in known and t != name} for name, targets in all_imports().items()}


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Each import of a module in a higher layer than the importer's, as ``a (layer) -> b (layer)``."""
    rank = {layer: i for i, layer in enumerate(LAYERS)}
    return [f"{a} ({layer_of(a)}) -> {b} ({layer_of(b)})" for a in sorted(graph) for b in sorted(graph[a])
            if rank[layer_of(b)] > rank[layer_of(a)]]


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
    assert "drlhp.labelling.web.labeller" in graph["drlhp.runtime.interface_process"]  # imported inside a function
    assert "drlhp.labelling.answers" in graph["drlhp.labelling.protocols"]  # under TYPE_CHECKING only
    assert all(layer_of(m) in LAYERS for m in graph)  # every module has a layer


def test_find_cycle_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_an_upward_import_is_named_with_both_layers():
    graph = {"drlhp.reward.learner": {"drlhp.runtime.messages", "drlhp.label_store.database"}}
    assert upward_imports(graph) == ["drlhp.reward.learner (reward) -> drlhp.runtime.messages (runtime)"]


def test_every_import_points_down_the_layers():
    upward = upward_imports(import_graph())
    assert not upward, ("these imports run from a lower layer to a higher one (the order, lowest first: "
                        f"{', '.join(LAYERS)}):\n  " + "\n  ".join(upward))


def test_no_import_cycle_inside_drlhp():
    cycle = find_cycle(import_graph())
    assert cycle is None, "drlhp modules import each other in a cycle: " + " -> ".join(cycle or [])


def test_the_labelling_core_knows_no_front_end():
    """The terminal, the window and the web page are plug-ins on the labelling core: the web page imports the
    core, and no module of the core imports the web page (only the runtime chooses which plug-in runs)."""
    graph = import_graph()
    core = [m for m in graph if m.startswith("drlhp.labelling.") and not m.startswith("drlhp.labelling.web")]
    assert "drlhp.labelling.interface" in core and "drlhp.labelling.answers" in graph["drlhp.labelling.web.pool"]
    reverse = {m: sorted(n for n in graph[m] if n.startswith("drlhp.labelling.web")) for m in core}
    assert not {m: n for m, n in reverse.items() if n}, "the labelling core imports the web page"
    assert not [m for m in graph if layer_of(m) in LAYERS[:LAYERS.index("labelling")]
                and any(n.startswith("drlhp.labelling.web") for n in graph[m])]


def test_only_the_runtime_knows_processes():
    importers = sorted(m for m, names in all_imports().items()
                       if any(n == "multiprocessing" or n.startswith("multiprocessing.") for n in names)
                       and layer_of(m) not in PROCESS_LAYERS)
    assert not importers, f"only {PROCESS_LAYERS} may import multiprocessing; these do too: {importers}"


def test_offline_training_starts_no_process_and_makes_no_queue():
    names = all_imports()["drlhp.cli.offline"]
    assert not {"multiprocessing", "queue", "threading"} & names, sorted(names)
    assert not any(n.startswith(("drlhp.runtime.workers", "drlhp.runtime.trainer_process")) for n in names)
