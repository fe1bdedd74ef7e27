"""The seam between the web app and the engine: ``annotate`` and ``config`` reach the engine only through
``explain_engine.api`` (inside functions too), and import none of the engine's test-only references."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WEB_APP = ("annotate", "config")
SEAM = "explain_engine.api"
#: Packages the engine is checked against in its tests, never used by the web app.
TEST_ONLY = ("crowdkit", "krippendorff", "lime")


def imported_modules(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """``(line, module)`` of every absolute import of the module, wherever it is written."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module
            if node.module == "explain_engine":  # ``from explain_engine import metrics``
                for alias in node.names:
                    yield node.lineno, f"explain_engine.{alias.name}"


def offending_imports(roots: list[Path]) -> list[str]:
    """``path:line: module`` for each import past the seam or of a test-only package."""
    found = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            for line, module in imported_modules(tree):
                top = module.split(".")[0]
                engine_inside = top == "explain_engine" and module not in ("explain_engine", SEAM)
                if engine_inside or top in TEST_ONLY:
                    found.append(f"{path.relative_to(root.parent)}:{line}: {module}")
    return found


def test_the_web_app_reaches_the_engine_only_through_its_api():
    assert offending_imports([ROOT / name for name in WEB_APP]) == []


def test_the_seam_check_finds_imports_past_the_api(tmp_path):
    app = tmp_path / "app"
    app.mkdir()
    (app / "fine.py").write_text("from explain_engine.api import json_safe\nimport explain_engine.api\n")
    (app / "deep.py").write_text("def f():\n    from explain_engine.metrics.trust import trust_table\n")
    (app / "module.py").write_text("import explain_engine.text as text\nfrom explain_engine import metrics\n")
    (app / "crowd.py").write_text("from crowdkit.aggregation import MajorityVote\nimport krippendorff\n")
    assert offending_imports([app]) == [
        "app/crowd.py:1: crowdkit.aggregation",
        "app/crowd.py:2: krippendorff",
        "app/deep.py:2: explain_engine.metrics.trust",
        "app/module.py:1: explain_engine.text",
        "app/module.py:2: explain_engine.metrics",
    ]


#: Modules of the web app that may import numpy (and why); scipy none. Every figure a page shows comes
#: from the engine through ``explain_engine.api``; these only choose data.
NUMPY_ALLOWED = {
    # Forced-choice question generation (Lertvittayakumjorn & Toni 2019 §4.2): seeded stratified
    # sampling of the texts a study shows, with vectorised masks over a model run's stored predictions.
    # It chooses which questions exist; it computes no figure.
    "annotate/kinds/forced_choice/generation.py",
    "annotate/kinds/forced_choice/investigate.py",
    "annotate/kinds/forced_choice/justify.py",
    "annotate/kinds/forced_choice/reveal_model.py",
}
NUMERIC = ("numpy", "scipy")


def numeric_imports(root: Path) -> list[str]:
    """``path:line: module`` for each import of numpy or scipy under ``root``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for line, module in imported_modules(tree):
            if module.split(".")[0] in NUMERIC:
                found.append(f"{path.relative_to(root.parent).as_posix()}:{line}: {module}")
    return found


def test_the_web_app_leaves_numerics_to_the_engine():
    found = numeric_imports(ROOT / "annotate")
    unexpected = [f for f in found if f.split(":")[0] not in NUMPY_ALLOWED or "scipy" in f]
    assert unexpected == []
    # the allowed list holds no module that no longer needs it
    assert {f.split(":")[0] for f in found} == NUMPY_ALLOWED


def test_the_numerics_check_finds_numpy_and_scipy(tmp_path):
    app = tmp_path / "app"
    app.mkdir()
    (app / "stats.py").write_text("import numpy as np\ndef f():\n    from scipy.stats import wilcoxon\n")
    (app / "plain.py").write_text("import math\n")
    assert numeric_imports(app) == ["app/stats.py:1: numpy", "app/stats.py:3: scipy.stats"]


#: What the web process must not load: the engine's numerical stack for models (hundreds of MB per
#: gunicorn worker and seconds of start-up). Jobs and the machine pages load it when they need it.
WEB_PROCESS_NEVER = ("torch", "transformers")


def test_the_web_process_does_not_import_torch():
    """``config.wsgi`` (what gunicorn loads, with every URL and view imported at start-up) in a fresh
    interpreter, after it has served API requests with query strings (which the query-parameter guard checks
    against the schema of the route they reach): none of the modules above is in ``sys.modules``."""
    import json
    import os
    import subprocess
    import sys

    probe = (
        "import json, sys\n"
        "import config.wsgi\n"
        "from django.test import Client\n"
        "client = Client()\n"
        "refused = client.get('/api/studies/?bogus=1')\n"
        "assert refused.status_code == 400 and 'bogus' in refused.json(), refused.content\n"
        "assert client.post('/api/work/00000000-0000-4000-8000-000000000000/next/?bogus=1').json() == {'errors': {'bogus': "
        "['is not a parameter of this operation']}}\n"
        "assert client.get('/api/studies/?page=1').status_code in (401, 403)  # a parameter it takes passes\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DJANGO_SETTINGS_MODULE": "tests.settings"}
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert "django" in loaded and "annotate" in loaded  # the app was loaded
    assert loaded.isdisjoint(WEB_PROCESS_NEVER), sorted(loaded & set(WEB_PROCESS_NEVER))
