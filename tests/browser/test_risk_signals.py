"""Scripted workers against a person, end to end: a script in the task page answering at 0.2 s per
item, an HTTP client that never runs the page, and a person who reads (real clicks and keys, waits in
proportion to each text's length). The first two are flagged by the risk score with the reasons that
give them away; the person is not."""

from __future__ import annotations

import json
import time
import uuid

import pytest
from django.test import Client

from annotate.crowd.providers.local.adapter import invite_path, make_invite
from annotate.models import Response, Worker
from annotate.quality import risk
from tests.browser.conftest import start_invite
from tests.browser.test_highlight_task import make_study, wait_for_item

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TEXTS = (
    "The soup was cold and the bread was stale , we left hungry .",
    "Friendly staff , quick service and a lovely quiet terrace .",
    "Overpriced drinks and a rude bartender who ignored us .",
)
#: The person reads at 400 words per minute: well under the 714 wpm floor.
PERSON_WPM = 400

# A user script in the page: chooses the first label, highlights the first word and submits, with
# element.click() and dispatchEvent (the events a script makes, not input), 0.2 s per item.
BOT = """async () => {
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const app = document.getElementById("hatlab-app");
  for (;;) {
    while (app.dataset.state !== "item" && app.dataset.state !== "done") await sleep(10);
    if (app.dataset.state === "done") return;
    const heading = document.querySelector(".ht-progress-text").textContent;
    await sleep(200);
    document.querySelector(".ht-label").click();
    const word = document.querySelector(".hl-word");
    word.dispatchEvent(new PointerEvent("pointerdown", { bubbles: true, button: 0 }));
    document.dispatchEvent(new PointerEvent("pointerup", { bubbles: true }));
    document.querySelector(".ht-submit").click();
    while (app.dataset.state !== "done" && document.querySelector(".ht-progress-text").textContent === heading)
      await sleep(10);
  }
}"""


def worker_risk(study) -> risk.WorkerRisk:
    """The risk of the study's one worker, who answered every text."""
    worker = Worker.objects.get(responses__study=study, responses__item__position=0)
    assert Response.objects.filter(study=study, worker=worker).count() == len(TEXTS)
    return risk.study_risks(study)[worker.pk]


def test_a_script_in_the_page_is_flagged_for_speed_and_no_input(live_server, browser_context):
    study = make_study(*TEXTS)
    page = browser_context.new_page()
    start_invite(page, live_server.url + invite_path(study, make_invite(study, "bot")))
    wait_for_item(page, 1, len(TEXTS))
    page.evaluate(BOT)
    page.wait_for_selector("#hatlab-app[data-state='done']")
    found = worker_risk(study)
    codes = {r.code for r in found.reasons}
    assert found.flagged and {"speed", "no_interaction"} <= codes, found
    assert "no_page" not in codes  # it ran in the page: the token came with every answer
    speed = next(r for r in found.reasons if r.code == "speed")
    assert speed.evidence.startswith("3 of 3 answers faster than 714 words per minute")


def test_an_http_client_without_the_page_is_flagged():
    study = make_study(*TEXTS)
    client = Client(enforce_csrf_checks=True)
    link = invite_path(study, make_invite(study, "http"))
    client.get(link)  # the start page: the CSRF cookie
    client.post(link)  # the start: the worker cookie; the HTML is not read
    csrf = client.cookies["csrftoken"].value
    post = lambda url, body: client.post(  # noqa: E731
        url, json.dumps(body), content_type="application/json", HTTP_X_CSRFTOKEN=csrf
    )
    item = post(f"/api/work/{study.uid}/next/", {}).json()
    while not item.get("done"):
        words = item["item"]["payload"]["words"]
        body = {
            "submission_key": str(uuid.uuid4()),
            "answer": {"label": "positive", "map": [1] + [0] * (len(words) - 1)},
            # made-up reading times: the server's own clock decides the speed
            "timings": {
                "read_ms": 30_000,
                "answer_ms": 5_000,
                "label_at_ms": 30_000,
                "first_highlight_at_ms": 31_000,
            },  # fmt: skip
            "signals": {"page": True},  # a claim, without the token
            "next": True,
        }
        reply = post(f"/api/work/assignments/{item['assignment']}/submit/", body)
        assert reply.status_code == 201, reply.content
        item = reply.json()["next"]
    found = worker_risk(study)
    codes = {r.code for r in found.reasons}
    assert found.flagged and {"no_page", "no_interaction", "speed"} <= codes, found
    assert next(r for r in found.reasons if r.code == "no_page").evidence == (
        "3 of 3 answers sent without the task page's token"
    )


def test_a_person_who_reads_is_not_flagged(live_server, browser_context):
    study = make_study(*TEXTS)
    page = browser_context.new_page()
    start_invite(page, live_server.url + invite_path(study, make_invite(study, "person")))
    for number, text in enumerate(TEXTS, start=1):
        wait_for_item(page, number, len(TEXTS))
        time.sleep(len(text.split()) * 60 / PERSON_WPM)  # reading
        if number == 2:
            page.keyboard.press("1")  # the first label by its key
        else:
            page.get_by_role("button", name="negative").click()
        page.locator(".hl-word").nth(2).click()
        page.get_by_role("button", name="Submit and continue").click()
    page.wait_for_selector("#hatlab-app[data-state='done']")
    found = worker_risk(study)
    assert not found.flagged and found.reasons == [], found
    stored = Response.objects.filter(study=study).order_by("id")
    assert all(r.signals["page"] is True for r in stored)
    assert all(r.signals["interaction"]["pointer"] >= 1 for r in stored)
    assert stored[1].signals["interaction"]["keys"] >= 1
