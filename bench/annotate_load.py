"""Load benchmark of the annotator API: ``next`` then ``submit``, by many annotators at once.

It creates its own PostgreSQL database, builds its tables with ``manage.py migrate`` (when the
repository has no migrations yet, they are generated into a temporary folder first, through
``MIGRATION_MODULES``), seeds a running read-first highlight study, starts the app under gunicorn,
and drives C concurrent annotators for D seconds (after a few seconds of warm-up that are not
counted) over keep-alive HTTP/1.1 connections. Each annotator opens its own invite link (worker
cookie + CSRF token), then loops: POST next, POST submit (with ``--chained``: POST submit, which
brings the next item).

Printed: submissions/s, p50 / p99 latency of each endpoint, submissions acknowledged vs stored
(an acknowledged submission missing from the database is *lost*), and the per-item invariants
(no item above its N responses, nobody twice on an item). The last line is one JSON object.

Without ``--rate`` the annotators go as fast as they can (a closed loop: by Little's law the
latency then grows with C: C / throughput on average); ``--rate R`` paces them to R submissions/s in
all, each annotator starting an answer at most every C / R seconds, which is how a crowd arrives. Usage::

    .venv/bin/python bench/annotate_load.py --concurrency 50 200 --duration 20
    .venv/bin/python bench/annotate_load.py --concurrency 200 --rate 300
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
SECRET = "hatlab-bench-secret-" + uuid.uuid4().hex


# ------------------------------------------------------------------ set-up


def has_migrations() -> bool:
    return any(p.name[0].isdigit() for p in (ROOT / "annotate" / "migrations").glob("*.py"))


def make_settings(workdir: Path) -> str:
    """A settings module for the bench; with no migrations in the repository it points
    ``MIGRATION_MODULES`` at a temporary package that ``makemigrations`` fills."""
    (workdir / "hatlab_bench_settings.py").write_text(
        "from config.settings import *  # noqa: F401,F403\n"
        + (
            ""
            if has_migrations()
            else "MIGRATION_MODULES = {'annotate': 'hatlab_bench_migrations.annotate'}\n"
        )
    )
    if not has_migrations():
        (workdir / "hatlab_bench_migrations" / "annotate").mkdir(parents=True)
        (workdir / "hatlab_bench_migrations" / "__init__.py").write_text("")
        (workdir / "hatlab_bench_migrations" / "annotate" / "__init__.py").write_text("")
    return "hatlab_bench_settings"


def psql(admin_url: str, sql: str) -> None:
    parts = urlsplit(admin_url)
    subprocess.run(
        [
            "psql",
            "-h",
            parts.hostname or "127.0.0.1",
            "-p",
            str(parts.port or 5432),
            "-U",
            parts.username or "postgres",
            "-d",
            "postgres",
            "-v",
            "ON_ERROR_STOP=1",
            "-q",
            "-c",
            sql,
        ],
        check=True,
    )


def manage(env: dict, *args: str) -> None:
    subprocess.run(
        [PYTHON, str(ROOT / "manage.py"), *args], env=env, check=True, cwd=ROOT, stdout=subprocess.DEVNULL
    )


def seed(items: int, per_item: int, time_limit_s: int) -> tuple[str, str]:
    """A researcher, ``items`` synthetic reviews and a running study; returns (study uid, its pk)."""
    from django.contrib.auth.models import User

    from annotate.corpus.demo_reviews import generate_reviews
    from annotate.corpus.imports import TextRecord, store_records
    from annotate.models import Dataset, Study
    from annotate.studies.lifecycle import start_study
    from annotate.tasks import get_kind

    owner = User.objects.create_user("bench", password=uuid.uuid4().hex)
    dataset = Dataset.objects.create(owner=owner, name="bench")
    reviews = generate_reviews(items, seed=11)
    store_records(
        dataset, [TextRecord(i + 1, r["id"], r["text"], r["label"], {}) for i, r in enumerate(reviews)]
    )
    kind = get_kind("highlight")
    study = Study.objects.create(
        name="bench",
        owner=owner,
        dataset=dataset,
        kind=kind.name,
        config=kind.validate_config({}),
        annotators_per_item=per_item,
        time_limit_s=time_limit_s,
    )
    start_study(study)
    return str(study.uid), study.pk


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_gunicorn(env: dict, port: int, workers: int, threads: int, worker_class: str) -> subprocess.Popen:
    cmd = [
        str(Path(PYTHON).parent / "gunicorn"),
        "config.wsgi",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        "--worker-class",
        worker_class,
        "--threads",
        str(threads),
        "--keep-alive",
        "75",
        "--backlog",
        "2048",
        "--log-level",
        "warning",
    ]
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT)
    deadline = time.monotonic() + 240  # a busy machine imports slowly
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"GET /login/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                if s.recv(64).startswith(b"HTTP/1.1 200"):
                    return proc
        except OSError:
            time.sleep(0.2)
    proc.terminate()
    raise RuntimeError("gunicorn did not come up")


# ------------------------------------------------------------------ CPU accounting


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of one process (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return out


def cpu_snapshot(server_pid: int, database_url: str) -> dict[str, float]:
    """CPU seconds used so far by the gunicorn processes, the database's backends and this client."""
    import psycopg2

    with psycopg2.connect(database_url) as conn, conn.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        backends = [row[0] for row in cursor.fetchall()]
    conn.close()
    times = os.times()
    return {
        "app": sum(_cpu_seconds(p) for p in [server_pid, *_children(server_pid)]),
        "db": sum(_cpu_seconds(p) for p in backends),
        "client": times.user + times.system,
        "_backends": backends,
    }


