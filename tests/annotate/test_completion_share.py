"""Completion codes and MTurk's submit form go only to a worker who did their own share.

Performed as an attacker would: a verified Prolific participant answers one item while accomplices hold
the others; an MTurk worker answers one item while confirmed workers hold the rest; made-up Prolific
sessions finish their share while Prolific's API is down. None gets the study's code or form, on the
annotator API or on the HTML done page.
"""

from __future__ import annotations

import json
import uuid
from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse

from annotate.crowd import completion
from annotate.crowd.providers import get_provider
from annotate.crowd.providers.base.retry import Backoff
from annotate.crowd.providers.prolific import client as prolific_client
from annotate.models import Assignment, Item, Publication, Study
from tests.annotate.conftest import make_worker
from tests.annotate.crowd_helpers import MTURK_CONFIG, PROLIFIC_CONFIG, answer, answer_of, crowd_study
from tests.annotate.fake_prolific import FakeProlific
from tests.annotate.test_forged_workers import TIMINGS

SESSION = r"submissions/\w+/"


@pytest.fixture(autouse=True)
def _no_reconciliation_queue(monkeypatch):
    monkeypatch.setattr("annotate.crowd.completion.reconcile_soon", lambda study: None)


@pytest.fixture
def prolific(settings):
    settings.HATLAB_PUBLIC_URL = "https://hatlab.example.org"
    fake = FakeProlific().start()
    provider = get_provider("prolific")
    provider.use_client(prolific_client.ProlificClient(fake.token, fake.url, backoff=Backoff(attempts=1)))
    yield fake
    provider.use_client(None)
    fake.stop()


class Worker:
    """One browser on the study's entry link with ``query``."""

    def __init__(self, study, query: dict):
        self.study, self.client = study, Client()
        self.page = self.client.get(reverse("work-entry", args=[study.uid]), query)

    def next(self) -> dict:
        return self.client.post(reverse("api-work-next", args=[self.study.uid])).json()

    def answer_one(self) -> dict:
        """Take an item and answer it; returns the ``next`` answer that follows."""
        data = self.next()
        item = Assignment.objects.get(uid=data["assignment"]).item
        body = {
            "submission_key": str(uuid.uuid4()),
            "answer": answer_of(item),
            "timings": TIMINGS,
            "next": True,
        }
        url = reverse("api-work-submit", args=[data["assignment"]])
        stored = self.client.post(url, json.dumps(body), content_type="application/json")
        assert stored.status_code == 201
        return stored.json()["next"]

    def done_page(self) -> str:
        return self.client.get(reverse("work-done", args=[self.study.uid])).content.decode()


def prolific_entry(fake, study, publication, pid: str, session: str | None = None) -> Worker:
    session = session or fake.add_submission(publication.external_id, pid, status="ACTIVE")
    query = {"PROLIFIC_PID": pid, "STUDY_ID": publication.external_id, "SESSION_ID": session}
    return Worker(study, query)


def test_a_code_is_not_given_because_accomplices_hold_the_rest(researcher, prolific):
    study = crowd_study(researcher, "prolific", dict(PROLIFIC_CONFIG), n=4, annotators_per_item=1)
    [publication] = get_provider("prolific").publish(study, "b1")
    code = publication.details["completion_code"]
    accomplices = [prolific_entry(prolific, study, publication, f"pacc{i}") for i in range(3)]
    for accomplice in accomplices:
        assert "assignment" in accomplice.next()  # each sits on one item
    cheat = prolific_entry(prolific, study, publication, "pcheat")
    after = cheat.answer_one()
    assert after["done"] and after["progress"] == {"done": 1, "total": 4}
    assert after["completion"]["finished"] is False and after["completion"]["state"] == "full"
    assert code not in json.dumps(after) and code not in cheat.done_page()
    assert "answered 1 of 4" in cheat.done_page()


def test_the_mturk_form_is_not_given_because_others_hold_the_rest(researcher):
    study = crowd_study(researcher, "mturk", dict(MTURK_CONFIG), n=4, annotators_per_item=1)
    Publication.objects.create(study=study, provider="mturk", request_token="t-a", external_id="HITA",
                               places=3, reward=Decimal("0.50"), status=Publication.Status.OPEN)  # fmt: skip
    for n, item in enumerate(Item.objects.filter(study=study).order_by("position")[1:]):
        answer(study, make_worker(f"WCONFIRMED{n}", "mturk"), item)  # confirmed answers fill three items
    worker = Worker(study, {"assignmentId": "AONE", "hitId": "HITA", "workerId": "WONE"})
    after = worker.answer_one()
    assert after["done"] and after["progress"] == {"done": 1, "total": 4}
    assert after["completion"]["finished"] is False and "form" not in after["completion"]
    assert "externalSubmit" not in worker.done_page()


