"""Every query of ``Response`` in the web app goes through ``.counted()`` (verified answers only), or is
listed here with the reason it must see the answers not (yet) verified. A new consumer of answers that
forgets the filter fails here by name; the behaviour itself is shown in test_counted.py."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Whole files that store answers or decide their verification: they work on every answer by design.
OWN_EVERY_ANSWER = {
    "annotate/handout/submission.py": "stores answers, a provisional one too, and finds a retried submission",
    "annotate/handout/assignment.py": "the hand-out: a provisional answer holds its item's slot",
    "annotate/crowd/providers/": "reconciliation and the platforms verify answers or set them aside",
    "annotate/views/work.py": "the annotator's own pages",
    "annotate/api/work.py": "the annotator's own API",
    "annotate/migrations/": "schema history",
}
#: ``(file, function)`` that read every answer, and why.
ALLOWED = {
    (
        "annotate/quality/grading.py",
        "regrade_item",
    ): "every answer is graded, so one verified later has its grade",
    ("annotate/kinds/highlight/yelphat.py", "_create_responses"): "creates the imported answers (verified)",
    ("annotate/corpus/rationales.py", "_responses"): "creates a public rationale set's answers (verified)",
    ("annotate/exports/tables.py", "_answers"): "include_unverified asks for every answer, marked",
    (
        "annotate/kinds/nli_pair/results.py",
        "response_rows",
    ): "include_unverified asks for every answer, marked",
    ("annotate/studies/progress.py", "study_progress"): "counts answers received, by verification",
    (
        "annotate/quality/exclusion.py",
        "left_out",
    ): "says how many answers a results page leaves out, those not yet verified among them",
    (
        "annotate/exports/datasheet.py",
        "_counts_section",
    ): "counts answers received, by verification, for the datasheet",
    (
        "annotate/crowd/unconfirmed.py",
        "unconfirmed_workers",
    ): "lists the workers with unverified answers only",
    ("annotate/crowd/jobs.py", "reconcile_all"): "finds the studies whose answers wait for confirmation",
    (
        "annotate/quality/redundancy.py",
        "refresh_for_workers",
    ): "finds the items to decide again after answers were verified or set aside (the decision counts verified ones)",
    (
        "annotate/exports/protocol.py",
        "participant_rows",
    ): "the participants export lists everyone who met an attention check and their misses, as answered",
    (
        "annotate/protocol/attention.py",
        "failures",
    ): "missed attention checks stop a worker's hand-out at once, before the platform confirms them",
    (
        "annotate/protocol/attention.py",
        "check_rows",
    ): "the quality page shows every attention-check answer, as it shows every gold answer",
    (
        "annotate/protocol/controls.py",
        "_editable",
    ): "the worker goes back to their own answer, verified or not",
    ("annotate/protocol/controls.py", "edit_answer"): "the worker changes their own answer, verified or not",
}


def _owned(path: str) -> bool:
    return any(path == p or (p.endswith("/") and path.startswith(p)) for p in OWN_EVERY_ANSWER)


def uncounted_queries(root: Path = ROOT) -> set[tuple[str, str, int]]:
    """``(file, function, line)`` of each ``Response.objects...`` chain without ``.counted()`` in
    ``root/annotate``."""
    found = set()
    for file in sorted((root / "annotate").rglob("*.py")):
        path = file.relative_to(root).as_posix()
        if _owned(path):
            continue
        tree = ast.parse(file.read_text(), filename=path)
        parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                parents[child] = node
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Attribute)
                and node.attr == "objects"
                and isinstance(node.value, ast.Name)
                and node.value.id == "Response"
            ):
                continue
            chain, top = [], node
            while True:
                up = parents.get(top)
                if isinstance(up, ast.Attribute) and up.value is top:
                    chain.append(up.attr)
                elif not (isinstance(up, ast.Call) and up.func is top):
                    break
                top = up
            if "counted" in chain:
                continue
            function, at = "<module>", node
            while at in parents:
                at = parents[at]
                if isinstance(at, ast.FunctionDef | ast.AsyncFunctionDef):
                    function = at.name
                    break
            found.add((path, function, node.lineno))
    return found


def test_every_response_query_counts_verified_answers_or_says_why_not():
    found = uncounted_queries()
    unexplained = sorted(f"{path}:{line} in {function}()" for path, function, line in found
                         if (path, function) not in ALLOWED)  # fmt: skip
    assert not unexplained, "Response queries without .counted(): " + ", ".join(unexplained)
    stale = sorted(set(ALLOWED) - {(path, function) for path, function, _ in found})
    assert not stale, f"allowed exceptions that no longer query Response: {stale}"


def test_the_check_sees_a_query_without_counted(tmp_path):
    """The scanner itself: a chain with ``.counted()`` anywhere passes, one without is reported."""
    app = tmp_path / "annotate"
    app.mkdir()
    (app / "sample.py").write_text(
        "def good(study):\n"
        "    return Response.objects.filter(study=study).counted().count()\n"
        "def bad(study):\n"
        "    return Response.objects.filter(study=study).values('id')\n"
    )
    assert uncounted_queries(tmp_path) == {("annotate/sample.py", "bad", 4)}
