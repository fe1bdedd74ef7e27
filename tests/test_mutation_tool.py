"""The mutation tool's own rules (``tools/mutants/tool.py``): its targets and their tests exist, every
equivalent survivor it lists still names a line of its module, its operators are Cosmic Ray's, the table of
equivalents is read as written (pipes escaped), and ``--changed`` finds exactly the lines a change touched
(added, edited, uncommitted) and nothing of a file it did not touch."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("cosmic_ray", reason="cosmic-ray is in the dev extra")

from tools.mutants import tool  # noqa: E402

TARGETS = tool.TARGETS


def test_every_target_and_its_tests_exist_and_named_functions_are_found():
    assert len({t.path for t in TARGETS}) == len(TARGETS)
    for target in TARGETS:
        assert (ROOT / target.path).is_file(), target.path
        assert target.tests, target.path
        for test in target.tests:
            assert (ROOT / test).is_file(), f"{target.path}: {test}"
        if target.functions:
            lines = tool.function_lines(ROOT / target.path, target.functions)
            assert lines and max(lines) <= len((ROOT / target.path).read_text().splitlines())


def test_function_lines_cover_decorators_and_refuse_a_missing_name(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("import x\n\n\n@x.deco\ndef f():\n    return 1\n\n\ndef g():\n    return 2\n")
    assert tool.function_lines(module, ["f"]) == {4, 5, 6}
    assert tool.function_lines(module, ["g"]) == {9, 10}
    with pytest.raises(SystemExit, match="no top-level h"):
        tool.function_lines(module, ["f", "h"])


def test_every_listed_equivalent_names_a_line_of_its_module_and_an_operator_in_use():
    rows = tool.read_equivalents()
    assert rows, "equivalent.md has no row"
    paths = {t.path for t in TARGETS}
    for row in rows:
        assert row.module in paths, row
        assert "core/" + row.operator in tool.OPERATORS, row
        lines = [line.strip() for line in (ROOT / row.module).read_text().splitlines()]
        assert row.line in lines, f"stale row (the line changed): {row.module}: {row.line}"
        assert len(row.why) > 40, row


def test_the_operators_are_cosmic_rays():
    from cosmic_ray.plugins import operator_names

    assert set(operator_names()) >= tool.OPERATORS


def test_the_table_of_equivalents_is_read_as_written(tmp_path):
    table = tmp_path / "equivalent.md"
    table.write_text(
        "# t\n\n| module | operator | line | why |\n| --- | --- | --- | --- |\n"
        "| a/b.py | core/ReplaceOrWithAnd | `x = a \\| b  # both` | because |\n"
        "| a/c.py | AddNot | `if y:` | since |\n"
    )
    rows = tool.read_equivalents(table)
    assert [(r.module, r.operator, r.line, r.why) for r in rows] == [
        ("a/b.py", "ReplaceOrWithAnd", "x = a | b  # both", "because"),
        ("a/c.py", "AddNot", "if y:", "since"),
    ]
    assert tool.match_equivalent(rows, "a/c.py", "core/AddNot", "if y:") == rows[1]
    assert tool.match_equivalent(rows, "a/c.py", "core/ReplaceOrWithAnd", "if y:") is None
    assert tool.match_equivalent(rows, "a/b.py", "core/AddNot", "if y:") is None
    table.write_text("| module | operator | line | why |\n| a.py | AddNot | `x` |\n")
    with pytest.raises(SystemExit, match="4 cells"):
        tool.read_equivalents(table)


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def test_changed_lines_are_the_lines_a_change_touched(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.org")
    git(repo, "config", "user.name", "t")
    (repo / "a.py").write_text("".join(f"x{i} = {i}\n" for i in range(1, 11)))
    (repo / "b.py").write_text("y = 1\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "one")
    assert tool.default_base(repo) == git(repo, "rev-parse", "HEAD")  # no parent, no origin: itself
    lines = (repo / "a.py").read_text().splitlines()
    lines[2] = "x3 = 33"  # edited line 3
    lines[6:6] = ["new = 1", "new2 = 2"]  # lines 7 and 8 added
    (repo / "a.py").write_text("\n".join(lines) + "\n")
    git(repo, "commit", "-q", "-am", "two")
    assert tool.default_base(repo) == "HEAD~1"
    assert tool.changed_lines("HEAD~1", ["a.py", "b.py"], repo) == {"a.py": {3, 7, 8}}
    (repo / "b.py").write_text("y = 1\nz = 2\n")  # uncommitted: counted too
    assert tool.changed_lines("HEAD~1", ["a.py", "b.py"], repo) == {"a.py": {3, 7, 8}, "b.py": {2}}
    assert tool.changed_lines("HEAD", ["a.py"], repo) == {}


def test_annotations_are_skipped_only_where_they_are_never_evaluated(tmp_path):
    """A mutant inside an annotation counts as equivalent because every target postpones its
    annotations; the spans cover parameters, return types and annotated names, not the code beside them."""
    for target in TARGETS:
        assert "from __future__ import annotations" in (ROOT / target.path).read_text(), target.path
    module = tmp_path / "m.py"
    module.write_text(
        "def f(a: int | None, b=1 | 2) -> str | None:\n    x: int | None = a | b\n    return x\n"
    )
    spans = tool.annotation_spans(module)

    def covered(line: int, col: int) -> bool:
        return any(low <= (line, col) < high for low, high in spans)

    source = module.read_text().splitlines()
    assert covered(1, source[0].index("int | None"))
    assert covered(1, source[0].index("str | None"))
    assert not covered(1, source[0].index("1 | 2"))
    assert covered(2, source[1].index("int | None"))
    assert not covered(2, source[1].index("a | b"))


def test_only_a_changed_runs_fallback_sample_reports_survivors_without_failing():
    from argparse import Namespace

    assert tool.fallback_only(Namespace(changed=True, fell_back=True))
    assert not tool.fallback_only(Namespace(changed=True))  # mutants on changed lines: a gate
    assert not tool.fallback_only(Namespace(changed=False, fell_back=True))
