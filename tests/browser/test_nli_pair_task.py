"""The NLI pair page in a real browser: an annotator opens an invite link and answers two pairs, the
first with the mouse, the second with the keyboard only, on a 1366×768 screen; a 375×812 phone answers
a pair by tapping. Read-first blocking and the per-label rules are checked in the page, the stored
maps in the database. Screenshots go to tests/browser/output/."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from django.contrib.auth import get_user_model

from annotate.crowd.providers.local.adapter import invite_path, make_invite
from annotate.models import Dataset, Document, Response, Study
from annotate.studies.lifecycle import start_study
from annotate.tasks import get_kind
from tests.browser.conftest import start_invite

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PAIRS = [
    ("A man in a red jacket rides a bicycle down the street.", "A person is cycling outdoors."),
    ("Two children build a sandcastle on the beach.", "The children are asleep in bed."),
]


def make_study(*pairs: tuple[str, str]) -> Study:
    """A running NLI pair study over ``pairs`` with e-SNLI's default rules (one annotator per pair)."""
    owner = get_user_model().objects.create_user("researcher", password="x" * 12)
    dataset = Dataset.objects.create(name="pairs", owner=owner)
    for i, (premise, hypothesis) in enumerate(pairs):
        Document.from_text(dataset, f"pair-{i}", premise, metadata={"hypothesis": hypothesis}).save()
    study = Study.objects.create(
        name="e-SNLI style",
        owner=owner,
        dataset=dataset,
        kind="nli_pair",
        config=get_kind("nli_pair").validate_config({}),
        instructions="Choose the relation of the hypothesis to the premise, then highlight why.",
        annotators_per_item=1,
        time_limit_s=900,
    )
    start_study(study)
    return study


@pytest.fixture
def laptop(chromium) -> Iterator:
    context = chromium.new_context(viewport={"width": 1366, "height": 768}, locale="en-US")
    context.set_default_timeout(10_000)
    yield context
    context.close()


@pytest.fixture
def phone(chromium) -> Iterator:
    context = chromium.new_context(
        viewport={"width": 375, "height": 812},
        device_scale_factor=2,
        is_mobile=True,
        has_touch=True,
        locale="en-US",
    )
    context.set_default_timeout(10_000)
    yield context
    context.close()


def words(page, side: str):
    return page.locator(f".nli-{side} .hl-word")


def shown_map(page, side: str) -> list[int]:
    states = words(page, side).evaluate_all("ws => ws.map(w => w.getAttribute('aria-checked'))")
    return [int(state == "true") for state in states]


def wait_for_pair(page, number: int, total: int) -> None:
    page.wait_for_selector(
        f"#hatlab-app[data-state='item'] .ht-progress-text:text-is('Your pair {number} of {total}')"
    )


def focused(page) -> str:
    """Where the focus is: the word's text and its text's box, or the element's class."""
    return page.evaluate(
        "(() => { const a = document.activeElement; const box = a.closest('.nli-text');"
        " return box ? box.classList[1] + ':' + a.textContent : a.className; })()"
    )


