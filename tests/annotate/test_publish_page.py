"""The crowd page of a study: the settings form built from the provider's declarations, the cost
computed here, credential problems as sentences, the preview with a sample item, publication counts and
the confirmed, idempotent, logged actions (MTurk through botocore's Stubber, checked against MTurk's
API model)."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber
from django.test import Client
from django.utils import timezone

from annotate.crowd.providers import PROVIDERS, get_provider
from annotate.crowd.providers.base.retry import ProviderConfigError
from annotate.crowd.providers.mturk import client as mturk_client
from annotate.crowd.providers.mturk.settings import MTurkConfig
from annotate.crowd.publishing import publication_rows
from annotate.crowd.settings_form import declared
from annotate.models import CrowdAction, EntryBinding, Payment, PlatformSubmission, Publication, Study, Worker
from tests.annotate.conftest import make_worker
from tests.annotate.crowd_helpers import MTURK_CONFIG, PROLIFIC_CONFIG, answer, crowd_study, ordinary

TEMPLATES = Path(__file__).resolve().parents[2] / "annotate" / "templates" / "annotate"
REQUIRED = {"mturk": MTURK_CONFIG, "prolific": PROLIFIC_CONFIG, "local": {}}


# --- the declarations -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["mturk", "prolific", "local"])
def test_declared_limits_and_defaults_are_the_ones_the_provider_checks(name):
    settings_class = PROVIDERS.meta(name)["settings"]
    base = dict(REQUIRED[name])
    parsed = settings_class.from_dict(base)
    for setting in declared(name):
        if setting.kind == "whole":
            for bad in (setting.low - 1, setting.high + 1):
                with pytest.raises(ProviderConfigError) as info:
                    settings_class.from_dict({**base, setting.name: bad})
                assert info.value.field == setting.name, (setting.name, bad)
            for good in (setting.low, setting.high):
                config = {**base, setting.name: good}
                if name == "prolific" and setting.name == "estimated_minutes":
                    config["max_minutes"] = 10080
                if name == "prolific" and setting.name == "max_minutes":
                    config["estimated_minutes"] = 1
                settings_class.from_dict(config)
        if setting.required:
            without = {k: v for k, v in base.items() if k != setting.name}
            with pytest.raises(ProviderConfigError) as info:
                settings_class.from_dict(without)
            assert info.value.field == setting.name
        elif setting.default is not None and setting.name not in base:
            value = getattr(parsed, setting.name)
            shown = list(value) if isinstance(value, tuple) else value
            expected = setting.default
            if setting.kind == "rate":
                expected = Decimal(expected)
            if setting.kind == "words":
                shown = ", ".join(shown) if isinstance(shown, list) else shown
            assert shown == expected, setting.name


def test_templates_name_no_provider():
    for path in [*(TEMPLATES / "crowd").glob("*.html"), TEMPLATES / "studies" / "detail.html"]:
        text = path.read_text()
        for name in PROVIDERS:
            assert f'"{name}"' not in text and f"'{name}'" not in text, (path.name, name)


# --- the page -----------------------------------------------------------------------------------------


@pytest.fixture
def page(researcher) -> Client:
    client = Client()
    client.force_login(researcher)
    return client


@pytest.fixture
def no_aws(monkeypatch, tmp_path, settings):
    """An environment without AWS credentials (nor a way to find some)."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", raising=False)
    settings.MTURK_SANDBOX = True
    provider = get_provider("mturk")
    provider.use_client(None)
    yield
    provider.use_client(None)


def text_of(response) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", response.content.decode()).split())


