"""Load benchmark of the annotator API: ``next`` then ``submit``, by many annotators at once.

It creates its own PostgreSQL database, builds its tables with ``manage.py migrate``, seeds a running
read-first highlight study, starts the app under gunicorn, and drives C concurrent annotators for D seconds
(after a few seconds of warm-up that are not counted) over keep-alive HTTP/1.1 connections. Each annotator
presses Start on its own invite link (worker cookie), opens the task page (its CSRF token), then loops: POST
next, POST submit (with ``--chained``: POST submit, which brings the next item, as the task pages do).

By default the app runs as docker-compose deploys it: throttles on, counted in Redis (``--cache-url``, a key
prefix of its own per run), HTTPS behind a trusted proxy (each annotator comes from its own address in
``X-Forwarded-For``, with ``X-Forwarded-Proto: https`` and its page's ``Origin``), no gunicorn access log
(nginx logs each request). ``--no-throttles`` turns the throttles off, ``--access-log`` writes gunicorn's log.

Printed: submissions/s, p50 / p99 latency of each endpoint, submissions acknowledged vs stored
(an acknowledged submission missing from the database is *lost*), the per-item invariants
(no item above its N responses, nobody twice on an item), and the CPU milliseconds per answer of the app's
processes (gunicorn's master and workers), of PostgreSQL (the bench database's backends) and of this client,
from ``/proc``, and the busiest gunicorn worker's share of the app's CPU (*top worker*; 0.33 is even with
three): a worker keeps the keep-alive connections it accepted, and a run where most annotators landed on one
is held near one core by its interpreter lock, so compare runs whose spread is alike. The last line is one
JSON object.

Without ``--rate`` the annotators go as fast as they can (a closed loop: by Little's law the
latency then grows with C: C / throughput on average); ``--rate R`` paces them to R submissions/s in
all, each annotator starting an answer at most every C / R seconds, which is how a crowd arrives.

``--refs A B`` runs two commits (any git ref; ``.`` is this working tree) alternately in one window for
``--rounds`` rounds, each round starting one tree later (A, B, then B, A: no tree always runs after the
other), each from a copy of its tree (``git archive``) under the same client, database server and settings,
and prints B's figures over A's (median of the rounds). ``--suite`` runs the issue's
three loads each time: chained at C = 50 and 200, and chained at C = 200 paced to 300/s. ``--profile DIR``
writes each gunicorn worker's cProfile of the submissions there, a folder per tree. Usage::

    .venv/bin/python bench/annotate_load.py --concurrency 50 200 --duration 20 --chained
    .venv/bin/python bench/annotate_load.py --concurrency 200 --rate 300 --chained
    .venv/bin/python bench/annotate_load.py --suite --refs c3b6ee0 . --rounds 2
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import os
import re
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

#: What docker-compose's web service runs with, beyond its database and secrets (docker-compose.yml): HTTPS
#: behind its own proxy (here: the bench's client on 127.0.0.1, which sends the forwarded headers), and the
#: throttles' counters in Redis.
PRODUCTION_ENV = {
    "DJANGO_HTTPS": "true",
    "DJANGO_BEHIND_TLS_PROXY": "true",
    "DJANGO_TRUSTED_PROXIES": "127.0.0.1",
    "DJANGO_ALLOWED_HOSTS": "localhost,127.0.0.1",
}
ORIGIN = "https://127.0.0.1"


def make_settings(workdir: Path) -> str:
    """A settings module for the bench: the tree's settings, its cache keys under ``$BENCH_CACHE_PREFIX``, one
    per run (each run's fresh database numbers its workers from 1 again: runs sharing a Redis must never
    count each other's requests; a tree from before the shared cache has no cache setting)."""
    (workdir / "hatlab_bench_settings.py").write_text(
        "import os\n"
        "from config.settings import *  # noqa: F401,F403\n"
        "CACHES = globals().get('CACHES', {'default': {'BACKEND': 'django.core.cache.backends.locmem.LocMemCache'}})\n"
        "CACHES['default']['KEY_PREFIX'] = os.environ['BENCH_CACHE_PREFIX']\n"
    )
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


def manage(env: dict, tree: Path, *args: str) -> None:
    subprocess.run(
        [PYTHON, str(tree / "manage.py"), *args], env=env, check=True, cwd=tree, stdout=subprocess.DEVNULL
    )


def _first(*paths: str):
    """The first of ``module:name`` paths that imports: the same helper under older trees' module names."""
    import importlib

    for path in paths:
        module, _, name = path.partition(":")
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            continue
    raise ImportError(f"none of {paths}")


def seed(items: int, per_item: int, time_limit_s: int, concurrency: int) -> dict:
    """A researcher, ``items`` synthetic reviews, a running study and ``concurrency`` invites; run inside the
    tree under test (``--seed``), whose module names it finds."""
    import django

    django.setup()
    from django.contrib.auth.models import User

    from annotate.models import Dataset, Study
    from annotate.tasks import get_kind

    generate_reviews = _first(
        "annotate.corpus.demo_reviews:generate_reviews", "annotate.demo:generate_reviews"
    )
    text_record = _first("annotate.corpus.imports:TextRecord", "annotate.corpus:TextRecord")
    store_records = _first("annotate.corpus.imports:store_records", "annotate.corpus:store_records")
    start_study = _first("annotate.studies.lifecycle:start_study", "annotate.lifecycle:start_study")
    adapter = "annotate.crowd.providers.local.adapter", "annotate.providers.local.adapter"
    invite_path = _first(*(f"{m}:invite_path" for m in adapter))
    make_invite = _first(*(f"{m}:make_invite" for m in adapter))

    owner = User.objects.create_user("bench", password=uuid.uuid4().hex)
    dataset = Dataset.objects.create(owner=owner, name="bench")
    reviews = generate_reviews(items, seed=11)
    store_records(
        dataset, [text_record(i + 1, r["id"], r["text"], r["label"], {}) for i, r in enumerate(reviews)]
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
    entries = [invite_path(study, make_invite(study, f"bench-{i}")) for i in range(concurrency)]
    from django.db import connection

    with connection.cursor() as cursor:  # as autovacuum would within its minute (older trees leave it to it);
        cursor.execute("ANALYZE annotate_item")  # the tables still empty stay unanalyzed, as they would
    return {"study_pk": study.pk, "entries": entries}


def in_tree(env: dict, tree: Path, *args: str) -> dict:
    """Run this script with ``args`` inside ``tree`` (its ``annotate`` and settings); its JSON answer."""
    done = subprocess.run(
        [PYTHON, str(Path(__file__).resolve()), *args], env=env, cwd=tree, check=True, capture_output=True
    )
    return json.loads(done.stdout.decode().strip().splitlines()[-1])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: A gunicorn configuration that profiles each worker's requests (cProfile on each thread's CPU time, so that
#: waiting on the database or on a busy machine is left out; one profile per thread, enabled around the WSGI
#: call, for the paths that hold ``$BENCH_PROFILE_PATH``: the submissions by default) and writes them to ``$BENCH_PROFILE_DIR/worker-<pid>.prof`` when the worker exits.
PROFILE_HOOKS = """
import cProfile, os, pstats, threading, time
_profiles, _local = [], threading.local()

def post_worker_init(worker):
    app = worker.wsgi
    def profiled(environ, start_response):
        if os.environ.get("BENCH_PROFILE_PATH", "") not in environ.get("PATH_INFO", ""):
            return app(environ, start_response)
        prof = getattr(_local, "prof", None)
        if prof is None:
            prof = _local.prof = cProfile.Profile(time.thread_time)
            _profiles.append(prof)
        prof.enable()
        try:
            return app(environ, start_response)
        finally:
            prof.disable()
    worker.wsgi = profiled

def worker_exit(server, worker):
    if _profiles:
        stats = pstats.Stats(*_profiles)
        stats.dump_stats(os.path.join(os.environ["BENCH_PROFILE_DIR"], f"worker-{os.getpid()}.prof"))
"""


def gunicorn_command(args, port: int, workdir: Path, concurrency: int = 0) -> list[str]:
    """gunicorn as docker-compose's web service starts it (workers, threads, keep-alive). With
    ``--even-connections`` (the default) each worker accepts at most its share of the ``concurrency``
    annotators' keep-alive connections (and its threads' worth more, so that none is closed for want of
    room): a worker keeps what it accepted, and left to chance one worker can hold most annotators and cap
    the run near one core by its interpreter lock (the *top worker* column). In production gunicorn sees
    nginx's pool of upstream connections, not the crowd's."""
    cmd = [
        str(Path(PYTHON).parent / "gunicorn"),
        "config.wsgi",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(args.workers),
        "--worker-class",
        args.worker_class,
        "--threads",
        str(args.threads),
        "--keep-alive",
        "75",
        "--backlog",
        "2048",
        "--log-level",
        "warning",
    ]
    if args.access_log:
        cmd += ["--access-logfile", str(workdir / "access.log")]
    if args.even_connections and concurrency:
        cmd += ["--worker-connections", str(math.ceil(concurrency / args.workers) + args.threads)]
    if args.profile:
        (workdir / "gunicorn_profile.py").write_text(PROFILE_HOOKS)
        cmd += ["--config", str(workdir / "gunicorn_profile.py")]
    return cmd


def start_gunicorn(cmd: list[str], env: dict, tree: Path, port: int) -> subprocess.Popen:
    proc = subprocess.Popen(cmd, env=env, cwd=tree)
    deadline = time.monotonic() + 240  # a busy machine imports slowly
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"GET /login/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-Proto: https\r\n"
                          b"Connection: close\r\n\r\n")  # fmt: skip
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
    workers = {p: _cpu_seconds(p) for p in _children(server_pid)}
    return {
        "app": _cpu_seconds(server_pid) + sum(workers.values()),
        "db": sum(_cpu_seconds(p) for p in backends),
        "client": times.user + times.system,
        "_backends": backends,
        "_workers": workers,
    }


def cpu_used(before: dict, after: dict) -> dict[str, float]:
    return {k: after[k] - before[k] for k in ("app", "db", "client")}


def busiest_worker_share(before: dict, after: dict) -> float:
    """The share of the gunicorn workers' CPU that the busiest one used: a worker keeps the keep-alive
    connections it accepted, and when most annotators landed on one, its interpreter lock caps the run near one
    core whatever the others could do (1 / workers when they are even)."""
    used = [after["_workers"].get(p, t) - t for p, t in before["_workers"].items()]
    return round(max(used) / sum(used), 2) if used and sum(used) > 0 else float("nan")


# ------------------------------------------------------------------ a small HTTP/1.1 client


class Connection:
    """One keep-alive HTTP/1.1 connection with its cookies (written for low client overhead)."""

    def __init__(self, port: int, address: str = ""):
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.cookies: dict[str, str] = {}
        # as the proxy forwards it: the client's own address, and that it came over HTTPS
        self.forwarded = [f"X-Forwarded-For: {address}", "X-Forwarded-Proto: https"] if address else []

    tries = 2  # a keep-alive connection the server dropped is opened again once

    async def request(self, method: str, path: str, body: bytes = b"", headers: dict | None = None):
        for attempt in range(self.tries):
            if self.writer is None:
                self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
            cookie = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
            head = [
                f"{method} {path} HTTP/1.1",
                "Host: 127.0.0.1",
                f"Content-Length: {len(body)}",
                *self.forwarded,
            ]
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
    busiest_worker: float = float("nan")  # the busiest gunicorn worker's share of the app's CPU

    def error(self, what: str) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1


#: Seconds an annotator waits after a refused request (a 429's Retry-After is at least 1 s).
REFUSED_WAIT_S = 1.0


async def enter(conn: Connection, entry: str) -> tuple[int, str]:
    """The invitee presses Start (a POST binds the invite; a tree from before that opens the link), then
    opens the task page: its status and the CSRF token the page's script would send (``task_json``'s)."""
    study = entry.split("/")[2]
    status, body = await conn.request("POST", entry, b"", {"Origin": ORIGIN})
    if status == 303:
        status, body = await conn.request("GET", f"/w/{study}/")
    elif status != 200:
        status, body = await conn.request("GET", entry)
    found = re.search(rb'"csrf_token": "([^"]+)"', body)
    return status, found.group(1).decode() if found else conn.cookies.get("csrftoken", "")


async def annotator(
    port: int,
    entry: str,
    start: asyncio.Event,
    deadline_box: list,
    period: float,
    offset: float,
    tally: Tally,
    chained: bool = False,
    address: str = "",
) -> None:
    conn = Connection(port, address)
    status, csrf = 0, ""
    try:
        status, csrf = await enter(conn, entry)
    finally:
        tally.ready += 1
    if status != 200:
        tally.error(f"entry {status}")
        return
    headers = {"Content-Type": "application/json", "X-CSRFToken": csrf, "Origin": ORIGIN}
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
                await asyncio.sleep(REFUSED_WAIT_S)  # as a page would, rather than asking again at once
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
            await asyncio.sleep(REFUSED_WAIT_S)
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
            annotator(
                port, e, start, deadline_box, period, period * i / concurrency, tally, chained, address(i)
            )
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
    tally.busiest_worker = busiest_worker_share(before, after)
    return tally, elapsed, cpu_used(before, after)


def address(n: int) -> str:
    """The ``n``-th annotator's own address (10.0.0.0/8), as the proxy would forward it."""
    return f"10.{n >> 16 & 255}.{n >> 8 & 255}.{n & 255}"


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


def check_database(study_pk: int, acknowledged_file: str) -> dict:
    """Acknowledged against stored, and the per-item invariants; run inside the tree under test (``--check``)."""
    import django

    django.setup()
    from django.db.models import Count

    from annotate.models import Item, Response

    acknowledged = set(json.loads(Path(acknowledged_file).read_text()))
    stored = set(Response.objects.filter(study_id=study_pk).values_list("id", flat=True))
    over = Item.objects.filter(study_id=study_pk).annotate(n=Count("responses")).filter(n__gt=3)
    pairs = Response.objects.filter(study_id=study_pk).values("item_id", "worker_id").annotate(n=Count("id"))
    return {
        "stored": len(stored),
        "lost": len(acknowledged - stored),
        "items_over_n": over.count(),
        "repeated_item_worker": pairs.filter(n__gt=1).count(),
    }


@dataclass(frozen=True)
class Load:
    """One load: C annotators, chained or not, paced to a rate or as fast as they go (0)."""

    concurrency: int
    chained: bool
    rate: float = 0.0

    @property
    def label(self) -> str:
        pace = f"{self.rate:g}/s" if self.rate else "closed"
        return f"C={self.concurrency} {'chained' if self.chained else 'two-step'} {pace}"


#: The issue's loads: chained at C = 50 and 200 as fast as they go, and at C = 200 paced to 300 answers/s.
SUITE = (Load(50, True), Load(200, True), Load(200, True, 300.0))


def serve_and_drive(args, load: Load, env: dict, tree: Path, workdir: Path, seeded: dict):
    """Start gunicorn in ``tree``, drive ``load`` against it, stop it: the tally, seconds and CPU used."""
    port = free_port()
    server = start_gunicorn(gunicorn_command(args, port, workdir, load.concurrency), env, tree, port)
    try:
        # The client's own garbage collection would stall every request in flight at once: keep it out of
        # the measured window.
        gc.collect()
        gc.freeze()
        gc.disable()
        return asyncio.run(
            drive(
                port,
                seeded["entries"],
                args.duration,
                load.rate,
                lambda: cpu_snapshot(server.pid, env["DATABASE_URL"]),
                load.chained,
                args.warmup,
            )
        )
    finally:
        gc.enable()
        server.terminate()
        server.wait(timeout=30)


def run_once(args, load: Load, tree: Path, base_env: dict, workdir: Path) -> dict:
    """One load against ``tree`` on a fresh database: its figures."""
    db_name = f"hatlab_bench_{os.getpid()}"
    psql(args.admin_url, f"DROP DATABASE IF EXISTS {db_name}")
    psql(args.admin_url, f"CREATE DATABASE {db_name}")
    env = {
        **base_env,
        "DATABASE_URL": f"{args.admin_url.rstrip('/')}/{db_name}",
        "PYTHONPATH": os.pathsep.join([str(workdir), str(tree)]),
        "BENCH_CACHE_PREFIX": f"bench-{os.getpid()}-{uuid.uuid4().hex[:12]}",
    }
    try:
        manage(env, tree, "migrate", "--verbosity", "0")
        seeded = in_tree(env, tree, "--seed", str(args.items), str(load.concurrency))
        # the seed's and the last run's writes flushed before the clock starts, not by a checkpoint within it
        psql(args.admin_url, "CHECKPOINT")
        tally, elapsed, cpu = serve_and_drive(args, load, env, tree, workdir, seeded)
        acknowledged = workdir / "acknowledged.json"
        acknowledged.write_text(json.dumps(sorted(tally.acknowledged)))
        db = in_tree(env, tree, "--check", str(seeded["study_pk"]), str(acknowledged))
    finally:
        if not args.keep_db:
            psql(args.admin_url, f"DROP DATABASE IF EXISTS {db_name}")
    both = tally.next_ms + tally.submit_ms
    cycles = max(tally.measured, 1)
    return {
        "concurrency": load.concurrency,
        "rate_target": load.rate or None,
        "protocol": "chained" if load.chained else "two-step",
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
        "busiest_worker_cpu_share": tally.busiest_worker,
        "errors": tally.errors,
        "ran_out_of_items": tally.done_early,
    }


def in_turn(trees: list, round_: int) -> list:
    """The trees in round ``round_``'s order: each round starts one tree later, so that over as many rounds as
    trees each one runs first, second, ... once (a run after another writes its database while the server's
    checkpoint and autovacuum still work on the one before: the third of three trees ran 10-20 % slower)."""
    shift = round_ % len(trees)
    return trees[shift:] + trees[:shift]


def tree_of(ref: str, workdir: Path) -> tuple[Path, str]:
    """The source tree of ``ref`` (``.``: this working tree) and its commit; another ref is copied out with
    ``git archive`` and borrows this tree's built frontend."""
    if ref == ".":
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        )
        return ROOT, f"{head.stdout.strip()}+worktree"
    sha = subprocess.run(
        ["git", "rev-parse", "--short", f"{ref}^{{commit}}"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    tree = workdir / f"tree-{sha}"
    if not tree.exists():
        tree.mkdir()
        archive = subprocess.Popen(["git", "archive", sha], cwd=ROOT, stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", str(tree)], stdin=archive.stdout, check=True)
        archive.wait()
        dist = ROOT / "frontend" / "dist"
        if dist.exists() and not (tree / "frontend" / "dist").exists():
            (tree / "frontend" / "dist").symlink_to(dist)
    return tree, sha


def print_table(args, results: list[dict]) -> None:
    print(
        f"annotator API under load: gunicorn {args.workers} workers x {args.threads} threads, {os.cpu_count()} "
        f"CPUs, {args.duration:.0f} s per run after {args.warmup:.0f} s of warm-up, {args.items} items x 3, "
        f"throttles {'on' if args.throttles else 'off'}, access log {'on' if args.access_log else 'off'}"
    )
    header = (
        f"{'tree':>16} {'load':>24} {'subs/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'next p99':>9} "
        f"{'acked':>7} {'stored':>7} {'lost':>5} {'errors':>7} {'CPU ms/answer app+db+client':>28} {'top worker':>10}"
    )
    print(header)
    for r in results:
        print(
            f"{r['tree']:>16} {r['load']:>24} {r['submissions_per_s']:>8} {r['p50_ms']:>7} {r['p99_ms']:>7} "
            f"{r['next_p99_ms'] or '-':>9} {r['acknowledged']:>7} {r['stored']:>7} {r['lost']:>5} "
            f"{sum(r['errors'].values()):>7} {'{app}+{db}+{client}'.format(**r['cpu_ms_per_submission']):>28}"
            f" {r.get('busiest_worker_cpu_share', ''):>10}"
        )


def print_ratios(results: list[dict]) -> None:
    """For two trees or more: each later tree's figures over the first's per load, the median of the rounds."""
    trees = list(dict.fromkeys(r["tree"] for r in results))
    for tree in trees[1:]:
        print(f"ratios {tree} / {trees[0]} (median over rounds; >1: more answers/s, more latency, more CPU)")
        for load in dict.fromkeys(r["load"] for r in results):
            rows = [[r for r in results if r["load"] == load and r["tree"] == t] for t in (trees[0], tree)]
            if not rows[0] or not rows[1]:
                continue

            def ratio(pick, rows: list[list[dict]] = rows) -> float:
                first = statistics.median(pick(r) for r in rows[0])
                return (
                    round(statistics.median(pick(r) for r in rows[1]) / first, 2) if first else float("nan")
                )

            print(
                f"{load:>24}  subs/s x{ratio(lambda r: r['submissions_per_s'])}  p99 x{ratio(lambda r: r['p99_ms'])}"
                f"  app CPU/answer x{ratio(lambda r: r['cpu_ms_per_submission']['app'])}"
                f"  db CPU/answer x{ratio(lambda r: r['cpu_ms_per_submission']['db'])}"
            )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--concurrency", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--duration", type=float, default=20.0, help="Seconds of load per run.")
    parser.add_argument("--warmup", type=float, default=3.0, help="Seconds of load before the clock starts.")
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
        "--cache-url",
        default=os.environ.get("BENCH_CACHE_URL", "redis://127.0.0.1:6379/1"),
        help="The Redis that counts the throttles (HATLAB_CACHE_URL); each run keys its counters apart.",
    )
    parser.add_argument("--no-throttles", dest="throttles", action="store_false", help="HATLAB_THROTTLES=0.")
    parser.add_argument(
        "--uneven-connections",
        dest="even_connections",
        action="store_false",
        help="Let each gunicorn worker accept as many annotators' connections as it happens to.",
    )
    parser.add_argument(
        "--access-log",
        action="store_true",
        help="Write gunicorn's access log (docker-compose leaves the log to nginx).",
    )
    parser.add_argument(
        "--chained",
        action="store_true",
        help='Each submit asks for the next item too ("next": true), as the task pages do: one request per answer.',
    )
    parser.add_argument("--suite", action="store_true", help="The loads chained C=50, C=200, C=200 at 300/s.")
    parser.add_argument(
        "--refs", nargs="+", default=["."], help="Trees to run in turn (git refs; '.': this one)."
    )
    parser.add_argument("--rounds", type=int, default=1, help="Rounds of every ref and load, alternating.")
    parser.add_argument("--profile", type=Path, help="A folder for each gunicorn worker's cProfile.")
    parser.add_argument("--keep-db", action="store_true")
    parser.add_argument("--seed", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--check", nargs=2, help=argparse.SUPPRESS)
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    if args.seed or args.check:  # inside a tree under test
        answer = (
            seed(int(args.seed[0]), 3, 3600, int(args.seed[1]))
            if args.seed
            else check_database(int(args.check[0]), args.check[1])
        )
        print(json.dumps(answer))
        return
    loads = SUITE if args.suite else tuple(Load(c, args.chained, args.rate) for c in args.concurrency)
    workdir = Path(tempfile.mkdtemp(prefix="hatlab-bench-"))
    results = []
    try:
        base_env = {
            **os.environ,
            **PRODUCTION_ENV,
            "DJANGO_SETTINGS_MODULE": make_settings(workdir),
            "DJANGO_SECRET_KEY": SECRET,
            "DJANGO_DEBUG": "false",
            "HATLAB_LOG_LEVEL": "ERROR",
            "HATLAB_CACHE_URL": args.cache_url,
            "HATLAB_THROTTLES": "true" if args.throttles else "false",
        }
        if args.profile:
            args.profile.mkdir(parents=True, exist_ok=True)
            base_env["BENCH_PROFILE_DIR"] = str(args.profile.resolve())
            base_env.setdefault("BENCH_PROFILE_PATH", "/submit/")
        trees = [tree_of(ref, workdir) for ref in args.refs]
        for round_ in range(args.rounds):
            for load in loads:
                for tree, name in in_turn(trees, round_):
                    if args.profile:  # each tree's profiles in a folder of its own
                        (args.profile / name).mkdir(exist_ok=True)
                        base_env["BENCH_PROFILE_DIR"] = str((args.profile / name).resolve())
                    result = run_once(args, load, tree, base_env, workdir)
                    results.append({"tree": name, "load": load.label, **result})
                    print(json.dumps(results[-1]), flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print_table(args, results)
    print_ratios(results)
    print(
        json.dumps(
            {"bench": "annotate_load", "workers": args.workers, "threads": args.threads, "runs": results}
        )
    )


if __name__ == "__main__":
    main()
