"""A worker arrives as MTurk would send them: first the HIT's preview (``ASSIGNMENT_ID_NOT_AVAILABLE``:
read-only, nothing assigned), then the accepted assignment with MTurk's URL parameters. They answer the
texts, and the hand-off posts ``assignmentId`` to ``{turkSubmitTo}/mturk/externalSubmit`` — here a
local endpoint (an http.server in a thread) standing in for MTurk's."""

from __future__ import annotations

import json
import threading
from datetime import timedelta
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from annotate.lifecycle import start_study
from annotate.models import Assignment, Dataset, Document, Publication, Response, Study, Worker
from annotate.providers.mturk import PREVIEW_ASSIGNMENT_ID
from annotate.tasks import get_kind

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TEXTS = ("The soup was wonderful and the bread fresh .", "Rude staff , cold coffee and a long wait .")


class ExternalSubmit:
    """Stands in for MTurk's externalSubmit: records each form posted to it."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, dict[str, list[str]]]] = []
        record = self.posts

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                return

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                record.append((self.path, parse_qs(body)))
                page = b"<!doctype html><title>MTurk</title><p id='mturk-received'>Submitted to MTurk</p>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def external_submit(settings):
    endpoint = ExternalSubmit()
    settings.HATLAB_MTURK_SUBMIT_HOSTS = [endpoint.url]
    yield endpoint
    endpoint.stop()


def mturk_study() -> Study:
    owner = get_user_model().objects.create_user("researcher", password="x" * 12)
    dataset = Dataset.objects.create(name="reviews", owner=owner, labels=["positive", "negative"])
    for i, text in enumerate(TEXTS):
        Document.from_text(dataset, f"doc-{i}", text, label="").save()
    config = get_kind("highlight").validate_config({"mode": "read_first", "labels": ["positive", "negative"]})
    study = Study.objects.create(
        name="MTurk highlight",
        owner=owner,
        dataset=dataset,
        kind="highlight",
        config=config,
        instructions="Choose the sentiment of the review, then highlight the words that show it.",
        annotators_per_item=1,
        provider="mturk",
        provider_config={"title": "Highlight sentiment", "description": "Highlight words", "reward": "0.40"},
    )
    start_study(study)
    Publication.objects.create(
        study=study, provider="mturk", request_token="tok-browser", external_id="HITBROWSER1", places=3,
        reward=Decimal("0.40"), status=Publication.Status.OPEN, expires_at=timezone.now() + timedelta(days=1),
    )  # fmt: skip
    return study


def test_worker_previews_accepts_answers_and_submits_to_mturk(live_server, browser_context, external_submit,
                                                               output_dir):  # fmt: skip
    study = mturk_study()
    page = browser_context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    entry = f"{live_server.url}/w/{study.uid}/"

    # ---- the preview: read-only, no worker, nothing assigned ------------------------------------------
    page.goto(entry + "?" + urlencode({"assignmentId": PREVIEW_ASSIGNMENT_ID, "hitId": "HITBROWSER1"}))
    page.get_by_text("This is a preview", exact=False).wait_for()
    assert page.get_by_text("Choose the sentiment of the review", exact=False).count() >= 1
    assert page.locator("#hatlab-app").count() == 0 and page.locator(".ht-submit").count() == 0
    assert not Worker.objects.exists() and not Assignment.objects.exists()
    page.screenshot(path=str(output_dir / "preview.png"), full_page=True)

    # ---- accepted: MTurk opens the page with its four parameters --------------------------------------
    params = {
        "assignmentId": "ASSIGNBROWSER1",
        "hitId": "HITBROWSER1",
        "workerId": "WORKERBROWSER1",
        "turkSubmitTo": external_submit.url,
    }
    page.goto(entry + "?" + urlencode(params))
    for number in (1, 2):
        page.wait_for_selector(
            f"#hatlab-app[data-state='item'] .ht-progress-text:text-is('Item {number} of 2')"
        )
        page.get_by_role("button", name="positive" if number == 1 else "negative").click()
        page.locator(".hl-word").nth(3 if number == 1 else 0).click()
        page.locator(".ht-submit").click()

    # ---- the hand-off: a form posted to {turkSubmitTo}/mturk/externalSubmit ---------------------------
    page.wait_for_selector("#hatlab-app[data-state='done']")
    page.screenshot(path=str(output_dir / "done.png"), full_page=True)
    if not external_submit.posts:
        # A page without the automatic hand-off links to the completion page, whose form the worker sends.
        page.locator(".ht-done-link").click()
        page.locator("#completion-form button[type=submit]").click()
    page.wait_for_selector("#mturk-received")
    assert len(external_submit.posts) == 1
    path, fields = external_submit.posts[0]
    assert path == "/mturk/externalSubmit"
    assert fields["assignmentId"] == ["ASSIGNBROWSER1"]

    worker = Worker.objects.get(provider="mturk", external_id="WORKERBROWSER1")
    stored = list(Response.objects.filter(worker=worker, study=study).order_by("id"))
    assert [r.answer["label"] for r in stored] == ["positive", "negative"]
    assert [r.answer["map"][3] for r in stored] == [1, 0] and stored[1].answer["map"][0] == 1
    if "hatlab" in fields:  # the page's copy of its answers, for reconciliation
        copy = json.loads(fields["hatlab"][0])
        assert sorted(e["submission_key"] for e in copy["submissions"]) == sorted(
            str(r.submission_key) for r in stored
        )
    assert errors == []