def test_annotator_answers_with_mouse_then_keyboard(live_server, laptop, output_dir):
    study = make_study(*PAIRS)
    page = laptop.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    start_invite(page, live_server.url + invite_path(study, make_invite(study, "ann-1")))
    config = json.loads(page.locator("#hatlab-task").text_content())
    assert config["kind"] == "nli_pair" and "secret" not in json.dumps(config)

    # ---- pair 1, with the mouse --------------------------------------------------------------
    wait_for_pair(page, 1, 2)
    assert page.locator(".nli-premise .nli-text-title").text_content() == "Premise"
    assert page.locator(".nli-hypothesis .nli-text-title").text_content() == "Hypothesis"
    assert words(page, "premise").all_text_contents() == PAIRS[0][0].split()
    assert words(page, "hypothesis").all_text_contents() == PAIRS[0][1].split()
    # Both texts are on screen together, the premise above the hypothesis.
    premise_box = page.locator(".nli-premise").bounding_box()
    hypothesis_box = page.locator(".nli-hypothesis").bounding_box()
    assert premise_box["y"] + premise_box["height"] <= hypothesis_box["y"] < 768

    # Read-first: no word of either text can be highlighted before a label.
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")  # both texts clear of the answer bar
    words(page, "premise").nth(7).click(force=True)
    words(page, "hypothesis").nth(3).click(force=True)
    assert page.locator(".hl-word.is-on").count() == 0
    assert words(page, "hypothesis").nth(0).get_attribute("aria-disabled") == "true"
    assert page.locator(".ht-submit").is_disabled()
    page.screenshot(path=str(output_dir / "laptop_locked.png"))

    page.get_by_role("button", name="entailment").click()
    assert "at least one word of the premise" in page.locator(".nli-rule").text_content()
    for i in (6, 7, 8):  # "rides a bicycle"
        words(page, "premise").nth(i).click()
    words(page, "hypothesis").nth(3).click()  # "cycling"
    words(page, "premise").nth(0).click()
    page.get_by_role("button", name="Undo").first.click()  # takes "A" back
    assert shown_map(page, "premise") == [0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0]
    assert shown_map(page, "hypothesis") == [0, 0, 0, 1, 0]
    page.screenshot(path=str(output_dir / "laptop_highlighted.png"))
    page.locator(".ht-submit").click()

    # ---- pair 2, with the keyboard only -------------------------------------------------------
    wait_for_pair(page, 2, 2)
    page.keyboard.press("3")  # contradiction
    assert page.get_by_role("button", name="contradiction").get_attribute("aria-pressed") == "true"
    page.keyboard.press("Tab")  # the texts come first: heading → the premise's words
    assert focused(page) == "nli-premise:Two"
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Space")  # children
    page.keyboard.press("Shift+ArrowRight")  # build
    page.keyboard.press("Tab")  # the premise's Undo
    page.keyboard.press("Tab")  # the hypothesis' words
    assert focused(page) == "nli-hypothesis:The"
    page.keyboard.press("End")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("Space")  # asleep
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("Space")  # are ...
    page.keyboard.press("Control+z")  # ... undone in the hypothesis only
    assert shown_map(page, "premise") == [0, 1, 1, 0, 0, 0, 0, 0]
    assert shown_map(page, "hypothesis") == [0, 0, 0, 1, 0, 0]
    page.screenshot(path=str(output_dir / "laptop_keyboard.png"))
    page.keyboard.press("Enter")  # from the words: the answer is complete, Enter submits
    page.wait_for_selector("#hatlab-app[data-state='done']")
    assert errors == []

    responses = list(Response.objects.filter(study=study).order_by("id"))
    assert [r.answer for r in responses] == [
        {
            "label": "entailment",
            "premise_map": [0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0],
            "hypothesis_map": [0, 0, 0, 1, 0],
        },
        {
            "label": "contradiction",
            "premise_map": [0, 1, 1, 0, 0, 0, 0, 0],
            "hypothesis_map": [0, 0, 0, 1, 0, 0],
        },
    ]
    assert responses[0].signals["actions"]["mouse"] == 5 and responses[0].signals["blocked_attempts"] == 2
    assert responses[1].signals["actions"]["keyboard"] == 4 and responses[1].signals["undos"] == 1
    for r in responses:
        t = r.signals["timings"]
        assert t["first_highlight_at_ms"] >= t["label_at_ms"] == r.read_ms


def test_phone_annotator_answers_by_tapping(live_server, phone, output_dir):
    study = make_study(
        ("A woman is playing the violin on a stage.", "The woman is performing at a famous concert hall.")
    )
    page = phone.new_page()
    start_invite(page, live_server.url + invite_path(study, make_invite(study, "phone-1")))
    wait_for_pair(page, 1, 1)

    def tap(locator) -> None:
        locator.scroll_into_view_if_needed()
        box = locator.bounding_box()
        page.touchscreen.tap(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)

    tap(words(page, "hypothesis").nth(6))  # read-first: blocked
    assert page.locator(".hl-word.is-on").count() == 0
    tap(page.get_by_role("button", name="neutral"))
    assert "is-forbidden" in page.locator(".nli-premise").get_attribute("class")
    tap(words(page, "premise").nth(3))  # neutral forbids the premise: the page will not send it
    tap(page.locator(".ht-submit"))
    assert "allows no highlighted word in the premise" in page.locator(".ht-errors").text_content()
    tap(words(page, "premise").nth(3))
    for i in (6, 7):  # "famous concert"
        tap(words(page, "hypothesis").nth(i))
    assert words(page, "hypothesis").nth(6).bounding_box()["height"] >= 24
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(output_dir / "phone.png"), full_page=True)
    tap(page.locator(".ht-submit"))
    page.wait_for_selector("#hatlab-app[data-state='done']")
    response = Response.objects.get(study=study)
    assert response.answer == {
        "label": "neutral",
        "premise_map": [0] * 9,
        "hypothesis_map": [0, 0, 0, 0, 0, 0, 1, 1, 0],
    }
    assert response.signals["actions"]["touch"] == 4 and response.signals["blocked_attempts"] == 1
