"""The task-kind contract: every registered kind is served from its own folder, and nothing outside the
kinds' folders names a kind."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from django.template.loader import get_template

from annotate.tasks import KIND_PACKAGES, TASK_KINDS, default_kind, folder_modules, get_kind, task_urlpatterns
from explain_engine.api import DuplicateName, UnknownName

ROOT = Path(__file__).resolve().parents[2]
KIND_FOLDERS = [ROOT / "annotate" / "kinds" / package for package in KIND_PACKAGES]
#: Files outside the kinds' folders allowed to name a kind, and why.
ALLOWED = {
    # Django finds management commands only in management/commands; this one imports YELP-HAT's raw
    # answers, which are highlight answers, so it imports the highlight folder's importer.
    ROOT / "annotate" / "management" / "commands" / "import_yelphat.py",
}


@pytest.mark.parametrize("name", list(TASK_KINDS))
def test_every_kind_has_a_page_template_and_script(name):
    kind = get_kind(name)
    assert get_template(kind.template)
    assert kind.page_script.startswith("hatlab/kinds/") and kind.page_script.endswith(".js")
    source = (
        ROOT / "frontend" / "src" / "kinds" / (kind.page_script.removeprefix("hatlab/kinds/")[:-3] + ".ts")
    )
    assert source.is_file(), f"{name}: no page module {source}"
    assert kind.results_page() is None or get_template(kind.results_page().template)


def test_registry_refuses_a_second_kind_of_a_name_and_lists_the_known_ones():
    kind = get_kind(default_kind())
    with pytest.raises(DuplicateName):
        TASK_KINDS.add(kind.name, kind)
    with pytest.raises(UnknownName, match="known: .*" + re.escape(kind.name)):
        get_kind("no-such-kind")


def test_routes_and_demos_are_gathered_from_the_kind_folders():
    names = {pattern.name for pattern in task_urlpatterns()}
    assert not {name for name in names if name.endswith(("-results", "-csv", "-export"))} - {
        "api-forced-choice-results"
    }, "results pages are mounted for every kind at study-results, not by a kind's urls.py"
    assert all(callable(module.seed_demo) for module in folder_modules("demo"))
    assert len(folder_modules("demo")) == len(KIND_PACKAGES)


def _sources() -> list[Path]:
    roots = [ROOT / "annotate", ROOT / "config", ROOT / "frontend" / "src"]
    files = [p for root in roots for p in root.rglob("*") if p.suffix in {".py", ".html", ".ts"}]
    return [
        p
        for p in files
        if "migrations" not in p.parts
        and p not in ALLOWED
        and not any(p.is_relative_to(folder) for folder in KIND_FOLDERS)
        and not p.is_relative_to(ROOT / "frontend" / "src" / "kinds")
    ]


def test_nothing_outside_the_kind_folders_names_a_kind():
    """A kind's name in quotes, or its folder in an import path, outside the kinds' own folders."""
    names = "|".join(sorted({*TASK_KINDS, *KIND_PACKAGES}))
    pattern = re.compile(rf"""["']({names})["']|kinds[./]({names})\b""")
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in _sources()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert found == []


def test_a_kind_is_declared_on_its_class():
    """``@register`` takes nothing but the class: the registry's metadata are the class's attributes."""
    for name in TASK_KINDS:
        kind = get_kind(name)
        assert dict(TASK_KINDS.meta(name)) == {key: getattr(kind, key) for key in kind.registry_meta}
        assert kind.label, f"{name}: no label"
    assert TASK_KINDS.where(default=True) == [default_kind()]
    assert TASK_KINDS.where(attention_maps=True) == [n for n in TASK_KINDS if get_kind(n).attention_maps]
    families = {get_kind(n).family for n in TASK_KINDS} - {""}
    for family in families:
        assert all(get_kind(n).family == family for n in TASK_KINDS.where(family=family))


KIND_TEMPLATES = sorted((ROOT / "annotate" / "kinds").glob("*/templates/**/*.html"))
KIND_STYLESHEET = re.compile(r"""\{%\s*static\s+['"]hatlab/kinds/([a-z_]+)\.css['"]\s*%\}""")


def test_kind_templates_hold_no_css():
    """A kind's CSS lives in frontend/src/kinds/<kind>.css, not in its templates."""
    inline = re.compile(r"<style\b|\sstyle\s*=", re.IGNORECASE)
    found = [str(p.relative_to(ROOT)) for p in KIND_TEMPLATES if inline.search(p.read_text(encoding="utf-8"))]
    assert found == []


def test_kind_stylesheets_are_linked_and_built():
    """Every stylesheet a kind's template links is a source in frontend/src/kinds/ (built to
    dist/hatlab/kinds/ without a list), and every such source is linked by a template."""
    sources = {p.stem for p in (ROOT / "frontend" / "src" / "kinds").glob("*.css")}
    linked = {name for p in KIND_TEMPLATES for name in KIND_STYLESHEET.findall(p.read_text(encoding="utf-8"))}
    assert linked and linked <= sources, f"linked without a source: {sorted(linked - sources)}"
    assert sources <= linked, f"stylesheets no template links: {sorted(sources - linked)}"
    dist = ROOT / "frontend" / "dist" / "hatlab" / "kinds"
    if dist.is_dir():  # after `npm run build`
        missing = sorted(name for name in sources if not (dist / f"{name}.css").is_file())
        assert missing == [], f"not built (run npm run build in frontend/): {missing}"


#: The modules every kind folder has: the package's face, the kind class, its config schema, create form,
#: results page and demo studies.
SHAPE = ("__init__.py", "kind.py", "config.py", "forms.py", "results.py", "demo.py")
#: The most lines a kind folder's ``__init__.py`` may have: a docstring and the names it hands on.
FACE_LINES = 25


def shape_problems(folder: Path) -> list[str]:
    """What ``folder`` lacks of the kind folders' common shape, in words (empty: it has the shape)."""
    problems = [f"no {name}" for name in SHAPE if not (folder / name).is_file()]
    if not (folder / "templates" / folder.name).is_dir():
        problems.append(f"no templates/{folder.name}/")
    init = folder / "__init__.py"
    if init.is_file():
        source = init.read_text(encoding="utf-8")
        if len(source.splitlines()) > FACE_LINES:
            problems.append(f"__init__.py over {FACE_LINES} lines (the kind class belongs in kind.py)")
        defined = [n.name for n in ast.parse(source).body if isinstance(n, ast.FunctionDef | ast.ClassDef)]
        if defined:
            problems.append(f"__init__.py defines {', '.join(defined)} (it only hands names on)")
    if (folder / "views.py").is_file() and not (folder / "urls.py").is_file():
        problems.append("views.py without urls.py")
    return problems


@pytest.mark.parametrize("folder", KIND_FOLDERS, ids=lambda folder: folder.name)
def test_every_kind_folder_has_the_common_shape(folder):
    assert shape_problems(folder) == []


@pytest.mark.parametrize("name", list(TASK_KINDS))
def test_every_kind_class_is_built_on_its_folders_kind_module(name):
    """A kind's class is defined in its folder's kind.py, or derives from a class defined there (a family)."""
    cls = type(get_kind(name))
    package = cls.__module__.rsplit(".", 1)[0]
    kind_module = f"{package}.kind"
    assert any(base.__module__ == kind_module for base in cls.__mro__), f"{name}: nothing of {kind_module}"


def test_the_shape_check_finds_what_a_folder_lacks(tmp_path):
    folder = tmp_path / "new_kind"
    (folder / "templates" / "new_kind").mkdir(parents=True)
    for name in SHAPE:
        (folder / name).write_text('"""A module."""\n')
    assert shape_problems(folder) == []
    (folder / "results.py").unlink()
    (folder / "views.py").write_text("")
    (folder / "__init__.py").write_text('"""A kind."""\n\n\nclass NewKind:\n    pass\n')
    assert shape_problems(folder) == [
        "no results.py",
        "__init__.py defines NewKind (it only hands names on)",
        "views.py without urls.py",
    ]
