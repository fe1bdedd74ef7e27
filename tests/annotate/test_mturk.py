"""MTurk client: every call we make, checked by botocore's Stubber against the real MTurk API model
(botocore validates our parameters and the Stubber validates the canned replies' shapes)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from xml.sax.saxutils import escape

import boto3
import pytest
from botocore.exceptions import ClientError, ParamValidationError
from botocore.stub import ANY, Stubber
from django.contrib.sessions.backends.db import SessionStore
from django.test import RequestFactory
from django.utils import timezone

from annotate.crowd.providers import get_provider
from annotate.crowd.providers.base import ANSWER_COPY_FIELD, Entry
from annotate.crowd.providers.base.retry import Backoff, ProviderConfigError
from annotate.crowd.providers.mturk import adapter as mturk
from annotate.crowd.providers.mturk import client as mturk_client
from annotate.crowd.providers.mturk import settings as mturk_settings
from annotate.crowd.providers.reconcile import copied_submissions
from annotate.models import Payment, Publication, Worker
from tests.annotate.crowd_helpers import MTURK_CONFIG, crowd_study

ANSWER_NS = (
    "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2005-10-01/QuestionFormAnswers.xsd"
)


def answer_xml(fields: dict[str, str]) -> str:
    body = "".join(
        f"<Answer><QuestionIdentifier>{escape(k)}</QuestionIdentifier><FreeText>{escape(v)}</FreeText></Answer>"
        for k, v in fields.items()
    )
    return f'<?xml version="1.0" encoding="ASCII"?><QuestionFormAnswers xmlns="{ANSWER_NS}">{body}</QuestionFormAnswers>'


@pytest.fixture
def boto_client():
    return boto3.client(
        "mturk",
        region_name="us-east-1",
        endpoint_url=mturk_client.SANDBOX_ENDPOINT,
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )


@pytest.fixture
def stub(boto_client):
    with Stubber(boto_client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def client(boto_client, sleeps):
    return mturk_client.MTurkClient(
        boto_client, sandbox=True, backoff=Backoff(attempts=4, base_s=1.0), sleep=sleeps.append
    )


CONFIG = {
    "title": "Highlight the words that show the sentiment",
    "description": "Read a short review, choose its sentiment, then click the words that show it.",
    "reward": "0.45",
    "keywords": ["sentiment", "highlight", "reviews"],
    "hits": 2,
    "assignments_per_hit": 3,
    "locales": ["US", "GB"],
}


def test_make_client_targets_sandbox_or_live_endpoint(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    assert mturk_client.make_client(True).meta.endpoint_url == mturk_client.SANDBOX_ENDPOINT
    live = mturk_client.make_client(False)
    assert live.meta.endpoint_url == mturk_client.LIVE_ENDPOINT
    assert live.meta.config.retries["total_max_attempts"] == 1
    assert mturk_client.worker_site(True) == "https://workersandbox.mturk.com"
    assert mturk_client.worker_site(False) == "https://www.mturk.com"


def test_make_client_reads_the_credentials_the_environment_has_now(monkeypatch, tmp_path):
    """A client made after the credentials left the environment has none (boto3 then says so and the page
    names the setting), even when an earlier client in the same process was made with them."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    assert mturk_client.make_client(True)._request_signer._credentials is not None
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", raising=False)
    assert mturk_client.make_client(True)._request_signer._credentials is None


def test_balance(client, stub):
    stub.add_response("get_account_balance", {"AvailableBalance": "10000.00", "OnHoldBalance": "0.00"}, {})
    assert client.balance() == Decimal("10000.00")


