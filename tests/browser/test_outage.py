"""The task page rides out a database outage: with an answer ready, the live server's database
connections are cut (``pg_terminate_backend``) and new ones refused (``ALLOW_CONNECTIONS false``) for
about two seconds; the annotator clicks submit once and does nothing more. The server answers 503 with
Retry-After, the page says "Saving… reconnecting" (no error), resends the same body when the database
is back, and the answer is stored once."""

from __future__ import annotations

import time

import psycopg2
import pytest
from django.db import connection

from annotate.crowd.providers.local.adapter import invite_path, make_invite
from annotate.models import Response
from tests.browser.conftest import start_invite
from tests.browser.test_highlight_task import make_study, shown_map, wait_for_item
from tests.services import database_url

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

OUTAGE_S = 2.0


class DatabaseCut:
    """Cut the test database away from everyone but this test's own connection, and bring it back."""

    def __init__(self):
        db = connection.settings_dict
        self.name = db["NAME"]
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            self.keep = cursor.fetchone()[0]
        self.admin = psycopg2.connect(database_url({**db, "NAME": "postgres"}))
        self.admin.autocommit = True

    def cut(self) -> int:
        """Refuse new connections and end the live ones; returns how many were ended."""
        with self.admin.cursor() as cursor:
            cursor.execute(f'ALTER DATABASE "{self.name}" ALLOW_CONNECTIONS false')
            cursor.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = %s AND pid <> %s",
                [self.name, self.keep],
            )
            return cursor.fetchone()[0]

    def restore(self) -> None:
        with self.admin.cursor() as cursor:
            cursor.execute(f'ALTER DATABASE "{self.name}" ALLOW_CONNECTIONS true')

    def close(self) -> None:
        self.restore()
        self.admin.close()


def test_an_answer_submitted_during_a_database_outage_is_saved_once_without_a_second_click(
    live_server, browser_context
):
    study = make_study("Great pizza , friendly staff .", "Cold fries and a dirty table .")
    page = browser_context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    statuses: list[tuple[int, str]] = []
    page.on(
        "response",
        lambda r: (
            statuses.append((r.status, r.headers.get("retry-after", ""))) if "/submit/" in r.url else None
        ),
    )
    start_invite(page, live_server.url + invite_path(study, make_invite(study, "ann-outage")))
    wait_for_item(page, 1, 2)
    page.get_by_role("button", name="positive").click()
    page.locator(".hl-word").nth(0).click()
    page.locator(".hl-word").nth(3).click()
    answered = shown_map(page)
    assert answered == [1, 0, 0, 1, 0, 0]

    outage = DatabaseCut()
    try:
        outage.cut()
        cut_at = time.monotonic()
        page.locator(".ht-submit").click()
        page.wait_for_selector(".ht-status:text-is('Saving… reconnecting')")
        assert page.locator(".ht-errors").is_hidden()
        assert page.locator("#hatlab-app").get_attribute("data-reconnecting") == "true"
        time.sleep(max(0.0, OUTAGE_S - (time.monotonic() - cut_at)))
    finally:
        outage.close()

    # Nobody clicks again: the page goes on to the next item by itself.
    wait_for_item(page, 2, 2)
    assert page.locator("#hatlab-app").get_attribute("data-reconnecting") is None
    assert errors == []
    assert statuses[0] == (503, "2")  # the outage was answered, not hidden
    assert statuses[-1][0] == 201 and all(s == 503 for s, _ in statuses[:-1])
    stored = list(Response.objects.filter(study=study))
    assert len(stored) == 1
    assert stored[0].answer == {"label": "positive", "map": answered}
