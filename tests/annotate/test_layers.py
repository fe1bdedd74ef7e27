"""The cross-cutting layers: no import circle through the app's URLs, API, pages, jobs or dashboards
(deferred imports counted), none through the task kinds and no import deferred into a kind's function;
only the API and the URLconf import the API layer, and no domain package imports the pages; every job
declared through one helper and registered once."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from celery import current_app

from annotate.jobs import base as jobs_base
from explain_engine.api import DuplicateName
from tools.import_circles import circles, import_graph, inline_imports, module_names

ROOT = Path(__file__).resolve().parents[2]
TASKS = ("annotate.tasks", "annotate.kinds", "annotate.quality", "annotate.exports")
LAYERS = ("annotate.api", "annotate.views", "annotate.jobs", "annotate.dashboards", "annotate.access")
#: Where ``annotate.api`` may be imported: the API itself and the URLconf that mounts it.
API_USERS = ("annotate.api", "annotate.urls")
#: The domain packages: they never import the pages (``annotate.views``).
DOMAIN = (
    "annotate.accounts",
    "annotate.studies",
    "annotate.handout",
    "annotate.quality",
    "annotate.machine",
    "annotate.dashboards",
    "annotate.exports",
    "annotate.corpus",
    "annotate.crowd",
    "annotate.protocol",
)


def _under(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(f"{p}.") for p in packages)


def imports_into(
    root: Path, target: str, *, allowed: tuple[str, ...] = (), only: tuple[str, ...] = ()
) -> dict:
    """Modules of the package at ``root`` (those under ``only`` when given, none under ``allowed``) that
    import ``target`` or a module under it, deferred imports included: ``{module: [imported, ...]}``."""
    graph = import_graph(module_names(root), deferred=True)
    return {
        name: found
        for name, targets in sorted(graph.items())
        if not _under(name, allowed) and (not only or _under(name, only))
        if (found := sorted(t for t in targets if _under(t, (target,))))
    }


def test_no_import_circle_runs_through_the_layers():
    graph = import_graph(module_names(ROOT / "annotate"), deferred=True)
    touching = [c for c in circles(graph) if any(m.startswith(LAYERS) for m in c)]
    assert touching == []


def test_the_task_kinds_import_at_the_top_and_no_circle_runs_through_them():
    """A kind imports its results and exports when it loads (the app loads the kinds once it is ready,
    :func:`annotate.tasks.load_kinds`), so nothing there needs an import inside a function."""
    known = module_names(ROOT / "annotate")
    touching = [c for c in circles(import_graph(known, deferred=True)) if any(m.startswith(TASKS) for m in c)]
    assert touching == []
    deferred = {
        name: lines
        for name, path in known.items()
        if name.startswith(TASKS) and (lines := inline_imports(ast.parse(path.read_text(), str(path))))
    }
    assert deferred == {}


def test_the_circle_finder_finds_a_circle(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg import b\n")
    (package / "b.py").write_text("def f():\n    from pkg.a import x\n")
    known = module_names(package)
    assert circles(import_graph(known)) == []
    assert circles(import_graph(known, deferred=True)) == [["pkg.a", "pkg.b"]]


def test_only_the_api_and_the_urlconf_import_the_api_layer():
    assert imports_into(ROOT / "annotate", "annotate.api", allowed=API_USERS) == {}


def test_no_domain_package_imports_the_pages():
    assert imports_into(ROOT / "annotate", "annotate.views", only=DOMAIN) == {}


#: The floors below the domain packages, each with the app packages it may import (README, "One rule for
#: the app's packages"): the kind contract, the job machinery, the shared infrastructure and the rows.
BELOW = {
    "annotate.tasks": (
        "annotate.tasks",
        "annotate.access",
        "annotate.infra",
        "annotate.models",
        "annotate.crowd.providers",
    ),
    "annotate.jobs": ("annotate.jobs", "annotate.models", "annotate"),
    "annotate.infra": ("annotate.infra", "annotate.models"),
    "annotate.models": ("annotate.models",),
}


def imports_outside(root: Path, package: str, allowed: tuple[str, ...]) -> dict:
    """Modules under ``package`` that import a module of the app outside ``allowed`` (``"annotate"`` alone
    allows the bare package), deferred imports included: ``{module: [imported, ...]}``."""
    known = module_names(root)
    graph = import_graph(known, deferred=True)
    bare = "annotate" in allowed
    return {
        name: found
        for name, targets in sorted(graph.items())
        if _under(name, (package,))
        if (
            found := sorted(
                t
                for t in targets
                if t in known
                and not (bare and t == "annotate")
                and not _under(t, tuple(a for a in allowed if a != "annotate"))
            )
        )
    }


@pytest.mark.parametrize("package", sorted(BELOW))
def test_the_lower_floors_import_only_what_lies_below(package):
    assert imports_outside(ROOT / "annotate", package, BELOW[package]) == {}


def test_no_domain_package_imports_a_kind():
    """The kinds are plug-ins on the top floor: the domain packages and the contract reach them through the
    registry (:data:`annotate.tasks.TASK_KINDS`), never by import."""
    assert imports_into(ROOT / "annotate", "annotate.kinds", only=(*DOMAIN, "annotate.tasks")) == {}


def test_the_floor_check_finds_an_import_upwards(tmp_path):
    app = tmp_path / "annotate"
    for package in ("", "jobs", "machine", "models", "kinds", "quality"):
        (app / package).mkdir(exist_ok=True)
        (app / package / "__init__.py").write_text("")
    (app / "models" / "rows.py").write_text("")
    (app / "machine" / "runs.py").write_text("")
    (app / "jobs" / "base.py").write_text(
        "from annotate.models import rows\ndef f():\n    from annotate.machine import runs\n"
    )
    (app / "kinds" / "x.py").write_text("")
    (app / "quality" / "grading.py").write_text("from annotate.kinds import x\n")
    assert imports_outside(app, "annotate.jobs", BELOW["annotate.jobs"]) == {
        "annotate.jobs.base": ["annotate.machine.runs"]
    }
    assert imports_into(app, "annotate.kinds", only=DOMAIN) == {
        "annotate.quality.grading": ["annotate.kinds.x"]
    }


def test_the_layer_checks_find_an_import_across(tmp_path):
    app = tmp_path / "annotate"
    for package in ("", "api", "views", "studies", "tasks"):
        (app / package).mkdir(exist_ok=True)
        (app / package / "__init__.py").write_text("")
    (app / "urls.py").write_text("from annotate.api import views\n")
    (app / "api" / "views.py").write_text("from annotate.studies import service\n")
    (app / "views" / "pages.py").write_text("def page():\n    from annotate.api.views import x\n")
    (app / "tasks" / "kind.py").write_text("import annotate.api.views\n")
    (app / "studies" / "service.py").write_text("def f():\n    from annotate import views\n")
    (app / "studies" / "drafts.py").write_text("from annotate.views.pages import page\n")
    assert imports_into(app, "annotate.api", allowed=API_USERS) == {
        "annotate.tasks.kind": ["annotate.api.views"],
        "annotate.views.pages": ["annotate.api.views"],
    }
    assert imports_into(app, "annotate.views", only=DOMAIN) == {
        "annotate.studies.drafts": ["annotate.views.pages"],
        "annotate.studies.service": ["annotate.views"],
    }


def test_jobs_are_registered_with_the_shared_options():
    assert {
        "annotate.machine.train_model",
        "annotate.machine.explain_model",
        "annotate.dashboards.compute_dashboard",
        "annotate.release_expired_assignments",
    } <= set(jobs_base.JOBS)
    train = jobs_base.JOBS["annotate.machine.train_model"]
    assert train.acks_late and train.reject_on_worker_lost
    assert tuple(train.autoretry_for) == jobs_base.TRANSIENT_ERRORS
    assert jobs_base.JOBS.meta("annotate.release_expired_assignments")["every_s"] == 60.0
    schedule = current_app.conf.beat_schedule["release-expired-assignments"]
    assert schedule["task"] == "annotate.release_expired_assignments"


def test_a_job_name_is_taken_once():
    with pytest.raises(DuplicateName):
        jobs_base.job("annotate.machine.train_model")(lambda self, job_id: None)


def test_a_scheduled_job_needs_a_period_and_a_name():
    with pytest.raises(ValueError, match="every_s and beat_name"):
        jobs_base.job("annotate.test.periodic", every_s=10.0)
