"""A worker arrives as MTurk would send them: first the HIT's preview (``ASSIGNMENT_ID_NOT_AVAILABLE``:
the task with a sample item, nothing sent or assigned), then the accepted assignment with MTurk's URL parameters. They answer the
items, and the page itself posts ``assignmentId`` and its copy of the answers (field ``hatlab``) to
``{turkSubmitTo}/mturk/externalSubmit`` — here a local endpoint (an http.server in a thread) standing
in for MTurk's. The highlight page and the sentence-rating page are checked; every task page runs the
same loop (frontend/src/task_loop.ts)."""

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

from annotate.crowd.providers.mturk.adapter import PREVIEW_ASSIGNMENT_ID
from annotate.models import Assignment, Dataset, Document, Publication, Response, Study, Worker
from annotate.studies.lifecycle import start_study
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


def publish(study: Study, hit_id: str) -> None:
    """Start the study and record one open HIT of it, as publishing to MTurk would."""
    start_study(study)
    Publication.objects.create(
        study=study, provider="mturk", request_token=f"tok-{hit_id}", external_id=hit_id, places=3,
        reward=Decimal("0.40"), status=Publication.Status.OPEN, expires_at=timezone.now() + timedelta(days=1),
    )  # fmt: skip


def accepted(external_submit: ExternalSubmit, hit_id: str, assignment_id: str, worker_id: str) -> str:
    """The query string MTurk adds to the ExternalQuestion URL once the worker accepted the HIT."""
    return urlencode(
        {
            "assignmentId": assignment_id,
            "hitId": hit_id,
            "workerId": worker_id,
            "turkSubmitTo": external_submit.url,
        }
    )


def posted_copy(fields: dict[str, list[str]]) -> list[dict]:
    """The page's copy of its answers in the posted form (field ``hatlab``)."""
    copy = json.loads(fields["hatlab"][0])
    return copy["submissions"]


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
    publish(study, "HITBROWSER1")
    return study


def test_worker_previews_accepts_answers_and_submits_to_mturk(live_server, browser_context, external_submit,
                                                               output_dir):  # fmt: skip
    study = mturk_study()
    page = browser_context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    entry = f"{live_server.url}/w/{study.uid}/"

    # ---- the preview: the task with a sample item, nothing sent, no worker, nothing assigned ---------
    page.goto(entry + "?" + urlencode({"assignmentId": PREVIEW_ASSIGNMENT_ID, "hitId": "HITBROWSER1"}))
    page.get_by_text("This is a preview", exact=False).wait_for()
    assert page.get_by_text("Choose the sentiment of the review", exact=False).count() >= 1
    assert page.locator("#hatlab-app").count() == 1 and page.locator(".ht-submit").is_disabled()
    page.get_by_text("Accept the task on Amazon Mechanical Turk", exact=False).wait_for()
    assert not Worker.objects.exists() and not Assignment.objects.exists()
    page.screenshot(path=str(output_dir / "preview.png"), full_page=True)

    # ---- accepted: MTurk opens the page with its four parameters --------------------------------------
    page.goto(entry + "?" + accepted(external_submit, "HITBROWSER1", "ASSIGNBROWSER1", "WORKERBROWSER1"))
    for number in (1, 2):
        page.wait_for_selector(
            f"#hatlab-app[data-state='item'] .ht-progress-text:text-is('Your item {number} of 2')"
        )
        page.get_by_role("button", name="positive" if number == 1 else "negative").click()
        page.locator(".hl-word").nth(3 if number == 1 else 0).click()
        page.locator(".ht-submit").click()

    # ---- the hand-off: the page posts its form to {turkSubmitTo}/mturk/externalSubmit by itself -------
    page.wait_for_selector("#mturk-received")
    page.screenshot(path=str(output_dir / "submitted.png"), full_page=True)
    assert len(external_submit.posts) == 1
    path, fields = external_submit.posts[0]
    assert path == "/mturk/externalSubmit"
    assert fields["assignmentId"] == ["ASSIGNBROWSER1"]

    worker = Worker.objects.get(provider="mturk", external_id="WORKERBROWSER1")
    stored = list(Response.objects.filter(worker=worker, study=study).order_by("id"))
    assert [r.answer["label"] for r in stored] == ["positive", "negative"]
    assert [r.answer["map"][3] for r in stored] == [1, 0] and stored[1].answer["map"][0] == 1
    copied = posted_copy(fields)  # the page's copy of its answers, for reconciliation
    assert [e["submission_key"] for e in copied] == [str(r.submission_key) for r in stored]
    assert [e["answer"] for e in copied] == [r.answer for r in stored]
    assert [e["assignment"] for e in copied] == [str(r.assignment.uid) for r in stored]
    assert errors == []


