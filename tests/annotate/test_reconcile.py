"""Reconciliation: platform submissions against ours, recovery from MTurk's answer XML, one review and
one payment per submission however often it runs (MTurk through botocore's Stubber, Prolific through
the local fake server)."""

from __future__ import annotations

import ast
import json
import uuid
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from xml.sax.saxutils import escape

import boto3
import pytest
from botocore.stub import Stubber
from celery import current_app
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

from annotate.crowd import jobs as crowd
from annotate.crowd.providers import PROVIDERS, get_provider
from annotate.crowd.providers.base import ProviderUnsupported
from annotate.crowd.providers.base.retry import Backoff, ProviderConfigError
from annotate.crowd.providers.local.settings import DEFAULT_INVITE_MAX_AGE_S, LocalSettings
from annotate.crowd.providers.mturk import client as mturk_client
from annotate.crowd.providers.mturk import settings as mturk_settings
from annotate.crowd.providers.prolific import client as prolific_client
from annotate.crowd.providers.prolific import settings as prolific_settings
from annotate.crowd.providers.reconcile import (
    reconcile_study,
    review_submission,
    send_bonus,
    unsubmitted_workers,
)
from annotate.handout.assignment import next_assignment
from annotate.models import (
    Assignment,
    Item,
    Job,
    Payment,
    PlatformSubmission,
    Publication,
    QualityPolicy,
    Response,
    Study,
)
from annotate.quality.grading import refresh_trust
from tests.annotate.conftest import make_worker
from tests.annotate.crowd_helpers import (
    MTURK_CONFIG,
    PROLIFIC_CONFIG,
    answer,
    answer_of,
    crowd_study,
    golds,
    ordinary,
)
from tests.annotate.fake_prolific import FakeProlific

ANSWER_NS = (
    "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2005-10-01/QuestionFormAnswers.xsd"
)
LIST_PARAMS = {
    "HITId": "HIT1",
    "AssignmentStatuses": ["Submitted", "Approved", "Rejected"],
    "MaxResults": 100,
}
TIMINGS = {"read_ms": 900, "answer_ms": 400, "label_at_ms": 900, "first_highlight_at_ms": 1000}


def answer_xml(fields: dict[str, str]) -> str:
    body = "".join(
        f"<Answer><QuestionIdentifier>{escape(k)}</QuestionIdentifier><FreeText>{escape(v)}</FreeText></Answer>"
        for k, v in fields.items()
    )
    return f'<?xml version="1.0" encoding="ASCII"?><QuestionFormAnswers xmlns="{ANSWER_NS}">{body}</QuestionFormAnswers>'


def copy_of(study, entries: list[dict]) -> str:
    return json.dumps({"study": str(study.uid), "submissions": entries})


def entry_for(response: Response) -> dict:
    return {
        "assignment": str(response.assignment.uid),
        "submission_key": str(response.submission_key),
        "answer": response.answer,
        "timings": TIMINGS,
    }


@pytest.fixture
def mturk_study(researcher):
    study = crowd_study(researcher, "mturk", dict(MTURK_CONFIG), n=10, gold_every=3, annotators_per_item=3)
    Publication.objects.create(
        study=study, provider="mturk", request_token="tok-1", external_id="HIT1", places=3, reward=Decimal("0.50"),
        status=Publication.Status.OPEN, expires_at=timezone.now() + timedelta(days=1),
    )  # fmt: skip
    return study


