"""Fault suite: what annotators and jobs see when parts of the service fail under load.

It starts its own PostgreSQL (``initdb`` in a temporary folder, on a free port) and its own Redis
(``redis-server`` on a free port), so restarting them disturbs nobody else on the machine; builds the
tables, seeds a running highlight study and a tiny labelled dataset, starts the app under gunicorn, a
Celery worker and Celery beat, and drives C paced annotators (``bench/annotate_load.py``'s machinery)
that behave like the task page: a 503, a 502/504 or a network failure is retried with the same body
(so the same ``submission_key``) after Retry-After, for up to two minutes. Then, one after the other,
with the load running:

``gunicorn-worker``  SIGKILL one gunicorn worker (the master starts another);
``gunicorn-all``     SIGKILL every gunicorn worker at once: no web process is left until the master's new
                     ones have started (how long that takes is what a web process imports);
``postgres``         stop PostgreSQL (fast: connections are cut), wait ``--outage`` s, start it again;
``redis``            stop Redis, start a training job meanwhile (``POST /api/model-runs/``), wait
                     ``--outage`` s, start Redis again: the job must run once it is back;
``celery-worker``    SIGKILL the Celery worker in the middle of a training job and start a new one
                     (as a supervisor would): the job's heartbeat stops, the sweep re-queues it.

For each: the client errors (answers other than 2xx, and network failures, in the fault's window),
answers the client gave up on, submissions acknowledged and stored in that window, duplicates (an
acknowledged key stored twice, or an annotator twice on one item), acknowledged answers missing from
the database (lost), and the recovery time (from the fault to the first acknowledged submission after
the last error; for the job faults, to the job being done). A table, then one JSON line. Usage::

    .venv/bin/python bench/faults.py --concurrency 50 --rate 20 --settle 8
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository (this file runs as a script)
from bench.annotate_load import (
    ROOT,
    Connection,
    _children,
    free_port,
    make_settings,
    manage,
    seed,
    start_gunicorn,
)  # noqa: E402

PYTHON = sys.executable
SECRET = "hatlab-faults-secret-" + uuid.uuid4().hex
RESEARCHER = ("faults-researcher", uuid.uuid4().hex)
RETRYABLE = {502, 503, 504}
RETRY_FOR_S = 120.0
# Short job intervals, so that a lost worker is noticed in seconds (the defaults are 10 / 35 / 15 s).
FAST_JOBS = {
    "HATLAB_JOB_HEARTBEAT_S": "1",
    "HATLAB_JOB_LOST_AFTER_S": "5",
    "HATLAB_JOB_SWEEP_S": "2",
    "HATLAB_JOB_SEND_GRACE_S": "2",
}
TINY_TEXTS = [
    ("good great food", "pos"),
    ("awful bad service", "neg"),
    ("really good place .", "pos"),
    ("bad bad food", "neg"),
    ("great friendly staff", "pos"),
    ("terrible awful wait", "neg"),
]
TRAIN_PARAMS = {
    "batch_size": 2,
    "min_count": 1,
    "patience": None,
    "model": {"embedding_dim": 8, "hidden_size": 8},
}


# ------------------------------------------------------------------ private services


def _as_postgres(command: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: run its tools as the ``postgres`` user then."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


class PrivatePostgres:
    """A throw-away PostgreSQL cluster in ``folder`` on a free port (trust authentication, local only)."""

    def __init__(self, folder: Path, options: str = ""):
        self.folder = folder
        self.options = options  # more server settings, ``-c name=value ...``
        self.port = free_port()
        self.bin = Path(shutil.which("initdb") or "/usr/lib/postgresql/15/bin/initdb").resolve().parent
        folder.mkdir(parents=True)
        if os.geteuid() == 0:
            shutil.chown(folder, "postgres", "postgres")
        subprocess.run(
            _as_postgres(
                [str(self.bin / "initdb"), "-D", str(folder / "data"), "-U", "postgres", "-A", "trust"]
            ),
            check=True,
            stdout=subprocess.DEVNULL,
        )

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}"

    def _command(self, *args: str) -> list[str]:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c max_connections=300 {self.options}"
        return _as_postgres(
            [str(self.bin / "pg_ctl"), "-D", str(self.folder / "data"), "-l", str(self.folder / "log"), "-w"]
            + ["-o", options, *args]
        )

    def _ctl(self, *args: str) -> None:
        subprocess.run(self._command(*args), check=True, stdout=subprocess.DEVNULL)

    def start(self) -> None:
        self._ctl("start")

    def stop(self) -> None:
        self._ctl("-m", "fast", "stop")

    def crash_command(self) -> list[str]:
        """The command that stops the server as a crash would (``-m immediate``: no checkpoint, and what
        was not flushed to disk is gone), for a process that must crash it itself."""
        return self._command("-m", "immediate", "stop")

    def crash(self) -> None:
        subprocess.run(self.crash_command(), check=True, stdout=subprocess.DEVNULL)

    def psql(self, sql: str) -> None:
        subprocess.run(
            ["psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", "postgres", "-qc", sql],
            check=True,
        )


class PrivateRedis:
    """A ``redis-server`` on a free port that keeps nothing on disk: a restart empties it."""

    def __init__(self):
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while (
            subprocess.run(["redis-cli", "-p", str(self.port), "ping"], capture_output=True).stdout
            != b"PONG\n"
        ):
            if time.monotonic() > deadline:
                raise RuntimeError("redis-server did not come up")
            time.sleep(0.1)

    def freeze(self) -> None:
        """Stop the server (SIGSTOP) without closing anything: connections are still accepted by the
        kernel, and nothing answers them: a hung Redis, not a refusing one."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.proc is not None:
            self.thaw()  # a stopped process would not act on SIGTERM
            self.proc.terminate()
            self.proc.wait(20)
            self.proc = None


