"""Who is annotating: the worker each study's entry page identified, carried in a signed cookie.

The entry page (``/w/<study_uid>/``) asks the study's provider who the visitor is and writes the
answer, ``{study uid: worker pk}``, into the ``hatlab_workers`` cookie, signed with the site's
secret key (:mod:`django.core.signing`, salted, time-stamped, so it cannot be forged or edited and
expires with the session). The annotator API trusts nothing else: a request acts as the worker its
cookie names for that study, or as nobody. Reading it needs no database round trip, which matters
on the two requests every answer costs; the cookie has the session cookie's attributes (HttpOnly,
SameSite, Secure) so it travels wherever the session does, in a crowd platform's frame too.
"""

from __future__ import annotations

from django.conf import settings
from django.core import signing

from annotate.models import Worker

WORKERS_COOKIE = "hatlab_workers"
_SALT = "hatlab.workers"


def session_workers(request) -> dict[str, int]:
    """The request's ``{study uid: worker pk}`` map (empty when the cookie is missing, forged or old)."""
    value = request.COOKIES.get(WORKERS_COOKIE)
    if not value:
        return {}
    try:
        workers = signing.loads(value, salt=_SALT, max_age=settings.SESSION_COOKIE_AGE)
    except signing.BadSignature:
        return {}
    return workers if isinstance(workers, dict) else {}


def remember_worker(request, response, study, worker: Worker) -> None:
    """Name ``worker`` as this browser's worker in ``study`` on ``response`` (keeping its other studies)."""
    workers = session_workers(request)
    workers[str(study.uid)] = worker.pk
    response.set_cookie(
        WORKERS_COOKIE,
        signing.dumps(workers, salt=_SALT, compress=True),
        max_age=settings.SESSION_COOKIE_AGE,
        path=settings.SESSION_COOKIE_PATH,
        domain=settings.SESSION_COOKIE_DOMAIN,
        secure=settings.SESSION_COOKIE_SECURE,
        httponly=True,
        samesite=settings.SESSION_COOKIE_SAMESITE,
    )


def session_worker_id(request, study_uid) -> int | None:
    """The primary key of this browser's worker in the study ``study_uid``, if any."""
    value = session_workers(request).get(str(study_uid))
    return value if isinstance(value, int) else None


def session_worker_ids(request) -> set[int]:
    """The primary keys of all workers this browser acts as (one per study at most)."""
    return {v for v in session_workers(request).values() if isinstance(v, int)}


def current_worker(request, study) -> Worker | None:
    """This browser's worker in ``study``, or ``None``."""
    pk = session_worker_id(request, study.uid)
    return None if pk is None else Worker.objects.filter(pk=pk).first()
