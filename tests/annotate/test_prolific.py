"""Prolific client and provider against a local fake of Prolific's API v1 (http.server in a thread on
127.0.0.1, random port), which checks the token and the documented request and response shapes."""

from __future__ import annotations

from decimal import Decimal
from urllib.parse import parse_qs, urlparse

import pytest
from django.contrib.sessions.backends.db import SessionStore
from django.test import Client, RequestFactory

from annotate.crowd.providers import get_provider
from annotate.crowd.providers.base import RETURNED, SUBMITTED, TIMED_OUT, Entry
from annotate.crowd.providers.base.retry import Backoff, ProviderConfigError
from annotate.crowd.providers.prolific import adapter as prolific
from annotate.crowd.providers.prolific import client as prolific_client
from annotate.crowd.providers.prolific import settings as prolific_settings
from annotate.crowd.providers.reconcile import send_bonus
from annotate.models import Payment, Publication, Worker
from tests.annotate.conftest import make_worker
from tests.annotate.crowd_helpers import PROLIFIC_CONFIG, crowd_study
from tests.annotate.fake_prolific import FakeProlific


@pytest.fixture
def fake():
    server = FakeProlific().start()
    yield server
    server.stop()


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def client(fake, sleeps):
    return prolific_client.ProlificClient(
        fake.token, fake.url, backoff=Backoff(attempts=4, base_s=0.01), sleep=sleeps.append
    )


@pytest.fixture
def provider(client, settings):
    settings.HATLAB_PUBLIC_URL = "https://hatlab.example.org"
    instance = get_provider("prolific")
    instance.use_client(client)
    yield instance
    instance.use_client(None)


@pytest.fixture
def study(researcher):
    return crowd_study(researcher, "prolific", dict(PROLIFIC_CONFIG), n=6)


# --- the client -------------------------------------------------------------------------------------


def test_token_is_required_and_checked(fake, sleeps):
    with pytest.raises(ProviderConfigError) as info:
        prolific_client.ProlificClient("", fake.url)
    assert info.value.field == "PROLIFIC_API_TOKEN"
    wrong = prolific_client.ProlificClient("not-the-token", fake.url, sleep=sleeps.append)
    with pytest.raises(prolific_client.ProlificAPIError) as error:
        wrong.workspace_id()
    assert error.value.status == 401 and sleeps == []


def test_throttling_waits_at_least_retry_after(fake, client, sleeps, caplog):
    fake.fail_next("GET", r"workspaces/", status=429, times=2, retry_after="3")
    fake.fail_next("GET", r"workspaces/ws0001/balance/", status=502, times=1)
    with caplog.at_level("INFO", logger="annotate.crowd.providers"):
        assert client.workspace_id() == "ws0001"
        assert client.balance("ws0001") == (Decimal("500"), "GBP")
    assert len(sleeps) == 3 and sleeps[0] >= 3 and sleeps[1] >= 3 and sleeps[2] < 3
    assert sum("transient error" in r.getMessage() for r in caplog.records) == 3
    assert len(fake.calls_to("GET", "workspaces/")) == 3


def test_permanent_errors_are_not_retried(fake, client, sleeps):
    with pytest.raises(prolific_client.ProlificAPIError) as info:
        client.get_study("000000000000000000000bad")
    assert info.value.status == 404 and sleeps == []


def test_config_validation_names_the_field():
    cases = [
        ({k: v for k, v in PROLIFIC_CONFIG.items() if k != "name"}, "name"),
        (dict(PROLIFIC_CONFIG, reward="x"), "reward"),
        (dict(PROLIFIC_CONFIG, places=0), "places"),
        ({k: v for k, v in PROLIFIC_CONFIG.items() if k != "estimated_minutes"}, "estimated_minutes"),
        (dict(PROLIFIC_CONFIG, max_minutes=3), "max_minutes"),
        (dict(PROLIFIC_CONFIG, devices=["watch"]), "devices"),
        (dict(PROLIFIC_CONFIG, currency="EUR"), "currency"),
        (dict(PROLIFIC_CONFIG, fee_rate="2"), "fee_rate"),
    ]
    for config, field_name in cases:
        with pytest.raises(ProviderConfigError) as info:
            prolific_settings.ProlificConfig.from_dict(config)
        assert info.value.field == field_name
    assert prolific_settings.ProlificConfig.from_dict(PROLIFIC_CONFIG).fee(Decimal("12.00")) == Decimal(
        "4.00"
    )


