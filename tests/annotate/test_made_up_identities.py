"""Made-up and borrowed crowd identities against a paid study, performed as an attacker would.

On MTurk anyone can type ``/w/<study>/?assignmentId=..&hitId=..&workerId=..`` with invented ids, or with a
real worker's id and an invented assignment. Such identities are admitted with provisional answers
(MTurk confirms a worker only once the assignment is submitted), so they must not be able to hold the
study's items, lock a real worker out of their own, or be matched to a real worker's submission; and one
browser must not be able to mint identities without the new-worker throttle counting each one.
"""

from __future__ import annotations

import time
from datetime import timedelta
from decimal import Decimal

import boto3
import pytest
from botocore.stub import Stubber
from django.db.models import Count, Q
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotate.crowd.providers import get_provider
from annotate.crowd.providers.base.retry import Backoff
from annotate.crowd.providers.mturk import client as mturk_client
from annotate.crowd.providers.reconcile import reconcile_study
from annotate.models import Item, PlatformSubmission, Publication, Response, Worker
from tests.annotate.crowd_helpers import MTURK_CONFIG, crowd_study
from tests.annotate.test_forged_workers import LISTING, Browser

K = 20  # made-up identities active on the study


@pytest.fixture
def mturk():
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


@pytest.fixture(autouse=True)
def _no_reconciliation_queue(monkeypatch):
    monkeypatch.setattr("annotate.crowd.completion.reconcile_soon", lambda study: None)


def mturk_study(researcher, n: int = 4, needed: int = 2):
    study = crowd_study(researcher, "mturk", dict(MTURK_CONFIG), n=n, annotators_per_item=needed)
    Publication.objects.create(study=study, provider="mturk", request_token=f"t-{study.pk}", external_id="HITA",
                               places=3, reward=Decimal("0.50"), status=Publication.Status.OPEN)  # fmt: skip
    return study


def listing(*pairs: tuple[str, str]) -> dict:
    """MTurk's answer to ListAssignmentsForHIT listing submitted ``(assignmentId, workerId)`` pairs."""
    assignments = [
        {"AssignmentId": a, "WorkerId": w, "HITId": "HITA", "AssignmentStatus": "Submitted"} for a, w in pairs
    ]
    return {"NumResults": len(assignments), "Assignments": assignments}


def verified_per_item(study) -> list[int]:
    rows = Item.objects.filter(study=study).annotate(
        n=Count("responses", filter=Q(responses__verification=Response.Verification.VERIFIED))
    )
    return sorted(rows.values_list("n", flat=True))


def test_made_up_identities_keep_no_real_worker_from_work(researcher, mturk):
    """K made-up identities fill every slot (half answer everything, half sit on an open item); a real
    worker who comes after them is handed an item at once, and the study reaches its verified answers."""
    study = mturk_study(researcher, n=4, needed=2)
    for i in range(K):
        fake = Browser(study, f"AFAKE{i}", f"WFAKE{i}")
        assert fake.page.status_code == 200
        if i % 2:
            assert "assignment" in fake.next()  # holds an item open and never answers
        else:
            fake.work_to_the_end()
    assert Response.objects.filter(study=study).counted().count() == 0

    reals = [Browser(study, f"AREAL{n}", f"WREAL{n}") for n in range(2)]
    started = time.monotonic()
    first = reals[0].next()
    wait_s = time.monotonic() - started
    assert "assignment" in first, first  # work at once, not "every item is being worked on"
    for real in reals:
        done = real.work_to_the_end()
        assert done["done"] and done["completion"]["finished"] and done["progress"] == {"done": 4, "total": 4}

    mturk.add_response(
        "list_assignments_for_hit", listing(("AREAL0", "WREAL0"), ("AREAL1", "WREAL1")), LISTING
    )
    summary = reconcile_study(study, review=False)
    assert summary.errors == [] and summary.verified == 8
    per_item = verified_per_item(study)
    assert per_item == [2, 2, 2, 2]  # N verified answers per item while K made-up identities were active
    assert (
        not Response.objects.filter(study=study, worker__external_id__startswith="WFAKE").counted().exists()
    )
    print(
        f"\nK={K} made-up identities: verified answers per item {per_item}; real worker's wait {wait_s:.3f} s"
    )


