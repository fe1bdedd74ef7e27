"""A researcher runs a crowd study from the browser alone: fills the provider's settings, reads the cost
(computed here, with the fee rule), previews the task with a sample item, publishes after confirming,
and uses every action on the publication (add places, extend, pause / resume, approve and reject in
bulk with a reason, bonus, expire), each confirmed and written to the audit log on the page. MTurk's
sandbox is botocore's Stubber on the app's own client (every request checked against MTurk's API model);
Prolific is the local fake of its API. A second test covers the invite manager of an invite-only study.
Screenshots go to tests/browser/output/<test>/."""

from __future__ import annotations

from datetime import timedelta

import boto3
import pytest
from botocore.stub import ANY, Stubber
from django.utils import timezone
from playwright.sync_api import expect

from annotate.access import RESEARCHER_GROUP
from annotate.crowd.providers import get_provider
from annotate.crowd.providers.mturk import client as mturk_client
from annotate.crowd.providers.mturk.settings import MTurkConfig
from annotate.crowd.providers.prolific.client import ProlificClient
from annotate.models import CrowdAction, Invite, Payment, PlatformSubmission, Publication, Study
from tests.annotate.conftest import make_dataset, make_study, make_user, make_worker
from tests.annotate.crowd_helpers import answer, ordinary
from tests.annotate.fake_prolific import FakeProlific
from tests.browser.test_dashboards import signed_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def researcher_and_study(provider: str, **fields) -> tuple:
    owner = make_user("rhea", RESEARCHER_GROUP)
    dataset = make_dataset(owner, n=6, gold_every=3, name=f"reviews-{provider}")
    study = make_study(owner, dataset, start=False, provider=provider, provider_config={}, name=f"{provider} study",
                       annotators_per_item=1, **fields)  # fmt: skip
    return owner, study


def confirm(page, *, live: bool = False) -> str:
    """Read the confirmation page, tick the live box when asked, and confirm; returns what it said."""
    page.wait_for_selector("#confirm-what")
    said = page.locator("#confirm-what").inner_text()
    if live:
        page.check("#confirm-live")
    page.click("#confirm-button")
    page.wait_for_selector("#audit-log, .messages")
    return said


def flash(page) -> str:
    return page.locator(".messages").inner_text()


def fill_settings(page, values: dict[str, str], untick: tuple[str, ...] = ()) -> None:
    form = page.locator("#provider-settings")
    for name, value in values.items():
        form.locator(f"[name='{name}']").fill(value)
    for name in untick:
        form.locator(f"[name='{name}']").uncheck()
    form.get_by_role("button", name="Save settings").click()
    page.wait_for_selector(".messages")


def submitted_work(study: Study, publication: Publication, provider: str, ids: list[tuple[str, str]]) -> list:
    """Workers who answered here and whose work the platform lists as submitted (as reconciliation
    records it)."""
    rows = []
    for worker_id, external_id in ids:
        worker = make_worker(worker_id, provider=provider)
        answer(study, worker, ordinary(study)[0])
        rows.append(PlatformSubmission.objects.create(
            publication=publication, study=study, provider=provider, external_id=external_id, worker=worker,
            worker_external_id=worker_id, platform_status="submitted", submitted_at=timezone.now()))  # fmt: skip
    return rows


@pytest.fixture
def stub(settings):
    settings.HATLAB_PUBLIC_URL = "https://hatlab.example.org"
    settings.MTURK_SANDBOX = True
    boto = boto3.client("mturk", region_name="us-east-1", endpoint_url=mturk_client.SANDBOX_ENDPOINT,
                        aws_access_key_id="test", aws_secret_access_key="test")  # fmt: skip
    provider = get_provider("mturk")
    provider.use_client(mturk_client.MTurkClient(boto, sandbox=True, sleep=lambda s: None))
    with Stubber(boto) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()
    provider.use_client(None)