def test_trust_qualification_found_or_created(client, stub):
    query = {
        "Query": "hatlab gold trust",
        "MustBeRequestable": False,
        "MustBeOwnedByCaller": True,
        "MaxResults": 100,
    }
    stub.add_response(
        "list_qualification_types",
        {
            "NumResults": 2,
            "QualificationTypes": [
                {
                    "QualificationTypeId": "QOLD",
                    "Name": "hatlab gold trust",
                    "QualificationTypeStatus": "Inactive",
                },
                {
                    "QualificationTypeId": "QX",
                    "Name": "hatlab gold trust 2",
                    "QualificationTypeStatus": "Active",
                },
            ],
            "NextToken": "page2",
        },
        query,
    )
    stub.add_response(
        "list_qualification_types",
        {
            "NumResults": 1,
            "QualificationTypes": [
                {
                    "QualificationTypeId": "QGOOD",
                    "Name": "hatlab gold trust",
                    "QualificationTypeStatus": "Active",
                }
            ],
        },
        dict(query, NextToken="page2"),
    )
    assert client.ensure_trust_qualification("hatlab gold trust") == "QGOOD"

    stub.add_response("list_qualification_types", {"NumResults": 0, "QualificationTypes": []}, query)
    stub.add_response(
        "create_qualification_type",
        {"QualificationType": {"QualificationTypeId": "QNEW", "Name": "hatlab gold trust"}},
        {
            "Name": "hatlab gold trust",
            "Keywords": "hatlab, quality",
            "Description": ANY,
            "QualificationTypeStatus": "Active",
            "AutoGranted": True,
            "AutoGrantedValue": 100,
        },
    )
    assert client.ensure_trust_qualification("hatlab gold trust") == "QNEW"


def test_hit_type_and_hits_with_requirements(client, stub):
    config = mturk_settings.MTurkConfig.from_dict(CONFIG)
    requirements = config.requirements("QTRUST", 0.7)
    assert requirements == [
        {
            "QualificationTypeId": mturk_settings.QUAL_PERCENT_APPROVED,
            "Comparator": "GreaterThanOrEqualTo",
            "IntegerValues": [95],
            "ActionsGuarded": "Accept",
        },
        {
            "QualificationTypeId": mturk_settings.QUAL_NUMBER_APPROVED,
            "Comparator": "GreaterThanOrEqualTo",
            "IntegerValues": [100],
            "ActionsGuarded": "Accept",
        },
        {
            "QualificationTypeId": mturk_settings.QUAL_LOCALE,
            "Comparator": "In",
            "LocaleValues": [{"Country": "US"}, {"Country": "GB"}],
            "ActionsGuarded": "Accept",
        },
        {
            "QualificationTypeId": "QTRUST",
            "Comparator": "GreaterThanOrEqualTo",
            "IntegerValues": [70],
            "ActionsGuarded": "Accept",
        },
    ]
    stub.add_response(
        "create_hit_type",
        {"HITTypeId": "HT1"},
        {
            "AutoApprovalDelayInSeconds": 3 * 86400,
            "AssignmentDurationInSeconds": 3600,
            "Reward": "0.45",
            "Title": CONFIG["title"],
            "Description": CONFIG["description"],
            "Keywords": "sentiment, highlight, reviews",
            "QualificationRequirements": requirements,
        },
    )
    assert client.create_hit_type(config, requirements) == "HT1"

    question = mturk_client.external_question("https://hatlab.example.org/s/abc/?x=1&y=2", 900)
    assert "<ExternalURL>https://hatlab.example.org/s/abc/?x=1&amp;y=2</ExternalURL>" in question
    assert "<FrameHeight>900</FrameHeight>" in question
    stub.add_response(
        "create_hit_with_hit_type",
        {"HIT": {"HITId": "HIT1", "HITTypeId": "HT1", "MaxAssignments": 3, "RequesterAnnotation": "tok-1"}},
        {
            "HITTypeId": "HT1",
            "MaxAssignments": 3,
            "LifetimeInSeconds": 604800,
            "Question": question,
            "RequesterAnnotation": "tok-1",
            "UniqueRequestToken": "tok-1",
        },
    )
    assert client.create_hit("HT1", question, 3, 604800, "tok-1")["HITId"] == "HIT1"


def test_repeated_hit_creation_finds_the_first_hit(client, stub):
    stub.add_client_error(
        "create_hit_with_hit_type",
        service_error_code="RequestError",
        service_message="The HIT with UniqueRequestToken tok-2 already exists.",
        http_status_code=400,
    )
    stub.add_response(
        "list_hits",
        {"NumResults": 1, "HITs": [{"HITId": "HITA", "RequesterAnnotation": "other"}], "NextToken": "n"},
        {"MaxResults": 100},
    )
    stub.add_response(
        "list_hits",
        {"NumResults": 1, "HITs": [{"HITId": "HITB", "RequesterAnnotation": "tok-2"}]},
        {"MaxResults": 100, "NextToken": "n"},
    )
    hit = client.create_hit("HT1", mturk_client.external_question("https://h.example/", 0), 3, 3600, "tok-2")
    assert hit["HITId"] == "HITB"


