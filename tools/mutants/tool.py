"""Mutation testing by a tool: Cosmic Ray's operators over the modules of :mod:`targets` (money, trust,
results), each mutant run against its module's tests in a temporary copy of the tree.

    python tools/mutants/tool.py --list                       # targets and how many mutants each has
    python tools/mutants/tool.py                              # every mutant of every target (long)
    python tools/mutants/tool.py --module annotate/quality/risk.py
    python tools/mutants/tool.py --sample 40 --seed 7         # a fixed sample across the targets
    python tools/mutants/tool.py --per-module 10 --seed 7     # ten of each target, drawn with the seed
    python tools/mutants/tool.py --changed                    # only mutants on lines changed since the base
    python tools/mutants/tool.py --changed --fallback-sample 6 --budget 240   # CI

``--changed`` compares the working tree with the merge base of ``origin/main`` (or with ``HEAD~1`` when
that base is ``HEAD`` itself, as in a clone of main); ``--base REF`` names another. When the change touches
no target's lines, ``--fallback-sample N`` runs N mutants drawn with a seed (printed; the HEAD commit's unless
``--seed``); its survivors are reported, not a failure, as they predate the change. A mutant survives when
its tests pass; a timeout counts as killed. Survivors listed in ``equivalent.md`` beside this file (module,
operator, source line) are equivalent; any other survivor fails the run (exit 1). ``--sessions DIR`` keeps Cosmic Ray's session databases, so a later run with the same
DIR resumes (and ``--retry-survivors`` runs the survivors again, after new tests).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script: the modules beside it

from cosmic_ray.commands.init import init as cr_init  # noqa: E402
from cosmic_ray.mutating import mutate_and_test  # noqa: E402
from cosmic_ray.work_db import WorkDB, use_db  # noqa: E402
from cosmic_ray.work_item import TestOutcome, WorkerOutcome, WorkItem, WorkResult  # noqa: E402
from run import copy_tree, drop_test_database  # noqa: E402
from targets import BY_PATH, TARGETS, Target  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
EQUIVALENT_FILE = Path(__file__).resolve().parent / "equivalent.md"

#: The operators that make realistic small bugs: a boundary moved (< for <=), a test negated or dropped, a
#: sign or operator swapped, a constant off by one, a loop that never runs, a handler that catches nothing, a
#: decorator lost. Cosmic Ray's other replacements (every binary operator for every other, ``is`` for ``<``,
#: inserted variables) mostly make code that cannot run, which any test kills, at many times the cost.
OPERATORS = frozenset(
    "core/" + name
    for name in (
        "ReplaceComparisonOperator_Eq_NotEq",
        "ReplaceComparisonOperator_NotEq_Eq",
        "ReplaceComparisonOperator_Lt_LtE",
        "ReplaceComparisonOperator_LtE_Lt",
        "ReplaceComparisonOperator_Gt_GtE",
        "ReplaceComparisonOperator_GtE_Gt",
        "ReplaceComparisonOperator_Is_IsNot",
        "ReplaceComparisonOperator_IsNot_Is",
        "ReplaceBinaryOperator_Add_Sub",
        "ReplaceBinaryOperator_Sub_Add",
        "ReplaceBinaryOperator_Mul_Div",
        "ReplaceBinaryOperator_Div_Mul",
        "ReplaceBinaryOperator_FloorDiv_Div",
        "ReplaceBinaryOperator_BitOr_BitAnd",
        "ReplaceBinaryOperator_BitAnd_BitOr",
        "ReplaceUnaryOperator_USub_UAdd",
        "ReplaceUnaryOperator_Delete_Not",
        "AddNot",
        "ReplaceTrueWithFalse",
        "ReplaceFalseWithTrue",
        "ReplaceAndWithOr",
        "ReplaceOrWithAnd",
        "ReplaceBreakWithContinue",
        "ReplaceContinueWithBreak",
        "NumberReplacer",
        "ZeroIterationForLoop",
        "ExceptionReplacer",
        "RemoveDecorator",
    )
)
MIN_TIMEOUT_S = 60
TIMEOUT_FACTOR = 3


@dataclass(frozen=True)
class Equivalent:
    module: str
    operator: str
    line: str
    why: str


@dataclass
class Outcome:
    target: str
    item: WorkItem
    result: WorkResult
    line_text: str
    equivalent: Equivalent | None = None

    @property
    def kind(self) -> str:
        if self.equivalent is ANNOTATION:
            return "equivalent"
        if self.result.worker_outcome in (WorkerOutcome.SKIPPED, WorkerOutcome.NO_TEST):
            return "not run"
        if self.result.test_outcome == TestOutcome.INCOMPETENT:
            return "error"
        if self.result.test_outcome == TestOutcome.SURVIVED:
            return "equivalent" if self.equivalent else "survived"
        return "killed"


def read_equivalents(path: Path = EQUIVALENT_FILE) -> list[Equivalent]:
    """The rows of the table in ``equivalent.md``: ``| module | operator | `line` | why |`` (``\\|`` for a
    pipe inside a cell)."""
    if not path.exists():
        return []
    rows = []
    for raw in path.read_text().splitlines():
        if not raw.startswith("| ") or raw.startswith("| module") or set(raw) <= set("|- :"):
            continue
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", raw.strip())[1:-1]]
        if len(cells) != 4:
            raise SystemExit(f"{path}: a row needs 4 cells (module, operator, line, why): {raw}")
        module, operator, line, why = cells
        rows.append(Equivalent(module, operator.removeprefix("core/"), line.strip("`").strip(), why))
    return rows


#: A mutant inside a type annotation (``int | None`` made ``int & None``): the modules postpone their
#: annotations (PEP 563, ``from __future__ import annotations``), so nothing evaluates them at run time;
#: one that does not would fail on import, which any test sees. Not run; counted as equivalent.
ANNOTATION = Equivalent("", "", "", "inside a type annotation, which is never evaluated (PEP 563)")


def annotation_spans(path: Path) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """The (line, column) spans of a module's annotations: parameters', return types', annotated names'."""
    spans = []
    for node in ast.walk(ast.parse(path.read_text())):
        found: list[ast.expr | None] = []
        if isinstance(node, ast.arg):
            found.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            found.append(node.annotation)
        for a in found:
            if a is not None and a.end_lineno is not None and a.end_col_offset is not None:
                spans.append(((a.lineno, a.col_offset), (a.end_lineno, a.end_col_offset)))
    return spans


def in_annotation(item: WorkItem, spans: list[tuple[tuple[int, int], tuple[int, int]]]) -> bool:
    start = tuple(item.mutations[0].start_pos)
    return any(low <= start < high for low, high in spans)


def function_lines(path: Path, names: Iterable[str]) -> set[int]:
    """The lines of the named top-level functions and classes of a module (decorators included)."""
    wanted = set(names)
    lines: set[int] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name in wanted:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            lines.update(range(first, (node.end_lineno or node.lineno) + 1))
            wanted.discard(node.name)
    if wanted:
        raise SystemExit(
            f"{path}: no top-level {', '.join(sorted(wanted))} (update tools/mutants/targets.py)"
        )
    return lines


def changed_lines(base: str, paths: Iterable[str], root: Path = ROOT) -> dict[str, set[int]]:
    """The lines of each path that differ from ``base`` (the working tree against it, uncommitted edits
    included), as line numbers of the current file."""
    diff = subprocess.run(
        ["git", "diff", "-U0", "--no-color", "--no-ext-diff", base, "--", *paths],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    found: dict[str, set[int]] = {}
    current = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            current = line[6:] if line.startswith("+++ b/") else None
        elif line.startswith("@@") and current:
            m = re.match(r"@@ -\S+ \+(\d+)(?:,(\d+))? @@", line)
            if m:
                start, count = int(m.group(1)), int(m.group(2) or 1)
                found.setdefault(current, set()).update(range(start, start + count))
    return found


def default_base(root: Path = ROOT) -> str:
    """The merge base with ``origin/main``; ``HEAD~1`` when there is none, or when it is ``HEAD`` itself."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    head = git("rev-parse", "HEAD")
    base = git("merge-base", "origin/main", "HEAD")
    if base and base != head:
        return base
    return "HEAD~1" if git("rev-parse", "--verify", "-q", "HEAD~1") else head