def start_celery(env: dict, workdir: Path, name: str) -> subprocess.Popen:
    args = (
        ["beat", "--schedule", str(workdir / "beat-schedule")]
        if name == "beat"
        else [
            "worker",
            "--pool",
            "solo",
            "-Q",
            "cpu",
            "--without-gossip",
            "--without-mingle",
            "-n",
            f"{name}@%h",
        ]
    )
    log = (workdir / f"celery-{name}.log").open("ab")
    return subprocess.Popen(
        [PYTHON, "-m", "celery", "-A", "config", *args, "--loglevel", "INFO"],
        env=env,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


# ------------------------------------------------------------------ the paced annotators


class OneShotConnection(Connection):
    """:class:`annotate_load.Connection` without its silent second try on a dropped connection: here
    every network failure is counted, and the caller retries as the page does."""

    tries = 1


@dataclass
class Tally:
    errors: list[tuple[float, str]] = field(default_factory=list)  # (time, what) of every failed attempt
    gave_up: list[tuple[float, str]] = field(default_factory=list)
    acked: dict[str, tuple[float, int]] = field(default_factory=dict)  # submission_key -> (time, response id)
    twice: int = 0  # a key acknowledged with two different response ids


async def send(conn: Connection, path: str, body: bytes, headers: dict, tally: Tally, what: str):
    """One POST as the page sends it: retried with the same bytes on 502/503/504 and network failures,
    after Retry-After (else 0.5 s doubling to 8 s), for up to two minutes. Returns (status, body)."""
    began = time.monotonic()
    for attempt in range(10_000):
        try:
            status, answer = await conn.request("POST", path, body, headers)
        except (ConnectionError, OSError, asyncio.IncompleteReadError):
            status, answer, wait = 0, b"", min(0.5 * 2**attempt, 8.0)
            conn.writer = None
        else:
            if status not in RETRYABLE:
                if status >= 400:
                    tally.errors.append((time.monotonic(), f"{what} {status}"))
                return status, answer
            wait = min(float((json.loads(answer or b"{}") or {}).get("retry_after", 0.5 * 2**attempt)), 30.0)
        tally.errors.append((time.monotonic(), f"{what} {status or 'network'}"))
        if time.monotonic() - began + wait > RETRY_FOR_S:
            break
        await asyncio.sleep(wait)
    tally.gave_up.append((time.monotonic(), what))
    return status, answer


async def annotator(port: int, entry: str, stop_at: list, period: float, offset: float, tally: Tally) -> None:
    conn = OneShotConnection(port)
    status, _ = await conn.request("POST", entry)  # the invitee presses Start, then opens the task page
    if status == 303:
        status, _ = await conn.request("GET", f"/w/{entry.split('/')[2]}/")
    if status != 200:
        tally.errors.append((time.monotonic(), f"entry {status}"))
        return
    headers = {"Content-Type": "application/json", "X-CSRFToken": conn.cookies.get("csrftoken", "")}
    study = entry.split("/")[2]
    wake = time.monotonic() + offset
    data = None
    cycle = 0
    while time.monotonic() < stop_at[0]:
        await asyncio.sleep(max(0.0, wake - time.monotonic()))
        wake = max(wake, time.monotonic()) + period
        cycle += 1
        if data is None:
            status, body = await send(conn, f"/api/work/{study}/next/", b"", headers, tally, "next")
            if status != 200:
                continue
            data = json.loads(body)
        if data.get("done"):
            return
        n = len(data["item"]["payload"]["words"])
        key = str(uuid.uuid4())
        answer = {
            "submission_key": key,
            "answer": {"label": "positive", "map": [int(i == cycle % n) for i in range(n)]},
            "timings": {
                "read_ms": 4000,
                "answer_ms": 2000,
                "label_at_ms": 4000,
                "first_highlight_at_ms": 4500,
            },
            "next": True,
        }
        path = f"/api/work/assignments/{data['assignment']}/submit/"
        status, body = await send(conn, path, json.dumps(answer).encode(), headers, tally, "submit")
        data = None
        if status in (200, 201):
            stored = json.loads(body)
            seen = tally.acked.get(key)
            tally.twice += seen is not None and seen[1] != stored["response"]
            tally.acked[key] = (time.monotonic(), stored["response"])
            data = stored.get("next")


class Researcher:
    """Starts and watches training jobs through the API, signed in once (session and CSRF token)."""

    def __init__(self, port: int, dataset: int):
        self.conn = Connection(port)  # tries again once on a keep-alive connection the server closed
        self.dataset = dataset
        self.headers: dict[str, str] = {}

    async def login(self) -> None:
        await self.conn.request("GET", "/login/")
        token = self.conn.cookies["csrftoken"]
        form = f"username={RESEARCHER[0]}&password={RESEARCHER[1]}&csrfmiddlewaretoken={token}".encode()
        form_headers = {
            "Content-Type": "application/x-www-form-urlencoded",
            "Referer": "http://127.0.0.1/login/",
        }
        status, _ = await self.conn.request("POST", "/login/", form, form_headers)
        if status != 302:
            raise RuntimeError(f"the researcher could not sign in ({status})")
        self.headers = {"Content-Type": "application/json", "X-CSRFToken": self.conn.cookies["csrftoken"]}

    async def start_training(self, epochs: int) -> tuple[int, dict]:
        body = {
            "dataset": self.dataset,
            "architecture": "bilstm_attention",
            "params": {**TRAIN_PARAMS, "epochs": epochs},
        }
        status, answer = await self.conn.request(
            "POST", "/api/model-runs/", json.dumps(body).encode(), self.headers
        )
        return status, json.loads(answer)

    async def job(self, job_id: int) -> dict:
        status, answer = await self.conn.request("GET", f"/api/jobs/{job_id}/", b"", self.headers)
        return json.loads(answer) if status == 200 else {"status": f"http {status}"}

    async def wait(self, job_id: int, done, timeout: float = 180.0) -> tuple[dict, float]:
        """Poll the job every 0.5 s (as its page does) until ``done(job)``; returns it and when."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                seen = await self.job(job_id)
            except (ConnectionError, OSError, asyncio.IncompleteReadError):
                self.conn.writer = None
                seen = {}
            if seen.get("status") == "http 503":
                seen = {}
            if seen and done(seen):
                return seen, time.monotonic()
            await asyncio.sleep(0.5)
        return seen, float("nan")


# ------------------------------------------------------------------ the faults


@dataclass
class Fault:
    name: str
    began: float
    ended: float
    extra: dict = field(default_factory=dict)


async def kill_gunicorn_worker(server: subprocess.Popen) -> dict:
    victim = sorted(_children(server.pid))[0]
    os.kill(victim, signal.SIGKILL)
    return {"killed_pid": victim}


async def kill_gunicorn_workers(server: subprocess.Popen) -> dict:
    victims = sorted(_children(server.pid))
    for victim in victims:
        os.kill(victim, signal.SIGKILL)
    return {"killed_pids": victims}


async def restart_postgres(pg: PrivatePostgres, outage: float) -> dict:
    await asyncio.to_thread(pg.stop)
    stopped = time.monotonic()
    await asyncio.sleep(outage)
    await asyncio.to_thread(pg.start)
    return {"down_s": round(time.monotonic() - stopped, 2)}


async def restart_redis(rd: PrivateRedis, outage: float, researcher: Researcher) -> dict:
    await asyncio.to_thread(rd.stop)
    began = time.monotonic()
    status, run = await researcher.start_training(epochs=2)
    answered_s = time.monotonic() - began
    await asyncio.sleep(max(0.0, outage - answered_s))
    await asyncio.to_thread(rd.start)
    back = time.monotonic()
    _, sent_at = await researcher.wait(run.get("training_job") or 0, lambda j: j.get("sent") is not None)
    job, done_at = await researcher.wait(
        run.get("training_job") or 0, lambda j: j.get("status") in ("done", "failed")
    )
    return {
        "start_job_status": status,
        "start_job_ms": round(answered_s * 1000, 1),
        "queue_note": run.get("queue_note", ""),
        "job_status": job.get("status"),
        "job_sent_after_redis_back_s": round(sent_at - back, 2),
        "job_done_after_redis_back_s": round(done_at - back, 2),
    }


async def kill_celery_worker(workers: list, env: dict, workdir: Path, researcher: Researcher) -> dict:
    status, run = await researcher.start_training(epochs=60)
    job_id = run["training_job"]
    running, _ = await researcher.wait(job_id, lambda j: j.get("status") == "running" and j.get("heartbeat"))
    workers[0].send_signal(signal.SIGKILL)
    killed = time.monotonic()
    workers[0].wait(30)
    workers[0] = start_celery(env, workdir, "faults-2")  # a supervisor starts a new worker
    lost, lost_at = await researcher.wait(
        job_id, lambda j: any("lost at" in e["event"] for e in j.get("events", []))
    )
    job, done_at = await researcher.wait(job_id, lambda j: j.get("status") in ("done", "failed"))
    return {
        "job_status": job.get("status"),
        "attempts": job.get("attempts"),
        "requeued_after_s": round(lost_at - killed, 2),
        "job_done_after_kill_s": round(done_at - killed, 2),
        "lost_event": next((e["event"] for e in job.get("events", []) if "lost at" in e["event"]), ""),
    }


def window_stats(fault: Fault, tally: Tally, settle: float) -> dict:
    """The annotators' view of one fault: from its start to ``settle`` s after it ended."""
    end = fault.ended + settle
    errors = [(t, w) for t, w in tally.errors if fault.began <= t <= end]
    acked = [t for t, _ in tally.acked.values() if fault.began <= t <= end]
    last_error = max((t for t, _ in errors), default=None)
    recovered = min((t for t in acked if last_error is None or t > last_error), default=float("nan"))
    kinds: dict[str, int] = {}
    for _, what in errors:
        kinds[what] = kinds.get(what, 0) + 1
    return {
        "client_errors": len(errors),
        "error_kinds": kinds,
        "gave_up": sum(fault.began <= t <= end for t, _ in tally.gave_up),
        "acknowledged": len(acked),
        "recovery_s": 0.0 if last_error is None else round(recovered - fault.began, 2),
    }


async def run_faults(
    args, port: int, entries: list[str], server, pg, rd, workers, env, workdir, dataset: int
):
    tally = Tally()
    stop_at = [float("inf")]
    period = len(entries) / args.rate
    tasks = [
        asyncio.create_task(annotator(port, e, stop_at, period, period * i / len(entries), tally))
        for i, e in enumerate(entries)
    ]
    researcher = Researcher(port, dataset)
    await researcher.login()
    await asyncio.sleep(args.settle)  # steady load first
    faults = []
    plan = [
        ("gunicorn-worker", lambda: kill_gunicorn_worker(server)),
        ("gunicorn-all", lambda: kill_gunicorn_workers(server)),
        ("postgres", lambda: restart_postgres(pg, args.outage)),
        ("redis", lambda: restart_redis(rd, args.outage, researcher)),
        ("celery-worker", lambda: kill_celery_worker(workers, env, workdir, researcher)),
    ]
    for name, action in plan:
        if args.only and name not in args.only:
            continue
        began = time.monotonic()
        extra = await action()
        faults.append(Fault(name, began, time.monotonic(), extra))
        await asyncio.sleep(args.settle)
    stop_at[0] = time.monotonic()
    await asyncio.gather(*tasks)
    return tally, faults


def check_database(study_pk: int, tally: Tally) -> dict:
    from django.db import connections
    from django.db.models import Count

    from annotate.models import Response

    for conn in connections.all():
        conn.close()
    rows = Response.objects.filter(study_id=study_pk)
    stored = {str(key): rid for key, rid in rows.values_list("submission_key", "id")}
    pairs = rows.values("item_id", "worker_id").annotate(n=Count("id")).filter(n__gt=1).count()
    return {
        "stored": len(stored),
        "lost": sum(stored.get(key) != rid for key, (_, rid) in tally.acked.items()),
        "duplicates": tally.twice + pairs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--rate", type=float, default=20.0, help="Submissions/s in all.")
    parser.add_argument(
        "--settle", type=float, default=8.0, help="Seconds of load before and after each fault."
    )
    parser.add_argument("--outage", type=float, default=3.0, help="Seconds PostgreSQL and Redis stay down.")
    parser.add_argument("--items", type=int, default=3000)
    parser.add_argument("--workers", type=int, default=3, help="gunicorn worker processes.")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--only", nargs="*", help="Only these faults.")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="hatlab-faults-"))
    os.chmod(workdir, 0o755)
    pg = PrivatePostgres(workdir / "pg")
    rd = PrivateRedis()
    server = None
    workers: list = []
    try:
        pg.start()
        rd.start()
        pg.psql("CREATE DATABASE hatlab_faults")
        settings_module = make_settings(workdir)
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": settings_module,
            "PYTHONPATH": os.pathsep.join([str(workdir), str(ROOT), os.environ.get("PYTHONPATH", "")]),
            "DJANGO_SECRET_KEY": SECRET,
            "DJANGO_DEBUG": "false",
            "HATLAB_LOG_LEVEL": "ERROR",
            "DATABASE_URL": f"{pg.url}/hatlab_faults",
            "CELERY_BROKER_URL": rd.url,
            "CELERY_TASK_ALWAYS_EAGER": "false",
            "HATLAB_MEDIA_ROOT": str(workdir / "media"),
            "HATLAB_TORCH_THREADS": "1",
            **FAST_JOBS,
        }
        manage(env, "migrate", "--verbosity", "0")
        os.environ.update(env)
        sys.path[:0] = [str(workdir), str(ROOT)]
        import django

        django.setup()
        from django.contrib.auth.models import Group, User

        from annotate.access import RESEARCHER_GROUP
        from annotate.crowd.providers.local.adapter import invite_path, make_invite
        from annotate.models import Dataset, Document, Study

        _, study_pk = seed(args.items, 3, 3600)
        study = Study.objects.get(pk=study_pk)
        entries = [invite_path(study, make_invite(study, f"faults-{i}")) for i in range(args.concurrency)]
        researcher = User.objects.create_user(RESEARCHER[0], password=RESEARCHER[1])
        researcher.groups.add(Group.objects.get_or_create(name=RESEARCHER_GROUP)[0])
        dataset = Dataset.objects.create(name="tiny", owner=researcher, labels=["neg", "pos"])
        Document.objects.bulk_create(
            [Document.from_text(dataset, f"d{i}", t, label=label) for i, (t, label) in enumerate(TINY_TEXTS)]
        )
        port = free_port()
        server = start_gunicorn(env, port, args.workers, args.threads, "gthread")
        workers = [start_celery(env, workdir, "faults-1"), start_celery(env, workdir, "beat")]
        tally, faults = asyncio.run(
            run_faults(args, port, entries, server, pg, rd, workers, env, workdir, dataset.pk)
        )
        database = check_database(study_pk, tally)
    finally:
        for proc in [*workers, server]:
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
        rd.stop()
        with contextlib.suppress(subprocess.CalledProcessError):
            pg.stop()
        shutil.rmtree(workdir, ignore_errors=True)

    rows = [{"fault": f.name, **window_stats(f, tally, args.settle), **f.extra} for f in faults]
    print(
        f"faults under load: {args.concurrency} paced annotators at {args.rate:g} submissions/s, gunicorn "
        f"{args.workers}x{args.threads}, outages of {args.outage:g} s, {args.settle:g} s of load around each; "
        f"{os.cpu_count()} CPUs"
    )
    print(f"{'fault':<16} {'client errors':>13} {'gave up':>8} {'acked':>6} {'recovery s':>11}  job")
    for r in rows:
        job = f"{r['job_status']} (attempts {r.get('attempts', 1)})" if "job_status" in r else "-"
        print(
            f"{r['fault']:<16} {r['client_errors']:>13} {r['gave_up']:>8} {r['acknowledged']:>6} "
            f"{r['recovery_s']:>11}  {job}"
        )
    print(
        f"all: acknowledged {len(tally.acked)}, stored {database['stored']}, lost {database['lost']}, "
        f"duplicates {database['duplicates']}, errors {len(tally.errors)}, gave up {len(tally.gave_up)}"
    )
    print(json.dumps({"bench": "faults", "concurrency": args.concurrency, "rate": args.rate, "faults": rows,
                      "acknowledged": len(tally.acked), **database}))  # fmt: skip


if __name__ == "__main__":
    main()
