"""Forged crowd identities, end to end through the entry page and the annotator API.

On MTurk anyone can type ``/w/<study>/?assignmentId=..&hitId=..&workerId=..``: made-up worker ids, a real
worker's id on another assignment (a second browser), a HIT of another study. Their answers must never
count: they stay provisional, reconciliation (MTurk stubbed by botocore's Stubber, listing only the real
worker's assignment) verifies the real worker's alone, and after the assignment duration and the grace
period the forged answers are set aside and their slots handed out again. On Prolific a made-up or
borrowed session is refused at the door (the fake Prolific server answers for the sessions).
"""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from decimal import Decimal

import boto3
import pytest
from botocore.stub import Stubber
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotate.crowd.providers import get_provider
from annotate.crowd.providers.base.retry import Backoff
from annotate.crowd.providers.mturk import client as mturk_client
from annotate.crowd.providers.prolific import client as prolific_client
from annotate.crowd.providers.reconcile import reconcile_study
from annotate.models import Assignment, Item, Publication, Response, Worker
from tests.annotate.crowd_helpers import MTURK_CONFIG, PROLIFIC_CONFIG, answer_of, crowd_study
from tests.annotate.fake_prolific import FakeProlific

TIMINGS = {"read_ms": 1200, "answer_ms": 800, "label_at_ms": 1200, "first_highlight_at_ms": 1500}
LISTING = {"HITId": "HITA", "AssignmentStatuses": ["Submitted", "Approved", "Rejected"], "MaxResults": 100}
N_FORGED = 4


@pytest.fixture
def mturk(settings):
    boto = boto3.client(
        "mturk",
        region_name="us-east-1",
        endpoint_url=mturk_client.SANDBOX_ENDPOINT,
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )
    provider = get_provider("mturk")
    with Stubber(boto) as stub:
        provider.use_client(mturk_client.MTurkClient(boto, sandbox=True, backoff=Backoff(attempts=1)))
        yield stub
        provider.use_client(None)
        stub.assert_no_pending_responses()


@pytest.fixture
def queued(monkeypatch) -> list:
    calls: list = []
    monkeypatch.setattr("annotate.crowd.completion.reconcile_soon", calls.append)
    return calls


class Browser:
    """One browser that opened the study's MTurk link with the given ids."""

    def __init__(self, study, assignment_id: str, worker_id: str, hit_id: str = "HITA"):
        self.client = Client()
        query = {"assignmentId": assignment_id, "hitId": hit_id, "workerId": worker_id}
        self.page = self.client.get(reverse("work-entry", args=[study.uid]), query)
        self.study = study

    def next(self) -> dict:
        return self.client.post(reverse("api-work-next", args=[self.study.uid])).json()

    def submit(self, assignment: str):
        item = Assignment.objects.select_related("study").get(uid=assignment).item
        body = {"submission_key": str(uuid.uuid4()), "answer": answer_of(item), "timings": TIMINGS}
        url = reverse("api-work-submit", args=[assignment])
        return self.client.post(url, json.dumps(body), content_type="application/json")

    def work_to_the_end(self) -> dict:
        """Answer until the hand-out has nothing more; returns the final ``next`` answer."""
        while "assignment" in (data := self.next()):
            assert self.submit(data["assignment"]).status_code == 201
        return data


def counted(study) -> int:
    return Response.objects.filter(study=study).counted().count()


