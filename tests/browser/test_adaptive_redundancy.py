"""Adaptive redundancy in the browser. Highlight: three annotators answer through their invite links; the
text the first two agree on stops at its minimum of two answers, the one they split on is handed to the third
annotator (who never sees the stopped one, counts one item to do, and is told they are done), and the researcher's study page says
how many answers each text took and why it stopped. Sentence rating: the same with the confidence interval of
the ratings as the rule."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User

from annotate.access import RESEARCHER_GROUP
from annotate.crowd.providers.local.adapter import invite_path, make_invite
from annotate.models import Dataset, Document, Item, Response, Study
from annotate.studies.lifecycle import start_study
from annotate.studies.service import create_study
from tests.browser.conftest import start_invite

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "a-long-test-password"
TEXTS = ("The pizza was great and the staff friendly .", "Fine food , but the wait was long and loud .")
POLICY = {"mode": "adaptive", "min": 2, "max": 3, "rule": "label_share", "threshold": 0.9}


def adaptive_study():
    owner = User.objects.create_user("rosa", password=PASSWORD)
    owner.groups.add(Group.objects.get_or_create(name=RESEARCHER_GROUP)[0])
    dataset = Dataset.objects.create(name="reviews", owner=owner, labels=["positive", "negative"])
    for i, text in enumerate(TEXTS):
        Document.from_text(dataset, f"doc-{i}", text, label="").save()
    study = create_study(
        owner,
        {
            "name": "Adaptive read-first",
            "dataset": dataset.pk,
            "kind": "highlight",
            "config": {"mode": "read_first", "labels": ["positive", "negative"], "redundancy": POLICY},
            "instructions": "Choose the sentiment, then highlight the words that show it.",
            "time_limit_s": 900,
        },
    )
    start_study(study)
    return study


def answer_next(page, label: str, word: int) -> str:
    """Answer the item on the page with ``label`` and one highlighted word; returns the item's first word."""
    page.wait_for_selector("#hatlab-app[data-state='item']")
    first = page.locator(".hl-word").first.text_content()
    page.get_by_role("button", name=label).click()
    page.locator(".hl-word").nth(word).click()
    page.locator(".ht-submit").click()
    return first or ""


def test_a_split_text_gets_a_third_answer_and_an_agreed_one_stops_at_two(live_server, chromium, output_dir):
    study = adaptive_study()
    agreed, split = Item.objects.filter(study=study).order_by("position", "id")
    plan = {"ann-1": ("positive", "positive"), "ann-2": ("positive", "negative")}
    for name, (first_label, second_label) in plan.items():
        context = chromium.new_context(viewport={"width": 1100, "height": 800})
        page = context.new_page()
        start_invite(page, live_server.url + invite_path(study, make_invite(study, name)))
        assert answer_next(page, first_label, 3) == "The"
        assert answer_next(page, second_label, 1) == "Fine"
        page.wait_for_selector("#hatlab-app[data-state='done']")
        context.close()
    agreed.refresh_from_db()
    split.refresh_from_db()
    assert agreed.stop_reason.startswith("label_share 1.000 >= 0.9 at 2") and split.stop_reason == ""

    context = chromium.new_context(viewport={"width": 1100, "height": 800})
    page = context.new_page()
    start_invite(page, live_server.url + invite_path(study, make_invite(study, "ann-3")))
    page.wait_for_selector("#hatlab-app[data-state='item']")
    page.screenshot(path=str(output_dir / "third_annotator_gets_the_split_text.png"), full_page=True)
    assert answer_next(page, "negative", 2) == "Fine"  # the split text, never the stopped one
    page.wait_for_selector("#hatlab-app[data-state='done']")
    context.close()
    split.refresh_from_db()
    assert split.responses_done == 3 and split.stop_reason.startswith("maximum of 3 answers")
    assert Response.objects.filter(item=agreed).count() == 2

    context = chromium.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.goto(live_server.url + "/login/")
    page.fill("input[name=username]", "rosa")
    page.fill("input[name=password]", PASSWORD)
    page.locator("form [type=submit]").last.click()
    page.goto(live_server.url + f"/studies/{study.uid}/")
    section = page.locator("#redundancy")
    section.wait_for()
    assert "adaptive: 2 to 3 answers per item" in section.locator("#redundancy-policy").text_content()
    assert page.locator("#stopped-by-rule").text_content() == "1"
    assert page.locator("#stopped-at-max").text_content() == "1"
    assert page.locator("#answers-saved").text_content() == "1"
    cells = page.locator("#redundancy-items tbody tr").all_inner_texts()
    assert "stopped by its rule" in cells[0] and "\t2\t" in cells[0]
    assert "stopped at the maximum" in cells[1] and "\t3\t" in cells[1]
    section.screenshot(path=str(output_dir / "study_page_adaptive.png"))
    page.screenshot(path=str(output_dir / "study_page.png"), full_page=True)
    context.close()


