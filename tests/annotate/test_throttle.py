"""Throttles: sign-in attempts per address and per account (login page and the API's Basic authentication),
new worker identities per address and study at the entry page, annotator API requests per worker; 429 with
Retry-After past a limit, and every request let through when the cache that counts is down."""

from __future__ import annotations

import base64

import pytest
from django.test import Client
from django.urls import reverse

from annotate.crowd.providers.local.adapter import invite_path, make_invite
from annotate.infra import throttle
from tests.annotate.conftest import PASSWORD, make_dataset, make_study
from tests.annotate.test_api import Annotator

pytestmark = pytest.mark.django_db

# a Redis nobody listens on: what the throttles meet when their store is down
DOWN = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:9/0",
                    "OPTIONS": {"socket_connect_timeout": 0.2, "socket_timeout": 0.2}}}  # fmt: skip


def login(client: Client, username: str, password: str, address: str = "10.0.0.1"):
    return client.post(reverse("login"), {"username": username, "password": password}, REMOTE_ADDR=address)


def test_login_is_throttled_per_account(settings, researcher):
    settings.HATLAB_THROTTLE_LOGIN_ACCOUNT = (3, 300)
    client = Client()
    for n in range(3):
        wrong = login(client, "rita", "wrong", address=f"10.0.0.{n}")  # from three addresses
        assert wrong.status_code == 200 and "Please enter a correct username" in wrong.content.decode()
    refused = login(client, "RITA", PASSWORD, address="10.0.0.9")  # even the right password, any case
    assert refused.status_code == 429 and 0 < int(refused["Retry-After"]) <= 300
    assert "Too many sign-in attempts" in refused.content.decode()
    assert "_auth_user_id" not in client.session
    # another account is not held back
    assert login(Client(), "otto", "wrong").status_code == 200


def test_login_is_throttled_per_address(settings, researcher):
    settings.HATLAB_THROTTLE_LOGIN_IP = (4, 300)
    for n in range(4):
        assert login(Client(), f"guess{n}", "wrong", address="10.0.0.5").status_code == 200
    assert login(Client(), "rita", PASSWORD, address="10.0.0.5").status_code == 429
    signed_in = login(Client(), "rita", PASSWORD, address="10.0.0.6")
    assert signed_in.status_code == 302


def test_basic_authentication_is_throttled(settings, researcher):
    settings.HATLAB_THROTTLE_LOGIN_ACCOUNT = (2, 300)

    def basic(password: str):
        token = base64.b64encode(f"rita:{password}".encode()).decode()
        return Client().get("/api/studies/", HTTP_AUTHORIZATION=f"Basic {token}")

    assert [basic("wrong").status_code for _ in range(2)] == [403, 403]
    refused = basic(PASSWORD)
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0


def test_new_workers_per_address_and_study(settings, study, researcher):
    settings.HATLAB_THROTTLE_NEW_WORKER = (3, 600)
    browsers = []
    for n in range(3):
        browser = Client(REMOTE_ADDR="10.1.0.1")
        assert (
            "hatlab-task"
            in browser.post(invite_path(study, make_invite(study, f"w{n}")), follow=True).content.decode()
        )
        browsers.append(browser)
    forged = Client(REMOTE_ADDR="10.1.0.1").post(invite_path(study, make_invite(study, "w3")), follow=True)
    assert forged.status_code == 429 and int(forged["Retry-After"]) > 0
    assert "hatlab-task" not in forged.content.decode()
    # a browser that already has its worker goes on; another address and another study are not held back
    assert "hatlab-task" in browsers[0].get(reverse("work-entry", args=[study.uid])).content.decode()
    other_address = Client(REMOTE_ADDR="10.1.0.2").post(
        invite_path(study, make_invite(study, "w4")), follow=True
    )
    assert "hatlab-task" in other_address.content.decode()
    second = make_study(researcher, make_dataset(researcher, name="second"), name="second")
    same_address = Client(REMOTE_ADDR="10.1.0.1").post(
        invite_path(second, make_invite(second, "w5")), follow=True
    )
    assert "hatlab-task" in same_address.content.decode()


def test_annotator_api_per_worker(settings, study):
    settings.HATLAB_THROTTLE_WORK_API = (4, 60)
    busy, calm = Annotator(study, "busy"), Annotator(study, "calm")
    for _ in range(4):
        assert busy.next().status_code == 200
    refused = busy.next()
    assert refused.status_code == 429 and 0 < int(refused["Retry-After"]) <= 60
    assert refused.json() == {
        "errors": {"detail": [f"too many requests: try again in {refused['Retry-After']} s"]}
    }
    submit = busy.submit("00000000-0000-0000-0000-000000000000", {})
    assert submit.status_code == 429
    assert calm.next().status_code == 200