def test_one_browser_cannot_mint_identities(settings, researcher):
    """A browser that keeps its ``hatlab_workers`` cookie and names a new workerId / assignmentId on each
    visit is counted by the new-worker throttle every time."""
    settings.HATLAB_THROTTLE_NEW_WORKER = (5, 600)
    study = mturk_study(researcher)
    entry = reverse("work-entry", args=[study.uid])
    browser = Client(REMOTE_ADDR="10.7.0.1")  # one cookie jar throughout
    codes = [
        browser.get(entry, {"assignmentId": f"A{n}", "hitId": "HITA", "workerId": f"W{n}"}).status_code
        for n in range(100)
    ]
    assert codes[:5] == [200] * 5 and codes[5:] == [429] * 95
    assert Worker.objects.filter(provider="mturk").count() == 5
    # The identity the browser holds (the last admitted) comes back freely, on its cookie or its link ...
    assert browser.get(entry).status_code == 200
    assert browser.get(entry, {"assignmentId": "A4", "hitId": "HITA", "workerId": "W4"}).status_code == 200
    # ... but its worker id on another assignment is another identity.
    assert browser.get(entry, {"assignmentId": "A99", "hitId": "HITA", "workerId": "W4"}).status_code == 429


def test_a_claim_to_a_real_workers_id_takes_nothing_of_theirs(researcher, mturk):
    """Someone enters as a real MTurk workerId with an invented assignmentId and answers every item. The
    real worker is not told they are done, their empty submission is not matched to the impostor's
    answers (whatever the times), and they can still get every item, before and after the set-aside."""
    study = mturk_study(researcher, n=4, needed=1)
    Browser(study, "AINVENTED", "WREAL").work_to_the_end()
    assert Response.objects.filter(study=study, worker__external_id="WREAL").count() == 4

    real = Browser(study, "AREAL", "WREAL")
    done_page = real.client.get(reverse("work-done", args=[study.uid])).content.decode()
    assert "answered 0 of 4" in done_page and "externalSubmit" not in done_page
    first = real.next()
    assert "assignment" in first and first["progress"] == {"done": 0, "total": 4}

    # The real worker hands the HIT back without an answer; MTurk lists it accepted before and submitted
    # after the impostor's answers. Under automatic review nothing is approved: no answer is its own.
    now = timezone.now()
    record = {"AssignmentId": "AREAL", "WorkerId": "WREAL", "HITId": "HITA", "AssignmentStatus": "Submitted",
              "AcceptTime": now - timedelta(minutes=10), "SubmitTime": now + timedelta(seconds=30)}  # fmt: skip
    mturk.add_response("list_assignments_for_hit", {"NumResults": 1, "Assignments": [record]}, LISTING)
    summary = reconcile_study(study, review=True)
    submission = PlatformSubmission.objects.get(external_id="AREAL")
    assert (submission.state, submission.responses_ours, submission.decision) == ("flagged", 0, "")
    assert (summary.approved, summary.verified, summary.matched) == (0, 0, 0)
    assert Response.objects.filter(study=study).counted().count() == 0

    # Past the confirmation window the impostor's answers are set aside; the real worker does every item.
    later = now + timedelta(seconds=3600 + 3600 + 1)
    mturk.add_response("list_assignments_for_hit", {"NumResults": 1, "Assignments": [record]}, LISTING)
    assert reconcile_study(study, review=False, now=later).set_aside == 4
    done = real.work_to_the_end()
    assert done["progress"] == {"done": 4, "total": 4} and done["completion"]["finished"]
    mine = Response.objects.filter(study=study, assignment__provider_assignment_id="AREAL")
    assert mine.count() == 4