REVIEW = "The narrator was superb and warm. The plot dragged in the middle."


def test_sentence_ratings_that_agree_stop_and_split_ones_go_to_a_third_rater(
    live_server, chromium, output_dir
):
    """ci_width over the ratings: two equal ratings stop a sentence at its minimum; 1 and 5 ask for more."""
    owner = User.objects.create_user("rosa", password=PASSWORD)
    dataset = Dataset.objects.create(name="audiobooks", owner=owner)
    Document.from_text(dataset, "doc-1", REVIEW, metadata={"perf": 4}).save()
    policy = {"mode": "adaptive", "min": 2, "max": 3, "rule": "ci_width", "threshold": 1.5}
    aspects = [{"name": "performance", "title": "Performance", "rating_field": "perf"}]
    study = create_study(
        owner,
        {
            "name": "Adaptive ratings", "dataset": dataset.pk, "kind": "sentence_rating",
            "config": {"aspects": aspects, "redundancy": policy}, "instructions": "Rate each sentence.",
            "time_limit_s": 900,
        },
    )  # fmt: skip
    start_study(study)
    first, second = Item.objects.filter(study=study).order_by("position", "id")
    plan = {"rater-1": ("4", "1"), "rater-2": ("4", "5")}
    for name, keys in plan.items():
        context = chromium.new_context(viewport={"width": 1100, "height": 800})
        page = context.new_page()
        start_invite(page, live_server.url + invite_path(study, make_invite(study, name)))
        for number, key in enumerate(keys, start=1):
            page.wait_for_selector(f".ht-progress-text:text-is('Your item {number} of 2')")
            page.keyboard.press(key)
            page.keyboard.press("Enter")
        page.wait_for_selector("#hatlab-app[data-state='done']")
        context.close()
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.stop_reason.startswith("ci_width 0.000 <= 1.5 at 2") and second.stop_reason == ""

    context = chromium.new_context(viewport={"width": 1100, "height": 800})
    page = context.new_page()
    start_invite(page, live_server.url + invite_path(study, make_invite(study, "rater-3")))
    page.wait_for_selector("#hatlab-app[data-state='item']")
    assert page.locator(".ht-progress-text").text_content() == "Your item 1 of 1"
    assert page.locator("mark.rt-target").text_content() == "The plot dragged in the middle."
    page.screenshot(path=str(output_dir / "third_rater_gets_the_split_sentence.png"), full_page=True)
    page.keyboard.press("3")
    page.keyboard.press("Enter")
    page.wait_for_selector("#hatlab-app[data-state='done']")
    page.screenshot(path=str(output_dir / "third_rater_done.png"), full_page=True)
    context.close()
    second.refresh_from_db()
    assert second.responses_done == 3 and second.stop_reason.startswith("maximum of 3 answers")
    assert sorted(Response.objects.filter(item=second).values_list("answer__rating", flat=True)) == [1, 3, 5]


FC_TEXTS = [
    ("The pasta was fresh and the staff were friendly . We will return .", "positive"),
    ("Cold soup , rude waiter and a dirty table . Never again .", "negative"),
]