def test_default_rate_lets_a_fast_annotator_through(settings):
    """An answer takes a reader seconds; the default lets a worker send next and submit every second."""
    limit, window = settings.HATLAB_THROTTLE_WORK_API
    assert limit / window >= 2


def test_throttles_fail_open_when_the_cache_is_down(settings, study, researcher):
    settings.HATLAB_THROTTLE_LOGIN_ACCOUNT = (1, 300)
    settings.HATLAB_THROTTLE_NEW_WORKER = (1, 600)
    settings.HATLAB_THROTTLE_WORK_API = (1, 60)
    settings.CACHES = DOWN
    for _ in range(3):
        assert login(Client(), "rita", "wrong").status_code == 200
    assert login(Client(), "rita", PASSWORD).status_code == 302
    annotators = [Annotator(study, f"down{n}") for n in range(3)]  # Annotator asserts each page is served
    for _ in range(3):
        assert annotators[0].next().status_code == 200


def test_throttles_can_be_turned_off(settings, researcher):
    settings.HATLAB_THROTTLE_LOGIN_ACCOUNT = (1, 300)
    settings.HATLAB_THROTTLES = False
    assert [login(Client(), "rita", "wrong").status_code for _ in range(3)] == [200, 200, 200]


def test_behind_the_proxy_the_address_it_appends_counts(settings, study):
    """Behind the TLS proxy every request comes from the proxy: the client is the address it appends to
    X-Forwarded-For, not one the client wrote there itself."""
    settings.HATLAB_THROTTLE_NEW_WORKER = (1, 600)
    settings.BEHIND_TLS_PROXY = True
    settings.TRUSTED_PROXIES = ["10.9.9.9"]

    def enter(name: str, forwarded: str):
        client = Client(REMOTE_ADDR="10.9.9.9", HTTP_X_FORWARDED_FOR=forwarded)
        return client.post(invite_path(study, make_invite(study, name)), follow=True)

    assert enter("a", "203.0.113.1").status_code == 200
    assert enter("b", "203.0.113.2").status_code == 200  # another client behind the same proxy
    assert enter("c", "198.51.100.7, 203.0.113.1").status_code == 429  # a forged first hop changes nothing
    settings.BEHIND_TLS_PROXY = False
    assert enter("d", "203.0.113.3").status_code == 200  # the proxy's own address, counted once
    assert enter("e", "203.0.113.4").status_code == 429


def test_looking_at_an_invite_link_uses_none_of_the_new_worker_budget(settings, study):
    """A start page creates no worker, so link previews cannot spend an address's budget for the invitee."""
    settings.HATLAB_THROTTLE_NEW_WORKER = (1, 600)
    link = invite_path(study, make_invite(study, "looked-at"))
    for _ in range(3):
        assert Client(REMOTE_ADDR="10.3.0.1").get(link).status_code == 200
    started = Client(REMOTE_ADDR="10.3.0.1").post(link, follow=True)
    assert started.status_code == 200 and "hatlab-task" in started.content.decode()
    second = Client(REMOTE_ADDR="10.3.0.1").post(invite_path(study, make_invite(study, "other")), follow=True)
    assert second.status_code == 429  # the budget counts the workers it made


class Processes:
    """Several server processes in this one: each request runs with the leases of the process it reaches."""

    def __init__(self, monkeypatch, n: int):
        self.leases: list[dict] = [{} for _ in range(n)]
        self.monkeypatch = monkeypatch

    def hit(self, process: int, rate: tuple[int, int], ident: str = "w1") -> int | None:
        self.monkeypatch.setattr(throttle, "_LEASES", self.leases[process])
        return throttle.hit("work-api", ident, rate)


def test_one_process_grants_exactly_the_limit_in_leases(monkeypatch):
    rate = (325, 3600)  # leases of 10, the last one cut to 5
    one = Processes(monkeypatch, 1)
    assert [one.hit(0, rate) for _ in range(325)] == [None] * 325
    assert one.hit(0, rate) is not None
    assert one.hit(0, rate, ident="w2") is None  # another worker's budget is its own


def test_processes_together_never_grant_more_than_the_limit(monkeypatch):
    """Requests spread over three processes, each taking its own leases: the shared counter still caps the
    total at the limit, and what the leases leave unspent is at most (lease − 1) per process."""
    limit, lease = 325, 10
    three = Processes(monkeypatch, 3)
    granted = sum(three.hit(n % 3, (limit, 3600)) is None for n in range(600))
    assert limit - 3 * (lease - 1) <= granted <= limit
    stragglers = sum(three.hit(0, (limit, 3600)) is None for _ in range(50))
    assert granted + stragglers <= limit


