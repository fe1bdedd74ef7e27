"""The JSON API: the annotator's next / submit flow (session + CSRF) and the researcher's endpoints."""

from __future__ import annotations

import json
import re
import uuid
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotate.crowd.providers.local.adapter import invite_path, make_invite
from annotate.handout.page_tokens import page_token_valid
from annotate.models import Assignment, Dataset, Item, Response, Study
from tests.annotate.conftest import make_dataset, make_study

pytestmark = pytest.mark.django_db


def task_json(html: str) -> dict:
    match = re.search(r'<script id="hatlab-task" type="application/json">(.*?)</script>', html, re.S)
    assert match, "the task page carries its task_json"
    return json.loads(match.group(1))


class Annotator:
    """A browser session that opened an invite link: it knows the API URLs and the CSRF token."""

    def __init__(self, study: Study, invitee: str | None = None):
        self.client = Client(enforce_csrf_checks=True)
        page = self.client.post(invite_path(study, make_invite(study, invitee)), follow=True)
        assert page.status_code == 200
        self.task = task_json(page.content.decode())

    def post(self, url: str, body: dict | None = None, csrf: bool = True):
        headers = {"HTTP_X_CSRFTOKEN": self.task["csrf_token"]} if csrf else {}
        return self.client.post(url, json.dumps(body or {}), content_type="application/json", **headers)

    def next(self):
        return self.post(self.task["next_url"])

    def submit(self, assignment: str, body: dict):
        return self.post(self.task["submit_url_template"].replace("ASSIGNMENT", assignment), body)


def body_for(item_payload: dict, label: str = "positive", key: str | None = None) -> dict:
    word_map = [0] * len(item_payload["words"])
    word_map[-1] = 1
    return {
        "submission_key": key or str(uuid.uuid4()),
        "answer": {"label": label, "map": word_map},
        "timings": {"read_ms": 1200, "answer_ms": 800, "label_at_ms": 1200, "first_highlight_at_ms": 1500},
        "signals": {"visibility_changes": 0},
    }


def test_task_page_context(study):
    annotator = Annotator(study)
    task = annotator.task
    assert task["study"] == str(study.uid) and task["kind"] == "highlight"
    assert task["next_url"] == f"/api/work/{study.uid}/next/"
    assert task["submit_url_template"] == "/api/work/assignments/ASSIGNMENT/submit/"
    assert task["done_url"] == f"/w/{study.uid}/done/"
    assert task["config"]["mode"] == "read_first"
    assert task["config"]["labels"] == ["positive", "negative", "cannot decide"]
    assert task["csrf_token"]


def test_next_and_submit_flow(study):
    annotator = Annotator(study)
    first = annotator.next()
    assert first.status_code == 200
    data = first.json()
    assert set(data) == {"assignment", "expires_at", "page_token", "item", "progress", "config"}
    assert data["item"]["kind"] == "highlight"
    assert set(data["item"]["payload"]) == {"words", "breaks"}
    assert data["progress"] == {"done": 0, "total": study.items.count()}
    assert data["config"]["time_limit_s"] == study.time_limit_s
    item = Item.objects.get(assignments__uid=data["assignment"])
    assert data["item"]["payload"]["words"] == item.document.word_strings

    assert annotator.next().json()["assignment"] == data["assignment"]  # held assignment again

    body = body_for(data["item"]["payload"])
    created = annotator.submit(data["assignment"], body)
    assert created.status_code == 201
    response_id = created.json()["response"]
    again = annotator.submit(data["assignment"], body)
    assert (again.status_code, again.json()) == (200, {"response": response_id})
    assert Response.objects.count() == 1
    stored = Response.objects.get()
    assert stored.answer == body["answer"] and stored.read_ms == 1200 and stored.answer_ms == 800

    second = annotator.next().json()
    assert second["assignment"] != data["assignment"]
    assert second["progress"]["done"] == 1