def test_publish_and_manage_on_the_mturk_sandbox(live_server, browser_context, stub, output_dir):
    owner, study = researcher_and_study("mturk")
    page, errors = signed_in(browser_context, live_server, owner)
    page.goto(f"{live_server.url}/studies/{study.uid}/")
    assert "Workers come through Amazon Mechanical Turk" in page.locator("#access").inner_text()
    page.get_by_role("link", name="Crowd", exact=True).click()
    assert "The cost cannot be computed yet" in page.locator("#estimate-error").inner_text()

    # ---- settings, from the provider's declarations -------------------------------------------------
    fill_settings(page, {"title": "Highlight sentiment words", "description": "Read a review, mark its words.",
                         "reward": "0.50", "hits": "1", "assignments_per_hit": "3"},
                  untick=("trust_qualification",))  # fmt: skip
    assert "Settings saved" in flash(page)
    assert "3 × 0.50 USD" in page.locator("#estimate").inner_text()
    assert "1.80 USD" in page.locator("#estimate").inner_text()
    assert "requester.mturk.com/pricing" in page.locator("#fee-rule").inner_text()
    stub.add_response("get_account_balance", {"AvailableBalance": "25.00"}, {})
    page.get_by_role("link", name="Check the balance").click()
    assert "25.00" in page.locator("#estimate").inner_text()
    page.screenshot(path=str(output_dir / "1-settings-and-cost.png"), full_page=True)

    # ---- preview: the real task page with a sample item, sending nothing -----------------------------
    page.click("#preview-link")
    page.wait_for_selector("#hatlab-app[data-state='preview'] .hl-word")
    assert "Nothing you enter is saved" in page.locator(".ht-status").inner_text()
    assert page.locator(".ht-submit").is_disabled()
    page.screenshot(path=str(output_dir / "2-preview.png"), full_page=True)
    page.go_back()

    # ---- publish, confirmed ------------------------------------------------------------------------
    parsed = MTurkConfig.from_dict(Study.objects.get(pk=study.pk).provider_config)
    stub.add_response("create_hit_type", {"HITTypeId": "HTB1"}, {
        "AutoApprovalDelayInSeconds": 259200, "AssignmentDurationInSeconds": 3600, "Reward": "0.50",
        "Title": parsed.title, "Description": parsed.description,
        "QualificationRequirements": parsed.requirements(None, 0.7)})  # fmt: skip
    stub.add_response("create_hit_with_hit_type", {"HIT": {"HITId": "HITB1", "HITTypeId": "HTB1",
                      "HITGroupId": "GB1", "Expiration": timezone.now() + timedelta(days=7)}},
                      {"HITTypeId": "HTB1", "MaxAssignments": 3, "LifetimeInSeconds": 604800, "Question": ANY,
                       "RequesterAnnotation": ANY, "UniqueRequestToken": ANY})  # fmt: skip
    page.locator("#publish-form button").click()
    page.wait_for_selector("#confirm-what")
    page.screenshot(path=str(output_dir / "3-confirm-publish.png"), full_page=True)
    said = confirm(page)
    assert "MTurk sandbox" in said and "1.80 USD in all" in said
    assert "publish: done" in flash(page)
    assert "HITB1" in page.locator("#publications").inner_text()
    # the same form sent again (back, resubmit) does nothing
    page.go_back()
    page.go_back()
    page.locator("#publish-form button").click()
    confirm(page)
    assert Publication.objects.filter(study=study).count() == 1

    # ---- actions on the publication ------------------------------------------------------------------
    hit = Publication.objects.get(study=study)
    stub.add_response("create_additional_assignments_for_hit", {}, {"HITId": "HITB1",
                      "NumberOfAdditionalAssignments": 2, "UniqueRequestToken": ANY})  # fmt: skip
    page.fill("#top-up-places", "2")
    page.locator("#top-up-form button").click()
    assert "Open 2 more places" in confirm(page)
    stub.add_response("update_expiration_for_hit", {}, {"HITId": "HITB1", "ExpireAt": ANY})
    page.fill("#extend-seconds", "3600")
    page.locator("#extend-form button").click()
    confirm(page)
    stub.add_response("update_expiration_for_hit", {}, {"HITId": "HITB1", "ExpireAt": ANY})
    page.get_by_role("button", name="Pause…").click()
    confirm(page)
    assert "paused" in page.locator("#publications").inner_text()
    stub.add_response("update_expiration_for_hit", {}, {"HITId": "HITB1", "ExpireAt": ANY})
    page.get_by_role("button", name="Resume…").click()
    confirm(page)
    assert Publication.objects.get(pk=hit.pk).places == 5

    # ---- three workers' work, reviewed in bulk -------------------------------------------------------
    subs = submitted_work(study, hit, "mturk", [("WB1", "ASB1"), ("WB2", "ASB2"), ("WB3", "ASB3")])
    page.reload()
    page.uncheck(f"#sub-{subs[2].pk}")
    page.fill("#review-feedback", "Thank you")
    for s in subs[:2]:
        stub.add_response(
            "approve_assignment", {}, {"AssignmentId": s.external_id, "RequesterFeedback": "Thank you"}
        )
    page.get_by_role("button", name="Approve chosen…").click()
    assert "Approve 2 submitted" in confirm(page)
    page.fill("#review-feedback", "The highlighted words do not match the review.")
    stub.add_response("reject_assignment", {}, {"AssignmentId": "ASB3",
                      "RequesterFeedback": "The highlighted words do not match the review."})  # fmt: skip
    page.get_by_role("button", name="Reject chosen…").click()
    assert "Reject 1 submitted" in confirm(page)
    cells = [c.inner_text() for c in page.locator("#publications tbody tr td").all()]
    assert cells[2:8] == [
        "5",
        "2",
        "0",
        "0",
        "2",
        "1",
    ]  # places, available, in progress, submitted, approved, rejected

    # ---- bonus, then expire ------------------------------------------------------------------------
    page.select_option("#bonus-worker", label=subs[0].worker.pseudonym_for(study.owner_id))
    page.fill("#bonus-amount", "0.40")
    page.fill("#bonus-reason", "Careful highlighting")
    stub.add_response("send_bonus", {}, {"WorkerId": "WB1", "BonusAmount": "0.40", "AssignmentId": "ASB1",
                      "Reason": "Careful highlighting", "UniqueRequestToken": ANY})  # fmt: skip
    page.get_by_role("button", name="Pay bonus…").click()
    assert "Pay a bonus of 0.40" in confirm(page)
    stub.add_response("update_expiration_for_hit", {}, {"HITId": "HITB1", "ExpireAt": ANY})
    page.get_by_role("button", name="Expire…").click()
    confirm(page)
    assert Payment.objects.filter(kind="bonus", status="sent").count() == 1
    log = page.locator("#audit-log").inner_text()
    for action in ("publish", "top-up", "extend", "pause", "resume", "approve", "reject", "bonus", "expire"):
        assert f"\t{action}\t" in log, action
    assert set(CrowdAction.objects.values_list("outcome", flat=True)) == {"done"}
    assert CrowdAction.objects.count() == 9
    page.screenshot(path=str(output_dir / "4-published-and-managed.png"), full_page=True)
    assert errors == []