def test_threads_of_one_process_share_its_lease_without_overspending(monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    one = Processes(monkeypatch, 1)
    one.monkeypatch.setattr(throttle, "_LEASES", one.leases[0])
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: throttle.hit("work-api", "racer", (325, 3600)), range(800)))
    assert sum(r is None for r in results) == 325


def test_small_limits_are_counted_one_by_one(monkeypatch):
    """Below LEASE_SHARE a lease is one token: two processes together get exactly the limit (sign-in's 10)."""
    two = Processes(monkeypatch, 2)
    granted = [two.hit(n % 2, (10, 300)) is None for n in range(14)]
    assert granted == [True] * 10 + [False] * 4


def test_a_changed_rate_drops_the_leases(settings, monkeypatch):
    settings.HATLAB_THROTTLE_WORK_API = (320, 3600)
    rate = settings.HATLAB_THROTTLE_WORK_API
    assert throttle.hit("work-api", "changer", rate) is None  # leases 9 more tokens
    assert throttle._LEASES
    settings.HATLAB_THROTTLE_WORK_API = (1, 3600)
    assert not throttle._LEASES


def test_another_cache_drops_the_leases_and_an_unrelated_setting_keeps_them(settings):
    rate = (320, 3600)
    assert throttle.hit("work-api", "kept", rate) is None
    settings.LANGUAGE_CODE = "en-gb"
    assert throttle._LEASES, "a setting the throttles do not read dropped the leases"
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    assert not throttle._LEASES


def test_leases_of_ended_windows_are_pruned_once_there_are_many(monkeypatch):
    """The process's leases stay bounded: past _PRUNE_AT keys, those of windows that ended (a window
    ends at its start plus its length: the next one starts then) are dropped; those still running stay."""
    monkeypatch.setattr(throttle, "_PRUNE_AT", 3)
    monkeypatch.setattr(throttle, "_LEASES", {})
    throttle._keep_lease("ended", 5, 100.0, 100.0)
    throttle._keep_lease("running", 5, 160.0, 100.0)
    assert set(throttle._LEASES) == {"ended", "running"}  # under the bound: nothing pruned
    throttle._keep_lease("third", 5, 160.0, 100.0)
    assert set(throttle._LEASES) == {"ended", "running", "third"}
    throttle._keep_lease("fourth", 5, 160.0, 100.0)  # three held: the ended window goes
    assert set(throttle._LEASES) == {"running", "third", "fourth"}


def test_the_counter_outlives_its_window(monkeypatch):
    """A counter that expired before its window ended would give a worker a second budget in one window."""
    lifetimes = []

    def counted(key, lifetime_s, by=1):
        lifetimes.append(lifetime_s)
        return by

    monkeypatch.setattr(throttle.shared_cache, "count", counted)
    throttle.hit("work-api", "lifetime", (320, 60))
    assert lifetimes and lifetimes[0] >= 60


def test_retry_after_is_the_time_left_in_the_window(monkeypatch):
    """Past the limit, Retry-After counts the seconds until the window ends, rounded up (windows start at
    multiples of their length)."""
    clock = [1000.5]
    monkeypatch.setattr(throttle.time, "time", lambda: clock[0])
    assert throttle.hit("work-api", "late", (1, 60)) is None
    assert throttle.hit("work-api", "late", (1, 60)) == 20  # the window 960-1020
    clock[0] = 1019.5
    assert throttle.hit("work-api", "late", (1, 60)) == 1
    clock[0] = 1020.0  # a new window, a new budget
    assert throttle.hit("work-api", "late", (1, 60)) is None


def test_a_lease_of_two_saves_a_round_trip_and_lives_while_its_window_runs(monkeypatch):
    trips = []
    real = throttle.shared_cache.count

    def counted(key, lifetime_s, by=1):
        trips.append(by)
        return real(key, lifetime_s, by)

    monkeypatch.setattr(throttle.shared_cache, "count", counted)
    monkeypatch.setattr(throttle, "_LEASES", {})
    rate = (64, 3600)  # leases of 2
    assert [throttle.hit("work-api", "pair", rate) for _ in range(4)] == [None] * 4
    assert trips == [2, 2]
    monkeypatch.setattr(throttle, "_PRUNE_AT", 2)
    assert throttle.hit("work-api", "first", rate) is None  # leases one more token
    for n in range(3):  # other workers' leases make the process prune
        assert throttle.hit("work-api", f"other{n}", rate) is None
    assert throttle.hit("work-api", "first", rate) is None
    assert trips.count(2) == 2 + 1 + 3  # the running window's lease was kept through the pruning
