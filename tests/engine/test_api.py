"""The engine's public module: every name it offers resolves, and the engine runs without Django."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import explain_engine
from explain_engine import api

ENGINE = Path(explain_engine.__file__).parent
ROOT = ENGINE.parent


SOURCE = Path(api.__file__).read_text(encoding="utf-8")


def test_every_name_is_listed_once_and_resolves():
    listed = [name for name, _, _ in api.listed(SOURCE)]
    assert len(listed) == len(set(listed)), sorted({n for n in listed if listed.count(n) > 1})
    assert sorted(listed) == api.__all__ == dir(api)
    for name, module, attribute in api.listed(SOURCE):
        assert getattr(api, name) is getattr(importlib.import_module(module), attribute), name


def test_a_name_listed_twice_or_not_imported_is_refused():
    twice = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from explain_engine.text import word_spans\n"
        "    from explain_engine.metrics.ratings import mean_of as word_spans\n"
    )
    assert [n for n, _, _ in api.listed(twice)] == ["word_spans", "word_spans"]
    with pytest.raises(ImportError, match="'word_spans' is listed twice"):
        api._homes(twice)
    with pytest.raises(TypeError, match="only absolute 'from ... import' lines"):
        api.listed("if TYPE_CHECKING:\n    word_spans = 1\n")


def test_the_docstring_says_how_the_names_are_listed_and_names_none_of_them():
    assert "``if TYPE_CHECKING:``" in api.__doc__ and "PEP 562" in api.__doc__
    assert not [name for name in api.__all__ if f"``{name}``" in api.__doc__]


def test_every_registered_method_carries_a_title_and_a_source():
    untitled = [
        name for name, spec in api.METHODS.items() if not (spec.title.strip() and spec.source.strip())
    ]
    assert untitled == []
    assert all(api.METHODS.meta(name)["title"] == spec.title for name, spec in api.METHODS.items())
    assert api.describe_method("grad_dot_int_s") == api.MethodInfo(
        "Integrated gradients of s, dot product",
        "Poerner et al. 2018 §3.1",
        api.METHODS["grad_dot_int_s"].doc,
    )
    assert api.describe_method("occ_7").title == "Occlusion of 7-grams"
    assert api.describe_method(api.TRAINING_ATTENTION).title == "Attention weights"
    assert api.describe_method("no_such_method") == api.MethodInfo("no_such_method", "", "")


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


def test_a_metric_and_a_report_of_plain_data_do_not_bring_torch():
    script = (
        "import sys, json\n"
        "import explain_engine.api as api\n"
        "alpha = api.krippendorff_alpha([[1, 2, 1], [2, 2, 2], [1, 1, 2]], n_boot=10)\n"
        "speed = api.signal_report(workers=[1], read_ms=[5], answer_ms=[5], words=[1], fast_ratio=0.3)\n"
        "print(json.dumps(['torch' in sys.modules, alpha.value is not None, speed['workers'][1]]))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT)
    assert json.loads(out.stdout) == [False, True, {"responses": 1, "median_time_ms": 10, "fast": 0}]


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
