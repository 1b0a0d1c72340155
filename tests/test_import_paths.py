"""One way in for every name: the re-export modules export only their listed names, and nothing of ours imports
through the seed's import paths, which stay only for the users of the original drlhp's guide."""
from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The original drlhp's module names (its guide: ``../shared/seeds/004_*``) and the names its users import.
SEED_PATHS = {"drlhp.pref_db": {"PrefBuffer", "PrefDB"}, "drlhp.reward_predictor": {"RewardPredictor"},
              "drlhp.pref_interface": {"PrefInterface"}}
#: Modules that are the documented public path of names defined deeper in the package (docs/api/index.md).
PUBLIC_PATHS = {
    "drlhp.labellers": {"Labeller", "ShowsEpisodes", "TimesAnswers", "NamesAnswerers", "GivesSecondOpinions",
                        "ConcurrentLabeller", "ServesPage", "UNDO", "Undo"},
    "drlhp.learning_curve": {"COLUMNS", "LearningCurveWriter", "current_rows", "curve_from_rows", "learning_curve_path",
                             "next_session", "read_learning_curve", "read_rows"},
    "drlhp.sb3": {"HumanPreferencesLogger", "HumanPreferencesVecEnvWrapper", "KeepRewardModels", "NoveltyReplayBuffer",
                  "RelabelReplayBuffer", "reward_history"},
}


def imported_modules(path: Path) -> set[str]:
    """The absolute module names ``path`` imports (``import a.b``, ``from a.b import c``: a.b and a.b.c)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def test_nothing_of_ours_imports_through_the_seeds_paths():
    ours = [p for folder in ("drlhp", "examples", "benchmarks", "tests") for p in (ROOT / folder).rglob("*.py")
            if p.name != "test_import_paths.py" and p.stem not in {m.split(".")[1] for m in SEED_PATHS}]
    assert len(ours) > 100
    through = {str(p.relative_to(ROOT)): sorted(imported_modules(p) & set(SEED_PATHS)) for p in ours}
    assert not {p: m for p, m in through.items() if m}, "import from the defining module or from drlhp instead"
    docs = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]
    mentioned = {str(p.relative_to(ROOT)) for p in docs if p.name != "history.md"
                 and re.search(r"\bdrlhp\.(pref_db|reward_predictor|pref_interface)\b", p.read_text())}
    assert not mentioned, "the docs name each name by its one path"


def test_each_re_export_module_exports_only_its_listed_names():
    for module_name, names in {**SEED_PATHS, **PUBLIC_PATHS}.items():
        module = importlib.import_module(module_name)
        assert set(module.__all__) == names, module_name
        public = {n for n, v in vars(module).items() if not n.startswith("_") and not isinstance(v, type(ast))}
        assert public - {"annotations"} == names, f"{module_name} has more than its names: {public - names}"


def test_the_seeds_names_are_the_packages_own_objects():
    import drlhp
    from drlhp.labelling.interface import PrefInterface as DefinedPrefInterface
    from drlhp.pref_db import PrefBuffer, PrefDB
    from drlhp.pref_interface import PrefInterface
    from drlhp.reward_predictor import RewardPredictor

    assert (PrefBuffer, PrefDB, RewardPredictor) == (drlhp.PrefBuffer, drlhp.PrefDB, drlhp.RewardPredictor)
    assert PrefInterface is DefinedPrefInterface


def task_scripts() -> dict[str, Path]:
    """The examples users run (``python examples/<task>.py``): those with a ``__main__`` block; the rest of examples/
    are the modules they share (``common``, the recipes, the agent checkpoint)."""
    def runs_as_script(path: Path) -> bool:
        return any(isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
                   and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__"
                   for node in ast.parse(path.read_text(), str(path)).body)

    return {p.stem: p for p in sorted((ROOT / "examples").glob("*.py")) if runs_as_script(p)}


def test_no_example_imports_a_task_script():
    """What task scripts share lives in a module of its own (``atari_recipe``, ``mujoco_recipe``, ``common``): a
    task script is run, never imported by another example."""
    tasks = task_scripts()
    assert {"pong_ppo", "breakout_ppo", "halfcheetah_sac", "hopper_sac"} <= set(tasks)
    assert not {"common", "atari_recipe", "mujoco_recipe", "agent_checkpoint"} & set(tasks)
    offenders = {}
    for path in sorted((ROOT / "examples").glob("*.py")):
        imported = {name.split(".")[0] for name in imported_modules(path)} & set(tasks) - {path.stem}
        if imported:
            offenders[str(path.relative_to(ROOT))] = sorted(imported)
    assert not offenders, (f"these examples import task scripts: {offenders}; move what they share into a module "
                           "that is no task script (examples/atari_recipe.py, mujoco_recipe.py, common.py)")


def path_edits(path: Path) -> list[str]:
    """Where ``path`` edits ``sys.path`` (a call of its methods, an assignment to it or into it, ``from sys import
    path``) or loads a module by its file's path (``spec_from_file_location``), as ``line: what``."""
    def is_sys_path(node: ast.AST) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr == "path" and isinstance(node.value, ast.Name)
                and node.value.id == "sys")

    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and is_sys_path(node.func.value):
            found.append(f"{node.lineno}: sys.path.{node.func.attr}(...)")
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(is_sys_path(t) or (isinstance(t, ast.Subscript) and is_sys_path(t.value)) for t in targets):
                found.append(f"{node.lineno}: an assignment to sys.path")
        elif isinstance(node, ast.ImportFrom) and node.module == "sys" and any(a.name == "path" for a in node.names):
            found.append(f"{node.lineno}: from sys import path")
        elif isinstance(node, ast.Attribute) and node.attr == "spec_from_file_location":
            found.append(f"{node.lineno}: a module loaded by its path (spec_from_file_location)")
    return found


def test_no_example_or_benchmark_edits_sys_path():
    """An example imports its folder's modules as ``python examples/<task>.py`` has them; a benchmark that needs the
    examples' runs with examples/ on PYTHONPATH (``benchmarks/examples_path.py``): neither edits ``sys.path``."""
    files = [p for folder in ("examples", "benchmarks") for p in sorted((ROOT / folder).rglob("*.py"))]
    assert len(files) > 30
    edits = {str(p.relative_to(ROOT)): found for p in files if (found := path_edits(p))}
    assert not edits, (f"these edit sys.path or load a module by its path: {edits}; import from the file's own folder, "
                       "or run with examples/ on PYTHONPATH: benchmarks/examples_path.py's with_examples()")


def test_no_module_name_is_in_two_of_examples_tests_and_the_root():
    """examples/ and tests/ are on the tests' path beside the repository's root (whose ``benchmarks`` package the
    tests import), and examples/ on a benchmark's that uses the examples: a name in two of them would shadow one
    module with another."""
    folders: dict[str, list[str]] = {}
    for folder in ("examples", "tests", "."):
        for p in (ROOT / folder).iterdir():
            if p.suffix == ".py" or (p / "__init__.py").exists():
                folders.setdefault(p.stem, []).append(folder)
    shared = {name: where for name, where in folders.items() if len(where) > 1}
    assert not shared, f"these module names are in more than one folder: {shared}; rename one of each"