def test_request_error_without_a_first_hit_is_raised(client, stub):
    stub.add_client_error("create_hit_with_hit_type", service_error_code="RequestError", http_status_code=400)
    stub.add_response("list_hits", {"NumResults": 0, "HITs": []}, {"MaxResults": 100})
    with pytest.raises(ClientError):
        client.create_hit("HT1", mturk_client.external_question("https://h.example/", 0), 3, 3600, "tok-3")


def test_throttling_is_retried_with_backoff(client, stub, sleeps, caplog):
    stub.add_client_error(
        "get_account_balance",
        service_error_code="ThrottlingException",
        service_message="Rate exceeded",
        http_status_code=400,
    )
    stub.add_client_error("get_account_balance", service_error_code="ServiceFault", http_status_code=500)
    stub.add_response("get_account_balance", {"AvailableBalance": "12.50"}, {})
    with caplog.at_level("INFO", logger="annotate.crowd.providers"):
        assert client.balance() == Decimal("12.50")
    assert len(sleeps) == 2
    assert 0 <= sleeps[0] <= 1.0 and 0 <= sleeps[1] <= 2.0
    messages = [r.getMessage() for r in caplog.records]
    assert sum("transient error" in m for m in messages) == 2
    assert any("GetAccountBalance ok" in m and "attempt 3" in m for m in messages)


def test_throttling_on_every_attempt_gives_up(client, stub, sleeps):
    for _ in range(4):
        stub.add_client_error(
            "get_account_balance", service_error_code="ThrottlingException", http_status_code=400
        )
    with pytest.raises(ClientError) as info:
        client.balance()
    assert mturk_client.error_code(info.value) == "ThrottlingException"
    assert len(sleeps) == 3


def test_request_error_is_not_retried(client, stub, sleeps):
    stub.add_client_error(
        "reject_assignment", service_error_code="RequestError", service_message="bad id", http_status_code=400
    )
    stub.add_response(
        "get_assignment",
        {"Assignment": {"AssignmentId": "A1", "AssignmentStatus": "Submitted"}, "HIT": {"HITId": "H"}},
        {"AssignmentId": "A1"},
    )
    with pytest.raises(ClientError):
        client.reject("A1", "wrong")
    assert sleeps == []


def test_approve_and_reject_once(client, stub):
    stub.add_response("approve_assignment", {}, {"AssignmentId": "A1", "RequesterFeedback": "Thank you"})
    assert client.approve("A1", "Thank you") is True
    stub.add_client_error("approve_assignment", service_error_code="RequestError", http_status_code=400)
    stub.add_response(
        "get_assignment",
        {"Assignment": {"AssignmentId": "A1", "AssignmentStatus": "Approved"}},
        {"AssignmentId": "A1"},
    )
    assert client.approve("A1") is False
    stub.add_response("reject_assignment", {}, {"AssignmentId": "A2", "RequesterFeedback": "Checks failed"})
    assert client.reject("A2", "Checks failed") is True
    stub.add_client_error("reject_assignment", service_error_code="RequestError", http_status_code=400)
    stub.add_response(
        "get_assignment",
        {"Assignment": {"AssignmentId": "A2", "AssignmentStatus": "Rejected"}},
        {"AssignmentId": "A2"},
    )
    assert client.reject("A2", "Checks failed") is False