def test_secrets_never_reach_the_annotator(researcher):
    dataset = make_dataset(researcher, n=3, name="golds", gold_every=1)
    study = make_study(researcher, dataset, name="gold study")
    annotator = Annotator(study)
    raw = annotator.next().content.decode()
    assert "gold" not in raw and "secret" not in raw
    page = Client().post(invite_path(study, make_invite(study)), follow=True).content.decode()
    assert "gold" not in page


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda b: b["answer"].update(label="meh"), "answer.label"),
        (lambda b: b["answer"].update(map=[1]), "answer.map"),
        (lambda b: b.pop("submission_key"), "submission_key"),
        (lambda b: b.update(submission_key="not-a-uuid"), "submission_key"),
        (lambda b: b["timings"].update(read_ms=-5), "timings.read_ms"),
        (lambda b: b["timings"].update(first_highlight_at_ms=10), "timings.first_highlight_at_ms"),
        (lambda b: b.update(signals=[1, 2]), "signals"),
        (lambda b: b.pop("answer"), "answer"),
    ],
)
def test_bad_submissions_get_400_naming_the_field(study, mutate, field):
    annotator = Annotator(study)
    data = annotator.next().json()
    body = body_for(data["item"]["payload"])
    mutate(body)
    response = annotator.submit(data["assignment"], body)
    assert response.status_code == 400
    assert field in response.json()["errors"], response.json()
    assert not Response.objects.exists()


def test_malformed_json_is_a_400(study):
    annotator = Annotator(study)
    data = annotator.next().json()
    url = annotator.task["submit_url_template"].replace("ASSIGNMENT", data["assignment"])
    response = annotator.client.post(
        url, "{oops", content_type="application/json", HTTP_X_CSRFTOKEN=annotator.task["csrf_token"]
    )
    assert response.status_code == 400 and "detail" in response.json()["errors"]


def test_csrf_is_required(study):
    annotator = Annotator(study)
    response = annotator.post(annotator.task["next_url"], csrf=False)
    assert response.status_code == 403
    assert "CSRF" in response.json()["errors"]["detail"][0]
    assert not Assignment.objects.exists()


def test_next_needs_a_worker_in_the_session(study):
    client = Client()
    response = client.post(reverse("api-work-next", args=[study.uid]), content_type="application/json")
    assert response.status_code == 403 and "worker" in response.json()["errors"]
    missing = client.post(reverse("api-work-next", args=[uuid.uuid4()]), content_type="application/json")
    assert missing.status_code == 404 and "study" in missing.json()["errors"]


def test_paused_study_is_a_conflict_and_finished_is_done(study):
    annotator = Annotator(study)
    Study.objects.filter(pk=study.pk).update(status=Study.Status.PAUSED)
    paused = annotator.next()
    assert paused.status_code == 409 and "study" in paused.json()["errors"]
    Study.objects.filter(pk=study.pk).update(status=Study.Status.FINISHED)
    done = annotator.next().json()
    assert done["done"] is True and "message" in done["completion"]
    # Nothing answered in a finished study: closed, not done; no code.
    assert done["completion"]["finished"] is False and done["completion"]["state"] == "closed"
    assert "code" not in done["completion"]


def test_a_worker_who_arrives_at_a_full_study_is_told_it_is_full_not_thanked(researcher, dataset):
    study = make_study(researcher, dataset, name="one seat", annotators_per_item=1)
    first = Annotator(study, "early")
    held = []
    while "assignment" in (data := first.next().json()):
        held.append(data["assignment"])
        first.submit(data["assignment"], body_for(data["item"]["payload"]))
    late = Annotator(study, "late").next().json()
    assert late["done"] is True and late["progress"]["done"] == 0
    assert late["completion"]["finished"] is False and late["completion"]["state"] == "full"
    assert "Thank you" not in late["completion"]["message"] and "code" not in late["completion"]
    assert data["completion"]["finished"] is True and data["completion"]["state"] == "done"


def test_working_to_the_end(researcher):
    dataset = make_dataset(researcher, n=3, name="small")
    study = make_study(researcher, dataset, name="to the end", annotators_per_item=1)
    annotator = Annotator(study)
    for _ in range(3):
        data = annotator.next().json()
        assert annotator.submit(data["assignment"], body_for(data["item"]["payload"])).status_code == 201
    done = annotator.next()
    assert done.status_code == 200
    assert done.json() == {
        "done": True,
        "completion": {
            "finished": True,
            "state": "done",
            "message": "Thank you! You have finished all items available to you in this study.",
        },
        "progress": {"done": 3, "total": 3},
    }


