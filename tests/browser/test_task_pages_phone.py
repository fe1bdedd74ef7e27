"""Every task kind's page as a new worker meets it, on a phone (375×812, touch) and on a laptop (1366×768):
the text starts in the upper half of the first screen on every item with the answer bar in sight, progress
counts the worker's own share ("Your item 1 of 2" where the study has more items), the keyboard model is
the same everywhere (digits choose, Escape undoes, Enter submits once the answer is complete), touch taps
and a sideways slide highlight words, the end states (paused, done, full for now, closed) are pages of
their own, and axe-core finds no serious or critical violation in any of these states. Screenshots of
each kind at both sizes go to ``tests/browser/output/``; the time to the first item is written to
``tests/browser/output/first_item_ms.json`` (measured, not asserted). The page scripts' gzipped sizes
are held to 30 KB."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from annotate.crowd.providers.local.adapter import invite_path, make_invite
from annotate.models import Dataset, Document, Item, Study
from annotate.studies.lifecycle import start_study
from annotate.tasks import get_kind
from tests.browser.conftest import FRONTEND, OUTPUT, start_invite

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AXE = FRONTEND / "node_modules" / "axe-core" / "axe.min.js"
AXE_URL_PATH = "/static/tests/axe.min.js"
SCRIPT_BUDGET_BYTES = 30 * 1024
PHONE = {"viewport": {"width": 375, "height": 812}, "is_mobile": True, "has_touch": True}
LAPTOP = {"viewport": {"width": 1366, "height": 768}}
SIZES = {"phone": PHONE, "laptop": LAPTOP}
QUOTA = 2

REVIEWS = [
    "The pasta was fresh and the staff were friendly . We will come back with friends next week .",
    "Cold soup , a rude waiter and a dirty table . The bill was wrong too . Never again .",
    "The pizza was fine but the room was far too noisy for a quiet dinner with family .",
    "Lovely coffee , a kind barista and a warm seat by the window on a rainy day .",
]
PAIRS = [
    ("A man in a red jacket rides a bicycle down the street .", "A person is cycling outdoors ."),
    ("Two children build a sandcastle on the beach .", "The children are asleep in bed ."),
    ("A woman reads a book in a quiet library .", "Someone is reading ."),
]
# What the progress heading calls an item, per kind; the element holding the text the worker reads.
NOUNS = {"highlight": "item", "nli_pair": "pair", "sentence_rating": "item", "token_marking": "item"}
TEXT = {
    "highlight": ".hl-text",
    "nli_pair": ".nli-premise .hl-text",
    "sentence_rating": ".rt-review",
    "token_marking": ".hl-text",
    "reveal_model": ".fc-side .fc-text",
    "justify": ".fc-evidence",
    "investigate": ".fc-question-box",
}
KINDS = list(TEXT)
FIRST_ITEM_MS: dict[str, float] = {}


def _owner():
    return get_user_model().objects.get_or_create(username="researcher")[0]


def make_study(kind: str) -> Study:
    """A running study of ``kind`` with more items than the worker's quota (``QUOTA``), one worker per item."""
    if kind in ("reveal_model", "justify", "investigate"):
        from tests.browser.test_forced_choice_tasks import make_studies

        study = make_studies()[1][kind]
    else:
        owner = _owner()
        dataset = Dataset.objects.create(name=f"{kind} data", owner=owner, labels=["positive", "negative"])
        config: dict = {}
        if kind == "nli_pair":
            for i, (premise, hypothesis) in enumerate(PAIRS):
                Document.from_text(dataset, f"p{i}", premise, metadata={"hypothesis": hypothesis}).save()
        else:
            for i, text in enumerate(REVIEWS[:3]):
                metadata = {"perf": 4, "explanation": "Fresh food and kind staff."}
                Document.from_text(dataset, f"d{i}", text, label="positive", metadata=metadata).save()
        if kind == "highlight":
            config = {"mode": "read_first", "labels": ["positive", "negative", "cannot decide"]}
        if kind == "sentence_rating":
            config = {"aspects": [{"name": "performance", "title": "Performance", "rating_field": "perf"}]}
        study = Study.objects.create(
            name=f"{kind} study",
            owner=owner,
            dataset=dataset,
            kind=kind,
            config=get_kind(kind).validate_config(config),
            instructions="Read each text, then answer. " * 3,
            annotators_per_item=1,
            time_limit_s=900,
        )
        start_study(study)
    Study.objects.filter(pk=study.pk).update(config={**study.config, "max_items_per_worker": QUOTA})
    study.refresh_from_db()
    assert study.items.count() > QUOTA
    return study


def noun(kind: str) -> str:
    return NOUNS.get(kind, "question")