@pytest.fixture
def stub():
    client = boto3.client("mturk", region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t")
    provider = get_provider("mturk")
    provider.use_client(mturk_client.MTurkClient(client, backoff=Backoff(attempts=3), sleep=lambda s: None))
    with Stubber(client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()
    provider.use_client(None)


def assignment_record(assignment_id: str, worker_id: str, status: str, *, answer: str | None = None,
                      accepted=None, submitted=None) -> dict:  # fmt: skip
    now = timezone.now()
    record = {
        "AssignmentId": assignment_id,
        "WorkerId": worker_id,
        "HITId": "HIT1",
        "AssignmentStatus": status,
        "AcceptTime": accepted or now - timedelta(hours=5),
        "SubmitTime": submitted or now - timedelta(hours=4),
    }
    if answer is not None:
        record["Answer"] = answer
    return record


def test_mturk_reconcile_recovers_flags_approves_and_pays_once(mturk_study, stub):
    study = mturk_study
    items = ordinary(study)
    w1, w2, w3, w4, w5 = (make_worker(f"WORKER{i}", "mturk") for i in range(1, 6))
    # W1: both answers stored, and copied into the answer XML.
    stored = [answer(study, w1, items[i], provider_assignment_id="A1") for i in (0, 1)]
    # W2: one answer stored; the second reached MTurk but never our database.
    kept = answer(study, w2, items[0], provider_assignment_id="A2")
    lost_assignment = next_assignment(study, w2, gold=False, ref="A2")
    lost_item = Item.objects.select_related("study").get(pk=lost_assignment.item_id)
    lost = {"assignment": str(lost_assignment.uid), "submission_key": str(uuid.uuid4()),
            "answer": answer_of(lost_item), "timings": TIMINGS, "signals": {"blurs": 2}}  # fmt: skip
    # W4: no copy in the XML (an older page): its answer is matched by the unit it was handed out under.
    accepted = timezone.now() - timedelta(minutes=30)
    answer(study, w4, items[2], when=accepted + timedelta(minutes=5), provider_assignment_id="A4")
    records = [
        assignment_record("A1", "WORKER1", "Submitted",
                          answer=answer_xml({"assignmentId": "A1", "hatlab": copy_of(study, [entry_for(r) for r in stored])})),
        assignment_record("A2", "WORKER2", "Submitted",
                          answer=answer_xml({"assignmentId": "A2", "hatlab": copy_of(study, [entry_for(kept), lost])})),
        assignment_record("A3", "WORKER3", "Submitted", answer=answer_xml({"assignmentId": "A3"})),
        assignment_record("A4", "WORKER4", "Submitted", answer=answer_xml({"assignmentId": "A4"}),
                          accepted=accepted, submitted=accepted + timedelta(minutes=20)),
        assignment_record("A5", "WORKER5", "Approved"),
    ]  # fmt: skip
    answer(
        study, w5, items[3], when=timezone.now() - timedelta(hours=4, minutes=30), provider_assignment_id="A5"
    )
    stub.add_client_error(
        "list_assignments_for_hit", service_error_code="ThrottlingException", http_status_code=400
    )
    stub.add_response("list_assignments_for_hit", {"NumResults": 5, "Assignments": records}, LIST_PARAMS)
    for assignment_id in ("A1", "A2", "A4"):
        stub.add_response(
            "approve_assignment",
            {},
            {"AssignmentId": assignment_id, "RequesterFeedback": "Thank you for your work."},
        )
    summary = reconcile_study(study)
    assert not summary.errors
    assert (summary.fetched, summary.recovered, summary.flagged, summary.approved) == (5, 1, 1, 3)

    recovered = Response.objects.get(submission_key=lost["submission_key"])
    assert (
        recovered.worker_id == w2.pk and recovered.item_id == lost_item.pk and recovered.signals["recovered"]
    )
    assert recovered.signals["blurs"] == 2
    assert Assignment.objects.get(pk=lost_assignment.pk).status == Assignment.Status.SUBMITTED
    subs = {s.external_id: s for s in PlatformSubmission.objects.filter(study=study)}
    assert subs["A1"].state == "matched" and subs["A1"].responses_ours == 2
    assert (
        subs["A2"].state == "recovered"
        and subs["A2"].responses_recovered == 1
        and subs["A2"].responses_ours == 2
    )
    assert (
        subs["A3"].state == "flagged" and "no answer" in subs["A3"].flag_reason and subs["A3"].decision == ""
    )
    assert subs["A4"].state == "matched" and subs["A4"].responses_ours == 1
    assert subs["A5"].decision == "approve" and subs["A5"].decision_sent
    assert all(subs[a].decision_sent for a in ("A1", "A2", "A4"))
    rewards = Payment.objects.filter(study=study, kind="reward")
    assert sorted(p.submission.external_id for p in rewards) == ["A1", "A2", "A4", "A5"]
    assert {p.amount for p in rewards} == {Decimal("0.50")} and {p.fee for p in rewards} == {Decimal("0.10")}

    # The job runs again: the platform says the same (approved now); nothing is approved or paid twice,
    # and the recovered answer is not stored again.
    again = [dict(r, AssignmentStatus="Approved") if r["AssignmentId"] != "A3" else r for r in records]
    stub.add_response("list_assignments_for_hit", {"NumResults": 5, "Assignments": again}, LIST_PARAMS)
    second = reconcile_study(study)
    assert (second.approved, second.recovered) == (0, 0)
    assert Payment.objects.filter(study=study).count() == 4
    assert Response.objects.filter(submission_key=lost["submission_key"]).count() == 1
    assert unsubmitted_workers(study) == []


def test_copied_answers_that_cannot_be_stored_are_flagged(mturk_study, stub):
    study = mturk_study
    worker = make_worker("WORKER7", "mturk")
    stranger = next_assignment(study, make_worker("OTHER", "mturk"), gold=False)
    entries = [
        {
            "assignment": str(stranger.uid),
            "submission_key": str(uuid.uuid4()),
            "answer": {"label": "positive"},
        },
        {"assignment": str(uuid.uuid4()), "submission_key": "not-a-key", "answer": {}},
    ]
    xml = answer_xml({"assignmentId": "A7", "hatlab": copy_of(study, entries)})
    stub.add_response(
        "list_assignments_for_hit",
        {"NumResults": 1, "Assignments": [assignment_record("A7", "WORKER7", "Submitted", answer=xml)]},
        LIST_PARAMS,
    )
    summary = reconcile_study(study)
    sub = PlatformSubmission.objects.get(external_id="A7")
    assert summary.flagged == 1 and sub.state == "flagged" and sub.decision == ""
    assert "not this worker's" in sub.flag_reason and "valid submission_key" in sub.flag_reason
    assert not Response.objects.filter(worker=worker).exists()


def test_excluded_worker_is_rejected_per_policy(mturk_study, stub):
    study = mturk_study
    QualityPolicy.objects.create(
        study=study, excluded_action="reject", min_golds=3, rejection_feedback="Checks failed."
    )
    worker = make_worker("SLOPPY1", "mturk")
    for gold in golds(study)[:3]:
        answer(
            study,
            worker,
            gold,
            correct=False,
            when=timezone.now() - timedelta(hours=4, minutes=30),
            provider_assignment_id="A8",
        )
    refresh_trust(study)
    stub.add_response(
        "list_assignments_for_hit",
        {"NumResults": 1, "Assignments": [assignment_record("A8", "SLOPPY1", "Submitted")]},
        LIST_PARAMS,
    )
    stub.add_response("reject_assignment", {}, {"AssignmentId": "A8", "RequesterFeedback": "Checks failed."})
    summary = reconcile_study(study)
    assert summary.rejected == 1 and summary.approved == 0
    sub = PlatformSubmission.objects.get(external_id="A8")
    assert (sub.decision, sub.decision_sent) == ("reject", True)
    assert not Payment.objects.filter(submission=sub).exists()
    # A second decision on it is refused without a platform call.
    assert review_submission(sub, "approve") is False


def test_manual_review_waits_and_a_repeated_approval_is_harmless(mturk_study, stub):
    study = mturk_study
    QualityPolicy.objects.create(study=study, review="manual")
    worker = make_worker("WORKER9", "mturk")
    answer(
        study,
        worker,
        ordinary(study)[0],
        when=timezone.now() - timedelta(hours=4, minutes=30),
        provider_assignment_id="A9",
    )
    stub.add_response(
        "list_assignments_for_hit",
        {"NumResults": 1, "Assignments": [assignment_record("A9", "WORKER9", "Submitted")]},
        LIST_PARAMS,
    )
    assert reconcile_study(study).approved == 0
    sub = PlatformSubmission.objects.get(external_id="A9")
    # The researcher approves; the reply is lost, MTurk refuses the repeat, the assignment is Approved.
    sub.decision = "approve"
    sub.save()
    stub.add_client_error("approve_assignment", service_error_code="RequestError", http_status_code=400)
    stub.add_response(
        "get_assignment",
        {"Assignment": {"AssignmentId": "A9", "AssignmentStatus": "Approved"}},
        {"AssignmentId": "A9"},
    )
    assert review_submission(sub, "approve", "Thanks") is True
    sub.refresh_from_db()
    assert sub.decision_sent and Payment.objects.filter(submission=sub, kind="reward").count() == 1
    with pytest.raises(Exception, match="feedback"):
        review_submission(sub, "reject", " ")


def test_mturk_bonus_is_sent_once(mturk_study, stub):
    study = mturk_study
    worker = make_worker("WORKER1", "mturk")
    answer(study, worker, ordinary(study)[0], when=timezone.now() - timedelta(hours=4, minutes=30))
    stub.add_response(
        "list_assignments_for_hit",
        {"NumResults": 1, "Assignments": [assignment_record("A1", "WORKER1", "Approved")]},
        LIST_PARAMS,
    )
    reconcile_study(study)
    stub.add_response(
        "send_bonus",
        {},
        {
            "WorkerId": "WORKER1",
            "BonusAmount": "1.00",
            "AssignmentId": "A1",
            "Reason": "Great care",
            "UniqueRequestToken": "bonus-42",
        },  # fmt: skip
    )
    payment = send_bonus(study, worker, Decimal("1.00"), "Great care", "bonus-42")
    assert (
        payment.status == Payment.Status.SENT
        and payment.fee == Decimal("0.20")
        and payment.external_ref == "A1"
    )
    assert send_bonus(study, worker, Decimal("1.00"), "Great care", "bonus-42").pk == payment.pk


def test_prolific_reconcile_releases_returned_places_and_checks_codes(researcher, settings):
    settings.HATLAB_PUBLIC_URL = "https://hatlab.example.org"
    fake = FakeProlific().start()
    provider = get_provider("prolific")
    provider.use_client(prolific_client.ProlificClient(fake.token, fake.url, sleep=lambda s: None))
    try:
        study = crowd_study(researcher, "prolific", dict(PROLIFIC_CONFIG), n=6)
        [publication] = provider.publish(study, "b1")
        code = publication.details["completion_code"]
        done, returned, cheat = (make_worker(p, "prolific") for p in ("pdone", "preturned", "pcheat"))
        ok = fake.add_submission(publication.external_id, "pdone", code=code)
        gone = fake.add_submission(publication.external_id, "preturned", status="RETURNED")
        bad = fake.add_submission(publication.external_id, "pcheat", code="NOPE")
        five_ago = timezone.now() - timedelta(minutes=5)
        answer(study, done, ordinary(study)[0], when=five_ago, provider_assignment_id=ok)
        answer(study, cheat, ordinary(study)[1], when=five_ago, provider_assignment_id=bad)
        held = next_assignment(study, returned, gold=False, ref=gone)
        for sid in fake.submissions:
            fake.submissions[sid]["started_at"] = (timezone.now() - timedelta(minutes=20)).isoformat()
            if fake.submissions[sid]["status"] != "RETURNED":
                fake.submissions[sid]["completed_at"] = timezone.now().isoformat()
        summary = reconcile_study(study)
        assert (summary.released, summary.approved, summary.flagged) == (1, 1, 1)
        assert Assignment.objects.get(pk=held.pk).status == Assignment.Status.RELEASED
        assert fake.submissions[ok]["status"] == "APPROVED"
        assert fake.submissions[bad]["status"] == "AWAITING REVIEW"
        assert "completion code" in PlatformSubmission.objects.get(external_id=bad).flag_reason
        reward = Payment.objects.get(study=study, kind="reward")
        assert (reward.amount, reward.currency, reward.fee) == (Decimal("1.20"), "GBP", Decimal("0.40"))
        assert reconcile_study(study).approved == 0
        assert (
            len([c for c in fake.calls if c[1].endswith("/transition/") and c[2].get("action") == "APPROVE"])
            == 1
        )
    finally:
        provider.use_client(None)
        fake.stop()


def test_local_studies_have_nothing_to_reconcile(researcher):
    study = crowd_study(researcher, "local", n=4)
    assert reconcile_study(study).fetched == 0 and unsubmitted_workers(study) == []


def test_reconcile_job_records_its_run_and_runs_here_when_the_broker_is_down(mturk_study, stub, monkeypatch):
    study = mturk_study
    worker = make_worker("WORKER1", "mturk")
    answer(
        study,
        worker,
        ordinary(study)[0],
        when=timezone.now() - timedelta(hours=4, minutes=30),
        provider_assignment_id="A1",
    )
    stub.add_response(
        "list_assignments_for_hit",
        {"NumResults": 1, "Assignments": [assignment_record("A1", "WORKER1", "Submitted")]},
        LIST_PARAMS,
    )
    stub.add_response(
        "approve_assignment", {}, {"AssignmentId": "A1", "RequesterFeedback": "Thank you for your work."}
    )

    def broker_down(*args, **kwargs):
        raise BrokerError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(crowd.reconcile_study_job, "delay", broker_down)
    assert crowd.enqueue_reconcile(study) is False
    job = Job.objects.get(key=crowd.reconcile_key(study))
    assert job.status == Job.Status.DONE and job.progress == 1.0
    assert job.result["submissions"]["approved"] == 1 and job.result["flagged_golds"] == 0

    queued: list[int] = []
    monkeypatch.setattr(crowd.reconcile_study_job, "delay", queued.append)
    assert crowd.reconcile_all() == 1 and queued == [study.pk]
    assert crowd.enqueue_reconcile(study) is True and queued == [study.pk, study.pk]
    # a finished study is reconciled only while some of its answers wait for the platform's confirmation
    Study.objects.filter(pk=study.pk).update(status=Study.Status.FINISHED)
    queued.clear()
    assert crowd.reconcile_all() == 0
    waiting = Response.objects.filter(study=study).first()  # the study has answers (the worker's)
    Response.objects.filter(pk=waiting.pk).update(verification=Response.Verification.PROVISIONAL)
    assert crowd.reconcile_all() == 1 and queued == [study.pk]
    assert "reconcile-crowd-studies" in current_app.conf.beat_schedule


def test_the_local_provider_has_no_platform(researcher):
    study = crowd_study(researcher, "local", n=4)
    local = get_provider("local")
    assert not local.platform and list(local.fetch_submissions(study)) == []
    assert local.mirror_trust(study, make_worker("w"), 0.1, True, "platform") is False
    with pytest.raises(ProviderUnsupported):
        local.publish(study, "b1")
    with pytest.raises(ProviderUnsupported):
        local.balance()


def test_providers_are_registered_by_name_with_their_settings():
    assert list(PROVIDERS) == ["local", "mturk", "prolific"]
    assert all(PROVIDERS[name].name == name for name in PROVIDERS)
    assert PROVIDERS.meta("mturk")["settings"] is mturk_settings.MTurkConfig
    assert PROVIDERS.meta("prolific")["settings"] is prolific_settings.ProlificConfig
    assert PROVIDERS.where(bonuses=True) == ["mturk", "prolific"]
    assert PROVIDERS.where(blocks=False) == ["local"]
    with pytest.raises(KeyError, match="unknown crowd provider 'turk'; known: local, mturk, prolific"):
        get_provider("turk")
    with pytest.raises(ValueError, match="already registered"):
        PROVIDERS.add("mturk", get_provider("mturk"))


@pytest.mark.parametrize(
    "module",
    [
        "annotate/crowd/providers/base/settings.py",
        "annotate/crowd/providers/base/retry.py",
        "annotate/crowd/providers/local/settings.py",
        "annotate/crowd/providers/mturk/client.py",
        "annotate/crowd/providers/mturk/settings.py",
        "annotate/crowd/providers/prolific/client.py",
        "annotate/crowd/providers/prolific/settings.py",
    ],
)
def test_platform_clients_and_settings_know_nothing_of_django(module):
    """A provider's API client and settings take and give plain data: no Django, no models, no app."""
    tree = ast.parse((Path(__file__).parents[2] / module).read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    app = {name for name in imported if name.startswith("annotate.")}
    assert not {name for name in imported if name.split(".")[0] in ("django", "rest_framework")}
    assert app <= {
        "annotate.crowd.providers.base.settings",
        "annotate.crowd.providers.base.retry",
        "annotate.crowd.providers.mturk.settings",
        "annotate.crowd.providers.prolific.settings",
    }


def test_local_settings_are_declared_and_checked():
    assert LocalSettings.from_dict(None) == LocalSettings(DEFAULT_INVITE_MAX_AGE_S, False)
    assert LocalSettings.from_dict({"open_enrollment": True, "invite_max_age_s": 60}) == LocalSettings(
        60, True
    )
    for config, field_name in [
        ({"open_enrollment": "yes"}, "open_enrollment"),
        ({"invite_max_age_s": "60"}, "invite_max_age_s"),
        ([], "provider_config"),
    ]:
        with pytest.raises(ProviderConfigError) as info:
            get_provider("local").validate_config(config)
        assert info.value.field == field_name