def test_publish_and_manage_on_prolific(live_server, browser_context, settings, output_dir):
    settings.HATLAB_PUBLIC_URL = "https://hatlab.example.org"
    fake = FakeProlific().start()
    provider = get_provider("prolific")
    provider.use_client(ProlificClient(fake.token, fake.url))
    try:
        owner, study = researcher_and_study("prolific")
        page, errors = signed_in(browser_context, live_server, owner)
        page.goto(f"{live_server.url}/studies/{study.uid}/crowd/")
        fill_settings(page, {"name": "Sentiment words", "description": "Mark the words that show the sentiment.",
                             "reward": "1.20", "places": "3", "estimated_minutes": "8"})  # fmt: skip
        assert "4.80 GBP" in page.locator("#estimate").inner_text()  # 3.60 + 33.33 % fee
        assert "prolific.com/pricing" in page.locator("#fee-rule").inner_text()
        page.locator("#publish-form button").click()
        page.click("#confirm-button")  # without the live box the form is not sent
        assert page.evaluate("document.querySelector('#confirm-live').validity.valueMissing")
        assert not fake.studies
        said = confirm(page, live=True)
        assert "real participants are paid real money" in said
        [prolific_id] = fake.studies
        assert fake.studies[prolific_id]["status"] == "ACTIVE"
        assert prolific_id in page.locator("#publications").inner_text()
        page.fill("#top-up-places", "2")
        page.locator("#top-up-form button").click()
        confirm(page)
        assert fake.studies[prolific_id]["total_available_places"] == 5
        page.get_by_role("button", name="Pause…").click()
        confirm(page)
        assert fake.studies[prolific_id]["status"] == "PAUSED"
        page.get_by_role("button", name="Resume…").click()
        confirm(page)
        assert fake.studies[prolific_id]["status"] == "ACTIVE"
        publication = Publication.objects.get(study=study)
        ids = [(f"p{i}", fake.add_submission(prolific_id, f"p{i}")) for i in range(3)]
        subs = submitted_work(Study.objects.get(pk=study.pk), publication, "prolific", ids)
        page.reload()
        page.uncheck(f"#sub-{subs[2].pk}")
        page.get_by_role("button", name="Approve chosen…").click()
        confirm(page)
        page.fill("#review-feedback", "The answers do not match the texts; the checks were failed.")
        page.get_by_role("button", name="Reject chosen…").click()
        confirm(page)
        assert [fake.submissions[s.external_id]["status"] for s in subs] == [
            "APPROVED",
            "APPROVED",
            "REJECTED",
        ]
        page.select_option("#bonus-worker", label=subs[1].worker.pseudonym_for(study.owner_id))
        page.fill("#bonus-amount", "0.50")
        page.fill("#bonus-reason", "Thorough work")
        page.get_by_role("button", name="Pay bonus…").click()
        confirm(page)
        assert [b["payments"] for b in fake.bonuses.values()] == [1]
        page.get_by_role("button", name="Expire…").click()
        confirm(page)
        assert fake.studies[prolific_id]["status"] == "COMPLETED"
        assert CrowdAction.objects.filter(outcome="done").count() == 8
        page.screenshot(path=str(output_dir / "prolific-managed.png"), full_page=True)
        assert errors == []
    finally:
        provider.use_client(None)
        fake.stop()