def test_settings_form_is_built_from_the_declarations_and_saves(page, researcher):
    study = crowd_study(
        researcher, "mturk", {"title": "Old title", "hits": 2, "frame_height": 640, "extra": 1}
    )
    html = page.get(f"/studies/{study.uid}/crowd/").content.decode()
    for setting in declared("mturk"):
        assert f'name="{setting.name}"' in html, setting.name
    assert 'value="Old title"' in html and 'name="assignments_per_hit" value="3"' in html
    assert "10 or more raises MTurk" in html  # help text from the declaration
    assert text_of(page.get(f"/studies/{study.uid}/crowd/")).count("The cost cannot be computed yet") == 1
    form = {
        "title": "Highlight words",
        "description": "Read and highlight.",
        "keywords": "sentiment, reviews",
        "reward": "0.45",
        "hits": "2",
        "assignments_per_hit": "10",
        "assignment_duration_s": "1800",
        "lifetime_s": "86400",
        "auto_approval_delay_s": "0",
        "frame_height": "",
        "min_approval_rate": "98",
        "min_approved": "50",
        "locales": "US, GB",
        "trust_qualification_name": "hatlab gold trust",
        "custom_qualification_min": "1",
        "exclude_qualification_id": "3ABCDEF",
    }
    assert page.post(f"/studies/{study.uid}/crowd/settings/", form).status_code == 302
    study.refresh_from_db()
    config = study.provider_config
    assert config["keywords"] == ["sentiment", "reviews"] and config["locales"] == ["US", "GB"]
    assert config["reward"] == "0.45" and config["assignments_per_hit"] == 10
    assert config["trust_qualification"] is False and "frame_height" not in config and config["extra"] == 1
    parsed = MTurkConfig.from_dict(config)
    assert {"QualificationTypeId": "3ABCDEF", "Comparator": "DoesNotExist",
            "ActionsGuarded": "DiscoverPreviewAndAccept"} in parsed.requirements(None, 0.7)  # fmt: skip
    # 20 assignments at 0.45 with MTurk's 40 % (10 or more per HIT): 9.00 + 3.60
    shown = text_of(page.get(f"/studies/{study.uid}/crowd/"))
    assert "20 × 0.45 USD" in shown and "12.60 USD" in shown and "requester.mturk.com/pricing" in shown

    bad = page.post(f"/studies/{study.uid}/crowd/settings/", {**form, "min_approval_rate": "101"})
    assert bad.status_code == 400 and "less than or equal to 100" in bad.content.decode()
    refused = page.post(f"/studies/{study.uid}/crowd/settings/", {**form, "locales": "usa"})
    assert refused.status_code == 400 and "two-letter country codes" in refused.content.decode()
    study.refresh_from_db()
    assert study.provider_config["locales"] == ["US", "GB"]  # nothing saved


def test_cost_needs_no_credentials_and_a_missing_one_is_named(page, researcher, no_aws):
    study = crowd_study(researcher, "mturk", dict(MTURK_CONFIG))
    shown = text_of(page.get(f"/studies/{study.uid}/crowd/"))
    assert "6 × 0.50 USD" in shown and "3.60 USD" in shown  # 3.00 + 20 % fees, computed here
    asked = text_of(page.get(f"/studies/{study.uid}/crowd/", {"balance": "1"}))
    assert "3.60 USD" in asked
    assert "Set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" in asked
    assert "Unable to locate credentials" not in asked
    api = page.get(f"/api/crowd/studies/{study.uid}/", {"estimate": "1"}).json()
    assert api["estimate"]["total"] == "3.60" and "AWS_ACCESS_KEY_ID" in api["balance_error"]


@pytest.fixture
def stubbed(settings):
    """The MTurk provider on a boto3 client answered by a Stubber."""
    settings.HATLAB_PUBLIC_URL = "https://hatlab.example.org"
    settings.MTURK_SANDBOX = True
    boto = boto3.client("mturk", region_name="us-east-1", endpoint_url=mturk_client.SANDBOX_ENDPOINT,
                        aws_access_key_id="test", aws_secret_access_key="test")  # fmt: skip
    provider = get_provider("mturk")
    provider.use_client(mturk_client.MTurkClient(boto, sandbox=True, sleep=lambda s: None))
    with Stubber(boto) as stub:
        yield stub
        stub.assert_no_pending_responses()
    provider.use_client(None)


def test_refused_credentials_are_a_sentence(page, researcher, stubbed):
    study = crowd_study(researcher, "mturk", dict(MTURK_CONFIG))
    stubbed.add_client_error("get_account_balance", service_error_code="UnrecognizedClientException",
                             service_message="The security token included in the request is invalid.")  # fmt: skip
    shown = text_of(page.get(f"/studies/{study.uid}/crowd/", {"balance": "1"}))
    assert "refused the credentials in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" in shown
    assert "security token" not in shown


def test_prolific_without_a_token_names_the_setting(page, researcher, settings):
    settings.PROLIFIC_API_TOKEN = ""
    get_provider("prolific").use_client(None)
    study = crowd_study(researcher, "prolific", dict(PROLIFIC_CONFIG))
    reply = page.post(
        f"/api/crowd/studies/{study.uid}/publish/", {"key": "k1"}, content_type="application/json"
    )
    assert reply.status_code == 400
    assert reply.json()["errors"] == {
        "credentials": ["Set PROLIFIC_API_TOKEN in the server's environment to reach Prolific."]
    }


def expect_publish(stub, study) -> None:
    config = MTurkConfig.from_dict(study.provider_config)
    stub.add_response("create_hit_type", {"HITTypeId": "HT1"}, {
        "AutoApprovalDelayInSeconds": 3 * 86400, "AssignmentDurationInSeconds": 3600, "Reward": "0.50",
        "Title": config.title, "Description": config.description,
        "QualificationRequirements": config.requirements(None, 0.7)})  # fmt: skip
    token = f"{study.uid.hex}-formkey1-0"
    question = mturk_client.external_question(f"https://hatlab.example.org/w/{study.uid}/", 800)
    stub.add_response(
        "create_hit_with_hit_type",
        {"HIT": {"HITId": "HITP1", "HITTypeId": "HT1", "HITGroupId": "G1"}},
        {"HITTypeId": "HT1", "MaxAssignments": 3, "LifetimeInSeconds": 604800, "Question": question,
         "RequesterAnnotation": token, "UniqueRequestToken": token},
    )  # fmt: skip