def test_bonus_carries_token_and_is_never_paid_twice(client, stub):
    params = {
        "WorkerId": "W1",
        "BonusAmount": "1.25",
        "AssignmentId": "A1",
        "Reason": "Great work",
        "UniqueRequestToken": "bonus-1",
    }
    stub.add_response("send_bonus", {}, params)
    assert client.send_bonus("W1", "A1", Decimal("1.25"), "Great work", "bonus-1") is True
    # The reply was lost and the job runs again: MTurk refuses the token, the bonus is found among those paid.
    stub.add_client_error(
        "send_bonus", service_error_code="RequestError", http_status_code=400, expected_params=params
    )
    stub.add_response(
        "list_bonus_payments",
        {
            "NumResults": 1,
            "BonusPayments": [
                {"WorkerId": "W1", "BonusAmount": "1.25", "AssignmentId": "A1", "Reason": "Great work"}
            ],
        },
        {"AssignmentId": "A1", "MaxResults": 100},
    )
    assert client.send_bonus("W1", "A1", Decimal("1.25"), "Great work", "bonus-1") is False
    # A refusal with no such bonus on record is a real error.
    stub.add_client_error("send_bonus", service_error_code="RequestError", http_status_code=400)
    stub.add_response(
        "list_bonus_payments",
        {"NumResults": 0, "BonusPayments": []},
        {"AssignmentId": "A1", "MaxResults": 100},
    )
    with pytest.raises(ClientError):
        client.send_bonus("W1", "A1", Decimal("1.25"), "Great work", "bonus-2")


def test_qualification_score_and_blocks(client, stub):
    stub.add_response(
        "associate_qualification_with_worker",
        {},
        {"QualificationTypeId": "QT", "WorkerId": "W1", "IntegerValue": 55, "SendNotification": False},
    )
    client.set_qualification("QT", "W1", mturk_settings.trust_score(0.549))
    stub.add_response("create_worker_block", {}, {"WorkerId": "W1", "Reason": "failed checks"})
    client.block_worker("W1", "failed checks")
    stub.add_response("delete_worker_block", {}, {"WorkerId": "W1", "Reason": "reinstated"})
    client.unblock_worker("W1", "reinstated")


def test_notify_in_batches_of_100(client, stub):
    ids = [f"W{i}" for i in range(150)]
    stub.add_response(
        "notify_workers",
        {"NotifyWorkersFailureStatuses": []},
        {"Subject": "New tasks", "MessageText": "Hi", "WorkerIds": ids[:100]},
    )
    stub.add_response(
        "notify_workers",
        {
            "NotifyWorkersFailureStatuses": [
                {
                    "NotifyWorkersFailureCode": "HardFailure",
                    "NotifyWorkersFailureMessage": "x",
                    "WorkerId": "W120",
                }
            ]
        },
        {"Subject": "New tasks", "MessageText": "Hi", "WorkerIds": ids[100:]},
    )
    failures = client.notify(ids + ["W0"], "New tasks", "Hi")
    assert [f["WorkerId"] for f in failures] == ["W120"]


def test_expire_extend_and_add_assignments(client, stub):
    past = datetime(2000, 1, 1, tzinfo=UTC)
    stub.add_response("update_expiration_for_hit", {}, {"HITId": "H1", "ExpireAt": past})
    client.set_expiration("H1", past)
    stub.add_response(
        "create_additional_assignments_for_hit",
        {},
        {"HITId": "H1", "NumberOfAdditionalAssignments": 2, "UniqueRequestToken": "top-1"},
    )
    client.add_assignments("H1", 2, "top-1", expected_total=5)
    # A repeat of the same top-up is refused; the HIT already has the places, so that is fine.
    stub.add_client_error(
        "create_additional_assignments_for_hit", service_error_code="RequestError", http_status_code=400
    )
    stub.add_response("get_hit", {"HIT": {"HITId": "H1", "MaxAssignments": 5}}, {"HITId": "H1"})
    client.add_assignments("H1", 2, "top-1", expected_total=5)


