"""A kept database connection is checked before a request reuses it, without a round trip
(:mod:`annotate.infra.postgres`): nothing is sent to a healthy server, and a connection the server ended is
replaced before the request's first query."""

from __future__ import annotations

import time

import psycopg2
import pytest
from django.db import connection, transaction

from tests.services import database_url

pytestmark = [
    pytest.mark.django_db(transaction=True),  # autocommit, as between two requests
    pytest.mark.postgres_only(reason="the backend and pg_stat_activity are PostgreSQL's"),
]


@pytest.fixture
def admin():
    db = connection.settings_dict
    link = psycopg2.connect(database_url({**db, "NAME": "postgres"}))
    link.autocommit = True
    yield link
    link.close()


def backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def last_query(admin, pid: int) -> str:
    with admin.cursor() as cursor:
        cursor.execute("SELECT query FROM pg_stat_activity WHERE pid = %s", [pid])
        return cursor.fetchone()[0]


def test_the_settings_use_the_backend_and_keep_checking():
    assert connection.settings_dict["ENGINE"] == "annotate.infra.postgres"
    assert connection.settings_dict["CONN_HEALTH_CHECKS"] is True
    assert connection.vendor == "postgresql"


def test_a_healthy_connection_is_checked_without_sending_a_query(admin):
    pid = backend_pid()
    with connection.cursor() as cursor:
        cursor.execute("SELECT 'the request before'")
    connection.health_check_done = False  # as at the start of the next request
    connection.close_if_health_check_failed()
    assert connection.connection is not None and backend_pid() == pid  # kept
    connection.health_check_done = False
    connection.close_if_health_check_failed()
    assert last_query(admin, pid) == "SELECT pg_backend_pid()"  # no SELECT 1 after it


def test_a_connection_the_server_ended_is_replaced_before_the_first_query(admin):
    pid = backend_pid()
    with admin.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    deadline = time.monotonic() + 5
    while connection.is_usable() and time.monotonic() < deadline:
        time.sleep(0.02)  # the server's goodbye reaches the socket
    assert not connection.is_usable()
    connection.health_check_done = False
    connection.close_if_health_check_failed()
    assert connection.connection is None
    with connection.cursor() as cursor:  # the request's first query gets a fresh connection, not an error
        cursor.execute("SELECT 42")
        assert cursor.fetchone() == (42,)
    assert backend_pid() != pid


def test_inside_a_transaction_the_server_is_asked(admin):
    pid = backend_pid()
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT 'in the transaction'")
        assert connection.is_usable()
        assert last_query(admin, pid) == "SELECT 1"
