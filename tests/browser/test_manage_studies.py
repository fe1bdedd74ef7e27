"""A researcher, with the browser only, creates a study of each kind that has a create form, prepares
its items, marks a gold in the worker's own widget (the kind's task page in gold mode) and sees it
listed; then edits the draft, clones it and deletes the clone. Screenshots of every step are kept under
tests/browser/output/."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from annotate.access import RESEARCHER_GROUP
from annotate.models import Dataset, Document, Item, Study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "a-long-test-password"
TEXT = "The soup was great. The waiter was rude."
INPUT = "A man plays a guitar on stage ."


def researcher():
    user, _ = get_user_model().objects.get_or_create(username="rosa")
    user.set_password(PASSWORD)
    user.save()
    user.groups.add(Group.objects.get_or_create(name=RESEARCHER_GROUP)[0])
    return user


def dataset_for(kind: str, owner) -> Dataset:
    dataset = Dataset.objects.create(name=f"{kind} texts", owner=owner)
    if kind == "token_marking":
        Document.from_text(dataset, "p1", INPUT, label="entailment",
                           metadata={"explanation": "Playing a guitar is music."}).save()  # fmt: skip
    else:
        Document.from_text(dataset, "r1", TEXT, label="positive", metadata={"overall": 4}).save()
    return dataset


def sign_in(page, url: str) -> None:
    page.goto(url + "/login/")
    page.fill("input[name=username]", "rosa")
    page.fill("input[name=password]", PASSWORD)
    page.locator("form [type=submit]").last.click()


def answer_as_gold(page, kind: str) -> None:
    """Answer the item on the gold editor with the worker's controls."""
    page.wait_for_selector("#hatlab-app[data-state='item']")
    if kind == "highlight":
        page.get_by_role("button", name="positive").click()
        page.locator(".hl-word").nth(3).click()  # "great."
    elif kind == "sentence_rating":
        page.get_by_role("button", name="very well").click()
    else:
        page.locator(".hl-word").nth(4).click()  # "guitar"


EXPECTED = {
    "highlight": "label “positive”; words 4 “great.”",
    "sentence_rating": "5 (very well)",
    "token_marking": "words 5 “guitar”",
}


@pytest.mark.parametrize("kind", ["highlight", "sentence_rating", "token_marking"])
def test_create_a_study_and_mark_a_gold_in_the_workers_widget(kind, live_server, browser_context, output_dir):
    owner = researcher()
    dataset = dataset_for(kind, owner)
    page = browser_context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    sign_in(page, live_server.url)
    page.goto(live_server.url + "/studies/")
    page.locator(f"a[data-kind='{kind}']").click()
    page.fill("input[name=name]", "")
    page.locator("button[type=submit]", has_text="Create study").click()
    assert page.locator(".errorlist").first.text_content() == "This field is required."
    page.screenshot(path=str(output_dir / f"{kind}_create_errors.png"), full_page=True)
    page.fill("input[name=name]", f"{kind} from the pages")
    page.select_option("select[name=dataset]", str(dataset.pk))
    page.locator("button[type=submit]", has_text="Create study").click()
    page.wait_for_selector("h1 .badge.draft")
    study = Study.objects.get(name=f"{kind} from the pages")
    assert study.kind == kind and study.status == Study.Status.DRAFT
    page.screenshot(path=str(output_dir / f"{kind}_draft.png"), full_page=True)

    page.get_by_role("link", name="Golds").click()
    page.get_by_role("button", name="Prepare items").click()
    page.locator("#item-1").get_by_role("link", name="Mark as gold").click()
    answer_as_gold(page, kind)
    page.screenshot(path=str(output_dir / f"{kind}_gold_editor.png"), full_page=True)
    page.get_by_role("button", name="Save as the gold answer").click()
    page.wait_for_selector("#hatlab-app[data-state='done']")
    assert page.locator(".ht-done-title").text_content() == "Gold answer saved."
    page.get_by_role("link", name="Back to the golds").click()
    assert page.locator("#item-1 .gold-answer").text_content().strip() == EXPECTED[kind]
    page.screenshot(path=str(output_dir / f"{kind}_golds.png"), full_page=True)
    assert Item.objects.filter(study=study, is_gold=True).count() == 1

    # edit the draft (the gold still fits), clone it, delete the clone
    page.goto(live_server.url + f"/studies/{study.uid}/edit/")
    page.fill("input[name=name]", f"{kind} renamed")
    page.get_by_role("button", name="Save the draft").click()
    page.wait_for_selector("h1:has-text('renamed')")
    assert Item.objects.filter(study=study, is_gold=True).count() == 1
    page.get_by_role("button", name="Clone").click()
    page.wait_for_selector(f"h1:has-text('Copy of {kind} renamed')")
    page.get_by_role("link", name="Delete").click()
    page.screenshot(path=str(output_dir / f"{kind}_delete_confirm.png"), full_page=True)
    page.get_by_role("button", name="Delete the draft").click()
    page.wait_for_selector("h1:has-text('Studies')")
    assert list(Study.objects.values_list("name", flat=True)) == [f"{kind} renamed"]
    assert errors == []