def test_assignments_are_paginated_and_answers_recovered(client, stub):
    payload = {"study": "s1", "submissions": [{"submission_key": "k1", "answer": {"label": "positive"}}]}
    xml = answer_xml({"assignmentId": "A1", ANSWER_COPY_FIELD: json.dumps(payload)})
    stub.add_response(
        "list_assignments_for_hit",
        {
            "NumResults": 1,
            "NextToken": "p2",
            "Assignments": [
                {
                    "AssignmentId": "A1",
                    "WorkerId": "W1",
                    "HITId": "H1",
                    "AssignmentStatus": "Submitted",
                    "Answer": xml,
                }
            ],
        },
        {"HITId": "H1", "AssignmentStatuses": ["Submitted", "Approved", "Rejected"], "MaxResults": 100},
    )
    stub.add_response(
        "list_assignments_for_hit",
        {
            "NumResults": 1,
            "Assignments": [
                {"AssignmentId": "A2", "WorkerId": "W2", "HITId": "H1", "AssignmentStatus": "Approved"}
            ],
        },
        {
            "HITId": "H1",
            "AssignmentStatuses": ["Submitted", "Approved", "Rejected"],
            "MaxResults": 100,
            "NextToken": "p2",
        },
    )
    found = list(client.iter_assignments("H1"))
    assert [a["AssignmentId"] for a in found] == ["A1", "A2"]
    answers = mturk_client.parse_answer_xml(found[0]["Answer"])
    assert answers["assignmentId"] == "A1"
    assert copied_submissions(answers) == payload["submissions"]


def test_answer_xml_selections_and_bad_payloads():
    xml = (
        f'<QuestionFormAnswers xmlns="{ANSWER_NS}"><Answer><QuestionIdentifier>pick</QuestionIdentifier>'
        "<SelectionIdentifier>a</SelectionIdentifier><SelectionIdentifier>b</SelectionIdentifier></Answer>"
        "<Answer><QuestionIdentifier>one</QuestionIdentifier><SelectionIdentifier>c</SelectionIdentifier></Answer>"
        f"<Answer><QuestionIdentifier>{ANSWER_COPY_FIELD}</QuestionIdentifier><FreeText>[1, 2]</FreeText></Answer>"
        "</QuestionFormAnswers>"
    )
    answers = mturk_client.parse_answer_xml(xml)
    assert answers["pick"] == ["a", "b"] and answers["one"] == "c"
    assert copied_submissions(answers) is None
    assert copied_submissions({ANSWER_COPY_FIELD: "{not json"}) is None
    assert copied_submissions({ANSWER_COPY_FIELD: '{"submissions": 3}'}) is None
    assert copied_submissions({}) is None


def test_answer_xml_with_entity_expansion_is_refused():
    bomb = '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;">]><QuestionFormAnswers>&b;</QuestionFormAnswers>'
    with pytest.raises(Exception, match="(?i)entit"):
        mturk_client.parse_answer_xml(bomb)


def test_config_validation_names_the_field():
    cases = [
        ({k: v for k, v in CONFIG.items() if k != "title"}, "title"),
        (dict(CONFIG, reward="abc"), "reward"),
        (dict(CONFIG, reward="0.001"), "reward"),
        (dict(CONFIG, hits=0), "hits"),
        (dict(CONFIG, assignments_per_hit="3"), "assignments_per_hit"),
        (dict(CONFIG, locales=["usa"]), "locales"),
        (dict(CONFIG, lifetime_s=10), "lifetime_s"),
        (dict(CONFIG, trust_qualification="yes"), "trust_qualification"),
    ]
    for config, field_name in cases:
        with pytest.raises(ProviderConfigError) as info:
            mturk_settings.MTurkConfig.from_dict(config)
        assert info.value.field == field_name
    config = mturk_settings.MTurkConfig.from_dict(CONFIG)
    assert config.places == 6 and config.reward == Decimal("0.45")


def test_external_question_requires_https():
    with pytest.raises(ProviderConfigError) as info:
        mturk_client.external_question("http://insecure.example/", 800)
    assert info.value.field == "task_url"


def test_fees_follow_mturk_pricing():
    assert mturk_settings.assignment_fee(Decimal("0.50"), 9) == Decimal("0.10")
    assert mturk_settings.assignment_fee(Decimal("0.50"), 10) == Decimal("0.20")
    assert mturk_settings.assignment_fee(Decimal("0.02"), 3) == Decimal("0.01")
    assert mturk_settings.bonus_fee(Decimal("2.00")) == Decimal("0.40")


def test_invalid_parameters_are_caught_by_the_api_model(boto_client, sleeps):
    # Parameters are checked against the MTurk model before anything is sent (no Stubber here).
    unstubbed = mturk_client.MTurkClient(boto_client, sleep=sleeps.append)
    with pytest.raises(ParamValidationError):
        unstubbed._call("SendBonus", "send_bonus", WorkerId="W1")
    assert sleeps == []


