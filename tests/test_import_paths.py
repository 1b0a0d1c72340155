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
    "drlhp.sb3": {"HumanPreferencesLogger", "HumanPreferencesVecEnvWrapper", "RelabelReplayBuffer"},
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
