"""The sentence_rating and token_marking pages in a real browser.

An annotator rates two sentences of a review, the first with the keyboard only (key 4, then Enter),
the second with the mouse; a phone-sized touch context marks the words of an input by tapping. The
stored answers are checked in the database, and no page or API answer carries a gold answer.
"""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model

from annotate.crowd.providers.local.adapter import invite_path, make_invite
from annotate.models import Dataset, Document, Response, Study
from annotate.studies.lifecycle import start_study
from annotate.tasks import get_kind
from tests.browser.conftest import start_invite

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

REVIEW = "The narrator was <b>superb</b> & warm. The plot dragged in the middle."
INPUT = "A man plays a guitar on stage ."
EXPLANATION = "A guitar is played by a man on a <i>stage</i>."
GOLD_MARKS = [0, 0, 0, 0, 1, 0, 1, 0]


def make_study(kind: str, text: str, metadata: dict, label: str = "") -> Study:
    owner, _ = get_user_model().objects.get_or_create(username="researcher")
    dataset = Dataset.objects.create(name=f"{kind} data", owner=owner)
    Document.from_text(dataset, "doc-1", text, label=label, metadata=metadata).save()
    config = {"aspects": [{"name": "performance", "title": "Performance", "rating_field": "perf"}]}
    study = Study.objects.create(
        name=f"{kind} study",
        owner=owner,
        dataset=dataset,
        kind=kind,
        config=get_kind(kind).validate_config(config if kind == "sentence_rating" else {}),
        instructions="Answer each question.",
        annotators_per_item=1,
        time_limit_s=900,
    )
    start_study(study)
    return study


def api_bodies(page) -> list[str]:
    bodies: list[str] = []
    page.on("response", lambda r: bodies.append(r.text()) if "/api/work/" in r.url else None)
    return bodies


def test_rating_with_keyboard_and_mouse(live_server, browser_context, output_dir):
    study = make_study("sentence_rating", REVIEW, {"perf": 4, "gold_ratings": {"performance": [None, 1]}})
    page = browser_context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    bodies = api_bodies(page)
    start_invite(page, live_server.url + invite_path(study, make_invite(study, "rater-1")))
    assert "gold" not in page.content()
    page.wait_for_selector("#hatlab-app[data-state='item'] .ht-progress-text:text-is('Your item 1 of 2')")

    mark = page.locator("mark.rt-target")
    assert mark.text_content() == "The narrator was <b>superb</b> & warm."
    assert page.locator(".rt-review b").count() == 0  # markup in the text stays text
    assert "★★★★☆" in page.locator(".rt-aspect").text_content()
    assert "rated performance 4 of 5 stars" in page.locator(".rt-aspect").text_content()
    assert page.locator(".ht-submit").is_disabled()
    page.screenshot(path=str(output_dir / "rating_item_1.png"), full_page=True)

    # keyboard only: 4 picks "rather well", Enter submits
    page.keyboard.press("4")
    assert page.get_by_role("button", name="rather well").get_attribute("aria-pressed") == "true"
    page.screenshot(path=str(output_dir / "rating_item_1_chosen.png"), full_page=True)
    page.keyboard.press("Enter")
    page.wait_for_selector(".ht-progress-text:text-is('Your item 2 of 2')")
    assert mark.text_content() == "The plot dragged in the middle."

    # mouse: click "a little", then the submit button
    page.get_by_role("button", name="a little").click()
    page.locator(".ht-submit").click()
    page.wait_for_selector("#hatlab-app[data-state='done']")
    page.screenshot(path=str(output_dir / "rating_done.png"), full_page=True)

    stored = {r.item.payload["sentence_index"]: r for r in Response.objects.select_related("item")}
    assert stored[0].answer == {"rating": 4} and stored[1].answer == {"rating": 2}
    assert stored[0].read_ms is not None and stored[1].gold_passed is False  # gold level 1
    # next, then two submits that each bring the following item (the last one: done)
    assert all("gold" not in b and "secret" not in b for b in bodies) and len(bodies) == 3
    assert '"next": {"done": true' in bodies[-1]
    assert errors == []