def session_items(target: Target, tree: Path, sessions: Path) -> Path:
    """Cosmic Ray's session database for a target (made again when the module's text changed)."""
    source = (tree / target.path).read_bytes()
    digest = hashlib.sha256(source).hexdigest()
    slug = target.path.replace("/", "__")
    db_path, stamp = sessions / f"{slug}.sqlite", sessions / f"{slug}.sha256"
    if not (db_path.exists() and stamp.exists() and stamp.read_text() == digest):
        db_path.unlink(missing_ok=True)
        with use_db(str(db_path)) as db:
            cr_init([Path(target.path)], db, {})
        stamp.write_text(digest)
    return db_path


def wanted_items(db: WorkDB, target: Target, tree: Path, lines: set[int] | None) -> list[WorkItem]:
    """The work items of the chosen operators, within the target's functions and ``lines`` (when given)."""
    allowed = function_lines(tree / target.path, target.functions) if target.functions else None
    items = []
    for item in db.work_items:
        (m,) = item.mutations
        span = set(range(m.start_pos[0], m.end_pos[0] + 1))
        if m.operator_name not in OPERATORS:
            continue
        if allowed is not None and not span & allowed:
            continue
        if lines is not None and not span & lines:
            continue
        items.append(item)
    return sorted(items, key=lambda i: (i.mutations[0].start_pos, i.mutations[0].operator_name))