# --- publishing -------------------------------------------------------------------------------------


def test_publish_creates_and_publishes_one_study(fake, provider, study):
    [publication] = provider.publish(study, "b1")
    [created] = fake.studies.values()
    assert created["status"] == "ACTIVE" and publication.external_id == created["id"]
    assert publication.status == Publication.Status.OPEN and publication.places == 10
    url = urlparse(created["external_study_url"])
    assert url.scheme == "https" and url.path == f"/w/{study.uid}/"
    assert parse_qs(url.query) == {
        "PROLIFIC_PID": ["{{%PROLIFIC_PID%}}"],
        "STUDY_ID": ["{{%STUDY_ID%}}"],
        "SESSION_ID": ["{{%SESSION_ID%}}"],
    }
    assert created["prolific_id_option"] == "url_parameters"
    assert created["reward"] == 120 and created["total_available_places"] == 10
    assert created["estimated_completion_time"] == 8
    assert created["completion_codes"] == [
        {
            "code": publication.details["completion_code"],
            "code_type": "COMPLETED",
            "actions": [{"action": "MANUALLY_REVIEW"}],
        }
    ]
    [blocklist] = created["filters"]
    assert blocklist["filter_id"] == "participant_group_blocklist"
    assert fake.groups[blocklist["selected_values"][0]]["name"] == prolific.BLOCKLIST_GROUP
    # Publishing the same batch again makes nothing new.
    assert provider.publish(study, "b1") == [publication]
    assert len(fake.studies) == 1 and len(fake.calls_to("POST", "studies/")) == 1


def test_a_lost_reply_does_not_create_a_second_study(fake, provider, study, sleeps):
    fake.lose_reply("POST", r"studies/")
    [publication] = provider.publish(study, "b2")
    assert len(fake.studies) == 1 and len(sleeps) == 1
    assert publication.external_id == next(iter(fake.studies))


def test_only_trusted_studies_use_the_allow_list(fake, provider, study):
    study.provider_config = dict(PROLIFIC_CONFIG, only_trusted=True, max_minutes=30)
    study.save()
    provider.publish(study, "b3")
    [created] = fake.studies.values()
    assert {f["filter_id"] for f in created["filters"]} == {
        "participant_group_blocklist",
        "participant_group_allowlist",
    }
    assert created["maximum_allowed_time"] == 30


def test_pause_resume_top_up_and_stop(fake, provider, study):
    [publication] = provider.publish(study, "b1")
    remote = fake.studies[publication.external_id]
    provider.pause(study)
    assert remote["status"] == "PAUSED"
    provider.resume(study)
    assert remote["status"] == "ACTIVE"
    provider.top_up(study, 5, "t1")
    provider.top_up(study, 5, "t1")  # the same top-up again adds nothing
    assert remote["total_available_places"] == 15
    publication.refresh_from_db()
    assert publication.places == 15
    with pytest.raises(ProviderConfigError):
        provider.top_up(study, 0, "t2")
    provider.expire(study)
    assert remote["status"] == "COMPLETED"
    publication.refresh_from_db()
    assert publication.status == Publication.Status.EXPIRED


def test_cost_estimate_and_balance(fake, provider, study):
    estimate = provider.estimate_cost(study)
    assert (estimate.places, estimate.rewards, estimate.fees) == (10, Decimal("12.00"), Decimal("4.00"))
    assert estimate.total == Decimal("16.00") and estimate.balance == Decimal("500") and estimate.affordable
    fake.balances["ws0001"]["available_balance"] = 1000
    assert provider.estimate_cost(study).affordable is False


