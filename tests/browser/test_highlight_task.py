"""The highlight task page in a real browser: an annotator opens an invite link and answers two
texts, the first with the mouse, the second with the keyboard only; read-first blocking is checked
in the page and the stored maps are checked in the database. A phone-sized touch context answers by
tapping."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model

from annotate.crowd.providers.local.adapter import invite_path, make_invite
from annotate.models import Dataset, Document, Item, Response, Study
from annotate.studies.lifecycle import start_study
from annotate.tasks import get_kind
from tests.browser.conftest import start_invite

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TEXT_A = "The pizza was <b>great</b> & fresh.\nService was slow but friendly."
TEXT_B = "Cold fries , rude staff and a dirty table . Never again !"
GOLD_B = [1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1, 0, 0]  # gold map of text B: a gold item, never sent to the page


def make_study(*texts: str, gold: dict[int, dict] | None = None) -> Study:
    """A running read-first highlight study over ``texts`` (one annotator per text)."""
    owner = get_user_model().objects.create_user("researcher", password="x" * 12)
    dataset = Dataset.objects.create(name="reviews", owner=owner, labels=["positive", "negative"])
    for i, text in enumerate(texts):
        metadata = {"gold": (gold or {})[i]} if i in (gold or {}) else {}
        Document.from_text(dataset, f"doc-{i}", text, label="", metadata=metadata).save()
    config = get_kind("highlight").validate_config(
        {"mode": "read_first", "labels": ["positive", "negative", "cannot decide"]}
    )
    study = Study.objects.create(
        name="Yelp read-first",
        owner=owner,
        dataset=dataset,
        kind="highlight",
        config=config,
        instructions="Read the review, choose its sentiment, then highlight the words that show it.",
        annotators_per_item=1,
        time_limit_s=900,
        status=Study.Status.DRAFT,
    )
    start_study(study)
    return study


def word_texts(page) -> list[str]:
    return page.locator(".hl-word").all_text_contents()


def shown_map(page) -> list[int]:
    """The 0/1 map the page shows (each word's aria-checked)."""
    states = page.locator(".hl-word").evaluate_all("ws => ws.map(w => w.getAttribute('aria-checked'))")
    return [int(state == "true") for state in states]


def wait_for_item(page, number: int, total: int) -> None:
    page.wait_for_selector(
        f"#hatlab-app[data-state='item'] .ht-progress-text:text-is('Your item {number} of {total}')"
    )


def api_bodies(page) -> list[str]:
    """Collects the bodies of the annotator API's answers as the page receives them."""
    bodies: list[str] = []
    page.on("response", lambda r: bodies.append(r.text()) if "/api/work/" in r.url else None)
    return bodies


def drop_first_answer(page, pattern: str) -> list[dict]:
    """Route ``pattern`` so the first request is served but its answer never reaches the page."""
    sent: list[dict] = []

    def handle(route) -> None:
        sent.append(json.loads(route.request.post_data))
        if len(sent) == 1:
            route.fetch()
            route.abort("connectionreset")
        else:
            route.continue_()

    page.route(pattern, handle)
    return sent


def test_annotator_answers_two_texts_with_mouse_and_keyboard(live_server, browser_context, output_dir):
    study = make_study(TEXT_A, TEXT_B, gold={1: {"label": "negative", "map": GOLD_B}})
    page = browser_context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    bodies = api_bodies(page)
    start_invite(page, live_server.url + invite_path(study, make_invite(study, "ann-1")))

    # The page embeds its configuration and the instructions, and nothing of the items' secrets.
    config = json.loads(page.locator("#hatlab-task").text_content())
    assert config["kind"] == "highlight" and config["config"]["mode"] == "read_first"
    assert "secret" not in json.dumps(config)
    page.get_by_text("choose its sentiment", exact=False).first.wait_for()

    # ---- text A, with the mouse ------------------------------------------------------------
    wait_for_item(page, 1, 2)
    words_a = TEXT_A.split()
    assert word_texts(page) == words_a
    assert page.locator(".hl-text b").count() == 0  # markup in the text stays text
    # A line break in the text starts a new line before "Service".
    assert page.locator(".hl-break + .hl-word").text_content() == "Service"

    # Read-first: before a label, words are aria-disabled and a click changes nothing.
    hint = page.locator(".hl-hint")
    assert "choose a label first" in hint.text_content().lower()
    first = page.locator(".hl-word").nth(1)
    assert first.get_attribute("aria-disabled") == "true"
    first.click(force=True)  # a real click; force= skips Playwright's wait for an enabled element
    assert page.locator(".hl-word.is-on").count() == 0
    assert page.locator(".hl-count").text_content() == "0 words highlighted"
    assert page.locator(".ht-submit").is_disabled()
    page.screenshot(path=str(output_dir / "text_a_locked.png"), full_page=True)

    page.get_by_role("button", name="positive").click()
    assert page.get_by_role("button", name="positive").get_attribute("aria-pressed") == "true"
    assert first.get_attribute("aria-disabled") is None
    words = page.locator(".hl-word")
    words.nth(1).click()  # "pizza"
    words.nth(4).click()  # "&"  (on)
    words.nth(4).click()  # "&"  (off again)
    words.nth(3).click()  # "<b>great</b>"; shift-click extends the run from the last clicked word
    words.nth(5).click(modifiers=["Shift"])  # 3..5: "<b>great</b>", "&", "fresh."
    # Drag over "but friendly." (words 9..10).
    box9, box10 = words.nth(9).bounding_box(), words.nth(10).bounding_box()
    page.mouse.move(box9["x"] + 3, box9["y"] + box9["height"] / 2)
    page.mouse.down()
    page.mouse.move(box10["x"] + box10["width"] / 2, box10["y"] + box10["height"] / 2, steps=4)
    page.mouse.up()
    # One more click, then the undo button takes it back.
    words.nth(0).click()
    page.get_by_role("button", name="Undo").click()
    expected_a = [0, 1, 0, 1, 1, 1, 0, 0, 0, 1, 1]
    assert shown_map(page) == expected_a
    assert page.locator(".hl-count").text_content() == f"{sum(expected_a)} words highlighted"
    page.screenshot(path=str(output_dir / "text_a_highlighted.png"), full_page=True)
    # The first submission reaches the server but its answer is lost on the way back: the page
    # sees a network failure and resends the same body, which the server stores once.
    sent = drop_first_answer(page, "**/api/work/assignments/*/submit/")
    page.locator(".ht-submit").click()

    # ---- text B, with the keyboard only ------------------------------------------------------
    wait_for_item(page, 2, 2)
    words_b = TEXT_B.split()
    assert word_texts(page) == words_b
    assert page.locator(".hl-word.is-on").count() == 0
    page.keyboard.press("Space")  # focus is on the heading: nothing to toggle, nothing happens
    page.keyboard.press("2")  # label shortcut: "negative"
    assert page.get_by_role("button", name="negative").get_attribute("aria-pressed") == "true"
    # The text comes first: one Tab from the heading reaches the words' single tab stop.
    page.keyboard.press("Tab")
    focused = page.evaluate("document.activeElement.textContent + '|' + document.activeElement.className")
    assert focused == "Cold|hl-word"
    page.keyboard.press("Space")  # Cold
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")  # ","
    page.keyboard.press("ArrowRight")  # rude
    page.keyboard.press("Space")  # rude
    page.keyboard.press("Shift+ArrowRight")  # staff (carried from rude)
    page.keyboard.press("End")
    page.keyboard.press("Space")  # "!"
    page.keyboard.press("Home")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Space")  # fries ...
    page.keyboard.press("Control+z")  # ... undone
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")  # dirty
    page.keyboard.press("Space")
    expected_b = [1, 0, 0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 1]
    assert shown_map(page) == expected_b
    page.keyboard.press("Enter")  # from the words: the answer is complete, Enter submits

    # ---- done -------------------------------------------------------------------------------
    page.wait_for_selector("#hatlab-app[data-state='done']")
    assert "finished all items" in page.locator(".ht-done").text_content()
    page.screenshot(path=str(output_dir / "done.png"), full_page=True)
    assert errors == []

    responses = list(Response.objects.filter(study=study).select_related("item__document").order_by("id"))
    assert [r.item.document.external_id for r in responses] == ["doc-0", "doc-1"]
    assert [r.answer for r in responses] == [
        {"label": "positive", "map": expected_a},
        {"label": "negative", "map": expected_b},
    ]
    first_response, second_response = responses
    assert first_response.signals["actions"] == {"mouse": 7, "touch": 0, "pen": 0, "keyboard": 0}
    assert first_response.signals["blocked_attempts"] == 1 and first_response.signals["undos"] == 1
    assert second_response.signals["actions"] == {"mouse": 0, "touch": 0, "pen": 0, "keyboard": 6}
    for r in responses:
        t = r.signals["timings"]
        assert r.read_ms == t["label_at_ms"] and t["first_highlight_at_ms"] >= t["label_at_ms"]
        assert r.answer_ms > 0
    # The gold text was graded on the server: label right, overlap F1 = 2*3/(5+4) = 0.67 >= 0.5.
    assert (first_response.gold_passed, second_response.gold_passed) == (None, True)
    assert Item.objects.filter(study=study, responses_done=1).count() == 2
    # Text A was posted twice with one submission_key and stored once; text B once.
    assert [body["submission_key"] for body in sent] == [str(responses[0].submission_key)] * 2 + [
        str(responses[1].submission_key)
    ]
    assert sent[0] == sent[1]
    assert bodies and not any('"gold"' in b or '"secret"' in b for b in bodies)


def test_phone_annotator_answers_by_tapping(live_server, mobile_context, output_dir):
    study = make_study("Lovely staff and tasty noodles , would return .")
    page = mobile_context.new_page()
    start_invite(page, live_server.url + invite_path(study, make_invite(study, "phone-1")))
    wait_for_item(page, 1, 1)
    words = page.locator(".hl-word")

    def tap(locator) -> None:
        locator.scroll_into_view_if_needed()
        box = locator.bounding_box()
        page.touchscreen.tap(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)

    tap(words.nth(0))  # read-first: blocked
    assert page.locator(".hl-word.is-on").count() == 0
    tap(page.get_by_role("button", name="positive"))
    for i in (0, 1, 4, 4, 3):
        tap(words.nth(i))
    assert page.locator(".hl-count").text_content() == "3 words highlighted"
    # The words are large enough to tap and the page needs no sideways scrolling.
    height = words.nth(1).bounding_box()["height"]
    assert height >= 24
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.screenshot(path=str(output_dir / "phone.png"), full_page=True)
    tap(page.locator(".ht-submit"))
    page.wait_for_selector("#hatlab-app[data-state='done']")

    response = Response.objects.get(study=study)
    assert response.answer == {"label": "positive", "map": [1, 1, 0, 1, 0, 0, 0, 0, 0]}
    assert response.signals["actions"]["touch"] == 5 and response.signals["blocked_attempts"] == 1