def cpu_used(before: dict, after: dict) -> dict[str, float]:
    return {k: after[k] - before[k] for k in ("app", "db", "client")}


# ------------------------------------------------------------------ a small HTTP/1.1 client


class Connection:
    """One keep-alive HTTP/1.1 connection with its cookies (written for low client overhead)."""

    def __init__(self, port: int):
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.cookies: dict[str, str] = {}

    tries = 2  # a keep-alive connection the server dropped is opened again once

    async def request(self, method: str, path: str, body: bytes = b"", headers: dict | None = None):
        for attempt in range(self.tries):
            if self.writer is None:
                self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
            cookie = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
            head = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(body)}"]
            if cookie:
                head.append(f"Cookie: {cookie}")
            head += [f"{k}: {v}" for k, v in (headers or {}).items()]
            try:
                self.writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
                return await self._read()
            except (ConnectionError, asyncio.IncompleteReadError):
                self.writer.close()
                self.writer = None
                if attempt == self.tries - 1:
                    raise
        raise ConnectionError("unreachable")

    async def _read(self) -> tuple[int, bytes]:
        raw = await self.reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        length, chunked, close = 0, False, False
        for line in lines[1:]:
            name, _, value = line.partition(":")
            name, value = name.strip().lower(), value.strip()
            if name == "content-length":
                length = int(value)
            elif name == "transfer-encoding" and "chunked" in value.lower():
                chunked = True
            elif name == "set-cookie":
                key, _, rest = value.partition("=")
                self.cookies[key] = rest.split(";", 1)[0]
            elif name == "connection" and value.lower() == "close":
                close = True
        if chunked:
            body = b""
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).strip(), 16)
                chunk = await self.reader.readexactly(size + 2)
                if size == 0:
                    break
                body += chunk[:-2]
        else:
            body = await self.reader.readexactly(length)
        if close:
            self.writer.close()
            self.writer = None
        return status, body


# ------------------------------------------------------------------ the load


@dataclass
class Tally:
    next_ms: list[float] = field(default_factory=list)
    submit_ms: list[float] = field(default_factory=list)
    acknowledged: set[int] = field(default_factory=set)
    errors: dict[str, int] = field(default_factory=dict)
    done_early: int = 0
    ready: int = 0
    measuring: bool = False  # false during the warm-up: latencies and throughput are not counted
    measured: int = 0  # submissions acknowledged while measuring

    def error(self, what: str) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1


async def annotator(
    port: int,
    entry: str,
    start: asyncio.Event,
    deadline_box: list,
    period: float,
    offset: float,
    tally: Tally,
    chained: bool = False,
) -> None:
    conn = Connection(port)
    try:
        # the invitee presses Start (a POST binds the invite), then opens the task page it leads to
        status, _ = await conn.request("POST", entry)
        if status == 303:
            status, _ = await conn.request("GET", f"/w/{entry.split('/')[2]}/")
    finally:
        tally.ready += 1
    if status != 200:
        tally.error(f"entry {status}")
        return
    csrf = conn.cookies.get("csrftoken", "")
    headers = {"Content-Type": "application/json", "X-CSRFToken": csrf}
    study = entry.split("/")[2]
    await start.wait()
    wake = time.monotonic() + offset
    cycle = 0
    data = None
    while True:
        if period:
            # An annotator starts an answer at most once per period, counted from when they
            # started the last one: kept waiting, they do not hurry to make up for it.
            delay = wake - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            wake = max(wake, time.monotonic()) + period
        if time.monotonic() >= deadline_box[0]:
            break
        cycle += 1
        if data is None:
            began = time.perf_counter()
            status, body = await conn.request("POST", f"/api/work/{study}/next/", b"", headers)
            if tally.measuring:
                tally.next_ms.append((time.perf_counter() - began) * 1000)
            if status != 200:
                tally.error(f"next {status}")
                continue
            data = json.loads(body)
        if data.get("done"):
            tally.done_early += 1
            break
        n = len(data["item"]["payload"]["words"])
        word_map = [0] * n
        word_map[cycle % n] = 1
        answer = {
            "submission_key": str(uuid.uuid4()),
            "answer": {"label": "positive", "map": word_map},
            "timings": {
                "read_ms": 4000,
                "answer_ms": 2000,
                "label_at_ms": 4000,
                "first_highlight_at_ms": 4500,
            },
            "next": chained,
        }
        began = time.perf_counter()
        status, body = await conn.request(
            "POST",
            f"/api/work/assignments/{data['assignment']}/submit/",
            json.dumps(answer).encode(),
            headers,
        )
        if tally.measuring:
            tally.submit_ms.append((time.perf_counter() - began) * 1000)
        data = None
        if status in (200, 201):
            stored = json.loads(body)
            tally.acknowledged.add(stored["response"])
            tally.measured += tally.measuring
            data = stored.get("next")  # the next item came with the answer (--chained)
        else:
            tally.error(f"submit {status}")
    if conn.writer is not None:
        conn.writer.close()


