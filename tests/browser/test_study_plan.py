"""A study's plan in a real browser, and the worker's honest progress: a forced-choice study of 4 texts ×
4 methods with 3 answers per question says, before Start, that it needs 48 answers from 12 workers
(one method per text: 4 questions a worker) and warns that no invite is open yet; a worker is told
"question 1 of 4", answers 4 and is done; the study then counts 4 of 48 answers. Screenshots of the
study page (laptop and phone) and of the worker's page are kept in tests/browser/output/."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User

from annotate.access import RESEARCHER_GROUP
from annotate.crowd.providers.local.adapter import invite_path, make_invite
from annotate.models import Dataset, Document, Publication, Response, Study
from tests.annotate.crowd_helpers import MTURK_CONFIG
from tests.annotate.kinds.forced_choice.test_generation import make_run, make_study, other, predict
from tests.browser.conftest import start_invite
from tests.browser.test_crowd_publish import researcher_and_study
from tests.browser.test_dashboards import signed_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TEXTS = [
    ("The pasta was fresh and the staff were friendly . We will return .", "positive"),
    ("Cold soup , rude waiter and a dirty table . Never again .", "negative"),
    ("The pizza was not great at all . The room was noisy too .", "negative"),
    ("I would not call the dessert bland . Lovely coffee as well .", "positive"),
]
METHODS = ["grad_l2_1s", "occ_1", "lrp", "deeplift"]
PASSWORD = "a-long-test-password"


def draft_study() -> Study:
    """A draft justify study: 4 texts (2 predicted right, 2 wrong) × 4 methods, 3 workers per question."""
    owner = User.objects.create_user("rita", password=PASSWORD)
    owner.groups.add(Group.objects.get_or_create(name=RESEARCHER_GROUP)[0])
    dataset = Dataset.objects.create(owner=owner, name="reviews", labels=["negative", "positive"])
    Document.objects.bulk_create(
        [Document.from_text(dataset, f"r{i}", text, label=label) for i, (text, label) in enumerate(TEXTS)]
    )
    run = make_run(owner, dataset, "good")
    for i, doc in enumerate(dataset.documents.order_by("id")):
        predict(run, doc, doc.label if i < 2 else other(doc.label), 0.96, methods=METHODS)
    config = {"model_run": run.pk, "n_texts": 4, "methods": METHODS, "seed": 1}
    study = make_study(owner, dataset, "justify", config, annotators=3)
    study.name = "Justify, 4 texts × 4 methods"
    study.save()
    return study


def sign_in(page, base: str) -> None:
    page.goto(base + "/login/")
    page.fill("input[name=username]", "rita")
    page.fill("input[name=password]", PASSWORD)
    page.locator("form button[type=submit], form input[type=submit]").last.click()
    page.wait_for_url(lambda url: "/login/" not in url)


def test_the_plan_before_start_and_the_workers_question_count(
    live_server, browser_context, mobile_context, output_dir
):
    study = draft_study()
    page = browser_context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    sign_in(page, live_server.url)
    page.goto(live_server.url + f"/studies/{study.uid}/")
    plan = page.locator("#plan")
    assert page.locator("#plan-answers").text_content() == "48"
    assert page.locator("#plan-workers").text_content() == "12"
    assert page.locator("#plan-share").text_content() == "4"
    assert "a worker answers one method per text" in plan.text_content()
    warning = page.locator(".plan-warning").first.text_content()
    assert (
        "The plan needs 12 workers but only 0 invite links are made (not revoked): create 12 more" in warning
    )
    assert page.locator("#plan-costs tbody tr").count() == 2  # MTurk and Prolific, each with its fee rule
    plan.screenshot(path=str(output_dir / "plan_laptop.png"))
    page.screenshot(path=str(output_dir / "study_page_laptop.png"), full_page=True)

    phone = mobile_context.new_page()
    sign_in(phone, live_server.url)
    phone.goto(live_server.url + f"/studies/{study.uid}/")
    assert phone.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    phone.locator("#plan").screenshot(path=str(output_dir / "plan_phone.png"))

    page.get_by_role("button", name="Start").click()
    page.wait_for_selector(".badge.running")
    assert "0 of 48" in page.locator("#verification-counts").text_content()

    worker = browser_context.new_page()
    worker.on("pageerror", lambda e: errors.append(str(e)))
    start_invite(worker, live_server.url + invite_path(study, make_invite(study, "w1")))
    for number in range(1, 5):
        worker.wait_for_selector(
            f"#hatlab-app[data-state='item'] .ht-progress-text:text-is('Your question {number} of 4')"
        )
        if number == 1:
            worker.screenshot(path=str(output_dir / "worker_question_1_of_4.png"), full_page=True)
        worker.get_by_role("button", name="positive confident").click()
        worker.get_by_role("button", name="Submit and continue").click()
    worker.wait_for_selector("#hatlab-app[data-state='done']")
    worker.screenshot(path=str(output_dir / "worker_done.png"), full_page=True)
    answered = Response.objects.filter(study=study)
    assert answered.count() == 4
    assert len(set(answered.values_list("item__document_id", flat=True))) == 4  # one method per text

    page.reload()
    assert "4 of 48" in page.locator("#verification-counts").text_content()
    assert not errors


def test_a_refused_publish_leaves_the_draft_as_it_was(live_server, browser_context, settings, output_dir):
    """MTurk without an HTTPS address: the crowd page says so before the confirm step, the confirm page
    says publishing would be refused, and confirming changes nothing: the draft keeps Edit and Delete."""
    settings.HATLAB_PUBLIC_URL = "http://127.0.0.1:8000"
    owner, study = researcher_and_study("mturk")
    Study.objects.filter(pk=study.pk).update(provider_config={**MTURK_CONFIG, "trust_qualification": False})
    page, errors = signed_in(browser_context, live_server, owner)
    page.goto(live_server.url + f"/studies/{study.uid}/crowd/")
    assert page.locator("#preconditions li[data-check='HTTPS task address'][data-ok='no']").count() == 1
    assert "MTurk shows only HTTPS task pages" in page.locator("#preconditions").inner_text()
    page.locator("#preconditions").screenshot(path=str(output_dir / "preconditions.png"))
    page.get_by_role("button", name="Publish…").click()
    page.wait_for_selector("#unmet")
    assert "Publishing would be refused, and nothing would change" in page.locator("#unmet").inner_text()
    page.screenshot(path=str(output_dir / "confirm_refused.png"), full_page=True)
    page.click("#confirm-button")
    page.wait_for_selector(".messages")
    assert "set HATLAB_PUBLIC_URL" in page.locator(".messages").inner_text()
    page.goto(live_server.url + f"/studies/{study.uid}/")
    assert page.locator("h1 .badge.draft").count() == 1
    assert (
        page.get_by_role("link", name="Edit").count() == 1
        and page.get_by_role("link", name="Delete").count() == 1
    )
    page.screenshot(path=str(output_dir / "still_a_draft.png"), full_page=True)
    study.refresh_from_db()
    assert study.status == Study.Status.DRAFT and not Publication.objects.exists()
    assert not errors