def test_publish_is_confirmed_runs_once_and_is_logged(page, researcher, stubbed):
    config = {**MTURK_CONFIG, "hits": 1, "trust_qualification": False}
    study = crowd_study(researcher, "mturk", config, start=False)
    url = f"/studies/{study.uid}/crowd/publish/"
    asked = text_of(page.post(url, {"key": "formkey1"}))
    assert "Publish the study on the MTurk sandbox" in asked and "3 places at 0.50 USD" in asked
    assert "0.60 in platform fees" not in asked and "0.30 in platform fees, 1.80 USD in all" in asked
    assert not Publication.objects.exists() and not CrowdAction.objects.exists()
    expect_publish(stubbed, study)
    done = page.post(url, {"key": "formkey1", "confirmed": "yes"}, follow=True)
    assert "publish: done" in text_of(done)
    again = page.post(url, {"key": "formkey1", "confirmed": "yes"}, follow=True)  # a double click
    assert "already sent" in text_of(again)
    assert list(Publication.objects.values_list("external_id", flat=True)) == ["HITP1"]
    entry = CrowdAction.objects.get()
    assert (entry.action, entry.outcome, entry.user, entry.result) == ("publish", "done", researcher,
                                                                        {"published": ["HITP1"]})  # fmt: skip
    study.refresh_from_db()
    assert study.status == "running"
    shown = text_of(page.get(f"/studies/{study.uid}/crowd/"))
    assert "HITP1" in shown and "type HT1" in shown and "Audit log" in shown and "published HITP1" in shown


def test_production_publish_needs_the_live_box(page, researcher, stubbed, settings):
    settings.MTURK_SANDBOX = False
    study = crowd_study(researcher, "mturk", dict(MTURK_CONFIG))
    url = f"/studies/{study.uid}/crowd/publish/"
    first = text_of(page.post(url, {"key": "k9"}))
    assert "real workers are paid real money" in first
    unticked = text_of(page.post(url, {"key": "k9", "confirmed": "yes"}))
    assert "Tick the box" in unticked and not CrowdAction.objects.exists()


def submitted(study, publication, worker, external_id: str) -> PlatformSubmission:
    return PlatformSubmission.objects.create(
        publication=publication, study=study, provider="mturk", external_id=external_id, worker=worker,
        worker_external_id=worker.external_id, platform_status="submitted", submitted_at=timezone.now(),
    )  # fmt: skip


def test_bulk_review_and_bonus_are_confirmed_and_idempotent(page, researcher, stubbed):
    study = crowd_study(researcher, "mturk", dict(MTURK_CONFIG))
    hit = Publication.objects.create(study=study, provider="mturk", request_token="t-H1", external_id="H1",
                                     places=3, reward=Decimal("0.50"), status="open",
                                     expires_at=timezone.now() + timedelta(days=1))  # fmt: skip
    workers = [make_worker(f"W{i}", provider="mturk") for i in range(3)]
    for worker in workers:
        answer(study, worker, ordinary(study)[0])
    subs = [submitted(study, hit, w, f"ASG{i}") for i, w in enumerate(workers)]
    base = f"/studies/{study.uid}/crowd/"
    html = page.get(base).content.decode()
    assert all(f'value="{s.pk}"' in html for s in subs)

    refused = page.post(base + "reject/", {"key": "r1", "confirmed": "yes", "submissions": [subs[2].pk]},
                        follow=True)  # fmt: skip
    assert "feedback is required" in text_of(refused)
    assert CrowdAction.objects.get(key="r1").outcome == "refused"

    confirm = text_of(page.post(base + "approve/", {"key": "a1", "submissions": [subs[0].pk, subs[1].pk]}))
    assert "Approve 2 submitted piece(s) of work" in confirm
    for s in subs[:2]:
        stubbed.add_response("approve_assignment", {}, {"AssignmentId": s.external_id,
                                                        "RequesterFeedback": "Thanks"})  # fmt: skip
    form = {"key": "a1", "confirmed": "yes", "submissions": [subs[0].pk, subs[1].pk], "feedback": "Thanks"}
    assert "decided 2" in text_of(page.post(base + "approve/", form, follow=True))
    page.post(base + "approve/", form)  # the same form again: no call (the Stubber would fail)
    stubbed.add_response(
        "reject_assignment", {}, {"AssignmentId": "ASG2", "RequesterFeedback": "Empty answers"}
    )
    page.post(
        base + "reject/",
        {"key": "r1", "confirmed": "yes", "submissions": [subs[2].pk], "feedback": "Empty answers"},
    )  # fmt: skip  (retry of the refused form)
    decided = dict(PlatformSubmission.objects.values_list("external_id", "decision"))
    assert decided == {"ASG0": "approve", "ASG1": "approve", "ASG2": "reject"}
    assert Payment.objects.filter(kind="reward").count() == 2
    rows = publication_rows(study)[0]
    assert (rows["approved"], rows["rejected"], rows["submitted"], rows["available"]) == (2, 1, 0, 0)

    bonus = {"key": "b1", "worker": workers[0].pk, "amount": "0.25", "reason": "Careful work"}
    assert "Pay a bonus of 0.25 to worker" in text_of(page.post(base + "bonus/", bonus))
    stubbed.add_response("send_bonus", {}, {"WorkerId": "W0", "BonusAmount": "0.25", "AssignmentId": "ASG0",
                                            "Reason": "Careful work", "UniqueRequestToken": f"bonus-{study.pk}-b1"})  # fmt: skip
    page.post(base + "bonus/", {**bonus, "confirmed": "yes"})
    page.post(base + "bonus/", {**bonus, "confirmed": "yes"})
    assert Payment.objects.filter(kind="bonus", status="sent").count() == 1
    stranger = make_worker("W-elsewhere", provider="mturk")
    wrong = page.post(base + "bonus/", {**bonus, "key": "b2", "worker": stranger.pk, "confirmed": "yes"},
                      follow=True)  # fmt: skip
    assert "worker choose a worker of this study" in text_of(wrong)
    log = [(e.action, e.outcome) for e in CrowdAction.objects.order_by("id")]
    assert log == [("reject", "done"), ("approve", "done"), ("bonus", "done"), ("bonus", "refused")]
    shown = text_of(page.get(base))
    assert "Empty answers" in shown and "Careful work" in shown


