"""Benchmark: what one answer costs PostgreSQL while the crowd holds items (the hand-out's queue).

It creates its own PostgreSQL database (as ``bench/annotate_load.py`` does) and, for each ``--held H``, seeds
a running read-first highlight study of ``--items`` items (3 annotators each), has H annotators take an item
each and keep it (the items a crowd of H is answering), then has ``--answerers`` other annotators answer in
turns in process (no HTTP, one connection): ``next_assignment`` then ``submit``. Printed per H: the
PostgreSQL backend's CPU milliseconds per answer (from ``/proc``, so run it where the server is local), this
process's, and the wall time. The queue index holds only items with a free slot (``Item.slots_taken``), so
the first figure should not grow with H; a queue that walked past the held items grew with it. The last
line is one JSON object. Usage::

    .venv/bin/python bench/handout_queue.py --held 0 200 1000
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the repository (this file runs as a script)

from bench.handout_adaptive import TIMINGS, django_on_private_database, seed  # noqa: E402


def backend_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a local process (fields 14 and 15 of ``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def answer(study, worker) -> bool:
    """One hand-out and its answer; ``False`` when nothing was handed out."""
    from annotate.handout.assignment import next_assignment
    from annotate.handout.submission import submit

    assignment = next_assignment(study, worker)
    if assignment is None:
        return False
    words = len(assignment.item.payload["words"])
    submit(
        assignment.uid,
        {worker.pk},
        uuid.uuid4(),
        {"label": "positive", "map": [1] + [0] * (words - 1)},
        TIMINGS,
    )
    return True


def measure(held: int, items: int, answerers: int, turns: int) -> dict:
    """CPU per answer with ``held`` items held by other annotators."""
    from django.db import connection

    from annotate.handout.assignment import next_assignment
    from annotate.models import Worker

    study = seed(items, None, f"held {held}")
    for i in range(held):
        next_assignment(study, Worker.objects.create(provider="local", external_id=f"{held}-holder-{i}"))
    people = [
        Worker.objects.create(provider="local", external_id=f"{held}-answerer-{i}") for i in range(answerers)
    ]
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    for worker in people[:5]:  # plans made and cached before the clock starts
        answer(study, worker)
    db0, app0, wall0 = backend_cpu_s(pid), time.process_time(), time.perf_counter()
    done = sum(answer(study, worker) for _ in range(turns) for worker in people)
    return {
        "held": held,
        "answers": done,
        "db_cpu_ms": round(1000 * (backend_cpu_s(pid) - db0) / done, 3),
        "app_cpu_ms": round(1000 * (time.process_time() - app0) / done, 3),
        "wall_ms": round(1000 * (time.perf_counter() - wall0) / done, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--held", type=int, nargs="+", default=[0, 200, 1000])
    parser.add_argument("--items", type=int, default=3000)
    parser.add_argument("--answerers", type=int, default=30)
    parser.add_argument("--turns", type=int, default=12)
    parser.add_argument(
        "--admin-url", default=os.environ.get("BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432")
    )
    args = parser.parse_args()
    with django_on_private_database(args.admin_url, "queue"):
        rows = [measure(held, args.items, args.answerers, args.turns) for held in args.held]
    print(
        f"{'held':>6}{'answers':>9}{'PostgreSQL CPU ms':>19}{'app CPU ms':>12}{'wall ms':>9}   (per answer)"
    )
    for r in rows:
        print(
            f"{r['held']:>6}{r['answers']:>9}{r['db_cpu_ms']:>19.3f}{r['app_cpu_ms']:>12.3f}{r['wall_ms']:>9.3f}"
        )
    print(json.dumps({"bench": "handout_queue", "items": args.items, "rows": rows}))


if __name__ == "__main__":
    main()