@pytest.mark.parametrize(
    "native",
    [
        pytest.param(True, marks=pytest.mark.postgres_only(reason="prepared statements, PostgreSQL's SQL")),
        False,
    ],
    ids=["postgresql", "portable"],
)
def test_submit_can_hand_out_the_next_item_in_the_same_round_trip(researcher, monkeypatch, native):
    monkeypatch.setattr("annotate.infra.sql.native", lambda: native)
    dataset = make_dataset(researcher, n=3, name="chained")
    study = make_study(researcher, dataset, name="chained", annotators_per_item=1)
    annotator = Annotator(study)
    data = annotator.next().json()
    seen = []
    for step in range(3):
        seen.append(data["item"]["payload"]["words"])
        body = {**body_for(data["item"]["payload"]), "next": True}
        stored = annotator.submit(data["assignment"], body)
        assert stored.status_code == 201
        following = stored.json()["next"]
        # a retry stores nothing new and hands out the same next item (or the same "done"), with a page
        # token served now for that same item
        again = annotator.submit(data["assignment"], body)
        retried, first = again.json(), stored.json()
        tokens = [b["next"].pop("page_token", None) for b in (retried, first)]
        assert again.status_code == 200 and retried == first
        if "assignment" in following:
            worker = Assignment.objects.get(uid=following["assignment"]).worker_id
            for token in tokens:
                assert page_token_valid(token, study.uid, worker, following["assignment"], study.time_limit_s)
        assert following["progress"] == {"done": step + 1, "total": 3}
        data = following
    assert data["done"] is True and "message" in data["completion"]
    assert len({tuple(words) for words in seen}) == 3
    assert Response.objects.filter(study=study).count() == 3
    assert Assignment.objects.filter(study=study, status=Assignment.Status.ASSIGNED).count() == 0


def test_submit_with_next_on_a_paused_study_stores_and_sends_the_page_to_next(study):
    annotator = Annotator(study)
    data = annotator.next().json()
    Study.objects.filter(pk=study.pk).update(status=Study.Status.PAUSED)
    stored = annotator.submit(data["assignment"], {**body_for(data["item"]["payload"]), "next": True})
    assert stored.status_code == 201 and stored.json()["next"] is None
    assert annotator.next().status_code == 409


def test_submitting_to_a_reassigned_slot_is_409(researcher, dataset):
    study = make_study(researcher, dataset, name="single", annotators_per_item=1)
    slow, fast = Annotator(study, "slow"), Annotator(study, "fast")
    held = slow.next().json()
    Assignment.objects.filter(uid=held["assignment"]).update(expires_at=timezone.now() - timedelta(seconds=1))
    taken = fast.next().json()
    assert taken["item"] == held["item"]
    late = slow.submit(held["assignment"], body_for(held["item"]["payload"]))
    assert late.status_code == 409
    assert "another annotator" in late.json()["errors"]["assignment"][0]


def test_someone_elses_assignment_is_404(study):
    owner, other = Annotator(study, "owner"), Annotator(study, "other")
    data = owner.next().json()
    response = other.submit(data["assignment"], body_for(data["item"]["payload"]))
    assert response.status_code == 404 and "assignment" in response.json()["errors"]


# ---------------------------------------------------------------- researcher API


@pytest.fixture
def api(researcher) -> Client:
    client = Client()
    client.force_login(researcher)
    return client


def upload(name: str, content: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="text/plain")