def test_command(target: Target, *extra: str) -> str:
    tests = " ".join(target.tests)
    return f"{sys.executable} -m pytest -p no:cacheprovider -q -x -p no:randomly {' '.join(extra)} {tests}"


def baseline(target: Target, first: bool) -> float:
    """Run the target's tests on the unmutated tree; their time (the mutants' timeout follows from it)."""
    start = time.monotonic()
    cmd = test_command(target, "--create-db" if first else "--reuse-db")
    done = subprocess.run(cmd.split(), capture_output=True, text=True, timeout=900)
    seconds = time.monotonic() - start
    if done.returncode != 0:
        print(done.stdout[-4000:] + done.stderr[-2000:], file=sys.stderr)
        raise SystemExit(f"{target.path}: its tests fail on the unmutated tree: no mutant can be judged")
    return seconds


def line_of(tree: Path, item: WorkItem) -> str:
    m = item.mutations[0]
    return (tree / m.module_path).read_text().splitlines()[m.start_pos[0] - 1].strip()


def match_equivalent(
    equivalents: list[Equivalent], target: str, operator: str, line: str
) -> Equivalent | None:
    name = operator.removeprefix("core/")
    return next((e for e in equivalents if (e.module, e.operator, e.line) == (target, name, line)), None)


def run_target(
    target: Target,
    items: list[WorkItem],
    db: WorkDB,
    *,
    first: bool,
    deadline: float | None,
    retry_survivors: bool,
) -> None:
    """Run the target's pending mutants (those without a result; survivors too with ``retry_survivors``)."""
    done = {item.job_id: result for item, result in db.completed_work_items}
    spans = annotation_spans(Path(target.path))
    pending = [
        i
        for i in items
        if not in_annotation(i, spans)
        and (
            i.job_id not in done
            or (retry_survivors and done[i.job_id].test_outcome == TestOutcome.SURVIVED)
            or done[i.job_id].worker_outcome == WorkerOutcome.SKIPPED
        )
    ]
    if not pending:
        return
    if deadline is not None and time.monotonic() > deadline:  # not even the unmutated run: over budget
        over = WorkResult(worker_outcome=WorkerOutcome.SKIPPED, output="over budget")
        db.set_multiple_results([i.job_id for i in pending], over)
        return
    seconds = baseline(target, first)
    timeout = max(MIN_TIMEOUT_S, TIMEOUT_FACTOR * seconds)
    print(
        f"{target.path}: {len(pending)} mutants, tests {seconds:.1f}s unmutated, timeout {timeout:.0f}s",
        flush=True,
    )
    command = test_command(target, "--reuse-db")
    for n, item in enumerate(pending, 1):
        m = item.mutations[0]
        if deadline is not None and time.monotonic() > deadline:
            db.set_result(item.job_id, WorkResult(worker_outcome=WorkerOutcome.SKIPPED, output="over budget"))
            continue
        start = time.monotonic()
        result = mutate_and_test(item.mutations, command, timeout)
        db.set_result(item.job_id, result)
        outcome = result.test_outcome.value if result.test_outcome else result.worker_outcome.value
        took = time.monotonic() - start
        print(
            f"  [{n}/{len(pending)}] line {m.start_pos[0]} {m.operator_name}: {outcome} ({took:.1f}s)",
            flush=True,
        )