def axe_problems(page) -> list[str]:
    """axe-core's serious and critical violations on the page as it stands."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        # Served from the page's own origin, as a script the Content-Security-Policy allows ('self').
        url = page.evaluate("location.origin") + AXE_URL_PATH
        page.route(url, lambda route: route.fulfill(path=str(AXE), content_type="text/javascript"))
        try:
            page.add_script_tag(url=url)
        finally:
            page.unroute(url)
    result = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    return [
        f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes']][:3]}"
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def text_top(page, kind: str) -> float:
    """The first line of the item's text, in pixels from the top of the screen."""
    return page.locator(TEXT[kind]).first.bounding_box()["y"]


def in_view(page, selector: str) -> bool:
    """Whether the element's centre is on screen and not covered (what elementFromPoint finds is it)."""
    return page.evaluate(
        """sel => { const el = document.querySelector(sel); const r = el.getBoundingClientRect();
        const x = r.left + r.width / 2, y = r.top + Math.min(r.height / 2, 20);
        if (y < 0 || y > innerHeight || x < 0 || x > innerWidth) return false;
        const hit = document.elementFromPoint(x, y); return !!hit && (el === hit || el.contains(hit)); }""",
        selector,
    )


def tap(page, locator) -> None:
    """A finger's tap on ``locator`` (touch events through the DevTools protocol, as ``slide``)."""
    locator.scroll_into_view_if_needed()
    box = locator.bounding_box()
    point = [{"x": box["x"] + box["width"] / 2, "y": box["y"] + box["height"] / 2}]
    cdp = page.context.new_cdp_session(page)
    cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": point})
    cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    cdp.detach()


def slide(page, start, end) -> None:
    """A finger slid sideways from ``start`` to ``end`` (real touch events: Chromium makes the pointer
    events and applies touch-action)."""
    cdp = page.context.new_cdp_session(page)
    a, b = start.bounding_box(), end.bounding_box()
    y = a["y"] + a["height"] / 2
    x0, x1 = a["x"] + a["width"] / 2, b["x"] + b["width"] / 2
    cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x0, "y": y}]})
    for step in range(1, 9):
        x = x0 + (x1 - x0) * step / 8
        cdp.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [{"x": x, "y": y}]})
    cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    cdp.detach()


def shown_map(page, scope: str = "") -> list[int]:
    states = page.locator(f"{scope} .hl-word".strip()).evaluate_all(
        "ws => ws.map(w => w.getAttribute('aria-checked'))"
    )
    return [int(s == "true") for s in states]


def wait_item(page, kind: str, number: int) -> None:
    page.wait_for_selector(
        f"#hatlab-app[data-state='item'] .ht-progress-text:text-is('Your {noun(kind)} {number} of {QUOTA}')"
    )


def check_item_page(page, kind: str, size: str, problems: list[str], where: str) -> None:
    """Text first, answer bar in sight, no sideways scroll, no keyboard hints on touch, axe clean."""
    height = page.viewport_size["height"]
    top = text_top(page, kind)
    assert 0 <= top < height / 2, f"{kind} {size} {where}: the text starts at y={top:.0f} of {height}"
    assert in_view(page, ".ht-submit"), f"{kind} {size} {where}: the submit button is off screen"
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    keys_line = page.locator(".ht-keys")
    if size == "phone":
        assert not keys_line.is_visible() and not page.locator(".ht-key").first.is_visible()
    else:  # in the instructions: shown with them (open on the first item), one click away after
        assert keys_line.is_visible() == (where == "item 1")
        assert "Enter submits once the answer is complete" in keys_line.text_content()
    problems += [f"{where}: {p}" for p in axe_problems(page)]