# --- a participant arrives and leaves ---------------------------------------------------------------


def _request(params: dict):
    request = RequestFactory().get("/w/x/", params)
    request.session = SessionStore()
    return request


def test_identify_and_completion(fake, provider, study):
    [publication] = provider.publish(study, "b1")
    session = fake.add_submission(publication.external_id, "5f0aa1", status="ACTIVE")
    request = _request({"PROLIFIC_PID": "5f0aa1", "STUDY_ID": publication.external_id, "SESSION_ID": session})
    assert provider.identify(request, study) == "5f0aa1"
    assert provider.verify_entry(request, study, "5f0aa1") == Entry(ref=session, verified=True)
    assert provider.assignment_ref(request, study) == session
    worker = make_worker("5f0aa1", "prolific")
    completion = provider.completion(request, worker)
    code = publication.details["completion_code"]
    assert completion["code"] == code
    assert completion["redirect_url"] == f"https://app.prolific.com/submissions/complete?cc={code}"
    # Another Prolific study's id is refused; ids that are not ids identify nobody.
    other = _request({"PROLIFIC_PID": "p", "STUDY_ID": "other", "SESSION_ID": "s"})
    assert provider.verify_entry(other, study, "p").refused
    assert provider.identify(_request({"PROLIFIC_PID": "<x>", "STUDY_ID": publication.external_id,
                                       "SESSION_ID": "s"}), study) is None  # fmt: skip


def test_entry_is_checked_against_prolific(fake, provider, study):
    """Prolific vouches for an active session of the same participant; another participant's session, one
    Prolific does not know, or one no longer active is refused; when Prolific cannot be asked the
    participant starts provisional, and the session is theirs: another PROLIFIC_PID on it is refused."""
    [publication] = provider.publish(study, "b1")
    sid = publication.external_id

    def entry(pid: str, session: str) -> Entry:
        request = _request({"PROLIFIC_PID": pid, "STUDY_ID": sid, "SESSION_ID": session})
        return provider.verify_entry(request, study, provider.identify(request, study))

    mine = fake.add_submission(sid, "p1", status="ACTIVE")
    assert entry("p1", mine) == Entry(ref=mine, verified=True)
    assert entry("p2", mine).refused == "This Prolific session belongs to someone else."
    assert "no such session" in entry("p2", "0" * 24).refused
    submitted = fake.add_submission(sid, "p3")
    assert entry("p3", submitted).refused == "This Prolific session is no longer active."
    fake.fail_next("GET", r"submissions/\w+/", status=503)
    unknown = fake.new_id()
    assert entry("p4", unknown) == Entry(ref=unknown, verified=False)  # asked once, not retried
    fake.fail_next("GET", r"submissions/\w+/", status=503)
    assert "someone else" in entry("p5", unknown).refused


# --- submissions, review, bonuses, lists, messages --------------------------------------------------


def test_submissions_are_paged_and_normalised(fake, provider, study):
    [publication] = provider.publish(study, "b1")
    code = publication.details["completion_code"]
    fake.add_submission(publication.external_id, "p1", code=code)
    fake.add_submission(publication.external_id, "p2", code="WRONG")
    fake.add_submission(publication.external_id, "p3", status="RETURNED")
    fake.add_submission(publication.external_id, "p4", status="TIMED-OUT")
    records = {r.worker_external_id: r for r in provider.fetch_submissions(study)}
    assert {k: r.status for k, r in records.items()} == {"p1": SUBMITTED, "p2": SUBMITTED, "p3": RETURNED,
                                                         "p4": TIMED_OUT}  # fmt: skip
    assert records["p1"].problem == "" and "does not match" in records["p2"].problem
    assert records["p1"].submitted_at is not None and records["p1"].started_at < records["p1"].submitted_at
    assert len(fake.calls_to("GET", "studies/" + publication.external_id + "/submissions/")) == 2


