"""Benchmark: the hand-out and the submission under adaptive redundancy against the fixed design.

It creates its own PostgreSQL database (as ``bench/annotate_load.py`` does), seeds two running read-first
highlight studies of ``--items`` items each, one fixed (N = 3) and one adaptive (2 to 5 answers, an item
stops when its label share reaches 0.9), and has ``--workers`` annotators answer them in turns, in process
(no HTTP): each turn times ``next_assignment`` (the hand-out) and ``submit`` (which, in the adaptive
study, decides the item's stopping rule in the same transaction). Answers are "positive" with probability
``--agree`` so some items disagree and ask for more. It also prints the plan of the hand-out's candidate
query in each study before it starts (the queue index ``item_queue_idx`` is what keeps it one indexed query).

Printed: per study, hand-outs, p50 / p99 milliseconds of each call, answers per item; the last line is one
JSON object. Usage: ``.venv/bin/python bench/handout_adaptive.py [--items 300] [--workers 30] [--turns 30]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the repository (this file runs as a script)

from bench.annotate_load import SECRET, make_settings, manage, psql  # noqa: E402

TIMINGS = {"read_ms": 900, "answer_ms": 400, "label_at_ms": 900, "first_highlight_at_ms": 1000}
ADAPTIVE = {"mode": "adaptive", "min": 2, "max": 5, "rule": "label_share", "threshold": 0.9}


@contextmanager
def django_on_private_database(admin_url: str, name: str):
    """Django set up in this process on a database of its own (``hatlab_bench_<name>_<pid>``), migrated by
    this tree, dropped afterwards."""
    workdir = Path(tempfile.mkdtemp(prefix="hatlab-bench-"))
    db_name = f"hatlab_bench_{name}_{os.getpid()}"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": make_settings(workdir),
        "PYTHONPATH": os.pathsep.join([str(workdir), str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "DJANGO_SECRET_KEY": SECRET,
        "BENCH_CACHE_PREFIX": f"{name}{os.getpid()}",
        "DATABASE_URL": f"{admin_url.rstrip('/')}/{db_name}",
    }
    psql(admin_url, f"DROP DATABASE IF EXISTS {db_name}")
    psql(admin_url, f"CREATE DATABASE {db_name}")
    try:
        manage(env, ROOT, "migrate", "--verbosity", "0")
        os.environ.update(env)
        sys.path.insert(0, str(workdir))
        import django

        django.setup()
        yield
    finally:
        if "django" in sys.modules and sys.modules["django"].apps is not None:
            from django.db import connections

            connections.close_all()
        psql(admin_url, f"DROP DATABASE IF EXISTS {db_name}")


def seed(items: int, redundancy: dict | None, name: str):
    """A running highlight study of ``items`` synthetic reviews with the given redundancy policy."""
    from django.contrib.auth.models import User

    from annotate.corpus.demo_reviews import generate_reviews
    from annotate.corpus.imports import TextRecord, store_records
    from annotate.models import Dataset
    from annotate.studies.lifecycle import start_study
    from annotate.studies.service import create_study

    owner, _ = User.objects.get_or_create(username="bench")
    dataset = Dataset.objects.create(owner=owner, name=name)
    reviews = generate_reviews(items, seed=11)
    store_records(
        dataset, [TextRecord(i + 1, r["id"], r["text"], r["label"], {}) for i, r in enumerate(reviews)]
    )
    config = {"redundancy": redundancy} if redundancy else {}
    data = {
        "name": name,
        "dataset": dataset.pk,
        "kind": "highlight",
        "config": config,
        "annotators_per_item": 3,
    }
    study = create_study(owner, data)
    start_study(study)
    return study


def ms(values: list[float], q: int) -> float:
    if not values:
        return float("nan")
    return round(statistics.quantiles(values, n=100)[q - 1] if len(values) > 1 else values[0], 3)


def drive(study, workers: int, turns: int, agree: float, rng: random.Random) -> dict:
    """``workers`` annotators answer ``turns`` items each, in turns; the timings of every call."""
    from annotate.handout.assignment import next_assignment
    from annotate.handout.submission import submit
    from annotate.models import Item, Response, Worker

    people = [
        Worker.objects.create(provider="local", external_id=f"{study.name}-{i}") for i in range(workers)
    ]
    nexts, submits = [], []
    for _ in range(turns):
        for worker in people:
            t0 = time.perf_counter()
            a = next_assignment(study, worker)
            t1 = time.perf_counter()
            nexts.append(1000 * (t1 - t0))
            if a is None:
                continue
            n = len(a.item.payload["words"])
            label = "positive" if rng.random() < agree else "negative"
            t2 = time.perf_counter()
            submit(a.uid, {worker.pk}, uuid.uuid4(), {"label": label, "map": [1] + [0] * (n - 1)}, TIMINGS)
            submits.append(1000 * (time.perf_counter() - t2))
    per_item = Counter(Response.objects.filter(study=study).values_list("item_id", flat=True))
    stopped = Item.objects.filter(study=study).exclude(stop_reason="").count()
    return {
        "study": study.name,
        "handouts": len(submits),
        "next_p50_ms": ms(nexts, 50),
        "next_p99_ms": ms(nexts, 99),
        "submit_p50_ms": ms(submits, 50),
        "submit_p99_ms": ms(submits, 99),
        "items_answered": len(per_item),
        "answers_per_item": dict(sorted(Counter(per_item.values()).items())),
        "items_stopped": stopped,
    }


def plan(study) -> str:
    """The plan of the hand-out's first candidate query for a new worker of ``study``."""
    from django.db import connection

    from annotate.handout import assignment

    text = assignment._PASSES[False]
    params = [study.pk, -1, None, [], None, ""]
    with connection.cursor() as cursor:
        cursor.execute("PREPARE bench_plan(bigint, bigint, boolean, bigint[], integer, text) AS " + text)
        cursor.execute("EXPLAIN EXECUTE bench_plan(%s, %s, %s, %s::bigint[], %s, %s)", params)
        lines = [row[0] for row in cursor.fetchall()]
        cursor.execute("DEALLOCATE bench_plan")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--workers", type=int, default=30)
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--agree", type=float, default=0.85)
    parser.add_argument(
        "--admin-url", default=os.environ.get("BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432")
    )
    args = parser.parse_args()
    with django_on_private_database(args.admin_url, "adaptive"):
        rows, plans = [], {}
        for name, redundancy in (("fixed", None), ("adaptive", ADAPTIVE)):
            study = seed(args.items, redundancy, name)
            plans[name] = plan(study)  # with every item open, as a study runs
            rows.append(drive(study, args.workers, args.turns, args.agree, random.Random(7)))
    head = (
        f"{'study':<10}{'hand-outs':>10}{'next p50':>10}{'next p99':>10}{'submit p50':>12}{'submit p99':>12}"
    )
    print(head)
    for r in rows:
        print(
            f"{r['study']:<10}{r['handouts']:>10}{r['next_p50_ms']:>10.2f}{r['next_p99_ms']:>10.2f}"
            f"{r['submit_p50_ms']:>12.2f}{r['submit_p99_ms']:>12.2f}   answers per item {r['answers_per_item']}"
        )
    for name, text in plans.items():
        print(f"\nplan of the candidate query ({name}):\n{text}")
    print(
        json.dumps({"bench": "handout_adaptive", "items": args.items, "workers": args.workers, "rows": rows})
    )


if __name__ == "__main__":
    main()
