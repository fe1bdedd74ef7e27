"""The engine's public module: every name it offers resolves, and the engine runs without Django."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import explain_engine
from explain_engine import api

ENGINE = Path(explain_engine.__file__).parent
ROOT = ENGINE.parent


def test_every_name_of_api_resolves_and_is_documented():
    assert len(api.__all__) == len(set(api.__all__))
    for name in api.__all__:
        assert getattr(api, name) is not None, name
        assert f"``{name}``" in api.__doc__, f"{name} missing from the table in api's docstring"


def test_web_app_imports_of_the_engine_are_offered_by_api():
    """Every engine name the web app imports today has a home in api (the web app moves onto it)."""
    offered = set(api.__all__)
    wanted = set()
    for path in (ROOT / "annotate").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("explain_engine"):
                wanted |= {alias.name for alias in node.names}
    renamed = {"get": "get_method", "LEVELS": "RATING_LEVELS", "DEFAULT_THRESHOLD": "DEFAULT_TRUST_THRESHOLD"}
    wanted = {renamed.get(n, n) for n in wanted} - {"api", "explainers"}
    assert wanted <= offered, sorted(wanted - offered)


PROBE = """
import json, runpy, sys
import explain_engine
import explain_engine.api as api
api.krippendorff_alpha([[1, 2, 1], [2, 2, 2], [1, 1, 2]], n_boot=10)
sys.argv = ["explain_engine", "--help"]
try:
    runpy.run_module("explain_engine", run_name="__main__")
except SystemExit as exc:
    code = exc.code
forbidden = ("django", "annotate", "krippendorff", "crowdkit", "lime")
print(json.dumps({"code": code, "loaded": sorted(m for m in sys.modules if m.split(".")[0] in forbidden)}))
"""


def test_engine_and_its_cli_never_import_django_nor_test_only_packages():
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=ROOT, timeout=600, check=True
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {"code": 0, "loaded": []}
    assert "pointing-game" in out.stdout and "similarity" in out.stdout


def test_names_load_on_first_use_so_the_tokeniser_does_not_bring_torch():
    """api imports a name's module on first use: the web app's models need the tokeniser, not torch."""
    assert set(api._HOMES) == set(api.__all__)
    script = (
        "import sys, json\n"
        "from explain_engine.api import word_spans\n"
        "before = 'torch' in sys.modules\n"
        "from explain_engine.api import METHODS\n"
        "print(json.dumps([before, 'torch' in sys.modules, word_spans('a b') == [(0, 1), (2, 3)]]))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT)
    assert json.loads(out.stdout) == [False, True, True]
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        api.no_such_name  # noqa: B018