def test_approve_and_reject_once(fake, client):
    study_id = fake.new_id()
    fake.studies[study_id] = {"id": study_id, "status": "ACTIVE"}
    first = fake.add_submission(study_id, "p1")
    second = fake.add_submission(study_id, "p2")
    assert client.approve(first) is True
    assert client.approve(first) is False
    assert client.reject(second, "Failed the checks.") is True
    assert client.reject(second, "Failed the checks.") is False
    assert len(fake.calls_to("POST", f"submissions/{first}/transition/")) == 1
    fake.lose_reply("POST", f"submissions/{(third := fake.add_submission(study_id, 'p3'))}/transition/")
    assert client.approve(third) is True  # approved, reply lost, sent again: Prolific ignores the repeat
    assert fake.submissions[third]["status"] == "APPROVED"
    assert len(fake.calls_to("POST", f"submissions/{third}/transition/")) == 2
    rejection = fake.submissions[second]["rejection"]
    assert len(rejection["message"]) >= 100 and rejection["message"].startswith("Failed the checks.")
    assert rejection["rejection_category"] == "FAILED_CHECK"
    with pytest.raises(prolific_client.ProlificAPIError):
        client.approve(second)  # rejected, not approved: a real refusal


def test_bonus_set_up_is_retried_and_paid_once(fake, provider, study, sleeps):
    [publication] = provider.publish(study, "b1")
    fake.add_submission(publication.external_id, "p1")
    worker = make_worker("p1", "prolific")
    fake.lose_reply("POST", r"submissions/bonus-payments/")  # set up, reply lost: set up again
    payment = send_bonus(study, worker, Decimal("0.75"), "Careful work", "bonus-form-1")
    assert payment.status == Payment.Status.SENT
    paid = [b for b in fake.bonuses.values() if b["payments"]]
    assert len(fake.bonuses) == 2 and len(paid) == 1 and paid[0]["payments"] == 1
    assert payment.external_ref == paid[0]["id"]
    assert paid[0]["csv_bonuses"] == "p1,0.75\n" and paid[0]["amount"] == 75
    assert payment.fee == Decimal("0.25")
    # The same form sent again: the ledger answers, Prolific hears nothing.
    calls = len(fake.calls)
    assert send_bonus(study, worker, Decimal("0.75"), "Careful work", "bonus-form-1").pk == payment.pk
    assert len(fake.calls) == calls
    with pytest.raises(ProviderConfigError):
        send_bonus(study, worker, Decimal("2.00"), "Careful work", "bonus-form-1")


def test_a_lost_pay_reply_is_never_paid_again(fake, provider, study, sleeps):
    """Prolific pays on every request to pay a bonus: an unanswered request is not repeated."""
    [publication] = provider.publish(study, "b1")
    fake.add_submission(publication.external_id, "p1")
    worker = make_worker("p1", "prolific")
    fake.lose_reply("POST", r"bulk-bonus-payments/\w+/pay/")
    with pytest.raises(prolific_client.BonusOutcomeUnknown):
        send_bonus(study, worker, Decimal("0.75"), "Careful work", "bonus-form-3")
    [bonus] = fake.bonuses.values()
    assert bonus["payments"] == 1
    payment = Payment.objects.get(request_token="bonus-form-3")
    assert payment.status == Payment.Status.FAILED and "may have paid" in payment.error
    assert payment.external_ref == prolific.PAY_REQUESTED + bonus["id"]
    pays = len(fake.calls_to("POST", f"bulk-bonus-payments/{bonus['id']}/pay/"))
    with pytest.raises(prolific_client.BonusOutcomeUnknown):  # tried again: refused here, nothing sent
        send_bonus(study, worker, Decimal("0.75"), "Careful work", "bonus-form-3")
    assert len(fake.calls_to("POST", f"bulk-bonus-payments/{bonus['id']}/pay/")) == pays == 1
    assert bonus["payments"] == 1