def test_invite_manager(live_server, browser_context, output_dir):
    owner, study = researcher_and_study("local")
    page, errors = signed_in(browser_context, live_server, owner)
    browser_context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page.goto(f"{live_server.url}/studies/{study.uid}/")
    assert page.locator("#open-link").count() == 0
    page.fill("#id_count", "3")
    page.get_by_role("button", name="Create links").click()
    page.wait_for_selector("#invite-list")
    assert page.locator("#invite-list tbody tr[data-state='unused']").count() == 3
    first = page.locator("#invite-list tbody tr").first
    first.get_by_role("button", name="Copy").click()
    # the clipboard answers asynchronously: wait for the button to say so
    expect(first.get_by_role("button", name="Copied")).to_have_count(1)
    link = page.evaluate("navigator.clipboard.readText()")
    assert link == first.locator("code").inner_text() and "?invite=" in link
    with page.expect_download() as download:
        page.click("#invites-csv")
    assert download.value.suggested_filename == f"invites-{study.uid}.csv"
    first.get_by_role("button", name="Revoke").click()
    page.wait_for_selector("#invite-list tbody tr[data-state='revoked']")
    worker = browser_context.browser.new_context()
    refused = worker.new_page()
    refused.goto(link)
    assert "withdrawn by the research team" in refused.content()
    worker.close()
    assert Invite.objects.filter(study=study, revoked_at__isnull=False).count() == 1
    page.screenshot(path=str(output_dir / "invites.png"), full_page=True)
    assert errors == []
