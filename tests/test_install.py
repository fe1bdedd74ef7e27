"""What the install rests on: every package the code imports is declared in pyproject.toml, the engine's
base dependencies carry no web framework, and the hashed lock files pin exactly what pyproject.toml
declares (torch apart, pinned on its own; see .ci/lock)."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
OWN = {"annotate", "explain_engine", "config", "tests", "bench", "manage", "tools"}
SOURCES = ("annotate", "explain_engine", "config", "bench", "tests")
LOCKS = {
    "runtime.lock": ("web", "transformers"),
    "dev.lock": ("dev", "web", "test", "transformers"),
    "engine.lock": ("test",),
}
PINNED_OUTSIDE_THE_LOCKS = {"torch"}


def declared(*extras: str) -> dict[str, Requirement]:
    lines = list(PROJECT["dependencies"])
    for extra in extras:
        lines += PROJECT["optional-dependencies"][extra]
    reqs = (Requirement(line) for line in lines)
    return {canonicalize_name(r.name): r for r in reqs if canonicalize_name(r.name) != "hatlab"}


def imported_top_level_modules() -> set[str]:
    modules: set[str] = set()
    for folder in SOURCES:
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    modules |= {alias.name.split(".")[0] for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules.add(node.module.split(".")[0])
    return modules - OWN - set(sys.stdlib_module_names)


def test_every_imported_package_is_declared():
    providers = metadata.packages_distributions()
    all_declared = declared(*PROJECT["optional-dependencies"])
    undeclared = {}
    for module in sorted(imported_top_level_modules()):
        dists = {canonicalize_name(d) for d in providers.get(module, [])}
        if not dists:
            pytest.fail(f"`{module}` is imported but no installed distribution provides it")
        if not dists & all_declared.keys():
            undeclared[module] = sorted(dists)
    assert undeclared == {}, f"imported but not declared in pyproject.toml: {undeclared}"


def test_the_engine_dependencies_carry_no_web_framework():
    assert not {"django", "djangorestframework", "celery", "psycopg2-binary", "boto3"} & declared().keys()


def locked(name: str) -> dict[str, tuple[str, list[str]]]:
    """``{package: (version, hashes)}`` from a lock file written by pip-compile --generate-hashes."""
    text = (ROOT / "requirements" / name).read_text()
    pins: dict[str, tuple[str, list[str]]] = {}
    for block in re.split(r"\n(?=[A-Za-z0-9])", text):
        match = re.match(r"([A-Za-z0-9._-]+)==(\S+)", block)
        if match:
            hashes = re.findall(r"--hash=sha256:([0-9a-f]{64})", block)
            pins[canonicalize_name(match.group(1))] = (match.group(2), hashes)
    return pins


@pytest.mark.parametrize(("lock", "extras"), LOCKS.items())
def test_each_lock_pins_what_pyproject_declares_with_hashes(lock, extras):
    pins = locked(lock)
    for name, req in declared(*extras).items():
        if name in PINNED_OUTSIDE_THE_LOCKS:
            assert name not in pins, f"{name} is pinned outside {lock} (its wheel differs by machine)"
            continue
        assert name in pins, f"{name} is declared but not in requirements/{lock}: run `make lock`"
        version = pins[name][0]
        assert req.specifier.contains(version, prereleases=True), f"{lock} has {name}=={version}, not {req}"
    assert all(hashes for _, hashes in pins.values()), f"{lock}: a pin without hashes"


def test_the_engine_lock_has_no_django():
    assert "django" not in locked("engine.lock") and "django" in locked("runtime.lock")


def test_the_transformers_extra_is_in_the_app_locks_only():
    """The engine alone runs without the optional extra; `make demo` and `make test` install it."""
    extra = {canonicalize_name(r) for r in ("transformers", "tokenizers", "huggingface-hub", "safetensors")}
    assert not extra & locked("engine.lock").keys()
    assert extra <= locked("runtime.lock").keys() and extra <= locked("dev.lock").keys()
    assert "hatlab[transformers]" in PROJECT["optional-dependencies"]["web"]


@pytest.mark.parametrize("lock", LOCKS)
def test_no_lock_asks_for_another_torch_or_a_cuda_build(lock):
    """torch==2.13.0 is installed on its own (a CPU wheel where there is one); a lock that pinned torch, or
    PyPI's CUDA build's nvidia-* packages, would download gigabytes."""
    pins = locked(lock)
    assert "torch" not in pins
    assert not [name for name in pins if name.startswith("nvidia-") or name == "triton"]