def test_publication_counts(researcher):
    study = crowd_study(researcher, "mturk", dict(MTURK_CONFIG))
    hit = Publication.objects.create(study=study, provider="mturk", request_token="t-H2", external_id="H2",
                                     places=5, reward=Decimal("0.50"), status="open")  # fmt: skip
    worker = make_worker("W7", provider="mturk")
    EntryBinding.objects.create(study=study, provider="mturk", ref="ASG-open", holder="W7", scope="H2")
    EntryBinding.objects.create(study=study, provider="mturk", ref="ASG-sub", holder="W7", scope="H2")
    EntryBinding.objects.create(study=study, provider="mturk", ref="ASG-other", holder="W7", scope="H9")
    submitted(study, hit, worker, "ASG-sub")
    row = publication_rows(study)[0]
    assert (row["in_progress"], row["submitted"], row["approved"], row["available"]) == (1, 1, 0, 3)


def test_preview_shows_a_sample_item_without_gold(page, researcher, other_researcher):
    study = crowd_study(researcher, "mturk", dict(MTURK_CONFIG), start=False, gold_every=1)
    html = page.get(f"/studies/{study.uid}/crowd/preview/").content.decode()
    task = json.loads(
        re.search(r'<script id="hatlab-task" type="application/json">(.*?)</script>', html, re.S)[1]
    )
    sample = task["sample"]
    assert sample["item"]["kind"] == "highlight" and sample["item"]["payload"]["words"]
    assert (
        "page_token" not in json.dumps(task)
        and "gold" not in json.dumps(task)
        and "secret" not in json.dumps(task)
    )
    assert 'id="hatlab-app"' in html
    stranger = Client()
    stranger.force_login(other_researcher)
    assert stranger.get(f"/studies/{study.uid}/crowd/preview/").status_code == 404


def embedded_task(html: str) -> dict:
    return json.loads(
        re.search(r'<script id="hatlab-task" type="application/json">(.*?)</script>', html, re.S)[1]
    )


def test_an_mturk_workers_preview_shows_a_sample_item_and_creates_no_worker(researcher):
    """Before accepting a HIT a worker sees the real task with a sample item (never a gold), and nobody
    is recorded; a study that is not running shows the instructions only."""
    study = crowd_study(researcher, "mturk", dict(MTURK_CONFIG), gold_every=1)
    preview = f"/w/{study.uid}/?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId=HITX"
    html = Client().get(preview).content.decode()
    sample = embedded_task(html)["sample"]
    assert (
        sample["item"]["payload"]["words"]
        and "Accept the task on Amazon Mechanical Turk" in sample["message"]
    )
    assert "gold" not in json.dumps(sample) and "secret" not in json.dumps(sample)
    assert not Worker.objects.exists()
    study.status = Study.Status.PAUSED
    study.save(update_fields=["status"])
    assert 'id="hatlab-task"' not in Client().get(preview).content.decode()
