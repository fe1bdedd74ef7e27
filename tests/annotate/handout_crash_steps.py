"""The two halves of the PostgreSQL crash test (``tests/annotate/test_handout_crash.py``), each run in its own
process against the private cluster that test starts (``DATABASE_URL``): ``handout`` builds the tables, a
running study and an invited annotator, hands them an item, crashes the cluster at once
(``HATLAB_CRASH_COMMAND``) and prints what the browser holds; ``answer``
answers that item from the same browser after the crash and prints the reply."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402

from annotate.access import RESEARCHER_GROUP  # noqa: E402
from annotate.crowd.providers.local.adapter import invite_path, make_invite  # noqa: E402
from annotate.models import Assignment, Item, Response, Study  # noqa: E402
from tests.annotate.conftest import make_dataset, make_study, make_user  # noqa: E402
from tests.annotate.test_api import body_for, task_json  # noqa: E402


def handout() -> dict:
    call_command("migrate", verbosity=0)
    owner = make_user("rita", RESEARCHER_GROUP)
    study = make_study(owner, make_dataset(owner, n=3))
    client = Client(enforce_csrf_checks=True)
    started = client.post(invite_path(study, make_invite(study, "ann")))  # the invitee presses Start
    task = task_json(client.get(started["Location"]).content.decode())
    given = client.post(
        task["next_url"], "{}", content_type="application/json", HTTP_X_CSRFTOKEN=task["csrf_token"]
    )
    data = given.json()
    with connection.cursor() as cursor:  # what a crash now would keep: the WAL flushed to disk
        cursor.execute("SELECT pg_current_wal_insert_lsn()::text, pg_current_wal_flush_lsn()::text")
        wal = cursor.fetchone()
    connection.close()
    subprocess.run(
        json.loads(os.environ["HATLAB_CRASH_COMMAND"]), check=True, capture_output=True, timeout=60
    )
    return {
        "wal": {"written": wal[0], "flushed": wal[1]},
        "task": task,
        "cookies": {name: morsel.value for name, morsel in client.cookies.items()},
        "assignment": data["assignment"],
        "item": data["item"],
    }


def answer(held: dict) -> dict:
    client = Client(enforce_csrf_checks=True)
    for name, value in held["cookies"].items():
        client.cookies[name] = value
    task = held["task"]
    url = task["submit_url_template"].replace("ASSIGNMENT", held["assignment"])
    reply = client.post(
        url,
        json.dumps(body_for(held["item"]["payload"])),
        content_type="application/json",
        HTTP_X_CSRFTOKEN=task["csrf_token"],
    )
    study = Study.objects.get(uid=task["study"])
    return {
        "status": reply.status_code,
        "body": reply.content.decode()[:500],
        "assignment_kept": Assignment.objects.filter(uid=held["assignment"]).exists(),
        "responses": Response.objects.filter(study=study).count(),
        "items_done": sorted(Item.objects.filter(study=study).values_list("responses_done", flat=True)),
    }


if __name__ == "__main__":
    if sys.argv[1] == "handout":
        print(json.dumps(handout()))
    else:
        print(json.dumps(answer(json.loads(sys.stdin.read()))))