def test_forged_mturk_workers_never_count_and_their_slots_come_back(researcher, mturk, queued):
    study = crowd_study(researcher, "mturk", dict(MTURK_CONFIG), n=8, annotators_per_item=2)
    Publication.objects.create(study=study, provider="mturk", request_token="t-a", external_id="HITA",
                               places=3, reward=Decimal("0.50"), status=Publication.Status.OPEN)  # fmt: skip
    real = Browser(study, "AREAL", "WREAL")
    assert real.page.status_code == 200
    held = real.next()["assignment"]

    # The impersonation: the real worker's id on another assignment, in a second browser.
    twin = Browser(study, "AIMP", "WREAL")
    assert twin.page.status_code == 200
    taken = twin.next()["assignment"]
    assert taken != held  # never the real worker's open assignment
    assert twin.submit(held).status_code == 404  # nor may it submit it
    assert twin.submit(taken).status_code == 201

    # Another worker id on the real assignment, and a HIT of another study: refused, plainly, no worker row.
    for assignment_id, worker_id, hit_id in (("AREAL", "WTHIEF", "HITA"), ("AOTHER", "WOTHER", "HITZ")):
        refused = Browser(study, assignment_id, worker_id, hit_id).page
        assert refused.status_code == 403 and b"Traceback" not in refused.content
        assert not Worker.objects.filter(external_id=worker_id).exists()
    assert b"not part of this study" in Browser(study, "AOTHER", "WOTHER", "HITZ").page.content

    # Made-up worker ids fill every free slot and go on past them; each is served, none counts, and none
    # keeps anyone from an item: every one of them answers every item.
    for i in range(N_FORGED):
        Browser(study, f"AFAKE{i}", f"WFAKE{i}").work_to_the_end()
    forged = Response.objects.filter(study=study).exclude(worker__external_id="WREAL").count()
    forged += Response.objects.filter(study=study, assignment__provider_assignment_id="AIMP").count()
    assert forged == 1 + N_FORGED * 8 and counted(study) == 0

    assert real.submit(held).status_code == 201
    del queued[:]
    done = real.work_to_the_end()  # the real worker still gets every item
    assert done["done"] and done["completion"]["form"]["fields"] == {"assignmentId": "AREAL"}
    assert done["progress"] == {"done": 8, "total": 8}
    # a reconciliation soon after the real worker hands the HIT back
    assert [s.pk for s in queued] == [study.pk]
    counted_before = counted(study)
    assert counted_before == 0  # everything is provisional until MTurk confirms it

    # MTurk lists only the real worker's assignment: only the real worker's answer becomes verified.
    listing = {"NumResults": 1, "Assignments": [
        {"AssignmentId": "AREAL", "WorkerId": "WREAL", "HITId": "HITA", "AssignmentStatus": "Submitted"}]}  # fmt: skip
    mturk.add_response("list_assignments_for_hit", listing, LISTING)
    first = reconcile_study(study, review=False)
    assert (first.verified, first.set_aside, first.errors) == (8, 0, [])
    verified = Response.objects.filter(study=study).counted()
    assert set(verified.values_list("assignment__provider_assignment_id", flat=True)) == {"AREAL"}

    # Past the assignment duration and the grace period, the forged answers are set aside, once.
    later = timezone.now() + timedelta(seconds=3600 + 3600 + 1)
    for expected in (forged, 0):
        mturk.add_response("list_assignments_for_hit", listing, LISTING)
        assert reconcile_study(study, review=False, now=later).set_aside == expected
    assert counted(study) == 8
    assert Response.objects.filter(study=study, verification="set_aside").count() == forged
    assert Item.objects.filter(study=study, responses_done=1).count() == 8
    # The slots came back: a newcomer is handed every item's second place.
    newcomer = Browser(study, "ANEW", "WNEW")
    newcomer.work_to_the_end()
    slots_back = Response.objects.filter(study=study, worker__external_id="WNEW").count()
    assert slots_back == 8
    print(
        f"\nforged responses: {forged}; counted before reconciliation {counted_before}, "
        f"forged counted after {counted(study) - 8}; slots handed out again {slots_back}"
    )


def test_forged_prolific_sessions_are_refused(researcher, settings):
    settings.HATLAB_PUBLIC_URL = "https://hatlab.example.org"
    fake = FakeProlific().start()
    provider = get_provider("prolific")
    provider.use_client(prolific_client.ProlificClient(fake.token, fake.url, backoff=Backoff(attempts=1)))
    try:
        study = crowd_study(researcher, "prolific", dict(PROLIFIC_CONFIG), n=6)
        [publication] = provider.publish(study, "b1")
        real = fake.add_submission(publication.external_id, "preal", status="ACTIVE")

        def enter(pid: str, session: str):
            query = {"PROLIFIC_PID": pid, "STUDY_ID": publication.external_id, "SESSION_ID": session}
            client = Client()
            return client, client.get(reverse("work-entry", args=[study.uid]), query)

        for i in range(N_FORGED):  # made-up participants on made-up sessions
            assert enter(f"pfake{i}", fake.new_id())[1].status_code == 403
        assert enter("pthief", real)[1].status_code == 403  # someone else's session
        assert not Worker.objects.filter(provider="prolific").exists()
        client, page = enter("preal", real)
        assert page.status_code == 200
        # The real participant's answers count at once; the completion code waits for their share.
        data = client.post(reverse("api-work-next", args=[study.uid])).json()
        early = client.get(reverse("work-done", args=[study.uid])).content.decode()
        assert publication.details["completion_code"] not in early and "0 of 6" in early
        item = Assignment.objects.get(uid=data["assignment"]).item
        body = {"submission_key": str(uuid.uuid4()), "answer": answer_of(item), "timings": TIMINGS}
        url = reverse("api-work-submit", args=[data["assignment"]])
        assert client.post(url, json.dumps(body), content_type="application/json").status_code == 201
        assert counted(study) == 1
    finally:
        provider.use_client(None)
        fake.stop()
