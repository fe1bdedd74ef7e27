"""The worker cookie is verified once per value and key (:func:`annotate.handout.workers._cookie_seats`), and
every request still checks its age, its key and its signature: a cookie kept in the cache is no looser than
one read for the first time."""

from __future__ import annotations

import time
import uuid

import pytest
from django.core import signing
from django.test import RequestFactory

from annotate.handout.workers import WORKERS_COOKIE, Seat, session_seats

STUDY = str(uuid.uuid4())


def cookie(seats: dict, signed_ago_s: int = 0, key: str | None = None, monkeypatch=None) -> str:
    if signed_ago_s and monkeypatch is not None:
        stamp = signing.b62_encode(int(time.time()) - signed_ago_s)
        monkeypatch.setattr(signing.TimestampSigner, "timestamp", lambda self: stamp)
    value = signing.dumps(seats, key=key, salt="hatlab.workers", compress=True)
    if monkeypatch is not None:
        monkeypatch.undo()
    return value


def seats_of(value: str) -> dict[str, Seat]:
    request = RequestFactory().post("/api/work/x/next/")
    request.COOKIES[WORKERS_COOKIE] = value
    return session_seats(request)


def test_the_same_cookie_reads_the_same_seats_and_callers_cannot_change_them():
    value = cookie({STUDY: [7, "", True], "other": [8, "ref", False]})
    first = seats_of(value)
    assert first == {STUDY: Seat(7, "", True), "other": Seat(8, "ref", False)}
    first[STUDY] = Seat(99)  # a caller's copy
    first.pop("other")
    assert seats_of(value) == {STUDY: Seat(7, "", True), "other": Seat(8, "ref", False)}


def test_an_edited_or_forged_cookie_reads_as_nobody():
    value = cookie({STUDY: [7, "", True]})
    assert seats_of(value)
    payload, stamp, signature = value.rsplit(":", 2)
    other = cookie({STUDY: [8, "", True]})
    assert seats_of(f"{other.rsplit(':', 2)[0]}:{stamp}:{signature}") == {}  # another payload, same signature
    assert (
        seats_of(f"{payload}:{signing.b62_encode(int(time.time()) + 10**6)}:{signature}") == {}
    )  # a later stamp
    assert seats_of(value[:-1] + ("A" if value[-1] != "A" else "B")) == {}
    assert seats_of(cookie({STUDY: [7, "", True]}, key="not-the-site-key")) == {}
    assert seats_of("not a cookie") == {}


def test_a_cookie_read_while_fresh_expires_with_the_session(settings, monkeypatch):
    settings.SESSION_COOKIE_AGE = 3600
    value = cookie({STUDY: [7, "", True]}, signed_ago_s=120, monkeypatch=monkeypatch)
    assert seats_of(value) == {STUDY: Seat(7, "", True)}  # read, and kept
    settings.SESSION_COOKIE_AGE = 60
    assert seats_of(value) == {}  # its age is checked again on every request
    settings.SESSION_COOKIE_AGE = 3600
    assert seats_of(value) == {STUDY: Seat(7, "", True)}


def test_a_new_key_keeps_cookies_only_while_the_old_one_is_a_fallback(settings):
    value = cookie({STUDY: [7, "", True]})
    assert seats_of(value) == {STUDY: Seat(7, "", True)}
    old = settings.SECRET_KEY
    settings.SECRET_KEY = "a-new-secret-key-" + "x" * 40
    settings.SECRET_KEY_FALLBACKS = [old]
    assert seats_of(value) == {STUDY: Seat(7, "", True)}
    settings.SECRET_KEY_FALLBACKS = []
    assert seats_of(value) == {}  # verified under the old key before: not trusted under the new one


@pytest.mark.parametrize("raw", [[7, "", "yes"], [7, None, True], 7, ["7", "", True], [7, "", True, 1]])
def test_a_seat_of_the_wrong_shape_is_dropped(raw):
    value = cookie({STUDY: raw, "good": [3, "", True]})
    assert seats_of(value) == {"good": Seat(3, "", True)}
