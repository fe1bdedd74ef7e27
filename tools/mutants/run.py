"""Run the hand-made mutants of :mod:`mutants` (``tools/mutants/mutants.py``): each is applied to a
temporary copy of the tree, only its listed tests run (``-x``), and the run fails when a mutant
survives, when its source text is no longer found, or when the unmutated copy does not pass.

    python tools/mutants/run.py            # every mutant
    python tools/mutants/run.py --only fleiss-pbar-unweighted --only submit-not-counted
    python tools/mutants/run.py --list
    python tools/mutants/run.py --jobs 1   # one lane (default: two side by side)

Prints a table (mutant, tests, outcome, seconds) and one JSON line. The tests use the database of
``DATABASE_URL`` (pytest-django's ``test_`` copy of it; the second lane a ``_mutants1`` sibling):
created by each lane's unmutated run, reused by its mutants.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script: the mutant list beside it

from mutants import MUTANTS, Mutant  # noqa: E402 (after the path line above)

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 240
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/hatlab"  # config/settings.py's default


def check_patterns(mutants: list[Mutant], root: Path) -> list[str]:
    """A message per mutant whose source text is not found exactly once."""
    problems = []
    for m in mutants:
        path = root / m.path
        if not path.exists():
            problems.append(f"mutant {m.name}: {m.path} not found")
            continue
        count = path.read_text().count(m.old)
        if count != 1:
            what = "pattern not found" if count == 0 else f"pattern found {count} times"
            problems.append(f"mutant {m.name}: {what} in {m.path}: {m.old!r}")
    return problems


def copy_tree(dest: Path) -> Path:
    """The tracked and untracked (not ignored) files of the tree, copied under ``dest/tree``; the
    shared data beside the repository is linked beside the copy, where the tests look for it."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True, capture_output=True
    ).stdout.decode()
    tree = dest / "tree"
    for name in filter(None, listed.split("\0")):
        src = ROOT / name
        if src.is_file() and not src.is_symlink():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, tree / name)
    shared = ROOT.parent / "shared"
    if shared.exists():
        (dest / "shared").symlink_to(shared)
    return tree