def answer_by_keyboard(page, kind: str) -> None:
    """The shared keyboard model: digits choose, Escape undoes, Enter submits once complete."""
    if kind in ("highlight", "nli_pair"):
        page.keyboard.press("Enter")  # nothing chosen yet: says what is missing, sends nothing
        error = page.locator(".ht-errors")
        assert error.is_visible() and error.text_content() == "Choose a label first."
        page.keyboard.press("1")
        word = page.locator(".hl-word").nth(1)
        word.click()
        assert shown_map(page)[1] == 1
        page.keyboard.press("2" if kind == "highlight" else "3")
        dialog = page.locator("dialog.ht-keep")
        dialog.wait_for()
        assert "Keep your highlights" in dialog.text_content()
        page.keyboard.press("Escape")  # takes the label change back
        assert dialog.count() == 0
        assert page.locator(".ht-label[aria-pressed='true']").get_attribute("data-value") in (
            "positive",
            "entailment",
        )
        page.keyboard.press("Escape")  # undoes the highlight
        assert sum(shown_map(page)) == 0
        word.click()
        if kind == "nli_pair":  # entailment needs a premise word: the error sits by the premise, in view
            page.locator(".hl-word").nth(1).click()  # off again
            page.keyboard.press("Enter")
            assert page.locator(".nli-premise .hl-text + .ht-errors").is_visible()
            assert in_view(page, ".ht-errors")
            assert "highlight at least one word in the premise" in page.locator(".ht-errors").text_content()
            assert "answer." not in page.locator(".ht-errors").text_content()
            word.click()
        word.focus()
    elif kind == "token_marking":
        page.keyboard.press("Enter")
        assert page.locator(".hl-text + .ht-errors").is_visible() and in_view(page, ".ht-errors")
        assert page.locator(".ht-errors").text_content() == "Mark at least one word of the text."
        page.locator(".hl-word").first.focus()
        page.keyboard.press("Space")
        page.keyboard.press("Escape")
        assert sum(shown_map(page)) == 0
        page.keyboard.press("Space")
    else:
        page.keyboard.press("2")
        page.keyboard.press("1")
        page.keyboard.press("Escape")  # back to 2
        assert page.locator("[aria-pressed='true']").count() == 1
        chosen = page.locator(".ht-label").nth(1)
        assert chosen.get_attribute("aria-pressed") == "true"
        chosen.click()  # a mouse click leaves the focus on the button: Enter must submit, not press it
        chosen.focus()
    page.keyboard.press("Enter")


def answer_by_touch(page, kind: str) -> None:
    """Taps, and a sideways slide across words that highlights the run."""
    if kind in ("highlight", "nli_pair", "token_marking"):
        if kind != "token_marking":
            tap(page, page.locator(".ht-label").first)
        scope = ".nli-premise" if kind == "nli_pair" else ""
        words = page.locator(f"{scope} .hl-word".strip())
        tap(page, words.nth(0))
        assert shown_map(page, scope)[0] == 1
        tap(page, words.nth(0))
        assert shown_map(page, scope)[0] == 0
        slide(page, words.nth(1), words.nth(3))
        assert shown_map(page, scope)[:5] == [0, 1, 1, 1, 0]
        assert in_view(page, ".ht-submit")
        # Chromium's touch emulation makes no click of the first tap after a slide: a tap on the heading.
        tap(page, page.locator(".ht-progress-text"))
    else:
        tap(page, page.locator(".ht-label").first)
    tap(page, page.locator(".ht-submit"))


