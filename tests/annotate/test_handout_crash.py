"""A PostgreSQL crash between hand-out and answer, against a private cluster this test makes (``initdb`` in a
temporary folder, on a free port, with ``bench/faults.py``'s helpers) and crashes itself (``pg_ctl -m
immediate stop``): the hand-out is committed durably, so the annotator's answer to the item they held is
accepted after the restart and stored once.

The cluster's WAL writer is slowed to its longest period (10 s), so a commit that did not wait for the disk
(``synchronous_commit`` off) is still only in memory when the crash comes: the test would find the hand-out
lost, not by luck of timing, if hand-outs were committed that way.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from bench.faults import PrivatePostgres
from tests.conftest import require_tool

ROOT = Path(__file__).resolve().parents[2]
STEPS = "tests.annotate.handout_crash_steps"


def _step(env: dict, name: str, stdin: str = "") -> dict:
    done = subprocess.run(
        [sys.executable, "-m", STEPS, name],
        input=stdin,
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture
def cluster():
    require_tool(
        shutil.which("pg_ctl") is not None or Path("/usr/lib/postgresql").exists(),
        "needs PostgreSQL's server binaries (initdb, pg_ctl) to make a private cluster",
    )
    folder = Path(tempfile.mkdtemp(prefix="hatlab-crash-"))
    folder.chmod(0o755)  # the postgres user runs the server when the tests run as root
    server = PrivatePostgres(folder / "pg", options="-c wal_writer_delay=10000 -c fsync=on")
    server.start()
    try:
        yield server
    finally:
        subprocess.run(
            [str(server.bin / "pg_ctl"), "-D", str(server.folder / "data"), "-m", "immediate", "stop"],
            capture_output=True,
            user="postgres" if os.geteuid() == 0 else None,
        )
        shutil.rmtree(folder, ignore_errors=True)


def test_an_answer_to_an_item_handed_out_before_a_crash_is_accepted_after_it(cluster):
    cluster.psql("CREATE DATABASE hatlab_crash")
    env = {
        **os.environ,
        "DATABASE_URL": f"{cluster.url}/hatlab_crash",
        "DJANGO_ALLOWED_HOSTS": "testserver",
        "CELERY_TASK_ALWAYS_EAGER": "1",
        "PYTHONPATH": str(ROOT),
    }
    env.pop("HATLAB_CACHE_URL", None)
    env["HATLAB_CRASH_COMMAND"] = json.dumps(cluster.crash_command())
    held = _step(env, "handout")  # hands out an item, then crashes the cluster at once
    cluster.start()
    answered = _step(env, "answer", json.dumps(held))
    assert answered["assignment_kept"], (answered, held["wal"])
    assert answered["status"] == 201, answered
    assert answered["responses"] == 1 and answered["items_done"].count(1) == 1