def test_transient_classification():
    throttled = ClientError({"Error": {"Code": "RequestError", "Message": "Rate exceeded"}}, "CreateHIT")
    server = ClientError({"Error": {"Code": "X"}, "ResponseMetadata": {"HTTPStatusCode": 503}}, "GetHIT")
    bad = ClientError({"Error": {"Code": "RequestError", "Message": "bad"}}, "GetHIT")
    assert mturk_client.classify_error(throttled) == 0.0
    assert mturk_client.classify_error(server) == 0.0
    assert mturk_client.classify_error(bad) is None
    assert mturk_client.classify_error(ValueError("x")) is None


# --- the provider: publishing and the worker's arrival (database) ----------------------------------

QUERY = {
    "Query": "hatlab gold trust",
    "MustBeRequestable": False,
    "MustBeOwnedByCaller": True,
    "MaxResults": 100,
}
QUAL_LIST = {
    "NumResults": 1,
    "QualificationTypes": [
        {"QualificationTypeId": "QTRUST", "Name": "hatlab gold trust", "QualificationTypeStatus": "Active"}
    ],
}
LATER = datetime(2030, 1, 1, tzinfo=UTC)


@pytest.fixture
def provider(client, settings):
    settings.HATLAB_PUBLIC_URL = "https://hatlab.example.org"
    settings.MTURK_SANDBOX = True
    instance = get_provider("mturk")
    instance.use_client(client)
    yield instance
    instance.use_client(None)


@pytest.fixture
def mturk_study(researcher):
    return crowd_study(researcher, "mturk", dict(MTURK_CONFIG), n=6)


def expect_hit_type(stub, study) -> None:
    config = mturk_settings.MTurkConfig.from_dict(study.provider_config)
    stub.add_response("list_qualification_types", QUAL_LIST, QUERY)
    stub.add_response(
        "create_hit_type",
        {"HITTypeId": "HT1"},
        {
            "AutoApprovalDelayInSeconds": 3 * 86400,
            "AssignmentDurationInSeconds": 3600,
            "Reward": "0.50",
            "Title": config.title,
            "Description": config.description,
            "QualificationRequirements": config.requirements("QTRUST", 0.7),
        },
    )


def expect_hit(stub, study, token: str, hit_id: str | None) -> None:
    """One CreateHITWithHITType call; ``hit_id=None`` makes MTurk refuse it (and no such HIT exists)."""
    question = mturk_client.external_question(f"https://hatlab.example.org/w/{study.uid}/", 800)
    params = {"HITTypeId": "HT1", "MaxAssignments": 3, "LifetimeInSeconds": 604800, "Question": question,
              "RequesterAnnotation": token, "UniqueRequestToken": token}  # fmt: skip
    if hit_id is None:
        stub.add_client_error(
            "create_hit_with_hit_type",
            service_error_code="RequestError",
            http_status_code=400,
            expected_params=params,
        )
        stub.add_response("list_hits", {"NumResults": 0, "HITs": []}, {"MaxResults": 100})
        return
    reply = {"HIT": {"HITId": hit_id, "HITTypeId": "HT1", "HITGroupId": "G1", "Expiration": LATER}}
    stub.add_response("create_hit_with_hit_type", reply, params)


def test_publish_makes_each_hit_once(provider, mturk_study, stub):
    study = mturk_study
    first, second = f"{study.uid.hex}-b1-0", f"{study.uid.hex}-b1-1"
    expect_hit_type(stub, study)
    expect_hit(stub, study, first, "HITA")
    expect_hit(stub, study, second, None)
    with pytest.raises(ClientError):
        provider.publish(study, "b1")
    made = Publication.objects.filter(study=study).exclude(external_id="")
    assert list(made.values_list("external_id", flat=True)) == ["HITA"]
    # Running the same batch again makes only the missing HIT.
    expect_hit_type(stub, study)
    expect_hit(stub, study, second, "HITB")
    publications = provider.publish(study, "b1")
    assert [p.external_id for p in publications] == ["HITA", "HITB"]
    assert all(p.status == "open" and p.places == 3 and p.expires_at == LATER for p in publications)
    assert provider.publish(study, "b1") == publications  # all made: no call at all
    with pytest.raises(ProviderConfigError) as info:
        provider.publish(study, "bad key!")
    assert info.value.field == "batch_key"