def end_page(page, state: str, problems: list[str], shots: Path, name: str) -> str:
    try:
        page.wait_for_selector(f"#hatlab-app[data-state='{state}']")
    except Exception:
        page.screenshot(path=str(shots / f"{name}_{state}_FAILED.png"), full_page=True)
        raise
    title = page.locator(".ht-done-title").text_content()
    problems += [f"{state}: {p}" for p in axe_problems(page)]
    page.screenshot(path=str(shots / f"{name}_{state}.png"), full_page=True)
    return title


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("kind", KINDS)
def test_task_page_for_a_new_worker(live_server, chromium, kind, size):
    study = make_study(kind)
    shots = OUTPUT / "task_pages"
    shots.mkdir(parents=True, exist_ok=True)
    context = chromium.new_context(locale="en-US", **SIZES[size])
    context.set_default_timeout(10_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    problems: list[str] = []
    try:
        start_invite(page, live_server.url + invite_path(study, make_invite(study, f"{kind}-{size}")))
        wait_item(page, kind, 1)
        FIRST_ITEM_MS[f"{kind} {size}"] = page.evaluate(
            "performance.getEntriesByName('hatlab-first-item')[0].startTime"
        )
        # The instructions are open on the first item, and one tap away after it.
        assert page.locator("details.hatlab-instructions").get_attribute("open") is not None
        page.screenshot(path=str(shots / f"{kind}_{size}.png"))
        check_item_page(page, kind, size, problems, "item 1")
        if size == "phone":
            hint = page.locator(".hl-hint")
            if kind == "token_marking":
                assert hint.text_content().startswith("Tap words")
            answer_by_touch(page, kind)
        else:
            answer_by_keyboard(page, kind)
        wait_item(page, kind, 2)
        assert page.locator("details.hatlab-instructions").get_attribute("open") is None
        check_item_page(page, kind, size, problems, "item 2")

        # Paused while the worker answers: the answer is kept, and the page says come back later.
        Study.objects.filter(pk=study.pk).update(status=Study.Status.PAUSED)
        if size == "phone":
            answer_by_touch(page, kind)
        else:
            answer_by_keyboard(page, kind)
        assert "paused" in end_page(page, "paused", problems, shots, f"{kind}_{size}")
        assert page.locator(".ht-retry").count() == 0

        # Running again: the worker's share (2 of the study's items) is done: the completion step.
        Study.objects.filter(pk=study.pk).update(status=Study.Status.RUNNING)
        page.reload()
        assert "you are done" in end_page(page, "done", problems, shots, f"{kind}_{size}")
        assert page.locator(".ht-done-link, .ht-code").count() >= 1

        # A new worker when nothing is free: "full for now", no thanks, no code.
        Item.objects.filter(study=study).update(retired=True)
        late = context.new_page()
        start_invite(late, live_server.url + invite_path(study, make_invite(study, f"late-{kind}-{size}")))
        title = end_page(late, "full", problems, shots, f"{kind}_{size}")
        assert title == "This study is full for now." and late.locator(".ht-code").count() == 0

        # The study finishes: the same worker is told it is closed (the server's page).
        Study.objects.filter(pk=study.pk).update(status=Study.Status.FINISHED)
        late.reload()
        late.wait_for_selector("[data-end='closed']")
        assert "This study is closed." in late.content()
        problems += [f"closed: {p}" for p in axe_problems(late)]
        late.screenshot(path=str(shots / f"{kind}_{size}_closed.png"), full_page=True)
    except Exception:
        page.screenshot(path=str(shots / f"{kind}_{size}_FAILED.png"))
        raise
    finally:
        context.close()
    assert not problems, problems
    assert not errors, errors


def test_each_new_item_starts_at_its_text_after_a_long_one(live_server, chromium):
    """A long text scrolled to its end, answered: the next item starts at its text, not at the old scroll."""
    owner = _owner()
    dataset = Dataset.objects.create(name="long", owner=owner, labels=["positive", "negative"])
    for i in range(3):
        Document.from_text(dataset, f"l{i}", " ".join([REVIEWS[i]] * 12), label="").save()
    study = Study.objects.create(
        name="long texts",
        owner=owner,
        dataset=dataset,
        kind="highlight",
        config=get_kind("highlight").validate_config(
            {"mode": "read_first", "labels": ["positive", "negative"]}
        ),
        annotators_per_item=1,
        time_limit_s=900,
    )
    start_study(study)
    context = chromium.new_context(locale="en-US", **PHONE)
    try:
        page = context.new_page()
        start_invite(page, live_server.url + invite_path(study, make_invite(study, "long-1")))
        page.wait_for_selector("#hatlab-app[data-state='item']")
        page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
        assert page.evaluate("window.scrollY") > 300  # a long text scrolls on a phone
        assert in_view(page, ".ht-submit")  # the answer bar stays in sight
        tap(page, page.locator(".ht-label").first)
        assert page.locator(".ht-label").first.get_attribute("aria-pressed") == "true"
        tap(page, page.locator(".hl-word").last)
        assert shown_map(page)[-1] == 1
        tap(page, page.locator(".ht-submit"))
        try:
            page.wait_for_selector(".ht-progress-text:text-is('Your item 2 of 3')")
        except Exception:
            page.screenshot(path=str(OUTPUT / "long_text_FAILED.png"))
            raise
        top = text_top(page, "highlight")
        assert 0 <= top < 812 / 2, top
    finally:
        context.close()


def test_page_scripts_fit_the_weight_budget(frontend_bundle):
    """Each task page loads one script (its kind's): at most 30 KB gzipped; the sizes are written out."""
    sizes = {}
    for script in sorted((frontend_bundle / "kinds").glob("*.js")):
        sizes[script.name] = len(gzip.compress(script.read_bytes(), compresslevel=9))
    OUTPUT.mkdir(parents=True, exist_ok=True)
    (OUTPUT / "page_script_gzip_bytes.json").write_text(json.dumps(sizes, indent=2))
    assert set(sizes) == {
        f"{k}.js" for k in ("forced_choice", "highlight", "nli_pair", "sentence_rating", "token_marking")
    }
    assert all(0 < n <= SCRIPT_BUDGET_BYTES for n in sizes.values()), sizes


@pytest.fixture(scope="module", autouse=True)
def _write_first_item_times():
    yield
    if FIRST_ITEM_MS:
        OUTPUT.mkdir(parents=True, exist_ok=True)
        (OUTPUT / "first_item_ms.json").write_text(json.dumps(FIRST_ITEM_MS, indent=2, sort_keys=True))


def test_templates_carry_no_keyboard_hint_of_their_own():
    """The keyboard line comes from the page script alone (one keyboard model): no template writes one."""
    root = Path(__file__).resolve().parents[2] / "annotate"
    for template in root.glob("tasks/*/templates/*/task.html"):
        assert not re.search(r"Keys?:", template.read_text()), template
