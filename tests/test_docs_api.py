"""The API reference (docs/api/) lists every public name, each with its docstring, and the site builds strictly.

Public names are those of the modules users import from: each module's ``__all__``, or, without
one, what the module itself defines without a leading underscore, plus the names the guide
tells users to import from elsewhere. They are read statically with griffe, as mkdocstrings
reads them, so these tests import neither torch nor Ray.
"""
from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import griffe
import pytest

ROOT = Path(__file__).resolve().parent.parent
PUBLIC_MODULES = ["drlhp", "drlhp.sb3", "drlhp.envs", "drlhp.datasets", "drlhp.cluster", "drlhp.cluster.rllib"]
# Named by the guide as things to import, from modules that are otherwise internal.
ALSO_PUBLIC = ["drlhp.labellers.Labeller", "drlhp.labellers.ShowsEpisodes", "drlhp.labellers.TimesAnswers",
               "drlhp.labellers.ConcurrentLabeller", "drlhp.labellers.ServesPage", "drlhp.labellers.NamesAnswerers",
               "drlhp.labellers.GivesSecondOpinions",
               "drlhp.learning_curve.read_learning_curve"]

# Public names without a docstring, reported to the package's owners; the test fails for any other.
# Empty since issue #19: keep it so.
MISSING_DOCSTRINGS: set[str] = set()


@pytest.fixture(scope="module")
def package() -> griffe.Module:
    return griffe.load("drlhp", search_paths=[str(ROOT)], allow_inspection=False)


def public_names(package: griffe.Module) -> list[str]:
    names = []
    for module_path in PUBLIC_MODULES:
        module = package if module_path == "drlhp" else package[module_path.split(".", 1)[1]]
        if module.exports is not None:
            exported = [e if isinstance(e, str) else e.name for e in module.exports]
        else:
            exported = [n for n, m in module.members.items() if not n.startswith("_") and not m.is_alias
                        and not m.is_module and (m.is_class or m.is_function)]
        names += [f"{module_path}.{n}" for n in exported]
    return names + ALSO_PUBLIC


def target(package: griffe.Module, path: str) -> griffe.Object:
    obj = package[path.split(".", 1)[1]]
    return obj.final_target if obj.is_alias else obj


def public_members(cls: griffe.Class) -> dict[str, griffe.Object]:
    """The methods and properties a user calls (inherited ones included) that drlhp defines, by name."""
    members = {}
    for name, member in cls.all_members.items():
        if name.startswith("_"):
            continue
        member = member.final_target if member.is_alias else member
        if member.path.startswith("drlhp.") and (member.is_function or "property" in member.labels):
            members[name] = member
    return members


def documented_in_reference() -> set[str]:
    return {m.group(1) for page in (ROOT / "docs" / "api").glob("*.md")
            for m in re.finditer(r"^::: ([\w.]+)", page.read_text(), re.M)}


def test_the_reference_lists_every_public_name(package):
    names = public_names(package)
    assert len(names) >= 25  # the lists above found the package's names
    missing = [n for n in names if n not in documented_in_reference()]
    assert not missing, f"public names missing from docs/api/*.md (add '::: NAME' to a page): {missing}"


def test_the_reference_names_only_public_names(package):
    """Each entry names an object by the path users import it from, which must exist."""
    public = set(public_names(package)) | set(PUBLIC_MODULES)
    for path in documented_in_reference():
        assert path in public, f"docs/api names {path}, which is not a public import path"
        target(package, path)  # resolvable


def test_every_public_name_has_a_docstring(package):
    without = []
    for name in public_names(package):
        obj = target(package, name)
        if not obj.docstring:
            without.append(name)
        if obj.is_class:  # named by the public path, so the list survives modules moving inside drlhp
            without += [f"{name}.{member}" for member, m in public_members(obj).items() if not m.docstring]
    unexpected = sorted(set(without) - MISSING_DOCSTRINGS)
    assert not unexpected, f"public names without a docstring: {unexpected}"


def words(text: str) -> str:
    """The words of ``text`` (markup, punctuation and spacing around code spans do not matter)."""
    return " ".join(re.findall(r"\w+", text))


def text_of(page_html: str) -> str:
    """The words of the page as a reader sees it (tags dropped)."""
    return words(html.unescape(re.sub(r"<[^>]+>", " ", page_html)))


def first_sentence(docstring: str) -> str:
    return words(docstring.strip().split("\n\n")[0].split(". ")[0])


def test_the_built_site_shows_every_public_name_with_its_docstring(package, tmp_path):
    site = tmp_path / "site"
    build = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                           cwd=ROOT, capture_output=True, text=True, env={"NO_MKDOCS_2_WARNING": "1",
                                                                        "PATH": str(Path(sys.executable).parent)})
    assert build.returncode == 0, build.stdout + build.stderr
    api_html = {p: p.read_text() for p in (site / "api").rglob("index.html")}
    for name in public_names(package):
        pages = [p for p, text in api_html.items() if f'id="{name}"' in text]
        assert pages, f"{name} has no entry in the built API reference"
        docstring = target(package, name).docstring
        if docstring:
            sentence = first_sentence(docstring.value)
            assert sentence in text_of(api_html[pages[0]]), f"{name}'s docstring ({sentence!r}) is not on its page"