def test_publish_needs_an_https_task_url(provider, mturk_study, settings):
    settings.HATLAB_PUBLIC_URL = "http://127.0.0.1:8000"
    with pytest.raises(ProviderConfigError) as info:
        provider.publish(mturk_study, "b1")
    assert info.value.field == "task_url"


def open_hits(study, *hit_ids: str) -> list[Publication]:
    return [
        Publication.objects.create(
            study=study,
            provider="mturk",
            request_token=f"t-{h}",
            external_id=h,
            places=3,
            reward=Decimal("0.50"),
            status=Publication.Status.OPEN,
            expires_at=timezone.now() + timedelta(days=2),
        )  # fmt: skip
        for h in hit_ids
    ]


def test_pause_resume_extend_expire(provider, mturk_study, stub):
    study = mturk_study
    open_hits(study, "H1", "H2")
    for hit in ("H1", "H2"):
        stub.add_response("update_expiration_for_hit", {}, {"HITId": hit, "ExpireAt": mturk.EXPIRE_NOW})
    provider.pause(study)
    assert set(Publication.objects.values_list("status", flat=True)) == {"paused"}
    for hit in ("H1", "H2"):
        stub.add_response("update_expiration_for_hit", {}, {"HITId": hit, "ExpireAt": ANY})
    provider.resume(study)
    remaining = [p.expires_at - timezone.now() for p in Publication.objects.all()]
    assert all(timedelta(days=1, hours=23) < r <= timedelta(days=2) for r in remaining)
    for hit in ("H1", "H2"):
        stub.add_response("update_expiration_for_hit", {}, {"HITId": hit, "ExpireAt": ANY})
    provider.extend(study, 86400)
    assert all(p.expires_at - timezone.now() > timedelta(days=2, hours=23) for p in Publication.objects.all())
    with pytest.raises(ProviderConfigError):
        provider.extend(study, 5)
    for hit in ("H1", "H2"):
        stub.add_response("update_expiration_for_hit", {}, {"HITId": hit, "ExpireAt": mturk.EXPIRE_NOW})
    provider.expire(study)
    assert set(Publication.objects.values_list("status", flat=True)) == {"expired"}


def test_top_up_spreads_assignments_once(provider, mturk_study, stub):
    study = mturk_study
    first, second = open_hits(study, "H1", "H2")
    for pub in (first, second):
        stub.add_response(
            "create_additional_assignments_for_hit",
            {},
            {
                "HITId": pub.external_id,
                "NumberOfAdditionalAssignments": 2,
                "UniqueRequestToken": f"t1-{pub.pk}",
            },
        )
    provider.top_up(study, 4, "t1")
    provider.top_up(study, 4, "t1")  # the same form again: nothing more
    assert sorted(Publication.objects.values_list("places", flat=True)) == [5, 5]
    with pytest.raises(ProviderConfigError) as info:
        provider.top_up(study, 9, "t2")  # 4 more each would reach 10: MTurk forbids it
    assert info.value.field == "places"


def test_cost_estimate_includes_fees_and_balance(provider, mturk_study, stub):
    stub.add_response("get_account_balance", {"AvailableBalance": "3.00"}, {})
    estimate = provider.estimate_cost(mturk_study)
    assert (estimate.places, estimate.rewards, estimate.fees, estimate.total) == (
        6, Decimal("3.00"), Decimal("0.60"), Decimal("3.60"),
    )  # fmt: skip
    assert estimate.affordable is False and estimate.as_dict()["total"] == "3.60"


def _request(params: dict):
    request = RequestFactory().get("/w/x/", params)
    request.session = SessionStore()
    return request


