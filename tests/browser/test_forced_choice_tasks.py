"""The three forced-choice task pages of Lertvittayakumjorn & Toni 2019 in a real browser: a worker answers one question of
``reveal_model`` with the keyboard, one of ``justify`` with the mouse and one of ``investigate`` by
tapping on a phone; what was stored is checked in the database, and the pages and API answers are
checked for method names and correct answers. The researcher's results page is drawn at the end."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth.models import Group, User

from annotate.access import RESEARCHER_GROUP
from annotate.crowd.providers.local.adapter import invite_path, make_invite
from annotate.models import Dataset, Document, Item, Response, Study
from annotate.studies.lifecycle import start_study
from tests.annotate.kinds.forced_choice.test_generation import make_run, make_study, other, predict
from tests.browser.conftest import start_invite

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TEXTS = [
    ("The pasta was fresh and the staff were friendly . We will return .", "positive"),
    ("Cold soup , rude waiter and a dirty table . Never again .", "negative"),
    ("The pizza was not great at all . The room was noisy too .", "negative"),
    ("I would not call the dessert bland . Lovely coffee as well .", "positive"),
]
METHODS = ["grad_l2_1s", "occ_1"]
SECRET_KEYS = ('"method"', '"method_label"', '"sides"', '"answer"', '"true_label"', '"split"', '"better_run"')


def make_studies() -> tuple[User, dict[str, Study]]:
    """A running study of each kind over the four texts (two predicted right, two wrong)."""
    owner = User.objects.create_user("rita", password="a-long-test-password")
    owner.groups.add(Group.objects.get_or_create(name=RESEARCHER_GROUP)[0])
    dataset = Dataset.objects.create(owner=owner, name="reviews", labels=["negative", "positive"])
    docs = [Document.from_text(dataset, f"r{i}", text, label=label) for i, (text, label) in enumerate(TEXTS)]
    Document.objects.bulk_create(docs)
    docs = list(dataset.documents.order_by("id"))
    good, poor, unsure = (make_run(owner, dataset, n) for n in ("good", "poor", "unsure"))
    for i, doc in enumerate(docs):
        right = i < 2
        predict(good, doc, doc.label if right else other(doc.label), 0.96)
        predict(poor, doc, doc.label if i == 0 else other(doc.label), 0.8)
        predict(unsure, doc, doc.label if right else other(doc.label), 0.58)
    configs = {
        "reveal_model": {"better_run": good.pk, "worse_run": poor.pk, "min_accuracy_gap": 0.0},
        "justify": {"model_run": good.pk},
        "investigate": {"model_run": unsure.pk},
    }
    studies = {}
    for kind, config in configs.items():
        study = make_study(owner, dataset, kind, {**config, "n_texts": 2, "methods": METHODS, "seed": 1})
        start_study(study)
        studies[kind] = study
    return owner, studies


def open_study(context, live_server, study: Study, who: str):
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    bodies: list[str] = []
    page.on("response", lambda r: bodies.append(r.text()) if "/api/work/" in r.url else None)
    start_invite(page, live_server.url + invite_path(study, make_invite(study, who)))
    page.wait_for_selector("#hatlab-app[data-state='item'] .ht-progress-text:text-is('Your question 1 of 2')")
    return page, errors, bodies


def no_secrets(page, bodies: list[str], study: Study) -> None:
    everything = page.content() + "\n".join(bodies)
    for name in [*METHODS, *(m["label"] for m in study.config["methods"])]:
        assert not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", everything), name
    for key in SECRET_KEYS:
        assert key not in everything, key


def current_item(study: Study) -> Item:
    """The question the (only) worker of ``study`` holds now."""
    return Item.objects.get(study=study, assignments__status="assigned")


def test_three_tasks_answered_with_keyboard_mouse_and_touch(
    live_server, browser_context, mobile_context, output_dir
):
    owner, studies = make_studies()

    # ---- reveal_model, keyboard only ---------------------------------------------------------
    study = studies["reveal_model"]
    page, errors, bodies = open_study(browser_context, live_server, study, "kb-1")
    item = current_item(study)
    assert page.locator(".fc-predicted strong").text_content() == item.payload["predicted"]
    for side in "AB":
        marked = page.locator(f".fc-side[data-side='{side}'] mark").all_text_contents()
        words = item.payload["words"]
        expected = [" ".join(words[a:b]) for a, b in item.payload["evidence"][side]]
        assert sorted(" ".join(marked).split()) == sorted(" ".join(expected).split())
    assert page.locator(".fc-choice").count() == 5
    page.screenshot(path=str(output_dir / "reveal_model.png"), full_page=True)
    page.keyboard.press("4")  # Model B, not confident
    assert page.locator(".fc-choice").nth(3).get_attribute("aria-pressed") == "true"
    page.keyboard.press("Enter")
    page.wait_for_selector(".ht-progress-text:text-is('Your question 2 of 2')")
    stored = Response.objects.get(study=study)
    assert stored.item_id == item.pk and stored.answer == {"choice": "B", "confident": False}
    assert stored.answer_ms >= stored.read_ms >= 0
    no_secrets(page, bodies, study)
    assert not errors

    # ---- justify, mouse ----------------------------------------------------------------------
    study = studies["justify"]
    page, errors, bodies = open_study(browser_context, live_server, study, "mouse-1")
    item = current_item(study)
    assert page.locator(".fc-snippet").all_text_contents() == item.payload["evidence"]
    assert page.locator(".fc-text").count() == 0  # only the evidence, not the document
    page.screenshot(path=str(output_dir / "justify.png"), full_page=True)
    page.get_by_role("button", name="positive confident").click()
    page.get_by_role("button", name="Submit and continue").click()
    page.wait_for_selector(".ht-progress-text:text-is('Your question 2 of 2')")
    assert Response.objects.get(study=study).answer == {"choice": "positive", "confident": True}
    no_secrets(page, bodies, study)
    assert not errors

    # ---- investigate, touch on a phone ----------------------------------------------------------
    study = studies["investigate"]
    page, errors, bodies = open_study(mobile_context, live_server, study, "phone-1")
    item = current_item(study)
    assert page.locator(".fc-predicted strong").text_content() == item.payload["predicted"]
    assert "0.58 (58 %)" in page.locator(".fc-predicted").text_content()
    headings = page.locator(".fc-group h3").all_text_contents()
    assert headings == [
        f"Evidence for {item.payload['predicted']}",
        f"Evidence for {other(item.payload['predicted'])}",
    ]
    assert page.locator(".fc-choice").count() == 4  # no "no preference"

    def tap(locator) -> None:
        locator.scroll_into_view_if_needed()
        box = locator.bounding_box()
        assert box["height"] >= 44  # large enough to tap
        page.touchscreen.tap(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)

    tap(page.get_by_role("button", name="negative not confident"))
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.screenshot(path=str(output_dir / "investigate_phone.png"), full_page=True)
    tap(page.locator(".ht-submit"))
    page.wait_for_selector(".ht-progress-text:text-is('Your question 2 of 2')")
    assert Response.objects.get(study=study).answer == {"choice": "negative", "confident": False}
    no_secrets(page, bodies, study)
    assert not errors

    # ---- the researcher's results page ------------------------------------------------------------
    page = browser_context.new_page()
    page.goto(live_server.url + "/login/")
    page.fill("input[name=username]", "rita")
    page.fill("input[name=password]", "a-long-test-password")
    page.locator("form button[type=submit], form input[type=submit]").last.click()
    page.goto(live_server.url + f"/studies/{studies['justify'].uid}/results/")
    page.wait_for_selector("canvas[data-hatlab-chart='means-chart']")
    page.wait_for_function("document.querySelectorAll('.hatlab-csv-link').length >= 2")
    assert "Table 4" in page.content()
    assert json.loads(page.locator("#means-chart").text_content())["labels"] == [
        "grad_l2_1s (W)",
        "occ_1 (W)",
    ]
    page.screenshot(path=str(output_dir / "results.png"), full_page=True)
    page.goto(live_server.url + "/forced-choice/new/")
    page.get_by_role("button", name="Create study").wait_for()
    # the family's stylesheet (frontend/src/kinds/forced_choice.css) sets the method lists in columns
    assert page.eval_on_selector("#id_methods", "e => getComputedStyle(e).columnCount") in ("2", "3")
    page.screenshot(path=str(output_dir / "new_study_form.png"), full_page=True)