def test_a_refused_payment_can_be_tried_again(fake, provider, study, sleeps):
    [publication] = provider.publish(study, "b1")
    fake.add_submission(publication.external_id, "p1")
    worker = make_worker("p1", "prolific")
    fake.fail_next("POST", r"bulk-bonus-payments/\w+/pay/", status=400)  # e.g. too little balance
    with pytest.raises(prolific_client.ProlificAPIError):
        send_bonus(study, worker, Decimal("0.50"), "Careful work", "bonus-form-4")
    [bonus] = fake.bonuses.values()
    payment = Payment.objects.get(request_token="bonus-form-4")
    assert payment.status == Payment.Status.FAILED and payment.external_ref == bonus["id"]
    assert bonus["payments"] == 0
    payment = send_bonus(study, worker, Decimal("0.50"), "Careful work", "bonus-form-4")
    assert payment.status == Payment.Status.SENT and payment.external_ref == bonus["id"]
    assert len(fake.bonuses) == 1 and bonus["payments"] == 1


def test_a_refused_bonus_is_recorded_as_failed(fake, provider, study):
    provider.publish(study, "b1")
    worker = make_worker("stranger", "prolific")  # took no part: Prolific refuses the bonus
    with pytest.raises(prolific_client.ProlificAPIError):
        send_bonus(study, worker, Decimal("1.00"), "Thanks", "bonus-form-2")
    payment = Payment.objects.get(request_token="bonus-form-2")
    assert payment.status == Payment.Status.FAILED and "took no part" in payment.error


def test_trust_mirrors_on_allow_and_block_lists(fake, provider, study):
    worker = make_worker("p9", "prolific")
    assert provider.mirror_trust(study, worker, 0.9, False, "qualification") is False
    groups = {g["name"]: g for g in fake.groups.values()}
    assert groups[prolific.ALLOWLIST_GROUP]["participants"] == ["p9"]
    assert provider.mirror_trust(study, worker, 0.2, True, "platform") is True
    groups = {g["name"]: g for g in fake.groups.values()}
    assert groups[prolific.BLOCKLIST_GROUP]["participants"] == ["p9"]
    assert groups[prolific.ALLOWLIST_GROUP]["participants"] == []
    provider.unblock(study, worker, "re-graded")
    assert {g["name"]: g for g in fake.groups.values()}[prolific.BLOCKLIST_GROUP]["participants"] == []
    assert provider.mirror_trust(study, worker, 0.2, True, "none") is False
    assert len(fake.groups) == 2  # found again by name, never created twice


def test_notify_messages_each_participant(fake, provider, study):
    provider.publish(study, "b1")
    workers = [
        make_worker("p1", "prolific"),
        make_worker("p2", "prolific"),
        Worker(provider="local", external_id="x"),
    ]
    assert provider.notify(study, workers, "New texts", "More texts are available.") == []
    assert [m["recipient_id"] for m in fake.messages] == ["p1", "p2"]
    assert fake.messages[0]["body"].startswith("New texts")


# --- the researcher's page and API ------------------------------------------------------------------


def test_researcher_api_publishes_tops_up_and_reports_spend(
    fake, provider, study, researcher, other_researcher, client
):
    api = Client()
    api.force_login(researcher)
    base = f"/api/crowd/studies/{study.uid}/"
    reply = api.post(base + "publish/", {"key": "form1"}, content_type="application/json")
    assert reply.status_code == 200, reply.content
    assert reply.json()["published"] == [next(iter(fake.studies))]
    assert api.post(base + "publish/", {"key": "form1"}, content_type="application/json").status_code == 200
    assert len(fake.studies) == 1  # the same form twice publishes once
    bad = api.post(base + "top-up/", {"key": "t1"}, content_type="application/json")
    assert bad.status_code == 400 and set(bad.json()["errors"]) == {"places"}
    bad = api.post(base + "publish/", {"key": "no spaces allowed"}, content_type="application/json")
    assert bad.status_code == 400 and set(bad.json()["errors"]) == {"batch_key"}
    assert (
        api.post(base + "top-up/", {"places": 3, "key": "t1"}, content_type="application/json").status_code
        == 200
    )
    fake.fail_next("POST", r"studies/\w+/transition/", status=403, times=1)
    refused = api.post(base + "pause/", {}, content_type="application/json")
    assert refused.status_code == 502 and "provider" in refused.json()["errors"]
    state = api.get(base, {"estimate": "1"}).json()
    assert state["publications"][0]["places"] == 13 and state["spend"]["total"] == "0.00"
    assert state["estimate"]["total"] == "16.00" and state["estimate"]["currency"] == "GBP"
    assert api.post(base + "fly/", {}, content_type="application/json").status_code == 404
    stranger = Client()
    stranger.force_login(other_researcher)
    assert stranger.get(base).status_code == 404