def summarise(outcomes: list[Outcome], targets: list[Target]) -> dict:
    rows = []
    for target in targets:
        mine = [o for o in outcomes if o.target == target.path]
        if not mine:
            continue
        count = {
            k: sum(o.kind == k for o in mine)
            for k in ("killed", "survived", "equivalent", "error", "not run")
        }
        rows.append({"module": target.path, "area": target.area, "mutants": len(mine), **count})
    total = {
        k: sum(r[k] for r in rows)
        for k in ("mutants", "killed", "survived", "equivalent", "error", "not run")
    }
    return {"modules": rows, "total": total}


def print_report(summary: dict, outcomes: list[Outcome]) -> None:
    print(
        f"\n{'module':48} {'mutants':>7} {'killed':>6} {'survived':>8} {'equiv':>5} {'error':>5} {'not run':>7}"
    )
    for r in [*summary["modules"], {"module": "total", **summary["total"]}]:
        print(
            f"{r['module']:48} {r['mutants']:7} {r['killed']:6} {r['survived']:8} {r['equivalent']:5} "
            f"{r['error']:5} {r['not run']:7}"
        )
    for o in outcomes:
        if o.kind in ("survived", "error"):
            m = o.item.mutations[0]
            print(
                f"\n--- {o.kind}: {o.target}:{m.start_pos[0]} {m.operator_name}\n{o.result.diff or o.result.output}"
            )


def choose(
    args: argparse.Namespace, targets: list[Target], tree: Path, sessions: Path
) -> dict[str, list[WorkItem]]:
    """The work items to run, by target: all, those on changed lines, or a seeded sample."""
    lines: dict[str, set[int]] | None = None
    if args.changed:
        base = args.base or default_base()
        lines = changed_lines(base, [t.path for t in targets])
        print(f"mutants on the lines changed since {base}: {', '.join(sorted(lines)) or 'no target touched'}")
    chosen: dict[str, list[WorkItem]] = {}
    for target in targets:
        if lines is not None and target.path not in lines:
            continue
        with use_db(str(session_items(target, tree, sessions))) as db:
            items = wanted_items(db, target, tree, None if lines is None else lines[target.path])
        if items:
            chosen[target.path] = items
    sample = args.sample
    if args.changed and not chosen and args.fallback_sample:
        sample = args.fallback_sample
        args.fell_back = True
        chosen = {}
        for target in targets:
            with use_db(str(session_items(target, tree, sessions))) as db:
                chosen[target.path] = wanted_items(db, target, tree, None)
    seed = args.seed if args.seed is not None else int(head_commit()[:8] or "0", 16)
    if args.per_module:
        print(f"a sample of at most {args.per_module} mutants per module, seed {seed}")
        chosen = {
            p: sorted(
                random.Random(f"{seed}:{p}").sample(items, min(args.per_module, len(items))),
                key=lambda i: (i.mutations[0].start_pos, i.mutations[0].operator_name),
            )
            for p, items in chosen.items()
        }
    if sample:
        pool = [(path, item) for path, items in chosen.items() for item in items]
        picked = random.Random(seed).sample(pool, min(sample, len(pool)))
        print(
            f"a sample of {len(picked)} of {len(pool)} mutants, seed {seed} (again: --sample {sample} --seed {seed})"
        )
        ids = {item.job_id for _, item in picked}
        chosen = {p: [i for i in items if i.job_id in ids] for p, items in chosen.items()}
        chosen = {p: items for p, items in chosen.items() if items}
    return chosen


