"""Who is annotating: the worker each study's entry page identified, carried in a signed cookie.

The entry page (``/w/<study_uid>/``) asks the study's provider who the visitor is and writes the
answer, a :class:`Seat` per study (``{study uid: [worker pk, platform ref, verified]}``), into the
``hatlab_workers`` cookie, signed with the site's secret key (:mod:`django.core.signing`, salted,
time-stamped, so it cannot be forged or edited and expires with the session). The annotator API trusts
nothing else: a request acts as the worker its cookie names for that study, only on assignments of the
platform's unit of work it entered with (the seat's ``ref``), or as nobody. Reading it needs no database round trip, which matters
on the two requests every answer costs. Over HTTPS the cookie is ``SameSite=None`` (and Secure,
HttpOnly), the only one of the site's cookies that is: a crowd platform shows the task page in its
own frame, a cross-site context where the session and CSRF cookies (``Lax``) do not travel; it is
also ``Partitioned`` (CHIPS), which browsers that block third-party cookies keep. So the
annotator API's CSRF token, handed to the page in ``task_json``, is bound to the worker
(:func:`work_token`), not to the CSRF cookie. Signing out clears the cookie (:func:`forget_workers`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import lru_cache
from http.cookies import Morsel

from django.conf import settings
from django.core import signing
from django.utils.crypto import constant_time_compare, salted_hmac

from annotate.models import Response, Worker

WORKERS_COOKIE = "hatlab_workers"
_SALT = "hatlab.workers"
_TOKEN_SALT = "hatlab.workers.csrf"


@dataclass(frozen=True)
class Seat:
    """A browser's place in one study: its worker; ``ref``, the platform's unit of work it entered with
    (MTurk's assignmentId, Prolific's session; "" for the local crowd), the only one whose assignments it
    may get and submit (``None``: any, for reconciliation's own submissions); and whether the provider
    vouched for it at entry (its answers count at once) or its answers wait for the platform."""

    worker_id: int
    ref: str | None = ""
    verified: bool = True

    @property
    def verification(self) -> str:
        return Response.Verification.VERIFIED if self.verified else Response.Verification.PROVISIONAL

    def holds(self, worker_id: int, ref: str) -> bool:
        """Whether this seat may work on an assignment of ``worker_id`` made under ``ref``."""
        return worker_id == self.worker_id and self.ref in (None, ref)


def _read_seat(value) -> Seat | None:
    if (
        isinstance(value, list)
        and len(value) == 3
        and type(value[0]) is int
        and isinstance(value[1], str)
        and isinstance(value[2], bool)
    ):
        return Seat(value[0], value[1], value[2])
    return None  # an older cookie's bare worker pk says nothing of the platform's unit: enter again


def session_seats(request) -> dict[str, Seat]:
    """The request's ``{study uid: Seat}`` map (empty when the cookie is missing, forged or old); the cookie
    is read once per request (a signature check and a decompression), each caller gets its own copy."""
    read = getattr(request, "_hatlab_seats", None)
    if read is None:
        read = request._hatlab_seats = _cookie_seats(request)
    return dict(read)


def _cookie_seats(request) -> dict[str, Seat]:
    value = request.COOKIES.get(WORKERS_COOKIE)
    if not value:
        return {}
    verified = _verified_cookie(value, settings.SECRET_KEY, tuple(settings.SECRET_KEY_FALLBACKS))
    if verified is None or time.time() - verified[0] > settings.SESSION_COOKIE_AGE:
        return {}  # forged, edited, or signed longer ago than a session lives (signing.loads' max_age)
    return dict(verified[1])


@lru_cache(maxsize=2048)
def _verified_cookie(value: str, secret: str, fallbacks: tuple[str, ...]) -> tuple[int, tuple] | None:
    """A worker cookie whose signature holds: when it was signed and its seats; ``None`` when it does not.

    Kept per cookie and key (the same browser sends the same cookie with every answer; checking the signature
    and decompressing cost more than the rest of reading it), so only its age is checked on each request; a
    new key is a new entry. The signature is checked by :func:`django.core.signing.loads`; its time stamp is
    the field it verified (``payload:time:signature``)."""
    try:
        seats = signing.loads(value, key=secret, salt=_SALT, fallback_keys=list(fallbacks))
    except signing.BadSignature:
        return None
    if not isinstance(seats, dict):
        return None
    signed_at = signing.b62_decode(value.rsplit(":", 2)[1])
    return signed_at, tuple(
        (uid, seat) for uid, raw in seats.items() if (seat := _read_seat(raw)) is not None
    )


def session_workers(request) -> dict[str, int]:
    """The request's ``{study uid: worker pk}`` map."""
    return {uid: seat.worker_id for uid, seat in session_seats(request).items()}


def remember_worker(request, response, study, worker: Worker, ref: str = "", verified: bool = True) -> None:
    """Name ``worker`` as this browser's worker in ``study`` on ``response`` (keeping its other studies),
    on the platform's unit ``ref``, with answers ``verified`` at once or not."""
    seats = {uid: [s.worker_id, s.ref, s.verified] for uid, s in session_seats(request).items()}
    seats[str(study.uid)] = [worker.pk, ref, verified]
    response.set_cookie(
        WORKERS_COOKIE,
        signing.dumps(seats, salt=_SALT, compress=True),
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
    another site cannot compute or read (task pages get it in ``task_json``). Checked on every annotator
    request, so kept per key and worker once computed."""
    return _work_token(settings.SECRET_KEY, worker_pk)


@lru_cache(maxsize=4096)
def _work_token(secret: str, worker_pk: int) -> str:
    return salted_hmac(_TOKEN_SALT, str(worker_pk), secret=secret).hexdigest()


def work_token_matches(request, worker_ids) -> bool:
    """Whether the request's ``X-CSRFToken`` header is the token of one of ``worker_ids``."""
    sent = request.META.get("HTTP_X_CSRFTOKEN", "")  # not request.headers, which parses every header
    return bool(sent) and any(constant_time_compare(sent, work_token(pk)) for pk in worker_ids)


def session_seat(request, study_uid) -> Seat | None:
    """This browser's seat in the study ``study_uid``, if any."""
    return session_seats(request).get(str(study_uid))


def session_worker_ids(request) -> set[int]:
    """The primary keys of all workers this browser acts as (one per study at most)."""
    return {seat.worker_id for seat in session_seats(request).values()}