def test_researcher_page_shows_cost_and_acts(fake, provider, study, researcher):
    page = Client()
    page.force_login(researcher)
    html = page.get(f"/studies/{study.uid}/crowd/", {"estimate": "1"}).content.decode()
    assert "16.00 GBP" in html and "Publish" in html
    asked = page.post(f"/studies/{study.uid}/crowd/publish/", {"key": "pagekey1"})
    assert asked.status_code == 200 and "16.00 GBP in all" in asked.content.decode() and not fake.studies
    unticked = page.post(f"/studies/{study.uid}/crowd/publish/", {"key": "pagekey1", "confirmed": "yes"})
    assert "spends real money" in unticked.content.decode() and not fake.studies  # live needs the box
    confirmed = {"key": "pagekey1", "confirmed": "yes", "live": "yes"}
    reply = page.post(f"/studies/{study.uid}/crowd/publish/", confirmed)
    assert reply.status_code == 302
    assert [p["status"] for p in fake.studies.values()] == ["ACTIVE"]
    page.post(f"/studies/{study.uid}/crowd/pause/", {"key": "pagekey2", "confirmed": "yes"})
    assert [p["status"] for p in fake.studies.values()] == ["PAUSED"]
    study.refresh_from_db()
    assert study.status == "paused"
    follow = page.post(
        f"/studies/{study.uid}/crowd/extend/",
        {"seconds": "3600", "key": "k3", "confirmed": "yes"},
        follow=True,
    )
    assert "extend" in follow.content.decode()  # Prolific has no expiry: a clear message, no change
    assert page.get(f"/studies/{study.uid}/crowd/publish/").status_code == 405


def test_an_adaptive_study_whose_items_all_stopped_stops_its_prolific_study(fake, provider, researcher):
    """Prolific only raises a live study's places: when every item has stopped, the study is stopped (STOP);
    while one item still collects answers, nothing is touched."""
    from annotate.crowd.jobs import run_reconcile
    from annotate.crowd.release import release_unneeded
    from annotate.models import Item
    from tests.annotate.crowd_helpers import adaptive_crowd_study

    study = adaptive_crowd_study(researcher, "prolific", dict(PROLIFIC_CONFIG))
    [publication] = provider.publish(study, "b1")
    first, second = Item.objects.filter(study=study).order_by("id")
    Item.objects.filter(pk=first.pk).update(stop_reason="label_share 1.000 >= 0.9 at 2 answers")
    assert release_unneeded(study) == 0
    assert fake.studies[publication.external_id]["status"] == "ACTIVE"
    Item.objects.filter(pk=second.pk).update(stop_reason="maximum of 3 answers (label_share 0.667)")
    assert run_reconcile(study)["released_publications"] == 1
    assert fake.studies[publication.external_id]["status"] == "COMPLETED"
    publication.refresh_from_db()
    assert publication.status == Publication.Status.EXPIRED
    assert release_unneeded(study) == 0  # closed once
    assert len(fake.calls_to("POST", f"studies/{publication.external_id}/transition/")) == 2  # PUBLISH, STOP


def test_a_fixed_study_keeps_its_prolific_places_open(fake, provider, study):
    from annotate.crowd.release import release_unneeded
    from annotate.models import Item

    [publication] = provider.publish(study, "b1")
    Item.objects.filter(study=study).update(stop_reason="x")  # no adaptive policy: not read
    assert release_unneeded(study) == 0
    assert fake.studies[publication.external_id]["status"] == "ACTIVE"