def test_dataset_create_with_file_and_import(api, researcher):
    response = api.post(
        "/api/datasets/", {"name": "uploaded", "file": upload("t.csv", b"id,text,label\n1,hi there,pos\n")}
    )
    assert response.status_code == 201, response.content
    assert response.json()["document_count"] == 1 and response.json()["owner"] == researcher.username
    pk = response.json()["id"]
    more = api.post(
        f"/api/datasets/{pk}/import/",
        {
            "file": upload("m.jsonl", b'{"id": 2, "text": "yo", "label": "neg"}\n'),
            "label_set": ["pos", "neg"],
        },
    )
    assert more.status_code == 201 and more.json() == {"imported": 1, "documents": 2, "labels": {"neg": 1}}
    listed = api.get("/api/datasets/").json()
    assert [d["name"] for d in listed["results"]] == ["uploaded"]
    assert listed["results"][0]["labels"] == ["neg", "pos"]


def test_bad_upload_is_a_400_naming_line_and_field(api):
    response = api.post(
        "/api/datasets/", {"name": "broken", "file": upload("t.csv", b"id,text,label\n1,,pos\n")}
    )
    assert response.status_code == 400
    assert "line 2, field 'text'" in response.json()["file"][0]
    assert not Dataset.objects.filter(name="broken").exists()
    duplicate = api.post("/api/datasets/", {"name": "x"}, content_type="application/json")
    assert duplicate.status_code == 201
    again = api.post("/api/datasets/", {"name": "x"}, content_type="application/json")
    assert again.status_code == 400 and "name" in again.json()


def test_study_create_start_progress_invites(api, dataset):
    bad = api.post(
        "/api/studies/",
        {"name": "s", "dataset": dataset.pk, "config": {"labels": ["one"]}},
        content_type="application/json",
    )
    assert bad.status_code == 400 and "labels" in bad.json()["config"]
    unknown = api.post(
        "/api/studies/",
        {"name": "s", "dataset": dataset.pk, "kind": "dance"},
        content_type="application/json",
    )
    assert unknown.status_code == 400 and "kind" in unknown.json()
    created = api.post(
        "/api/studies/",
        {
            "name": "api study",
            "dataset": dataset.pk,
            "config": {"mode": "free"},
            "annotators_per_item": 2,
            "time_limit_s": 600,
            "instructions": "Be careful.",
        },
        content_type="application/json",
    )
    assert created.status_code == 201, created.content
    study = created.json()
    assert study["status"] == "draft" and study["config"]["mode"] == "free"
    assert study["config"]["labels"] == ["positive", "negative", "cannot decide"]
    assert study["entry_url"] == f"/w/{study['uid']}/"
    started = api.post(f"/api/studies/{study['uid']}/start/")
    assert started.status_code == 200 and started.json()["status"] == "running"
    assert Item.objects.filter(study__uid=study["uid"]).count() == dataset.documents.count()
    assert api.post(f"/api/studies/{study['uid']}/start/").status_code == 200  # already running
    progress = api.get(f"/api/studies/{study['uid']}/progress/").json()
    assert progress["items_done"] == 0 and progress["items_total"] == dataset.documents.count()
    assert progress["responses_needed"] == 2 * dataset.documents.count()
    links = api.post(f"/api/studies/{study['uid']}/invites/", {"count": 2}, content_type="application/json")
    assert links.status_code == 201 and len(links.json()["links"]) == 2
    assert Client().get(links.json()["links"][0]).status_code == 200
    assert (
        api.post(
            f"/api/studies/{study['uid']}/invites/", {"count": 0}, content_type="application/json"
        ).status_code
        == 400
    )
    assert api.post(f"/api/studies/{study['uid']}/finish/").json()["status"] == "finished"
    restart = api.post(f"/api/studies/{study['uid']}/start/")
    assert restart.status_code == 409 and "status" in restart.json()


def test_study_cannot_use_another_researchers_dataset(api, other_researcher):
    foreign = make_dataset(other_researcher, n=2, name="theirs")
    response = api.post(
        "/api/studies/", {"name": "s", "dataset": foreign.pk}, content_type="application/json"
    )
    assert response.status_code == 400 and "dataset" in response.json()