async def drive(
    port: int,
    entries: list[str],
    duration: float,
    rate: float,
    snapshot,
    chained: bool = False,
    warmup: float = 0.0,
) -> tuple[Tally, float, dict]:
    tally = Tally()
    start = asyncio.Event()
    deadline_box = [float("inf")]
    concurrency = len(entries)
    period = concurrency / rate if rate else 0.0
    tasks = [
        asyncio.create_task(
            annotator(port, e, start, deadline_box, period, period * i / concurrency, tally, chained)
        )
        for i, e in enumerate(entries)
    ]
    while tally.ready < concurrency:  # every annotator has opened its page before the clock starts
        await asyncio.sleep(0.05)
    start.set()
    await asyncio.sleep(warmup)  # connections, prepared statements and caches warm up uncounted
    before = snapshot()
    began = time.monotonic()
    deadline_box[0] = began + duration
    tally.measuring = True
    await asyncio.gather(*tasks)
    elapsed = time.monotonic() - began
    after = snapshot()
    after["db"] = sum(_cpu_seconds(p) for p in before["_backends"])  # the same backends as before
    return tally, elapsed, cpu_used(before, after)


def ms(values: list[float], q: float) -> float | None:
    """The ``q``-th percentile in ms, rounded; ``None`` when nothing was measured (``next`` when chained)."""
    return round(percentile(values, q), 1) if values else None


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    return (
        statistics.quantiles(values, n=1000, method="inclusive")[int(q * 10) - 1]
        if len(values) > 1
        else values[0]
    )


def check_database(study_pk: int, acknowledged: set[int]) -> dict:
    from django.db.models import Count

    from annotate.models import Item, Response

    stored = set(Response.objects.filter(study_id=study_pk).values_list("id", flat=True))
    over = Item.objects.filter(study_id=study_pk).annotate(n=Count("responses")).filter(n__gt=3)
    pairs = Response.objects.filter(study_id=study_pk).values("item_id", "worker_id").annotate(n=Count("id"))
    return {
        "stored": len(stored),
        "lost": len(acknowledged - stored),
        "items_over_n": over.count(),
        "repeated_item_worker": pairs.filter(n__gt=1).count(),
    }


