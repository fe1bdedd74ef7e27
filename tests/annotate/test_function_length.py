"""No function of the web app or the engine is longer than 80 lines (migrations, generated, excepted):
a longer one is split into named parts. The length is the function's own lines, ``def`` to its last
line (decorators not counted), nested functions and methods included."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("annotate", "explain_engine")
MAX_LINES = 80


def long_functions(root: Path = ROOT, limit: int = MAX_LINES) -> list[str]:
    """``file:line: function (n lines)`` for each function under ``root``'s packages longer than
    ``limit`` lines, in file and line order."""
    found = []
    for package in PACKAGES:
        for file in sorted((root / package).rglob("*.py")):
            path = file.relative_to(root)
            if "migrations" in path.parts:
                continue
            for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"), filename=str(path))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    lines = node.end_lineno - node.lineno + 1
                    if lines > limit:
                        found.append((path.as_posix(), node.lineno, node.name, lines))
    return [f"{path}:{line}: {name} ({lines} lines)" for path, line, name, lines in sorted(found)]


def test_no_function_is_longer_than_80_lines():
    too_long = long_functions()
    assert not too_long, f"functions over {MAX_LINES} lines (split them): " + "; ".join(too_long)


def _function(name: str, lines: int, indent: str = "") -> str:
    """Source of a function of exactly ``lines`` lines."""
    body = [f"{indent}    x{i} = {i}\n" for i in range(lines - 2)]
    return f"{indent}def {name}():\n" + "".join(body) + f"{indent}    return 0\n"


def test_the_check_names_a_function_of_81_lines(tmp_path):
    """The scanner itself: 81 lines (a function, an async method) is reported by file, line and name;
    80 lines and anything under migrations/ are not."""
    app = tmp_path / "annotate" / "kinds"
    app.mkdir(parents=True)
    (app / "sample.py").write_text(
        _function("fits", 80)
        + _function("too_long", 81)
        + "class Kind:\n"
        + _function("method", 81, "    ").replace("def method", "async def method")
    )
    (tmp_path / "annotate" / "migrations").mkdir()
    (tmp_path / "annotate" / "migrations" / "0001_initial.py").write_text(_function("migrate", 200))
    engine = tmp_path / "explain_engine"
    engine.mkdir()
    (engine / "train.py").write_text("\n" + _function("epoch_loop", 81))
    assert long_functions(tmp_path) == [
        "annotate/kinds/sample.py:81: too_long (81 lines)",
        "annotate/kinds/sample.py:163: method (81 lines)",
        "explain_engine/train.py:2: epoch_loop (81 lines)",
    ]
