"""Who is annotating: the worker each study's entry page identified, carried in a signed cookie.

The entry page (``/w/<study_uid>/``) asks the study's provider who the visitor is and writes the
answer, a :class:`Seat` per study (``{study uid: [worker pk, platform ref, verified]}``), into the
``hatlab_workers`` cookie, signed with the site's secret key (:mod:`django.core.signing`, salted,
time-stamped, so it cannot be forged or edited and expires with the session). The annotator API trusts
nothing else: a request acts as the worker its cookie names for that study, only on assignments of the
platform's unit of work it entered with (the seat's ``ref``), or as nobody. Reading it needs no database round trip, which matters
on the two requests every answer costs; the cookie has the session cookie's attributes (HttpOnly,
SameSite, Secure) so it travels wherever the session does, in a crowd platform's frame too.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.core import signing

from annotate.models import Response, Worker

WORKERS_COOKIE = "hatlab_workers"
_SALT = "hatlab.workers"


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
    """The request's ``{study uid: Seat}`` map (empty when the cookie is missing, forged or old)."""
    value = request.COOKIES.get(WORKERS_COOKIE)
    if not value:
        return {}
    try:
        seats = signing.loads(value, salt=_SALT, max_age=settings.SESSION_COOKIE_AGE)
    except signing.BadSignature:
        return {}
    if not isinstance(seats, dict):
        return {}
    return {uid: seat for uid, raw in seats.items() if (seat := _read_seat(raw)) is not None}


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
        samesite=settings.SESSION_COOKIE_SAMESITE,
    )


def session_seat(request, study_uid) -> Seat | None:
    """This browser's seat in the study ``study_uid``, if any."""
    return session_seats(request).get(str(study_uid))


def session_worker_id(request, study_uid) -> int | None:
    """The primary key of this browser's worker in the study ``study_uid``, if any."""
    seat = session_seat(request, study_uid)
    return None if seat is None else seat.worker_id


def session_worker_ids(request) -> set[int]:
    """The primary keys of all workers this browser acts as (one per study at most)."""
    return {seat.worker_id for seat in session_seats(request).values()}


def current_worker(request, study) -> Worker | None:
    """This browser's worker in ``study``, or ``None``."""
    pk = session_worker_id(request, study.uid)
    return None if pk is None else Worker.objects.filter(pk=pk).first()