def pytest(tree: Path, tests: list[str], *extra: str, env: dict[str, str]) -> tuple[int, float, str]:
    env = {**os.environ, **env, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-x", *extra, *tests]
    start = time.monotonic()
    try:
        done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return -1, time.monotonic() - start, "timed out"
    return done.returncode, time.monotonic() - start, done.stdout[-3000:] + done.stderr[-2000:]


def outcome(rc: int) -> str:
    if rc == 0:
        return "survived"
    if rc in (1, -1):  # a test failed (or the mutant hangs past the limit)
        return "killed" if rc == 1 else "killed (timeout)"
    return f"error (pytest exit {rc})"


def lane_database(lane: int) -> dict[str, str]:
    """Lane 0 uses ``DATABASE_URL`` as given; lane k its own database (``<name>_mutants<k>``), so
    that lanes running side by side never share pytest-django's test database."""
    if lane == 0:
        return {}
    url = os.environ.get("DATABASE_URL", DEFAULT_DATABASE_URL)
    base, _, query = url.partition("?")
    return {"DATABASE_URL": f"{base}_mutants{lane}" + (f"?{query}" if query else "")}


def drop_test_database(url: str | None = None) -> None:
    """Drop the PostgreSQL test database that pytest-django made from ``url`` (default ``DATABASE_URL``)
    for this run (``HATLAB_TEST_RUN``, as config/settings.py names it): ``--reuse-db`` keeps it between
    mutants, and nothing else would remove it."""
    url = url or os.environ.get("DATABASE_URL", DEFAULT_DATABASE_URL)
    if not url.startswith("postgres"):
        return
    import dj_database_url
    import psycopg2

    cfg = dj_database_url.parse(url)
    name = f"test_{cfg['NAME']}_{os.environ['HATLAB_TEST_RUN']}"
    conn = psycopg2.connect(
        dbname="postgres",
        user=cfg["USER"],
        password=cfg["PASSWORD"],
        host=cfg["HOST"],
        port=cfg["PORT"] or 5432,
    )
    conn.autocommit = True
    with conn.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    conn.close()


def run_lane(lane: int, mutants: list[Mutant], workdir: Path) -> list[dict] | None:
    """Apply ``mutants`` one at a time to this lane's copy of the tree; ``None`` when the unmutated
    copy does not pass their tests (no mutant can be judged then). The lane's test database is dropped
    after it."""
    if not mutants:
        return []
    env = lane_database(lane)
    try:
        return _judge(lane, mutants, copy_tree(workdir / f"lane{lane}"), env)
    finally:
        drop_test_database(env.get("DATABASE_URL"))


def _judge(lane: int, mutants: list[Mutant], tree: Path, env: dict[str, str]) -> list[dict] | None:
    everything = list(dict.fromkeys(t for m in mutants for t in m.tests))
    rc, seconds, log = pytest(tree, everything, "--create-db", env=env)
    print(f"lane {lane} unmutated: {len(everything)} test selections, exit {rc}, {seconds:.1f}s", flush=True)
    if rc != 0:
        print(log, file=sys.stderr)
        print("the unmutated tree does not pass the selected tests: no mutant can be judged", file=sys.stderr)
        return None
    results = []
    for m in mutants:
        path = tree / m.path
        original = path.read_text()
        try:
            path.write_text(original.replace(m.old, m.new, 1))
            rc, seconds, log = pytest(tree, list(m.tests), "--reuse-db", env=env)
        finally:
            path.write_text(original)
        results.append({"mutant": m.name, "tests": list(m.tests), "outcome": outcome(rc), "seconds": seconds})
        print(f"{m.name}: {outcome(rc)} ({seconds:.1f}s)", flush=True)
        if rc == 0 or outcome(rc).startswith("error"):
            print(f"--- {m.name}: {outcome(rc)}\n{log}", file=sys.stderr)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=[], help="run only this mutant (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the mutants and stop")
    parser.add_argument(
        "--jobs", type=int, default=2, help="lanes side by side, each with its own copy and database"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary copy")
    args = parser.parse_args(argv)

    mutants = [m for m in MUTANTS if not args.only or m.name in args.only]
    unknown = set(args.only) - {m.name for m in MUTANTS}
    if unknown:
        parser.error(f"unknown mutants: {', '.join(sorted(unknown))}")
    if args.list:
        for m in mutants:
            print(f"{m.name:48} {m.path:45} {m.why}")
        return 0
    problems = check_patterns(mutants, ROOT)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        print("the source changed: update tools/mutants/mutants.py to the new text", file=sys.stderr)
        return 2

    started = time.monotonic()
    os.environ.setdefault("HATLAB_TEST_RUN", f"mutants{os.getpid()}")  # one test database per lane and run
    workdir = Path(tempfile.mkdtemp(prefix="hatlab-mutants-"))
    lanes = [mutants[k :: args.jobs] for k in range(args.jobs)]
    try:
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            outcomes = list(pool.map(run_lane, range(args.jobs), lanes, [workdir] * args.jobs))
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    if any(lane is None for lane in outcomes):
        return 2
    by_name = {r["mutant"]: r for lane in outcomes for r in lane}
    results = [by_name[m.name] for m in mutants]

    width = max(len(r["mutant"]) for r in results)
    print(f"{'mutant':{width}}  {'tests':58}  {'outcome':18}  seconds")
    for r in results:
        tests = ", ".join(t.removeprefix("tests/") for t in r["tests"])
        print(f"{r['mutant']:{width}}  {tests[:58]:58}  {r['outcome']:18}  {r['seconds']:7.1f}")
    survived = [r["mutant"] for r in results if r["outcome"] == "survived"]
    errors = [r["mutant"] for r in results if r["outcome"].startswith("error")]
    killed = len(results) - len(survived) - len(errors)
    summary = {
        "mutants": len(results),
        "killed": killed,
        "survived": survived,
        "errors": errors,
        "seconds": round(time.monotonic() - started, 1),
    }
    print(json.dumps(summary))
    return 1 if survived or errors else 0


if __name__ == "__main__":
    sys.exit(main())
