"""The annotator's answer path on PostgreSQL: what one chained answer (submit with ``"next": true``) costs in
database round trips, and the checks that run before the body is read (a withdrawn invite, an assignment that
is none of the session's) on the statement that also reads the assignment for the submission."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from django.utils.crypto import salted_hmac

from annotate.crowd.providers.local.adapter import WITHDRAWN, invite_path, make_invite
from annotate.handout.workers import work_token
from annotate.models import Invite, Response
from tests.annotate.conftest import make_study
from tests.annotate.test_api import Annotator, body_for

# Round trips of one chained answer, in autocommit as a web request runs: the submission's read (the
# assignment, its item and study, and whether the seat's invite was revoked) and its write (response,
# assignment and item in one statement); then the next item in one statement (the worker's lock, the first
# candidate and its slot: annotate.handout.assignment._HAND_OUT). The throttle's count goes to Redis (none
# here: the cache is in memory); the kept connection's health check sends nothing (annotate.infra.postgres).
CHAINED_ANSWER_ROUND_TRIPS = 3


@pytest.mark.django_db(transaction=True)
def test_a_chained_answer_costs_three_round_trips(study):
    annotator = Annotator(study, "counted")
    served = annotator.next().json()
    for n in range(3):  # the first answer prepares the statements on this connection
        body = {**body_for(served["item"]["payload"]), "next": True}
        with CaptureQueriesContext(connection) as queries:
            reply = annotator.submit(served["assignment"], body)
        assert reply.status_code == 201, reply.content
        served = reply.json()["next"]
        assert served["assignment"]
        statements = [q["sql"] for q in queries.captured_queries]
        if n:
            assert len(statements) == CHAINED_ANSWER_ROUND_TRIPS, statements
            assert "EXECUTE hatlab_hand_out" in statements[-1] and "BEGIN" not in statements[-1]
            assert not any("annotate_invite" in q for q in statements)  # no query of its own
    assert Response.objects.filter(study=study).count() == 3


@pytest.mark.django_db
def test_a_withdrawn_invite_is_refused_before_its_body_is_read(study):
    holder = Annotator(study, "withdrawn")
    served = holder.next().json()
    Invite.objects.filter(study=study, invitee="withdrawn").update(revoked_at=timezone.now())
    not_json = holder.client.post(
        reverse("api-work-submit", args=[served["assignment"]]),
        b"{not json",
        content_type="application/json",
        HTTP_X_CSRFTOKEN=holder.task["csrf_token"],
    )
    assert not_json.status_code == 403 and not_json.json()["errors"]["worker"] == [WITHDRAWN]
    answer = holder.submit(served["assignment"], body_for(served["item"]["payload"]))
    assert answer.status_code == 403 and answer.json()["errors"]["worker"] == [WITHDRAWN]
    assert not Response.objects.exists()


@pytest.mark.django_db
def test_another_sessions_assignment_is_refused_before_its_body_is_read(study):
    owner, other = Annotator(study, "owner"), Annotator(study, "other")
    served = owner.next().json()
    other.next()
    for target in (served["assignment"], str(uuid.uuid4())):
        refused = other.client.post(
            reverse("api-work-submit", args=[target]),
            b"{not json",
            content_type="application/json",
            HTTP_X_CSRFTOKEN=other.task["csrf_token"],
        )
        assert refused.status_code == 404 and "assignment" in refused.json()["errors"]
    assert owner.submit(served["assignment"], body_for(served["item"]["payload"])).status_code == 201


@pytest.mark.django_db
def test_a_withdrawn_invite_in_one_study_leaves_the_browsers_other_study(study, researcher, dataset):
    """One browser, one invite in each of two studies: revoking the first refuses its answers only."""
    browser = Annotator(study, "both")
    second = make_study(researcher, dataset, name="second")
    assert (
        browser.client.post(invite_path(second, make_invite(second, "both")), follow=True).status_code == 200
    )
    first_item = browser.next().json()
    second_next = reverse("api-work-next", args=[second.uid])
    second_item = browser.post(second_next).json()
    Invite.objects.filter(study=study, invitee="both").update(revoked_at=timezone.now())
    refused = browser.submit(first_item["assignment"], body_for(first_item["item"]["payload"]))
    assert refused.status_code == 403 and refused.json()["errors"]["worker"] == [WITHDRAWN]
    stored = browser.submit(second_item["assignment"], body_for(second_item["item"]["payload"]))
    assert stored.status_code == 201
    assert list(Response.objects.values_list("study_id", flat=True)) == [second.pk]


def test_the_work_token_follows_the_secret_key_and_the_worker(settings):
    """The token is kept once computed, but per key: another secret key gives another token at once."""
    first = work_token(7)
    assert work_token(7) == first and work_token(8) != first
    settings.SECRET_KEY = "another-" + settings.SECRET_KEY
    assert work_token(7) != first
    assert work_token(7) == salted_hmac("hatlab.workers.csrf", "7", secret=settings.SECRET_KEY).hexdigest()