def test_schema_and_docs(api, study):
    schema = api.get("/api/schema/")
    assert schema.status_code == 200
    text = schema.content.decode()
    for path in (
        "/api/work/{study_uid}/next/",
        "/api/work/assignments/{assignment_uid}/submit/",
        "/api/studies/{uid}/progress/",
        "/api/datasets/{id}/import/",
    ):
        assert path in text
    docs = api.get("/api/docs/")
    assert docs.status_code == 200
    html = docs.content.decode()
    assert "/api/work/assignments/{assignment_uid}/submit/" in html and "Submission" in html
    assert "cdn" not in html.lower() and "<script" not in html


def test_schema_views_answer_as_the_routed_views(study):
    """The DRF twins that describe the annotator endpoints in the schema behave the same."""
    from django.test import RequestFactory

    from annotate.api.work import NextView, SubmitView

    annotator = Annotator(study)
    factory = RequestFactory()

    def call(view, path, body, **kwargs):
        request = factory.post(
            path,
            json.dumps(body),
            content_type="application/json",
            HTTP_X_CSRFTOKEN=annotator.task["csrf_token"],
        )
        request.COOKIES.update({k: v.value for k, v in annotator.client.cookies.items()})
        request.session = annotator.client.session
        return view(request, **kwargs)

    nxt = call(NextView.as_view(), annotator.task["next_url"], {}, study_uid=study.uid)
    data = json.loads(nxt.content)
    assert nxt.status_code == 200 and data["item"]["kind"] == "highlight"
    body = body_for(data["item"]["payload"])
    url = annotator.task["submit_url_template"].replace("ASSIGNMENT", data["assignment"])
    stored = call(SubmitView.as_view(), url, body, assignment_uid=data["assignment"])
    assert stored.status_code == 201 and Response.objects.count() == 1
    bad = call(SubmitView.as_view(), url, {"answer": {}}, assignment_uid=data["assignment"])
    assert bad.status_code == 400 and "submission_key" in json.loads(bad.content)["errors"]


def test_parse_submission_rules():
    from rest_framework.exceptions import ValidationError

    from annotate.api.work import parse_submission

    key = str(uuid.uuid4())
    ok = parse_submission(
        json.dumps({"submission_key": key, "answer": 1, "timings": {"read_ms": 5, "x": "y"}}).encode()
    )
    assert ok == {
        "next": False,
        "submission_key": uuid.UUID(key),
        "answer": 1,
        "timings": {"read_ms": 5},
        "signals": {},
    }
    for body, field in [
        ({"submission_key": key, "answer": 1, "timings": {"read_ms": 1.5}}, "timings.read_ms"),
        ({"submission_key": key, "answer": 1, "timings": {"answer_ms": True}}, "timings.answer_ms"),
        ({"submission_key": key, "answer": 1, "timings": []}, "timings"),
        ({"submission_key": key, "answer": 1, "signals": {"x": "y" * 20000}}, "signals"),
        ({"submission_key": 5, "answer": 1}, "submission_key"),
        ({"submission_key": key, "answer": 1, "next": "yes"}, "next"),
        ([1], "non_field_errors"),
    ]:
        with pytest.raises(ValidationError) as exc:
            parse_submission(json.dumps(body).encode())
        assert field in exc.value.detail, body


def test_annotator_endpoints_only_take_post(study):
    annotator = Annotator(study)
    response = annotator.client.get(annotator.task["next_url"])
    assert response.status_code == 405 and "detail" in response.json()["errors"]


def test_portable_path_serves_the_same_flow(study, monkeypatch):
    """Off PostgreSQL (the SQLite demo) every hand-written statement has an ORM twin."""
    monkeypatch.setattr("annotate.infra.sql.native", lambda: False)
    annotator = Annotator(study)
    data = annotator.next().json()
    assert data["item"]["kind"] == "highlight" and data["progress"]["done"] == 0
    body = body_for(data["item"]["payload"])
    assert annotator.submit(data["assignment"], body).status_code == 201
    assert annotator.submit(data["assignment"], body).status_code == 200
    assert annotator.next().json()["progress"]["done"] == 1


def test_other_session_engines_work(study, settings):
    settings.SESSION_ENGINE = "django.contrib.sessions.backends.signed_cookies"
    annotator = Annotator(study)
    data = annotator.next().json()
    assert annotator.submit(data["assignment"], body_for(data["item"]["payload"])).status_code == 201
