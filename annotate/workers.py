"""Who is annotating: the worker each study's entry page identified, carried in a signed cookie.

The entry page (``/w/<study_uid>/``) asks the study's provider who the visitor is and writes the
answer, ``{study uid: worker pk}``, into the ``hatlab_workers`` cookie, signed with the site's
secret key (:mod:`django.core.signing`, salted, time-stamped, so it cannot be forged or edited and
expires with the session). The annotator API trusts nothing else: a request acts as the worker its
cookie names for that study, or as nobody. Reading it needs no database round trip, which matters
on the two requests every answer costs. Over HTTPS the cookie is ``SameSite=None`` (and Secure,
HttpOnly), the only one of the site's cookies that is: a crowd platform shows the task page in its
own frame, a cross-site context where the session and CSRF cookies (``Lax``) do not travel; it is
also ``Partitioned`` (CHIPS), which browsers that block third-party cookies keep. So the
annotator API's CSRF token, handed to the page in ``task_json``, is bound to the worker
(:func:`work_token`), not to the CSRF cookie. Signing out clears the cookie (:func:`forget_workers`).
"""

from __future__ import annotations

from http.cookies import Morsel

from django.conf import settings
from django.core import signing
from django.utils.crypto import constant_time_compare, salted_hmac

from annotate.models import Worker

WORKERS_COOKIE = "hatlab_workers"
_SALT = "hatlab.workers"
_TOKEN_SALT = "hatlab.workers.csrf"


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
        samesite=_samesite(),
    )
    _partition(response)


def _partition(response) -> None:
    """Over HTTPS, make the response's worker cookie partitioned (see :class:`_PartitionedMorsel`)."""
    if not settings.SESSION_COOKIE_SECURE:
        return
    plain = response.cookies[WORKERS_COOKIE]
    cookie = _PartitionedMorsel()
    cookie.set(plain.key, plain.value, plain.coded_value)
    cookie.update(plain)
    response.cookies[WORKERS_COOKIE] = cookie


class _PartitionedMorsel(Morsel):
    """A cookie with the ``Partitioned`` attribute (CHIPS), which Python's cookie module before 3.14 cannot
    write: browsers that block third-party cookies still keep a partitioned one, per top-level site, so the
    worker cookie works in a crowd platform's frame there too."""

    def OutputString(self, attrs=None) -> str:
        return super().OutputString(attrs) + "; Partitioned"


def _samesite() -> str:
    # Browsers drop SameSite=None cookies that are not Secure: over plain HTTP (development) stay Lax.
    return "None" if settings.SESSION_COOKIE_SECURE else "Lax"


def forget_workers(response) -> None:
    """Clear the worker cookie on ``response`` (at sign-out: the next person at this browser is nobody)."""
    response.delete_cookie(
        WORKERS_COOKIE,
        path=settings.SESSION_COOKIE_PATH,
        domain=settings.SESSION_COOKIE_DOMAIN,
        samesite=_samesite(),
    )
    _partition(response)  # a partitioned cookie is only cleared by a partitioned one


def work_token(worker_pk: int) -> str:
    """The annotator API's CSRF token for ``worker_pk``: an HMAC under the secret key, which a page on
    another site cannot compute or read (task pages get it in ``task_json``)."""
    return salted_hmac(_TOKEN_SALT, str(worker_pk)).hexdigest()


def work_token_matches(request, worker_ids) -> bool:
    """Whether the request's ``X-CSRFToken`` header is the token of one of ``worker_ids``."""
    sent = request.headers.get("X-CSRFToken", "")
    return bool(sent) and any(constant_time_compare(sent, work_token(pk)) for pk in worker_ids)


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