def run_once(args, concurrency: int, base_env: dict, settings_module: str, admin_url: str) -> dict:
    import django
    from django.db import connections

    db_name = f"hatlab_bench_{os.getpid()}"
    psql(admin_url, f"DROP DATABASE IF EXISTS {db_name}")
    psql(admin_url, f"CREATE DATABASE {db_name}")
    env = {**base_env, "DATABASE_URL": f"{admin_url.rstrip('/')}/{db_name}"}
    try:
        if not has_migrations():
            manage(env, "makemigrations", "annotate")
        manage(env, "migrate", "--verbosity", "0")
        os.environ.update(env)
        django.setup()
        from annotate.crowd.providers.local.adapter import invite_path, make_invite
        from annotate.models import Study

        study_uid, study_pk = seed(args.items, 3, 3600)
        study = Study.objects.get(pk=study_pk)
        entries = [invite_path(study, make_invite(study, f"bench-{i}")) for i in range(concurrency)]
        port = free_port()
        server = start_gunicorn(env, port, args.workers, args.threads, args.worker_class)
        try:
            # The client's own garbage collection would stall every request in flight at once (it holds
            # Django and the models): keep it out of the measured window.
            gc.collect()
            gc.freeze()
            gc.disable()
            tally, elapsed, cpu = asyncio.run(
                drive(
                    port,
                    entries,
                    args.duration,
                    args.rate,
                    lambda: cpu_snapshot(server.pid, env["DATABASE_URL"]),
                    args.chained,
                    args.warmup,
                )
            )
        finally:
            gc.enable()
            server.terminate()
            server.wait(timeout=30)
        db = check_database(study_pk, tally.acknowledged)
    finally:
        for conn in connections.all():
            conn.close()
        if not args.keep_db:
            psql(admin_url, f"DROP DATABASE IF EXISTS {db_name}")
    both = tally.next_ms + tally.submit_ms
    cycles = max(tally.measured, 1)
    return {
        "concurrency": concurrency,
        "rate_target": args.rate or None,
        "protocol": "chained" if args.chained else "two-step",
        "duration_s": round(elapsed, 2),
        "submissions_per_s": round(tally.measured / elapsed, 1),
        "next_p50_ms": ms(tally.next_ms, 50),
        "next_p99_ms": ms(tally.next_ms, 99),
        "submit_p50_ms": ms(tally.submit_ms, 50),
        "submit_p99_ms": ms(tally.submit_ms, 99),
        "p50_ms": ms(both, 50),
        "p99_ms": ms(both, 99),
        "acknowledged": len(tally.acknowledged),
        **db,
        "cpu_ms_per_submission": {k: round(1000 * v / cycles, 2) for k, v in cpu.items()},
        "cpu_busy_share": round(sum(cpu.values()) / (elapsed * (os.cpu_count() or 1)), 2),
        "errors": tally.errors,
        "ran_out_of_items": tally.done_early,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--concurrency", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--duration", type=float, default=20.0, help="Seconds of load per run.")
    parser.add_argument(
        "--warmup", type=float, default=3.0, help="Seconds of load before the clock starts (not counted)."
    )
    parser.add_argument(
        "--rate", type=float, default=0.0, help="Target submissions/s in all (0: closed loop)."
    )
    parser.add_argument("--items", type=int, default=6000, help="Items in the study (3 annotators each).")
    parser.add_argument("--workers", type=int, default=3, help="gunicorn worker processes.")
    parser.add_argument("--threads", type=int, default=4, help="gunicorn threads per worker.")
    parser.add_argument(
        "--worker-class", default="gthread", help="gunicorn worker class (gthread keeps connections)."
    )
    parser.add_argument(
        "--admin-url", default=os.environ.get("BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432")
    )
    parser.add_argument(
        "--chained",
        action="store_true",
        help='Each submit asks for the next item too ("next": true), as the task pages do: one request per answer.',
    )
    parser.add_argument("--keep-db", action="store_true")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="hatlab-bench-"))
    try:
        settings_module = make_settings(workdir)
        base_env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": settings_module,
            "PYTHONPATH": os.pathsep.join([str(workdir), str(ROOT), os.environ.get("PYTHONPATH", "")]),
            "DJANGO_SECRET_KEY": SECRET,
            "DJANGO_DEBUG": "false",
            "HATLAB_LOG_LEVEL": "ERROR",
            # hundreds of annotators from one address, each as fast as the server goes: what the throttles
            # (annotate.infra.throttle) exist to refuse; the bench measures the API without them
            "HATLAB_THROTTLES": "false",
        }
        os.environ.update(
            {k: base_env[k] for k in ("DJANGO_SETTINGS_MODULE", "DJANGO_SECRET_KEY", "DJANGO_DEBUG")}
        )
        sys.path[:0] = [str(workdir), str(ROOT)]
        results = []
        for concurrency in args.concurrency:
            results.append(run_once(args, concurrency, base_env, settings_module, args.admin_url))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    print(
        f"annotator API under load: gunicorn {args.workers} workers x {args.threads} threads, "
        f"{os.cpu_count()} CPUs, {args.duration:.0f} s per run after {args.warmup:.0f} s of warm-up, {args.items} items x 3, "
        + ("submit carries the next item (one request per answer)" if args.chained else "next, then submit")
    )
    header = (
        f"{'C':>5} {'rate':>6} {'subs/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'next p99':>9} {'submit p99':>11} "
        f"{'acked':>7} {'stored':>7} {'lost':>5} {'errors':>7} {'CPU ms/sub app+db+client':>25}"
    )
    print(header)
    for r in results:
        print(
            f"{r['concurrency']:>5} {r['rate_target'] or '-':>6} {r['submissions_per_s']:>8} {r['p50_ms']:>7} "
            f"{r['p99_ms']:>7} {r['next_p99_ms'] or '-':>9} {r['submit_p99_ms']:>11} {r['acknowledged']:>7} "
            f"{r['stored']:>7} {r['lost']:>5} {sum(r['errors'].values()):>7} "
            f"{'{app}+{db}+{client}'.format(**r['cpu_ms_per_submission']):>25}"
        )
    print(
        json.dumps(
            {"bench": "annotate_load", "workers": args.workers, "threads": args.threads, "runs": results}
        )
    )


if __name__ == "__main__":
    main()