def test_marking_by_touch(live_server, mobile_context, output_dir):
    study = make_study(
        "token_marking", INPUT, {"explanation": EXPLANATION, "gold_marks": GOLD_MARKS}, label="entailment"
    )
    page = mobile_context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    bodies = api_bodies(page)
    start_invite(page, live_server.url + invite_path(study, make_invite(study, "marker-1")))
    page.wait_for_selector("#hatlab-app[data-state='item']")
    config = json.loads(page.locator("#hatlab-task").text_content())
    assert config["kind"] == "token_marking" and "gold" not in json.dumps(config)
    assert page.locator(".tm-label-value").text_content() == "entailment"
    assert page.locator(".tm-explanation").text_content() == EXPLANATION
    assert page.locator(".tm-explanation i").count() == 0
    assert page.locator(".ht-submit").is_disabled()

    words = page.locator(".hl-word")
    assert words.all_text_contents() == INPUT.split()
    words.nth(4).tap()  # guitar
    words.nth(1).tap()  # man
    words.nth(3).tap()  # a (on)
    words.nth(3).tap()  # a (off again)
    assert page.locator(".hl-count").text_content() == "2 words highlighted"
    page.screenshot(path=str(output_dir / "marking_tapped.png"), full_page=True)
    page.locator(".ht-submit").tap()
    page.wait_for_selector("#hatlab-app[data-state='done']")

    response = Response.objects.get(study=study)
    assert response.answer == {"map": [0, 1, 0, 0, 1, 0, 0, 0]}
    assert response.signals["actions"]["touch"] >= 3
    assert response.gold_passed is True  # F1 with the gold marks {guitar, stage} = 0.5
    assert all("gold" not in b and str(GOLD_MARKS) not in b for b in bodies)
    assert errors == []


def test_results_page_draws_the_figure_4_chart(live_server, browser_context, output_dir):
    import uuid

    from django.contrib.auth.models import Group
    from django.utils import timezone

    from annotate.access import RESEARCHER_GROUP
    from annotate.models import Assignment, ModelRun, Prediction, Worker

    study = make_study("sentence_rating", REVIEW + " I would listen again!", {"perf": 4})
    owner = study.owner
    owner.set_password("a-long-test-password")
    owner.save()
    owner.groups.add(Group.objects.get_or_create(name=RESEARCHER_GROUP)[0])
    for w, levels in enumerate(((5, 1, 4), (4, 1, 5), (5, 2, 4))):
        worker = Worker.objects.create(external_id=f"rater-{w}")
        for item, level in zip(study.items.order_by("position"), levels, strict=True):
            assignment = Assignment.objects.create(
                study=study, item=item, worker=worker, slot=w, status="submitted", expires_at=timezone.now()
            )
            Response.objects.create(
                assignment=assignment, study=study, item=item, worker=worker,
                submission_key=uuid.uuid4(), answer={"rating": level},
            )  # fmt: skip
    doc = study.dataset.documents.get()
    run = ModelRun.objects.create(
        name="attention LSTM", owner=owner, dataset=study.dataset, architecture="lstm"
    )
    n = len(doc.words)
    Prediction.objects.create(model_run=run, document=doc, label="positive", attention=[1.0 / n] * n)

    page = browser_context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(live_server.url + "/login/")
    page.fill("input[name=username]", owner.username)
    page.fill("input[name=password]", "a-long-test-password")
    page.locator("form [type=submit]").last.click()
    page.goto(live_server.url + f"/studies/{study.uid}/results/")
    page.wait_for_selector("a.hatlab-csv-link, .hatlab-csv-link")
    drawn = page.evaluate(
        "() => { const c = document.querySelector('canvas[data-hatlab-chart]');"
        " const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;"
        " let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++; return n; }"
    )
    assert drawn > 1000, "the accuracy chart is drawn"
    # the kind's stylesheet (frontend/src/kinds/sentence_rating.css) sizes the chart
    assert page.eval_on_selector(".chart-box", "e => getComputedStyle(e).height") == "320px"
    assert "attention LSTM" in page.locator("select[name=run]").text_content()
    page.screenshot(path=str(output_dir / "rating_results.png"), full_page=True)
    assert errors == []
