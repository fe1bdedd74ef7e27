"""The container entry commands of docker-compose.yml, run outside Docker on this machine."""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from django.conf import settings

from tests.services import database_url

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def compose_services() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]


def service_command(name: str) -> list[str]:
    command = compose_services()[name]["command"]
    return shlex.split(command) if isinstance(command, str) else list(command)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_compose_declares_every_service_with_the_same_settings():
    services = compose_services()
    assert {"web", "worker", "gpu-worker", "beat", "postgres", "redis"} <= set(services)
    gpu = services["gpu-worker"]["deploy"]["resources"]["reservations"]["devices"][0]
    assert gpu["driver"] == "nvidia" and "gpu" in gpu["capabilities"]
    worker, gpu_worker = service_command("worker"), service_command("gpu-worker")
    assert worker[worker.index("--queues") + 1] == "cpu"
    assert gpu_worker[gpu_worker.index("--queues") + 1] == "gpu"
    for name in ("web", "worker", "gpu-worker", "beat"):
        env = services[name]["environment"]
        assert env["DATABASE_URL"].startswith("postgres://") and env["CELERY_BROKER_URL"].startswith(
            "redis://"
        )


@pytest.mark.django_db(transaction=True)
def test_web_command_serves_the_app_under_gunicorn():
    shell = service_command("web")[-1]
    gunicorn = shlex.split(shell.split("&&")[-1])
    assert gunicorn[:2] == ["gunicorn", "config.wsgi"]
    port = free_port()
    args = [str(BIN / "gunicorn"), *gunicorn[1:]]
    args[args.index("--bind") + 1] = f"127.0.0.1:{port}"
    db = settings.DATABASES["default"]
    env = os.environ | {
        "DATABASE_URL": database_url(db),
        "DJANGO_SECRET_KEY": "entrypoint-test",
    }
    server = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=5) as response:
                    assert response.status == 200
                    assert b"Sign in" in response.read()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(
                        server.stderr.read().decode() if server.poll() is not None else "timeout"
                    ) from None
                time.sleep(0.5)
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_beat_schedule_names_registered_jobs():
    from config.celery import app

    app.loader.import_default_modules()
    schedule = app.conf.beat_schedule
    assert schedule, "the beat service would have nothing to run"
    for entry in schedule.values():
        assert entry["task"] in app.tasks, entry["task"]