REVIEW = "The narrator was superb and warm . The plot dragged in the middle ."


def mturk_rating_study() -> Study:
    owner = get_user_model().objects.create_user("rater-owner", password="x" * 12)
    dataset = Dataset.objects.create(name="audiobooks", owner=owner)
    Document.from_text(dataset, "book-1", REVIEW, label="", metadata={"perf": 4}).save()
    kind = get_kind("sentence_rating")
    config = {"aspects": [{"name": "performance", "title": "Performance", "rating_field": "perf"}]}
    study = Study.objects.create(
        name="MTurk rating",
        owner=owner,
        dataset=dataset,
        kind="sentence_rating",
        config=kind.validate_config(config),
        instructions="Rate how much each highlighted sentence explains the rating.",
        annotators_per_item=1,
        provider="mturk",
        provider_config={"title": "Rate sentences", "description": "Rate sentences", "reward": "0.40"},
    )
    publish(study, "HITRATING1")
    return study


def test_rating_page_stays_read_only_in_a_preview_and_hands_off_to_mturk(live_server, browser_context,
                                                                         external_submit, output_dir):  # fmt: skip
    study = mturk_rating_study()
    page = browser_context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    api_calls: list[str] = []
    page.on("request", lambda r: api_calls.append(r.url) if "/api/work/" in r.url else None)
    entry = f"{live_server.url}/w/{study.uid}/"
    params = accepted(external_submit, "HITRATING1", "ASSIGNRATING1", "WORKERRATING1")

    page.goto(entry + "?" + params)
    page.wait_for_selector("#hatlab-app[data-state='item'] .ht-progress-text:text-is('Your item 1 of 2')")

    # The same browser previews the HIT again: the session knows the worker, so the server serves the
    # task page, and the page itself stays read-only and asks the API for nothing.
    api_calls.clear()
    page.goto(entry + "?" + urlencode({"assignmentId": PREVIEW_ASSIGNMENT_ID, "hitId": "HITRATING1"}))
    page.wait_for_selector("#hatlab-app[data-state='preview']")
    assert "preview" in page.locator(".ht-status").text_content()
    assert page.locator(".ht-task").is_hidden() and api_calls == []
    page.screenshot(path=str(output_dir / "preview_in_session.png"), full_page=True)

    page.goto(entry + "?" + params)
    page.wait_for_selector("#hatlab-app[data-state='item'] .ht-progress-text:text-is('Your item 1 of 2')")
    page.keyboard.press("4")
    page.keyboard.press("Enter")
    page.wait_for_selector("#hatlab-app[data-state='item'] .ht-progress-text:text-is('Your item 2 of 2')")
    page.get_by_role("button", name="a little").click()
    page.locator(".ht-submit").click()

    page.wait_for_selector("#mturk-received")
    assert len(external_submit.posts) == 1
    path, fields = external_submit.posts[0]
    assert path == "/mturk/externalSubmit" and fields["assignmentId"] == ["ASSIGNRATING1"]
    worker = Worker.objects.get(provider="mturk", external_id="WORKERRATING1")
    stored = list(Response.objects.filter(worker=worker, study=study).order_by("id"))
    assert [r.answer for r in stored] == [{"rating": 4}, {"rating": 2}]
    copied = posted_copy(fields)
    assert [e["answer"] for e in copied] == [{"rating": 4}, {"rating": 2}]
    assert [e["submission_key"] for e in copied] == [str(r.submission_key) for r in stored]
    assert errors == []
