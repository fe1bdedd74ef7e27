"""A study protocol in a real browser: a researcher creates a highlight study with the study form whose
protocol has consent, a screening question, two training examples with feedback, a post-study
questionnaire, skip and back, previews it and starts it; four annotators run it: one accepts, passes the
training (one example wrong: the expected words shown), goes back to change an answer (the earlier answer
shown again), skips an item with a reason and answers the closing questions; one declines the consent; one does
not qualify; one, on a phone, passes the training and is handed the skipped item. The pages are checked with axe-core; screenshots of every
step go to ``tests/browser/output/``. The stored rows show a decline and a failed screen leave nothing
counted, the skip and the edit recorded, and the exports hold each part."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse

from annotate.crowd.providers.local.adapter import invite_path, make_invite
from annotate.models import (
    Assignment,
    ConsentDecision,
    ItemSkip,
    Response,
    ResponseEdit,
    Study,
    SurveyAnswers,
    TrainingAnswer,
)
from tests.browser.conftest import start_invite
from tests.browser.test_manage_studies import researcher, sign_in
from tests.browser.test_task_pages_phone import axe_problems

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHECK = (
    "Attention check : purple skies over a calm sea .",
    {"label": "negative", "map": [0, 0, 0, 1, 0, 0, 0, 0, 0, 0]},
)
TRAINING = [
    ("Friendly staff and great food .", {"label": "positive", "map": [1, 0, 0, 1, 0, 0]}),
    ("Awful noise and a slow kitchen .", {"label": "negative", "map": [1, 0, 0, 0, 0, 0, 0]}),
]
TEXTS = [
    "The pasta was fresh and the staff were friendly .",
    "Cold soup , a rude waiter and a dirty table .",
    "The pizza was fine but the room was noisy .",
]
PROTOCOL = {
    "consent": "## Taking part\n\nYou will label **three** short reviews. Your answers are used for research "
    "only; you may stop at any time.\n\n<script>alert('not run')</script>",
    "pre_survey": [
        {"id": "english", "type": "single", "prompt": "Is English your first language?", "options": ["yes", "no"]},
        {"id": "age", "type": "number", "prompt": "How old are you?", "min": 18, "max": 120, "integer": True},
    ],
    "screening": [{"question": "english", "accept": ["yes"]}],
    "post_survey": [
        {"id": "clear", "type": "likert", "prompt": "The task was clear.", "points": 5,
         "labels": ["not at all", "completely"]},
        {"id": "comment", "type": "text", "prompt": "Anything else?", "required": False, "max_length": 200},
    ],
    "training": {
        "items": [{"document": "t0", "explanation": "“Friendly” and “great” praise the place."},
                  {"document": "t1", "explanation": "“Awful” is the complaint."}],
        "pass_mark": 0.5,
        "tries": 2,
    },
    "attention": {
        "items": [{"document": "a0", "instruction": "For this item, choose “negative” and highlight only the word “purple”."}],
        "max_failures": 0,
    },
    "skip_reasons": ["I can't judge this", "The text is broken"],
    "back": True,
}  # fmt: skip


def create_study(page, url: str, output_dir) -> Study:
    """The researcher creates the study with the form, previews its protocol and starts it."""
    from annotate.models import Dataset, Document

    owner = researcher()
    dataset = Dataset.objects.create(name="reviews", owner=owner, labels=["positive", "negative"])
    Document.from_text(dataset, "a0", CHECK[0], label="", metadata={"gold": CHECK[1]}).save()
    for i, text in enumerate(TEXTS):
        Document.from_text(dataset, f"r{i}", text, label="").save()
    for i, (text, gold) in enumerate(TRAINING):
        Document.from_text(dataset, f"t{i}", text, label="", metadata={"gold": gold}).save()
    sign_in(page, url)
    page.goto(url + "/studies/")
    page.locator("a[data-kind='highlight']").click()
    page.fill("input[name=name]", "Reviews with a protocol")
    page.select_option("select[name=dataset]", str(dataset.pk))
    page.fill("input[name=annotators_per_item]", "1")
    page.fill("input[name=max_items_per_worker]", "3")
    page.fill("textarea[name=protocol]", '{"back": "yes"}')
    page.locator("button[type=submit]", has_text="Create study").click()
    assert "back: must be true or false" in page.locator(".errorlist").first.text_content()
    page.screenshot(path=str(output_dir / "0_form_error.png"), full_page=True)
    page.fill("textarea[name=protocol]", json.dumps(PROTOCOL, indent=1))
    page.locator("button[type=submit]", has_text="Create study").click()
    page.wait_for_selector("h1 .badge.draft")
    page.get_by_role("link", name="Protocol").click()
    page.wait_for_selector("#consent-preview")
    assert page.locator("#consent-preview strong").first.text_content() == "three"
    assert "<script>" in page.locator("#consent-preview .consent-text").text_content()  # shown as text
    page.screenshot(path=str(output_dir / "1_protocol_preview.png"), full_page=True)
    page.go_back()
    page.get_by_role("button", name="Start").click()
    page.wait_for_selector("h1 .badge.running")
    return Study.objects.get(name="Reviews with a protocol")


def enter(context, url: str, study: Study, name: str):
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    start_invite(page, url + invite_path(study, make_invite(study, name)))
    page.wait_for_selector("[data-protocol='consent']")
    return page, errors


def accept_and_qualify(page, english: str = "yes") -> None:
    page.locator("#consent-accept").click()
    page.wait_for_selector("[data-protocol='pre_survey']")
    page.get_by_label(english, exact=True).check()
    page.locator("#in-age").fill("34")
    page.locator("#survey-submit").click()


def pass_training(page, output_dir=None) -> None:
    """The two worked examples: the first answered wrong (the feedback shows the expected words), the
    second right; one of two passes the mark."""
    page.wait_for_selector(".ht-progress-text:text-is('Training example 1 of 2')")
    page.get_by_role("button", name="negative").click()
    page.locator(".hl-word").nth(0).click()
    page.get_by_role("button", name="Check my answer").click()
    page.wait_for_selector(".ht-feedback[data-passed='false']")
    assert "Expected: label “positive”" in page.locator(".ht-feedback").text_content()
    assert page.locator(".hl-word.hl-expected").all_text_contents() == ["Friendly", "great"]
    if output_dir is not None:
        assert axe_problems(page) == []
        page.screenshot(path=str(output_dir / "3b_training_feedback.png"), full_page=True)
    page.get_by_role("button", name="Continue").click()
    page.wait_for_selector(".ht-progress-text:text-is('Training example 2 of 2')")
    page.get_by_role("button", name="negative").click()
    page.locator(".hl-word").nth(0).click()
    page.get_by_role("button", name="Check my answer").click()
    page.wait_for_selector(".ht-feedback[data-passed='true']")
    page.get_by_role("button", name="Continue").click()


def answer_the_check(page, output_dir=None) -> None:
    """The attention check comes first (golds keep their queue places): its instruction is shown."""
    page.wait_for_selector(".ht-progress-text:text-is('Your item 1 of 3')")
    assert "highlight only the word “purple”" in page.locator(".ht-instruction").text_content()
    page.get_by_role("button", name="negative").click()
    page.locator(".hl-word").nth(3).click()  # "purple"
    if output_dir is not None:
        page.screenshot(path=str(output_dir / "3c_attention_check.png"), full_page=True)
    page.locator(".ht-submit").click()
    page.wait_for_selector(".ht-progress-text:text-is('Your item 2 of 3')")
    assert page.locator(".ht-instruction").is_hidden()


def item_words(page) -> str:
    return " ".join(page.locator(".hl-word").all_text_contents())


def test_a_study_with_a_protocol_run_by_four_annotators(live_server, chromium, output_dir):
    url = live_server.url
    researcher_context = chromium.new_context(viewport={"width": 1100, "height": 900})
    study = create_study(researcher_context.new_page(), url, output_dir)
    assert study.protocol["screening"] == [{"question": "english", "accept": ["yes"]}]

    # ---- annotator 1 (laptop): consent, questions, one answer, back to change it, a skip, closing questions
    laptop = chromium.new_context(viewport={"width": 1366, "height": 768})
    page, errors = enter(laptop, url, study, "ann-1")
    assert axe_problems(page) == []
    assert "<script>" in page.locator(".consent-text").text_content()
    page.screenshot(path=str(output_dir / "2_consent.png"), full_page=True)
    page.locator("#consent-accept").click()
    page.wait_for_selector("[data-protocol='pre_survey']")
    page.locator("#survey-submit").click()  # nothing answered: the required questions say so
    page.wait_for_selector("#q-english-error")
    assert axe_problems(page) == []
    page.screenshot(path=str(output_dir / "3_pre_survey_errors.png"), full_page=True)
    page.get_by_label("yes", exact=True).check()
    page.locator("#in-age").fill("34")
    page.locator("#survey-submit").click()
    pass_training(page, output_dir)
    answer_the_check(page, output_dir)
    first_text = item_words(page)
    assert first_text == TEXTS[0]
    page.get_by_role("button", name="positive").click()
    page.locator(".hl-word").nth(1).click()  # "pasta"
    page.locator(".ht-submit").click()
    page.wait_for_selector(".ht-progress-text:text-is('Your item 3 of 3')")
    second_text = item_words(page)
    page.get_by_role("button", name="Previous item").click()
    page.wait_for_selector(".ht-progress-text:text-is('Changing an earlier answer')")
    assert item_words(page) == first_text
    assert page.get_by_role("button", name="positive").get_attribute("aria-pressed") == "true"
    assert page.locator(".hl-word.is-on").all_text_contents() == ["pasta"]  # the answer sent, shown again
    page.screenshot(path=str(output_dir / "4_back_to_change.png"), full_page=True)
    page.locator(".hl-word").nth(7).click()  # "friendly"
    page.get_by_role("button", name="Save the changed answer").click()
    page.wait_for_selector(".ht-progress-text:text-is('Your item 3 of 3')")
    assert item_words(page) == second_text  # back on the item held before going back
    page.get_by_role("button", name="Skip…").click()
    page.get_by_label("The text is broken").check()
    assert axe_problems(page) == []
    page.screenshot(path=str(output_dir / "5_skip_reason.png"), full_page=True)
    page.get_by_role("button", name="Skip this item").click()
    page.wait_for_selector("[data-protocol='post_survey']")  # the share is done: the closing questions
    page.get_by_label("4", exact=True).check()
    page.locator("#in-comment").fill("Clear <b>enough</b>.")
    assert axe_problems(page) == []
    page.screenshot(path=str(output_dir / "6_post_survey.png"), full_page=True)
    page.locator("#survey-submit").click()
    page.wait_for_selector("[data-end='done']")
    page.screenshot(path=str(output_dir / "7_done.png"), full_page=True)
    assert errors == []

    # ---- annotator 2 (phone): declines ---------------------------------------------------------
    phone = chromium.new_context(viewport={"width": 375, "height": 812}, is_mobile=True, has_touch=True)
    page2, errors2 = enter(phone, url, study, "ann-2")
    page2.screenshot(path=str(output_dir / "8_consent_phone.png"), full_page=True)
    page2.locator("#consent-decline").tap()
    page2.wait_for_selector("[data-end='declined']")
    assert "close this page" in page2.locator("#return-step").text_content()
    assert axe_problems(page2) == []
    page2.screenshot(path=str(output_dir / "9_declined_phone.png"), full_page=True)
    page2.goto(url + reverse("work-done", args=[study.uid]))
    assert "completion" not in page2.content().lower()

    # ---- annotator 3: does not qualify ---------------------------------------------------------
    other = chromium.new_context(viewport={"width": 1100, "height": 900})
    page3, errors3 = enter(other, url, study, "ann-3")
    accept_and_qualify(page3, english="no")
    page3.wait_for_selector("[data-end='screened_out']")
    assert axe_problems(page3) == []
    page3.screenshot(path=str(output_dir / "10_screened_out.png"), full_page=True)

    # ---- annotator 4: is handed the item annotator 1 skipped -------------------------------------
    fourth = chromium.new_context(viewport={"width": 375, "height": 812}, is_mobile=True, has_touch=True)
    page4, errors4 = enter(fourth, url, study, "ann-4")
    accept_and_qualify(page4)
    pass_training(page4)
    answer_the_check(page4)
    assert item_words(page4) == second_text
    assert axe_problems(page4) == []
    for control in ("Previous item", "Skip…", "Submit and continue"):  # thumb-sized on a phone
        assert page4.get_by_role("button", name=control).bounding_box()["height"] >= 44
    page4.screenshot(path=str(output_dir / "11_skipped_item_elsewhere_phone.png"), full_page=True)
    assert errors2 == errors3 == errors4 == []

    # ---- what was stored, and what the researcher sees ------------------------------------------
    decisions = dict(ConsentDecision.objects.values_list("worker__external_id", "accepted"))
    assert decisions == {
        "invite:ann-1": True,
        "invite:ann-2": False,
        "invite:ann-3": True,
        "invite:ann-4": True,
    }
    checks = Response.objects.filter(study=study, item__is_gold=True).order_by("id")
    assert [(r.worker.external_id, r.gold_passed) for r in checks] == [
        ("invite:ann-1", True),
        ("invite:ann-4", True),
    ]
    answered = Response.objects.filter(study=study, item__is_gold=False).select_related("worker")
    assert [r.worker.external_id for r in answered] == ["invite:ann-1"]
    assert answered[0].answer["map"][7] == 1 and answered[0].answer["map"][1] == 1  # the edit replaced it
    assert ResponseEdit.objects.get().previous_answer["map"][7] == 0
    assert ItemSkip.objects.get().reason == "The text is broken"
    leavers = Assignment.objects.filter(worker__external_id__in=["invite:ann-2", "invite:ann-3"])
    assert not leavers.exists()
    trained = TrainingAnswer.objects.filter(study=study)
    assert sorted(trained.values_list("worker__external_id", "passed")) == [
        ("invite:ann-1", False), ("invite:ann-1", True), ("invite:ann-4", False), ("invite:ann-4", True),
    ]  # fmt: skip
    post = SurveyAnswers.objects.get(phase="post")
    assert post.answers == {"clear": 4, "comment": "Clear <b>enough</b>."}

    page_r = researcher_context.new_page()
    page_r.goto(url + reverse("study-results", args=[study.uid]))
    page_r.wait_for_selector("#protocol-results-heading")
    section = page_r.locator(".protocol-results").text_content()
    assert "The text is broken: 1" in section and "1 qualified" not in section  # two qualified
    page_r.locator(".protocol-results").screenshot(path=str(output_dir / "12_results_protocol.png"))
    client = Client()
    client.force_login(study.owner)
    participants = client.get(reverse("study-export", args=[study.uid, "participants", "jsonl"]))
    rows = [json.loads(line) for line in b"".join(participants.streaming_content).decode().splitlines()]
    assert sorted((r["consent_accepted"], r["qualified"]) for r in rows) == sorted(
        [(True, True), (False, None), (True, False), (True, True)]
    )
    for context in (researcher_context, laptop, phone, other, fourth):
        context.close()