def test_no_code_to_sessions_prolific_has_not_confirmed(researcher, prolific):
    study = crowd_study(researcher, "prolific", dict(PROLIFIC_CONFIG), n=2, annotators_per_item=5)
    [publication] = get_provider("prolific").publish(study, "b1")
    code = publication.details["completion_code"]
    real_session = prolific.add_submission(publication.external_id, "preal", status="ACTIVE")
    entered = []
    for pid, session in (
        ("pfake0", prolific.new_id()),
        ("pfake1", prolific.new_id()),
        ("preal", real_session),
    ):
        prolific.fail_next("GET", SESSION, status=503)  # Prolific is down at entry: all start provisional
        entered.append(prolific_entry(prolific, study, publication, pid, session))
    for worker in entered:
        worker.answer_one()
        prolific.fail_next("GET", SESSION, status=503)  # still down when the share is done
        last = worker.answer_one()
        assert last["progress"] == {"done": 2, "total": 2}
        assert last["completion"]["finished"] is False and last["completion"]["state"] == "unconfirmed"
        assert code not in json.dumps(last)
        prolific.fail_next("GET", SESSION, status=503)
        assert code not in worker.done_page()
    # Prolific is back: it knows nothing of the made-up sessions, and confirms the real one.
    for fake in entered[:2]:
        assert code not in fake.done_page() and fake.next()["completion"]["state"] == "unconfirmed"
    real = entered[2]
    assert code in real.done_page()
    assert real.next()["completion"]["code"] == code


@pytest.mark.parametrize(
    ("done", "total", "finished"),
    [(0, 0, False), (1, 1, True), (2, 2, True), (0, 1, False), (1, 2, False), (3, 2, True)],
    ids=["no-items", "one-of-one", "two-of-two", "none-of-one", "one-of-two", "more-than-share"],
)
def test_a_share_is_done_only_when_every_item_of_it_is_answered(done, total, finished):
    """A study (or share) with no item owes nobody a code; otherwise the worker's own answers must reach
    their share, one item short is not done, and a single-item share is done by its one answer."""
    assert completion.share_done({"done": done, "total": total}) is finished


@pytest.mark.parametrize(
    ("status", "nothing_left", "state", "says"),
    [
        ("finished", False, "closed", "This study has ended, so there is no completion code."),
        ("finished", True, "closed", "This study has ended, so there is no completion code."),
        ("running", True, "full", "Every item is being worked on or is finished; please come back later."),
        ("running", False, "unfinished", "Go back to the task to continue; the completion code comes when"),
    ],
)
def test_an_unfinished_worker_is_told_why_there_is_no_code(status, nothing_left, state, says):
    """Each reason for no code has its own words, after what the worker answered so far."""
    study = Study(status=status)
    progress = {"done": 1, "total": 3}
    assert completion.left_state(study, nothing_left) == state
    message = completion.left_message(study, progress, nothing_left)
    assert message.startswith("You have answered 1 of 3 items. ") and says in message
    others = {"closed": "has ended", "full": "Every item", "unfinished": "Go back"}
    assert [word for key, word in others.items() if key != state and word in message] == []


def test_a_confirmed_participant_gets_the_code_without_asking_prolific_again(
    researcher, prolific, monkeypatch
):
    """A session Prolific confirmed at entry is vouched for: when the share is done the code is shown on
    the API and the done page even while Prolific is down, and no reconciliation is queued for them."""
    queued = []
    monkeypatch.setattr("annotate.crowd.completion.reconcile_soon", queued.append)
    study = crowd_study(researcher, "prolific", dict(PROLIFIC_CONFIG), n=2, annotators_per_item=5)
    [publication] = get_provider("prolific").publish(study, "b1")
    code = publication.details["completion_code"]
    worker = prolific_entry(prolific, study, publication, "pconfirmed")
    worker.answer_one()
    prolific.fail_next("GET", SESSION, status=503)  # down when the share is done: not asked again
    last = worker.answer_one()
    assert last["progress"] == {"done": 2, "total": 2}
    assert last["completion"]["finished"] is True and last["completion"]["state"] == "done"
    assert code in json.dumps(last)
    prolific.fail_next("GET", SESSION, status=503)
    assert code in worker.done_page()
    assert queued == []
