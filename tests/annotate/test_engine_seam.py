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
