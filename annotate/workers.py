"""Who is annotating: the worker remembered in the session per study, and local account workers.

The session maps each study's uid to the primary key of the worker the study's provider identified
at the entry page (``/w/<study_uid>/``). The annotator API trusts nothing else: a request acts as
the worker its session names for that study, or as nobody.
"""

from __future__ import annotations

from django.conf import settings
from django.db import connection
from django.utils import timezone

from annotate import sql
from annotate.models import Worker
from annotate.sql import Prepared

SESSION_KEY = "hatlab_workers"
DB_SESSIONS = "django.contrib.sessions.backends.db"
_SESSION_DATA = Prepared(
    "hatlab_session_data",
    ("varchar", "timestamptz"),
    "SELECT session_data FROM django_session WHERE session_key = $1 AND expire_date > $2",
)


def session_workers(request) -> dict[str, int]:
    """The session's ``{study uid: worker pk}`` map.

    The annotator API reads it on every request, so with database sessions on PostgreSQL it is read
    with one prepared statement and decoded by the session store itself (the same data
    ``request.session`` would load, without building an ORM query each time)."""
    if settings.SESSION_ENGINE != DB_SESSIONS or not sql.native():
        return request.session.get(SESSION_KEY, {})
    key = request.COOKIES.get(settings.SESSION_COOKIE_NAME)
    if not key:
        return {}
    with connection.cursor() as cursor:
        _SESSION_DATA.execute(cursor, [key, timezone.now()])
        row = cursor.fetchone()
    if row is None:
        return {}
    workers = request.session.decode(row[0]).get(SESSION_KEY, {})
    return workers if isinstance(workers, dict) else {}


def remember_worker(request, study, worker: Worker) -> None:
    """Store ``worker`` as this session's worker in ``study``."""
    workers = dict(request.session.get(SESSION_KEY, {}))
    if workers.get(str(study.uid)) != worker.pk:
        workers[str(study.uid)] = worker.pk
        request.session[SESSION_KEY] = workers


def session_worker_id(request, study_uid) -> int | None:
    """The primary key of this session's worker in the study ``study_uid``, if any."""
    value = session_workers(request).get(str(study_uid))
    return value if isinstance(value, int) else None


def session_worker_ids(request) -> set[int]:
    """The primary keys of all workers this session acts as (one per study at most)."""
    return {v for v in session_workers(request).values() if isinstance(v, int)}


def current_worker(request, study) -> Worker | None:
    """This session's worker in ``study``, or ``None``."""
    value = request.session.get(SESSION_KEY, {}).get(str(study.uid))
    pk = value if isinstance(value, int) else None
    return None if pk is None else Worker.objects.filter(pk=pk).first()


def account_worker(user) -> Worker:
    """The local worker of a signed-in account (created on first use)."""
    worker, _ = Worker.objects.get_or_create(
        provider="local", external_id=f"user:{user.pk}", defaults={"user": user}
    )
    return worker