def forced_choice_study_on_the_form(live_server, chromium, output_dir):
    """A justify study made by the researcher on the forced-choice form, with an adaptive policy (label
    share 0.9, 2 to 3 answers per question); one text the model predicts right, one wrong."""
    from tests.annotate.kinds.forced_choice.test_generation import make_run, other, predict

    owner = User.objects.create_user("rita", password=PASSWORD)
    owner.groups.add(Group.objects.get_or_create(name=RESEARCHER_GROUP)[0])
    dataset = Dataset.objects.create(owner=owner, name="reviews", labels=["negative", "positive"])
    for i, (text, label) in enumerate(FC_TEXTS):
        Document.from_text(dataset, f"r{i}", text, label=label).save()
    run = make_run(owner, dataset, "good")
    for i, doc in enumerate(dataset.documents.order_by("id")):
        predict(run, doc, doc.label if i == 0 else other(doc.label), 0.96)
    context = chromium.new_context(viewport={"width": 1100, "height": 900})
    page = context.new_page()
    page.goto(live_server.url + "/login/")
    page.fill("input[name=username]", "rita")
    page.fill("input[name=password]", PASSWORD)
    page.locator("form [type=submit]").last.click()
    page.goto(live_server.url + "/forced-choice/new/?kind=justify")
    page.fill("input[name=name]", "Adaptive justify")
    page.select_option("select[name=model_run]", str(run.pk))
    page.check("input[name=methods][value=occ_1]")
    page.fill("input[name=n_texts]", "2")
    page.select_option("select[name=split]", "all")
    page.select_option("select[name=redundancy]", "adaptive")
    page.fill("input[name=redundancy_min]", "2")
    page.fill("input[name=redundancy_max]", "3")
    page.select_option("select[name=redundancy_rule]", "label_share")
    page.fill("input[name=redundancy_threshold]", "0.9")
    page.locator("#id_redundancy_threshold").scroll_into_view_if_needed()
    page.screenshot(path=str(output_dir / "new_study_form_adaptive.png"), full_page=True)
    with page.expect_navigation():
        page.get_by_role("button", name="Create study").click()
    context.close()
    study = Study.objects.get(name="Adaptive justify")
    assert study.config["redundancy"] == POLICY and study.annotators_per_item == 3
    start_study(study)
    return study


def answer_question(page, study, choice: str) -> Item:
    """Pick ``choice`` (e.g. "positive confident") on the question on the page and submit; the question."""
    page.wait_for_selector("#hatlab-app[data-state='item']")
    item = Item.objects.get(study=study, assignments__status="assigned")
    page.get_by_role("button", name=choice).click()
    page.get_by_role("button", name="Submit and continue").click()
    return item


def test_forced_choice_questions_that_agree_stop_at_two_and_a_split_one_gets_a_third(
    live_server, chromium, output_dir
):
    """label_share reads the option chosen, whatever the confidence: "positive" sure and unsure agree."""
    study = forced_choice_study_on_the_form(live_server, chromium, output_dir)
    assert Item.objects.filter(study=study).count() == 2
    plan = {
        "w-1": ("positive confident", "positive confident"),
        "w-2": ("positive not confident", "negative confident"),
    }
    given: list[list[Item]] = []
    for name, choices in plan.items():
        context = chromium.new_context(viewport={"width": 1100, "height": 800})
        page = context.new_page()
        start_invite(page, live_server.url + invite_path(study, make_invite(study, name)))
        page.wait_for_selector(".ht-progress-text:text-is('Your question 1 of 2')")
        given.append([answer_question(page, study, choice) for choice in choices])
        page.wait_for_selector("#hatlab-app[data-state='done']")
        context.close()
    agreed, split = given[1]
    agreed.refresh_from_db()
    split.refresh_from_db()
    assert agreed.stop_reason.startswith("label_share 1.000 >= 0.9 at 2") and split.stop_reason == ""
    assert split.responses_needed == 3

    context = chromium.new_context(viewport={"width": 1100, "height": 800})
    page = context.new_page()
    start_invite(page, live_server.url + invite_path(study, make_invite(study, "w-3")))
    page.wait_for_selector("#hatlab-app[data-state='item']")
    # the stopped question is not theirs to count: one question, not two
    assert page.locator(".ht-progress-text").text_content() == "Your question 1 of 1"
    page.screenshot(path=str(output_dir / "third_worker_gets_the_split_question.png"), full_page=True)
    assert answer_question(page, study, "negative not confident").pk == split.pk  # never the stopped one
    page.wait_for_selector("#hatlab-app[data-state='done']")
    context.close()
    split.refresh_from_db()
    assert split.responses_done == 3 and split.stop_reason.startswith("maximum of 3 answers")
    assert Response.objects.filter(item=agreed).count() == 2

    context = chromium.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.goto(live_server.url + "/login/")
    page.fill("input[name=username]", "rita")
    page.fill("input[name=password]", PASSWORD)
    page.locator("form [type=submit]").last.click()
    page.goto(live_server.url + f"/studies/{study.uid}/")
    section = page.locator("#redundancy")
    section.wait_for()
    assert "adaptive: 2 to 3 answers per item" in section.locator("#redundancy-policy").text_content()
    assert page.locator("#stopped-by-rule").text_content() == "1"
    assert page.locator("#stopped-at-max").text_content() == "1"
    assert page.locator("#answers-saved").text_content() == "1"
    section.screenshot(path=str(output_dir / "study_page_adaptive.png"))
    context.close()
