"""Pages that only name explanation methods load no torch: a model run's page (with its explain form)
answers in a fresh process without importing it, and the torch-free method catalogue those pages read
is the registry's own (titles, sources, architectures, fitting), so the two cannot drift apart."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.db import connection

from annotate.access import RESEARCHER_GROUP
from annotate.models import Dataset, ModelRun
from explain_engine import method_catalogue
from explain_engine.method_catalogue_data import CATALOGUE

ROOT = Path(__file__).resolve().parents[2]

PAGE_IN_A_FRESH_PROCESS = """
import json, sys, time
import django
django.setup()
from django.contrib.auth.models import User
from django.test import Client
client = Client()
client.force_login(User.objects.get(username=sys.argv[1]))
started = time.perf_counter()
response = client.get(sys.argv[2])
print(json.dumps({"status": response.status_code, "torch": "torch" in sys.modules,
                  "seconds": time.perf_counter() - started,
                  "form": 'name="methods"' in response.content.decode()}))
"""


def test_catalogue_is_the_registry():
    assert method_catalogue.from_registry() == CATALOGUE, (
        "the method catalogue is out of date: run `python -m explain_engine.method_catalogue`"
    )


def test_catalogue_answers_as_the_registry():
    from explain_engine.explainers import registry

    for architecture in ("cnn", "lstm_attention", "transformer", "rationale", "qrnn"):
        for standalone in (False, True):
            assert method_catalogue.methods_for(architecture, standalone) == registry.methods_for(
                architecture, standalone
            )
    for code in [*CATALOGUE, "attention (training)", "no such method"]:
        assert method_catalogue.describe_method(code) == registry.describe_method(code)


def _database_url() -> str:
    s = connection.settings_dict
    return f"postgres://{s['USER']}:{s['PASSWORD']}@{s['HOST']}:{s['PORT']}/{s['NAME']}"


@pytest.mark.postgres_only(reason="the fresh process reaches the test database over PostgreSQL")
@pytest.mark.django_db(transaction=True)
def test_model_run_page_loads_no_torch():
    owner = User.objects.create_user("mira", password="a-long-test-password")
    owner.groups.add(Group.objects.get_or_create(name=RESEARCHER_GROUP)[0])
    dataset = Dataset.objects.create(owner=owner, name="reviews", labels=["negative", "positive"])
    run = ModelRun.objects.create(
        name="cnn run",
        owner=owner,
        dataset=dataset,
        architecture="cnn",
        status=ModelRun.Status.DONE,
        metrics={"labels": ["negative", "positive"]},
    )
    env = {**os.environ, "DATABASE_URL": _database_url(), "DJANGO_SETTINGS_MODULE": "config.settings"}
    env["PYTHONPATH"] = str(ROOT)
    result = subprocess.run(
        [sys.executable, "-c", PAGE_IN_A_FRESH_PROCESS, "mira", f"/models/{run.pk}/"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    assert answer["status"] == 200
    assert answer["form"], "the explain form (its methods) is on the page"
    assert not answer["torch"], "the model run's page imported torch"


def test_demo_hasher_reads_production_hashes_and_signs_in_fast():
    import time

    from django.contrib.auth.hashers import PBKDF2PasswordHasher

    from annotate.infra.hashers import DemoPBKDF2PasswordHasher

    demo, production = DemoPBKDF2PasswordHasher(), PBKDF2PasswordHasher()
    stored = production.encode("hatlab-demo", production.salt())
    assert demo.verify("hatlab-demo", stored) and demo.must_update(stored)
    assert not demo.verify("wrong", stored)
    started = time.perf_counter()
    fast = demo.encode("hatlab-demo", demo.salt())
    fast_seconds = time.perf_counter() - started
    assert fast.startswith("pbkdf2_sha256$100000$")
    assert production.verify("hatlab-demo", fast) and production.must_update(fast)
    started = time.perf_counter()
    production.encode("hatlab-demo", production.salt())
    assert fast_seconds < (time.perf_counter() - started) / 3


def test_demo_settings_use_the_fast_hasher_only_with_debug():
    code = (
        "import django; django.setup(); from django.conf import settings; print(settings.PASSWORD_HASHERS[0])"
    )
    base = {k: v for k, v in os.environ.items() if k not in ("DJANGO_DEBUG", "HATLAB_DEMO_FAST_HASH")}
    base.update(DJANGO_SETTINGS_MODULE="config.settings", PYTHONPATH=str(ROOT), DJANGO_SECRET_KEY="x" * 60)
    answers = {}
    for name, extra in {
        "demo": {"DJANGO_DEBUG": "1", "HATLAB_DEMO_FAST_HASH": "1"},
        "production": {"HATLAB_DEMO_FAST_HASH": "1"},
    }.items():
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env={**base, **extra}, cwd=ROOT
        )
        assert out.returncode == 0, out.stderr[-2000:]
        answers[name] = out.stdout.strip()
    assert answers == {
        "demo": "annotate.infra.hashers.DemoPBKDF2PasswordHasher",
        "production": "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    }