def test_identify_preview_and_completion(provider, mturk_study):
    study = mturk_study
    open_hits(study, "HITX")
    preview = _request({"assignmentId": mturk.PREVIEW_ASSIGNMENT_ID, "hitId": "HITX"})
    assert provider.is_preview(preview, study) and provider.identify(preview, study) is None
    accepted = _request({"assignmentId": "A1", "hitId": "HITX", "workerId": "W1",
                         "turkSubmitTo": "https://workersandbox.mturk.com"})  # fmt: skip
    assert not provider.is_preview(accepted, study)
    assert provider.identify(accepted, study) == "W1"
    assert provider.verify_entry(accepted, study, "W1") == Entry(ref="A1", verified=False)
    assert provider.assignment_ref(accepted, study) == "A1"
    assert provider.completion(accepted, study.assignments.model(study=study))["form"] == {
        "action": "https://workersandbox.mturk.com/mturk/externalSubmit",
        "fields": {"assignmentId": "A1"},
    }
    # turkSubmitTo pointing anywhere else is not followed: the configured MTurk site is used.
    forged = _request(
        {"assignmentId": "A2", "hitId": "HITX", "workerId": "W2", "turkSubmitTo": "https://evil.example"}
    )
    assert provider.identify(forged, study) == "W2"
    assert not provider.verify_entry(forged, study, "W2").refused
    assert (
        provider.completion(forged, None)["form"]["action"]
        == "https://workersandbox.mturk.com/mturk/externalSubmit"
    )
    # A HIT of another study is refused; ids that are not MTurk ids identify nobody.
    foreign = _request({"assignmentId": "A3", "hitId": "OTHER", "workerId": "W3"})
    assert provider.verify_entry(foreign, study, "W3").refused == "This HIT is not part of this study."
    assert provider.assignment_ref(foreign, study) == ""
    # The assignment A1 is W1's: another worker id, or W1 under another HIT, is refused.
    open_hits(study, "HITY")
    for worker, hit in (("W9", "HITX"), ("W1", "HITY")):
        taken = _request({"assignmentId": "A1", "hitId": hit, "workerId": worker})
        assert provider.verify_entry(taken, study, worker).refused
    assert (
        provider.identify(_request({"assignmentId": "A3", "hitId": "HITX", "workerId": "<W>"}), study) is None
    )
    assert "form" not in provider.completion(_request({}), None)


def test_bonus_needs_an_assignment_and_notify_reports_failures(provider, mturk_study, stub):
    study = mturk_study
    worker = Worker.objects.create(provider="mturk", external_id="W9")
    payment = Payment(study=study, worker=worker, provider="mturk", kind="bonus", amount=Decimal("1.00"),
                      request_token="b-1", reason="thanks")  # fmt: skip
    with pytest.raises(ProviderConfigError):
        provider.send_bonus(payment)
    stub.add_response(
        "notify_workers",
        {"NotifyWorkersFailureStatuses": [{"NotifyWorkersFailureCode": "SoftFailure", "WorkerId": "W9"}]},
        {"Subject": "Hello", "MessageText": "More work", "WorkerIds": ["W9"]},
    )
    assert provider.notify(
        study, [worker, Worker(provider="local", external_id="x")], "Hello", "More work"
    ) == ["W9"]


def test_an_adaptive_study_whose_items_all_stopped_expires_its_hits(provider, researcher, stub):
    """MTurk cannot lower a HIT's MaxAssignments: when every item has stopped, the open HITs are expired
    (UpdateExpirationForHIT to now, checked by the Stubber); while an item collects answers, no call is made."""
    from annotate.crowd.release import release_unneeded
    from annotate.models import Item
    from tests.annotate.crowd_helpers import adaptive_crowd_study

    study = adaptive_crowd_study(researcher, "mturk", dict(MTURK_CONFIG))
    open_hits(study, "H1", "H2")
    first, second = Item.objects.filter(study=study).order_by("id")
    Item.objects.filter(pk=first.pk).update(stop_reason="label_share 1.000 >= 0.9 at 2 answers")
    assert release_unneeded(study) == 0  # no stubbed call: any call would fail
    Item.objects.filter(pk=second.pk).update(stop_reason="maximum of 3 answers (label_share 0.667)")
    for hit in ("H1", "H2"):
        stub.add_response("update_expiration_for_hit", {}, {"HITId": hit, "ExpireAt": mturk.EXPIRE_NOW})
    assert release_unneeded(study) == 2
    assert set(Publication.objects.filter(study=study).values_list("status", flat=True)) == {"expired"}
    assert release_unneeded(study) == 0
