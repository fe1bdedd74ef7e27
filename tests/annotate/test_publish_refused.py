"""Publishing is all or nothing: a publish refused for a precondition (no HTTPS address for MTurk, no
Prolific token) or by the platform leaves the study as it was, a draft with its Edit and Delete; the
refusal is a sentence naming what to set. Only a batch part of which reached the platform is kept. MTurk
through botocore's Stubber, as in the other crowd tests."""

from __future__ import annotations

import html
import re

import boto3
import pytest
from botocore.stub import Stubber
from django.test import Client

from annotate.crowd.providers import get_provider
from annotate.crowd.providers.mturk import client as mturk_client
from annotate.models import CrowdAction, Item, Publication, Study
from tests.annotate.conftest import make_dataset, make_study
from tests.annotate.crowd_helpers import MTURK_CONFIG, PROLIFIC_CONFIG
from tests.annotate.test_publish_page import no_aws  # noqa: F401 (a fixture)


def text_of(response) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", response.content.decode())).split())


@pytest.fixture
def page(researcher) -> Client:
    client = Client()
    client.force_login(researcher)
    return client


@pytest.fixture
def stubbed(settings):
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


def draft(owner, provider: str, config: dict) -> Study:
    dataset = make_dataset(owner, n=6, gold_every=3)
    return make_study(owner, dataset, start=False, provider=provider, provider_config=config)


def assert_still_a_draft(page, study: Study) -> None:
    study.refresh_from_db()
    assert study.status == Study.Status.DRAFT
    assert not Item.objects.filter(study=study).exists()  # nothing was built
    assert not Publication.objects.filter(study=study).exists()
    shown = page.get(f"/studies/{study.uid}/").content.decode()
    assert f'href="/studies/{study.uid}/edit/"' in shown and f'href="/studies/{study.uid}/delete/"' in shown


def test_mturk_without_https_is_refused_before_anything_changes(page, researcher, stubbed, settings):
    settings.HATLAB_PUBLIC_URL = "http://127.0.0.1:8000"
    study = draft(researcher, "mturk", {**MTURK_CONFIG, "trust_qualification": False})
    crowd = text_of(page.get(f"/studies/{study.uid}/crowd/"))
    assert "missing HTTPS task address: MTurk shows only HTTPS task pages" in crowd  # before confirming
    asked = text_of(page.post(f"/studies/{study.uid}/crowd/publish/", {"key": "k1"}))
    assert "Publishing would be refused, and nothing would change" in asked
    done = text_of(
        page.post(f"/studies/{study.uid}/crowd/publish/", {"key": "k1", "confirmed": "yes"}, follow=True)
    )
    assert (
        "publish: MTurk shows only HTTPS task pages and the task's address is http://127.0.0.1:8000/w/"
        in done
    )
    assert "set HATLAB_PUBLIC_URL in the server's environment" in done
    assert CrowdAction.objects.get(study=study).outcome == "refused"
    assert_still_a_draft(page, study)  # no call reached the Stubber either


def test_prolific_without_a_token_is_refused_and_the_draft_keeps_edit_and_delete(page, researcher, settings):
    settings.PROLIFIC_API_TOKEN = ""
    get_provider("prolific").use_client(None)
    study = draft(researcher, "prolific", dict(PROLIFIC_CONFIG))
    crowd = text_of(page.get(f"/studies/{study.uid}/crowd/"))
    assert "missing Credentials: Set PROLIFIC_API_TOKEN in the server's environment" in crowd
    reply = page.post(
        f"/api/crowd/studies/{study.uid}/publish/", {"key": "k2"}, content_type="application/json"
    )
    assert reply.status_code == 400
    assert reply.json()["errors"] == {
        "credentials": ["Set PROLIFIC_API_TOKEN in the server's environment to reach Prolific."]
    }
    assert_still_a_draft(page, study)


def test_a_publish_the_platform_refuses_rolls_the_study_back(page, researcher, stubbed):
    study = draft(researcher, "mturk", {**MTURK_CONFIG, "hits": 1, "trust_qualification": False})
    stubbed.add_client_error("create_hit_type", service_error_code="RequestError",
                             service_message="Insufficient funds in your account.", http_status_code=400)  # fmt: skip
    done = text_of(
        page.post(f"/studies/{study.uid}/crowd/publish/", {"key": "k3", "confirmed": "yes"}, follow=True)
    )
    assert "publish:" in done and "Insufficient funds" in done
    assert_still_a_draft(page, study)


def test_a_batch_partly_on_the_platform_is_kept(page, researcher, stubbed):
    study = draft(researcher, "mturk", {**MTURK_CONFIG, "hits": 2, "trust_qualification": False})
    stubbed.add_response("create_hit_type", {"HITTypeId": "HT1"})
    stubbed.add_response("create_hit_with_hit_type", {"HIT": {"HITId": "HITA", "HITTypeId": "HT1"}})
    stubbed.add_client_error("create_hit_with_hit_type", service_error_code="RequestError",
                             service_message="Insufficient funds in your account.", http_status_code=400)  # fmt: skip
    stubbed.add_response("list_hits", {"HITs": [], "NumResults": 0})  # no HIT of that token: raised
    page.post(f"/studies/{study.uid}/crowd/publish/", {"key": "k4", "confirmed": "yes"})
    study.refresh_from_db()
    assert study.status == Study.Status.RUNNING  # HITA is on MTurk: what was made there is kept here
    assert list(Publication.objects.exclude(external_id="").values_list("external_id", flat=True)) == ["HITA"]


def test_credentials_are_looked_for_not_assumed_from_a_built_client(researcher, no_aws):  # noqa: F811
    study = draft(researcher, "mturk", dict(MTURK_CONFIG))
    provider = get_provider("mturk")
    assert provider.client is not None  # built from the settings, as a page asking the balance does
    checks = {c.name: c for c in provider.publish_preconditions(study)}
    assert checks["Credentials"].ok is False
    assert "Set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" in checks["Credentials"].sentence
