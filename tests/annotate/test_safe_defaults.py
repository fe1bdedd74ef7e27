"""Safe defaults: no start without a secret key outside DEBUG, ``check --deploy`` clean under the settings
docker-compose gives the app, the cookies' SameSite split (only the worker cookie crosses sites), the annotator
API working on the worker cookie alone (as in a crowd platform's frame), and sign-out forgetting the worker."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from django.test import Client
from django.urls import reverse

from annotate.crowd.providers.local.adapter import invite_path, make_invite
from annotate.handout.workers import WORKERS_COOKIE, remember_worker
from tests.annotate.conftest import make_worker
from tests.annotate.test_api import Annotator, task_json

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.django_db

_VARIABLE = re.compile(r"\$\{(\w+)(?::?([-?]))?([^}]*)\}")


def compose_environment() -> dict[str, str]:
    """The environment docker-compose gives the app (``x-app``), with nothing set in the shell: ``${X:-d}``
    becomes ``d``; ``${X:?...}`` (a required secret) a fresh random value."""
    spec = yaml.safe_load((ROOT / "docker-compose.yml").read_text())

    def expand(match: re.Match) -> str:
        if match.group(2) == "?":
            return secrets.token_urlsafe(50)
        return match.group(3) if match.group(2) == "-" else ""

    return {k: _VARIABLE.sub(expand, str(v)) for k, v in spec["x-app"]["environment"].items()}


def run_app(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    """``args`` run with the app's settings (``config.settings``) in exactly ``env`` (and PATH)."""
    env = {"PATH": os.environ["PATH"], "DJANGO_SETTINGS_MODULE": "config.settings", **env}
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


SETTINGS_PROBE = (
    "import json, django; django.setup(); from django.conf import settings as s; "
    "print(json.dumps([s.SESSION_COOKIE_SAMESITE, s.CSRF_COOKIE_SAMESITE, s.SESSION_COOKIE_SECURE, "
    "s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS, s.CACHES['default']['BACKEND']]))"
)


def test_deploy_check_is_clean_under_docker_compose():
    env = compose_environment()
    assert "HATLAB_ALLOW_INSECURE_KEY" not in env
    done = run_app(env, sys.executable, "manage.py", "check", "--deploy")
    output = done.stdout + done.stderr
    if not (ROOT / "frontend" / "dist").is_dir():
        # the image builds the frontend (Dockerfile); a checkout may not have yet
        output = "\n".join(line for line in output.splitlines() if "staticfiles.W004" not in line)
        output = output.replace("identified 1 issue", "identified no issues")
    assert done.returncode == 0, output
    assert "System check identified no issues" in output, output
    probe = run_app(env, sys.executable, "-c", SETTINGS_PROBE)
    assert probe.returncode == 0, probe.stderr
    session, csrf, secure, redirect, hsts, cache = json.loads(probe.stdout)
    assert (session, csrf, secure, redirect) == ("Lax", "Lax", True, True) and hsts >= 31536000
    assert cache.endswith("RedisCache")


@pytest.mark.parametrize("debug", ["", "0", "false"])
def test_no_start_without_a_secret_key_outside_debug(debug):
    env = {"DJANGO_DEBUG": debug} if debug else {}
    done = run_app(env, sys.executable, "manage.py", "check")
    assert done.returncode != 0
    assert "DJANGO_SECRET_KEY is not set: set DJANGO_SECRET_KEY" in done.stderr
    # the old escape hatch opens nothing any more
    done = run_app({**env, "HATLAB_ALLOW_INSECURE_KEY": "true"}, sys.executable, "manage.py", "check")
    assert done.returncode != 0 and "DJANGO_SECRET_KEY" in done.stderr


def test_debug_starts_on_the_development_key():
    done = run_app({"DJANGO_DEBUG": "1"}, sys.executable, "-c", SETTINGS_PROBE)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)[:3] == ["Lax", "Lax", False]


def test_only_the_worker_cookie_is_samesite_none_over_https(study, settings, rf):
    settings.SESSION_COOKIE_SECURE = True
    response = Client().get(reverse("login"))
    worker = make_worker("w-cookie")
    remember_worker(rf.get("/"), response, study, worker)
    cookie = response.cookies[WORKERS_COOKIE]
    assert cookie["samesite"] == "None" and cookie["secure"] and cookie["httponly"]
    assert cookie.OutputString().endswith("; Partitioned")  # kept where third-party cookies are blocked
    assert response.cookies["csrftoken"]["samesite"] == "Lax"
    assert "Partitioned" not in response.cookies["csrftoken"].OutputString()
    settings.SESSION_COOKIE_SECURE = False
    plain = Client().get(reverse("login"))
    remember_worker(rf.get("/"), plain, study, worker)
    assert plain.cookies[WORKERS_COOKIE]["samesite"] == "Lax" and not plain.cookies[WORKERS_COOKIE]["secure"]
    assert "Partitioned" not in plain.cookies[WORKERS_COOKIE].OutputString()


def test_annotator_api_works_on_the_worker_cookie_alone(study):
    """In a crowd platform's frame the Lax session and CSRF cookies do not travel: only the worker cookie
    and the token task_json carries do, and they are enough; a wrong or another worker's token is not."""
    annotator = Annotator(study, "framed")
    for name in ("csrftoken", "sessionid"):
        annotator.client.cookies.pop(name, None)
    assert set(annotator.client.cookies) == {WORKERS_COOKIE}
    assert annotator.next().status_code == 200
    other = Annotator(study, "someone-else")
    wrong = annotator.client.post(
        annotator.task["next_url"], "{}", content_type="application/json",
        HTTP_X_CSRFTOKEN=other.task["csrf_token"],
    )  # fmt: skip
    assert wrong.status_code == 403 and "CSRF" in wrong.json()["errors"]["detail"][0]
    assert annotator.post(annotator.task["next_url"], csrf=False).status_code == 403


def test_sign_out_forgets_the_worker(study, annotator_user):
    client = Client()
    client.force_login(annotator_user)
    page = client.post(invite_path(study, make_invite(study, "shared-computer")), follow=True)
    task = task_json(page.content.decode())
    assert client.cookies[WORKERS_COOKIE].value
    out = client.post(reverse("logout"))
    assert out.status_code == 302
    assert out.cookies[WORKERS_COOKIE].value == "" and out.cookies[WORKERS_COOKIE]["max-age"] == 0
    # the next person at this browser is nobody in the study
    refused = client.post(task["next_url"], "{}", content_type="application/json")
    assert refused.status_code == 403 and "worker" in refused.json()["errors"]
    assert "hatlab-task" not in client.get(reverse("work-entry", args=[study.uid])).content.decode()


def test_sign_out_over_https_clears_the_partitioned_cookie(study, annotator_user, settings):
    settings.SESSION_COOKIE_SECURE = True
    client = Client()
    client.force_login(annotator_user)
    client.post(invite_path(study, make_invite(study, "secure-computer")), secure=True, follow=True)
    out = client.post(reverse("logout"), secure=True).cookies[WORKERS_COOKIE]
    assert out.value == "" and out["max-age"] == 0 and out["samesite"] == "None"
    assert out.OutputString().endswith("; Partitioned")