def head_commit() -> str:
    done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else ""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--module", action="append", default=[], help="only this target (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the targets and their mutant counts")
    parser.add_argument("--changed", action="store_true", help="only mutants on lines changed since the base")
    parser.add_argument("--base", help="the git revision --changed compares with (default: see above)")
    parser.add_argument("--sample", type=int, default=0, help="run a seeded sample of this many mutants")
    parser.add_argument("--per-module", type=int, default=0, help="a seeded sample of this many per module")
    parser.add_argument("--fallback-sample", type=int, default=0, help="--changed with no target touched")
    parser.add_argument("--seed", type=int, help="the sample's seed (default: from the HEAD commit)")
    parser.add_argument("--budget", type=float, help="seconds; mutants not started by then are 'not run'")
    parser.add_argument("--sessions", type=Path, help="keep the session databases here (resumable)")
    parser.add_argument(
        "--retry-survivors", action="store_true", help="run the survivors of --sessions again"
    )
    parser.add_argument("--report", type=Path, help="write the summary and every outcome here as JSON")
    args = parser.parse_args(argv)
    unknown = set(args.module) - set(BY_PATH)
    if unknown:
        parser.error(f"not a target: {', '.join(sorted(unknown))} (see tools/mutants/targets.py)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.monotonic()
    targets = [t for t in TARGETS if not args.module or t.path in args.module]
    equivalents = read_equivalents()
    workdir = Path(tempfile.mkdtemp(prefix="hatlab-mutants-tool-"))
    sessions = args.sessions.resolve() if args.sessions else workdir / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("HATLAB_TEST_RUN", f"mutanttool{os.getpid()}")
    tree = copy_tree(workdir)
    os.environ["PYTHONPATH"] = str(tree)
    here = Path.cwd()
    os.chdir(tree)  # Cosmic Ray mutates the module paths relative to the working directory
    try:
        chosen = choose(args, targets, tree, sessions)
        if args.list:
            for t in targets:
                print(
                    f"{t.path:48} {len(chosen.get(t.path, [])):5} mutants  {t.area}  ({', '.join(t.tests)})"
                )
            return 0
        deadline = started + args.budget if args.budget else None
        outcomes: list[Outcome] = []
        for n, target in enumerate(t for t in targets if t.path in chosen):
            with use_db(str(sessions / f"{target.path.replace('/', '__')}.sqlite")) as db:
                items = chosen[target.path]
                run_target(
                    target, items, db, first=n == 0, deadline=deadline, retry_survivors=args.retry_survivors
                )
                results = {item.job_id: result for item, result in db.completed_work_items}
            spans = annotation_spans(tree / target.path)
            for item in items:
                text = line_of(tree, item)
                if in_annotation(item, spans):
                    skipped = WorkResult(worker_outcome=WorkerOutcome.SKIPPED, output="annotation")
                    outcomes.append(Outcome(target.path, item, skipped, text, ANNOTATION))
                    continue
                eq = match_equivalent(equivalents, target.path, item.mutations[0].operator_name, text)
                outcomes.append(Outcome(target.path, item, results[item.job_id], text, eq))
    finally:
        os.chdir(here)
        if not args.list:
            drop_test_database()
        shutil.rmtree(workdir, ignore_errors=True)
    summary = summarise(outcomes, targets)
    print_report(summary, outcomes)
    if args.report:
        args.report.write_text(json.dumps({**summary, "outcomes": [as_json(o) for o in outcomes]}, indent=1))
    print(json.dumps({**summary["total"], "seconds": round(time.monotonic() - started, 1)}))
    if not outcomes:
        print("no mutant to run: the change touched no target's lines")
    bad = summary["total"]["survived"] + summary["total"]["error"]
    if bad and fallback_only(args):
        print(
            "the change touched no target's lines: the sample's survivors are reported, not a failure "
            "(they are older than this change)"
        )
        return 0
    return 1 if bad else 0


def fallback_only(args: argparse.Namespace) -> bool:
    """Whether this run is ``--changed``'s fallback sample (the change touched no target's lines)."""
    return bool(args.changed and getattr(args, "fell_back", False))


def as_json(o: Outcome) -> dict:
    m = o.item.mutations[0]
    return {
        "module": o.target,
        "line": m.start_pos[0],
        "operator": m.operator_name,
        "source": o.line_text,
        "outcome": o.kind,
        "diff": o.result.diff,
        "why_equivalent": o.equivalent.why if o.equivalent else None,
    }


if __name__ == "__main__":
    sys.exit(main())
