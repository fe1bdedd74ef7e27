"""The study protocol: consent before any item (versioned, recorded, a decline leaves nothing counted),
the pre-study questionnaire and its screening (a failed screen leaves nothing counted), the post-study
questionnaire before the completion, and the worker's controls (skip with a reason, go back and edit)."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client
from django.urls import reverse

from annotate.crowd.providers.local.adapter import invite_path, make_invite
from annotate.models import (
    Assignment,
    ConsentDecision,
    Item,
    ItemSkip,
    Response,
    ResponseEdit,
    Study,
    SurveyAnswers,
    TrainingAnswer,
)
from annotate.protocol import consent
from annotate.protocol.config import ProtocolInvalid, validate_protocol
from annotate.protocol.markdown import render_markdown
from annotate.protocol.surveys import qualifies
from annotate.studies.lifecycle import StudyStateError, start_study
from annotate.studies.service import StudyInvalid, create_study, update_consent
from tests.annotate.conftest import make_dataset, make_study
from tests.annotate.test_api import body_for, task_json

pytestmark = pytest.mark.django_db

CONSENT = "# Consent\n\nYour answers are used for **research** only."
PRE = [
    {
        "id": "english",
        "type": "single",
        "prompt": "Is English your first language?",
        "options": ["yes", "no"],
    },
    {"id": "age", "type": "number", "prompt": "Your age", "min": 18, "max": 120, "integer": True},
    {"id": "note", "type": "text", "prompt": "Anything to add?", "required": False, "max_length": 20},
]
POST = [{"id": "clear", "type": "likert", "prompt": "The task was clear", "points": 5}]
PROTOCOL = {
    "consent": CONSENT,
    "pre_survey": PRE,
    "screening": [{"question": "english", "accept": ["yes"]}],
    "post_survey": POST,
    "skip_reasons": ["I can't judge this", "The text is broken"],
    "back": True,
}


def protocol_study(owner, dataset, protocol=None, **fields) -> Study:
    return make_study(owner, dataset, protocol=validate_protocol(protocol or PROTOCOL), **fields)


class Participant:
    """A browser that opened its invite and walks the protocol's pages."""

    def __init__(self, study: Study, name: str | None = None):
        self.study = study
        self.client = Client(enforce_csrf_checks=True)
        self.page = self.client.post(invite_path(study, make_invite(study, name)), follow=True)
        self.html = self.page.content.decode()

    def field(self, name: str) -> str:
        match = re.search(rf'name="{name}" value="([^"]*)"', self.html)
        assert match, f"the page has a {name} field"
        return match.group(1)

    def decide(self, decision: str):
        url = reverse("work-consent", args=[self.study.uid])
        form = {"token": self.field("token"), "version": self.field("version"), "decision": decision}
        self.page = self.client.post(url, form, follow=True)
        self.html = self.page.content.decode()
        return self.page

    def answer(self, phase: str, answers: dict):
        url = reverse("work-survey", args=[self.study.uid, phase])
        self.page = self.client.post(url, {"token": self.field("token"), **answers}, follow=True)
        self.html = self.page.content.decode()
        return self.page

    def enter(self) -> dict:
        """Consent accepted and a qualifying pre-study answer: the task page's task_json."""
        self.decide("accept")
        self.answer("pre", {"english": "yes", "age": "30"})
        return task_json(self.html)

    def api(self, url: str, body: dict | None = None, token: str | None = None):
        headers = {"HTTP_X_CSRFTOKEN": token} if token else {}
        return self.client.post(url, json.dumps(body or {}), content_type="application/json", **headers)


def next_url(study: Study) -> str:
    return reverse("api-work-next", args=[study.uid])


# ------------------------------------------------------------------ the protocol's settings


@pytest.mark.parametrize(
    ("protocol", "field"),
    [
        ({"consent": 5}, "consent"),
        (
            {"pre_survey": [{"id": "Bad id", "type": "single", "prompt": "x", "options": ["a", "b"]}]},
            "pre_survey.0.id",
        ),
        (
            {"pre_survey": [{"id": "a", "type": "single", "prompt": "x", "options": ["a"]}]},
            "pre_survey.0.options",
        ),
        ({"pre_survey": [{"id": "a", "type": "slider", "prompt": "x"}]}, "pre_survey.0.type"),
        (
            {"pre_survey": [{"id": "a", "type": "number", "prompt": "x", "min": 5, "max": 1}]},
            "pre_survey.0.max",
        ),
        (
            {"pre_survey": [{"id": "a", "type": "number", "prompt": "x", "min": float("nan")}]},
            "pre_survey.0.min",
        ),
        ({"screening": [{"question": "nope", "accept": ["a"]}]}, "screening.0.question"),
        (
            {"pre_survey": PRE, "screening": [{"question": "english", "accept": ["maybe"]}]},
            "screening.0.accept",
        ),
        ({"pre_survey": PRE, "screening": [{"question": "note", "accept": ["x"]}]}, "screening.0.question"),
        ({"skip_reasons": ["a", "a"]}, "skip_reasons"),
        ({"back": "yes"}, "back"),
        ({"attention": []}, "attention"),
    ],
)
def test_a_bad_protocol_is_refused_naming_the_field(protocol, field):
    with pytest.raises(ProtocolInvalid) as refused:
        validate_protocol(protocol)
    assert field in refused.value.errors


def test_the_study_rule_refuses_a_bad_protocol_naming_it(researcher, dataset):
    data = {"name": "p", "dataset": dataset.pk, "kind": "highlight", "protocol": {"back": 1}}
    with pytest.raises(StudyInvalid) as refused:
        create_study(researcher, data)
    assert "protocol.back" in refused.value.fields
    made = create_study(researcher, {**data, "protocol": PROTOCOL})
    assert made.protocol["pre_survey"][0]["id"] == "english"


def test_consent_markdown_escapes_raw_html_and_drops_unsafe_links():
    html = render_markdown("**yes** <script>alert(1)</script> [x](javascript:alert(1)) ![i](http://e/i.png)")
    assert "<strong>yes</strong>" in html
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "javascript:" not in html.replace("[x](javascript:alert(1))", "")
    assert "<img" not in html


def test_screening_rules():
    rules = [{"question": "english", "accept": ["yes"]}, {"question": "age", "min": 18, "max": None}]
    assert qualifies(rules, {"english": "yes", "age": 30})
    assert not qualifies(rules, {"english": "no", "age": 30})
    assert not qualifies(rules, {"english": "yes", "age": 17})
    assert not qualifies(rules, {"english": "yes"})


# ------------------------------------------------------------------ consent


def test_no_item_before_consent_and_the_acceptance_is_recorded_with_its_version(researcher, dataset):
    study = protocol_study(researcher, dataset)
    person = Participant(study)
    assert 'data-protocol="consent"' in person.html and "<strong>research</strong>" in person.html
    token = person.field("token")
    refused = person.api(next_url(study), token=token)
    assert refused.status_code == 403 and "protocol" in refused.json()["errors"]
    assert not Assignment.objects.filter(study=study).exists()
    person.decide("accept")
    assert 'data-protocol="pre_survey"' in person.html
    assert person.api(next_url(study), token=token).status_code == 403  # the questions come first
    person.answer("pre", {"english": "yes", "age": "40"})
    task = task_json(person.html)
    handed = person.api(task["next_url"], token=task["csrf_token"])
    assert handed.status_code == 200 and "assignment" in handed.json()
    made = ConsentDecision.objects.get(study=study)
    assert made.accepted and made.version.number == 1 and made.decided_at is not None


def test_a_declined_consent_leaves_nothing_counted_and_no_completion(researcher, dataset):
    study = protocol_study(researcher, dataset)
    person = Participant(study)
    token = person.field("token")
    person.decide("decline")
    assert 'data-end="declined"' in person.html and "close this page" in person.html
    assert person.api(next_url(study), token=token).status_code == 403
    done = person.client.get(reverse("work-done", args=[study.uid])).content.decode()
    assert 'data-end="declined"' in done and "completion code" not in done.lower()
    assert not Assignment.objects.filter(study=study).exists()
    assert not Response.objects.filter(study=study).exists()
    # A second post cannot turn the decline into an acceptance.
    person.html = person.client.get(reverse("work-entry", args=[study.uid])).content.decode()
    assert 'data-end="declined"' in person.html
    assert ConsentDecision.objects.get(study=study).accepted is False


def test_a_forged_consent_post_is_refused(researcher, dataset):
    study = protocol_study(researcher, dataset)
    person = Participant(study)
    url = reverse("work-consent", args=[study.uid])
    refused = person.client.post(url, {"token": "forged", "version": "1", "decision": "accept"})
    assert refused.status_code == 302 and not ConsentDecision.objects.exists()


def test_editing_a_running_study_s_consent_makes_a_new_version(researcher, dataset):
    study = protocol_study(researcher, dataset)
    first = Participant(study, "first")
    first.decide("accept")
    update_consent(researcher, study, CONSENT + "\n\nAnd a new paragraph.")
    second = Participant(study, "second")
    assert second.field("version") == "2" and "new paragraph" in second.html
    second.decide("accept")
    versions = dict(ConsentDecision.objects.values_list("worker__external_id", "version__number"))
    assert sorted(versions.values()) == [1, 2]
    assert consent.current_version(Study.objects.get(pk=study.pk)).number == 2


def test_a_decision_on_an_outdated_version_is_not_stored(researcher, dataset):
    study = protocol_study(researcher, dataset)
    person = Participant(study)
    update_consent(researcher, study, "Another text.")
    person.decide("accept")  # the form still says version 1
    assert not ConsentDecision.objects.exists() and "Another text." in person.html


# ------------------------------------------------------------------ screening and questionnaires


def test_a_failed_screen_leaves_nothing_counted(researcher, dataset):
    study = protocol_study(researcher, dataset, provider="local")
    person = Participant(study)
    token = person.field("token")
    person.decide("accept")
    person.answer("pre", {"english": "no", "age": "30"})
    assert 'data-end="screened_out"' in person.html
    assert person.api(next_url(study), token=token).status_code == 403
    assert not Assignment.objects.filter(study=study).exists()
    assert SurveyAnswers.objects.get(study=study, phase="pre").qualified is False
    done = person.client.get(reverse("work-done", args=[study.uid])).content.decode()
    assert "completion code" not in done.lower() and 'data-end="screened_out"' in done


def test_the_screen_out_page_says_what_to_do_on_prolific():
    from annotate.views.protocol import RETURN_STEPS

    assert "Return" in RETURN_STEPS["prolific"] and "Return" in RETURN_STEPS["mturk"]


@pytest.mark.parametrize(
    ("answers", "problem"),
    [
        ({"english": "maybe", "age": "30"}, "english"),
        ({"english": "yes", "age": "17"}, "age"),
        ({"english": "yes", "age": "30.5"}, "age"),
        ({"english": "yes", "age": "1e400"}, "age"),
        ({"english": "yes", "age": "NaN"}, "age"),
        ({"english": "yes"}, "age"),
        ({"english": "yes", "age": "30", "note": "x" * 21}, "note"),
    ],
)
def test_hostile_questionnaire_answers_are_refused_next_to_their_question(
    researcher, dataset, answers, problem
):
    study = protocol_study(researcher, dataset)
    person = Participant(study)
    person.decide("accept")
    page = person.answer("pre", answers)
    assert page.status_code == 400
    assert f'id="q-{problem}-error"' in person.html
    assert not SurveyAnswers.objects.exists()


def test_the_post_study_questionnaire_comes_before_the_completion(researcher, dataset):
    study = protocol_study(researcher, dataset, annotators_per_item=1, config={"max_items_per_worker": 1})
    person = Participant(study)
    task = person.enter()
    token = task["csrf_token"]
    item = person.api(task["next_url"], token=token).json()
    submit = task["submit_url_template"].replace("ASSIGNMENT", item["assignment"])
    stored = person.api(submit, {**body_for(item["item"]["payload"]), "next": True}, token=token).json()
    completion = stored["next"]["completion"]
    assert completion["redirect_url"] == reverse("work-survey", args=[study.uid, "post"])
    done_url = reverse("work-done", args=[study.uid])
    assert person.client.get(done_url).url == completion["redirect_url"]
    person.html = person.client.get(completion["redirect_url"]).content.decode()
    person.answer("post", {"clear": "4"})
    assert "Thank you" in person.html and 'data-end="done"' in person.html
    assert SurveyAnswers.objects.get(study=study, phase="post").answers == {"clear": 4}


# ------------------------------------------------------------------ skip and back


def test_a_skipped_item_goes_to_someone_else_and_is_recorded(researcher, dataset):
    study = protocol_study(researcher, dataset, annotators_per_item=1)
    first, second = Participant(study, "first"), Participant(study, "second")
    task1, task2 = first.enter(), second.enter()
    item = first.api(task1["next_url"], token=task1["csrf_token"]).json()
    skip_url = task1["protocol"]["skip_url_template"].replace("ASSIGNMENT", item["assignment"])
    wrong = first.api(skip_url, {"reason": "boring"}, token=task1["csrf_token"])
    assert wrong.status_code == 409 and "reason" in wrong.json()["errors"]
    skipped = first.api(skip_url, {"reason": "The text is broken"}, token=task1["csrf_token"]).json()
    assert skipped["next"]["assignment"] != item["assignment"]
    assert skipped["next"]["item"]["payload"]["words"] != item["item"]["payload"]["words"]
    record = ItemSkip.objects.get()
    assert record.reason == "The text is broken" and str(record.assignment.uid) == item["assignment"]
    given = second.api(task2["next_url"], token=task2["csrf_token"]).json()
    assert given["item"]["payload"]["words"] == item["item"]["payload"]["words"]  # the skipped item
    # another browser cannot skip someone else's item
    other = second.api(
        task2["protocol"]["skip_url_template"].replace("ASSIGNMENT", skipped["next"]["assignment"]),
        {"reason": "The text is broken"},
        token=task2["csrf_token"],
    )
    assert other.status_code == 404


def test_skips_are_capped(researcher, dataset):
    study = protocol_study(researcher, dataset, {**PROTOCOL, "max_skips": 1})
    person = Participant(study)
    task = person.enter()
    item = person.api(task["next_url"], token=task["csrf_token"]).json()
    url = task["protocol"]["skip_url_template"]
    reason = {"reason": "I can't judge this"}
    following = person.api(url.replace("ASSIGNMENT", item["assignment"]), reason, token=task["csrf_token"])
    again = person.api(
        url.replace("ASSIGNMENT", following.json()["next"]["assignment"]), reason, token=task["csrf_token"]
    )
    assert again.status_code == 409 and ItemSkip.objects.count() == 1


def test_going_back_edits_the_answer_once_and_keeps_its_history(researcher, dataset):
    study = protocol_study(researcher, dataset)
    person = Participant(study)
    task = person.enter()
    token = task["csrf_token"]
    item = person.api(task["next_url"], token=token).json()
    submit = task["submit_url_template"].replace("ASSIGNMENT", item["assignment"])
    assert person.api(submit, body_for(item["item"]["payload"], "positive"), token=token).status_code == 201
    back = person.api(task["protocol"]["previous_url"], {"before": None}, token=token).json()
    assert back["assignment"] == item["assignment"] and back["answer"]["label"] == "positive"
    edit_url = task["protocol"]["edit_url_template"].replace("ASSIGNMENT", item["assignment"])
    body = body_for(item["item"]["payload"], "negative")
    assert person.api(edit_url, body, token=token).status_code == 201
    assert person.api(edit_url, body, token=token).status_code == 200  # a retry: stored once
    response = Response.objects.get()
    assert response.answer["label"] == "negative"
    history = ResponseEdit.objects.get()
    assert history.previous_answer["label"] == "positive" and history.answer["label"] == "negative"
    assert Response.objects.count() == 1 and response.item.responses_done == 1
    bad = person.api(edit_url, {**body_for(item["item"]["payload"]), "answer": {"label": "x"}}, token=token)
    assert bad.status_code == 400 and ResponseEdit.objects.count() == 1


def test_nobody_else_edits_an_answer(researcher, dataset):
    study = protocol_study(researcher, dataset)
    owner, other = Participant(study, "owner"), Participant(study, "other")
    task, task2 = owner.enter(), other.enter()
    item = owner.api(task["next_url"], token=task["csrf_token"]).json()
    submit = task["submit_url_template"].replace("ASSIGNMENT", item["assignment"])
    owner.api(submit, body_for(item["item"]["payload"]), token=task["csrf_token"])
    edit_url = task2["protocol"]["edit_url_template"].replace("ASSIGNMENT", item["assignment"])
    refused = other.api(edit_url, body_for(item["item"]["payload"], "negative"), token=task2["csrf_token"])
    assert refused.status_code == 404 and not ResponseEdit.objects.exists()
    assert other.api(task2["protocol"]["previous_url"], {}, token=task2["csrf_token"]).status_code == 404


def test_back_is_off_unless_the_protocol_allows_it(researcher, dataset):
    study = protocol_study(researcher, dataset, {"skip_reasons": ["x"]})
    person = Participant(study)
    task = task_json(person.html)
    item = person.api(task["next_url"], token=task["csrf_token"]).json()
    submit = task["submit_url_template"].replace("ASSIGNMENT", item["assignment"])
    person.api(submit, body_for(item["item"]["payload"]), token=task["csrf_token"])
    edit_url = task["protocol"]["edit_url_template"].replace("ASSIGNMENT", item["assignment"])
    refused = person.api(edit_url, body_for(item["item"]["payload"], "negative"), token=task["csrf_token"])
    assert refused.status_code == 409 and Response.objects.get().answer["label"] == "positive"


# ------------------------------------------------------------------ exports, results page, datasheet


def _run_three(study: Study) -> tuple[Participant, Participant, Participant]:
    """One participant who declines, one screened out, one who answers, skips, edits and finishes."""
    declined, screened, done = Participant(study, "d"), Participant(study, "s"), Participant(study, "f")
    declined.decide("decline")
    screened.decide("accept")
    screened.answer("pre", {"english": "no", "age": "50"})
    task = done.enter()
    token = task["csrf_token"]
    item = done.api(task["next_url"], token=token).json()
    skip_url = task["protocol"]["skip_url_template"].replace("ASSIGNMENT", item["assignment"])
    item = done.api(skip_url, {"reason": "The text is broken"}, token=token).json()["next"]
    submit = task["submit_url_template"].replace("ASSIGNMENT", item["assignment"])
    done.api(submit, body_for(item["item"]["payload"], "positive"), token=token)
    edit = task["protocol"]["edit_url_template"].replace("ASSIGNMENT", item["assignment"])
    done.api(edit, body_for(item["item"]["payload"], "negative"), token=token)
    done.html = done.client.get(reverse("work-survey", args=[study.uid, "post"])).content.decode()
    done.answer("post", {"clear": "5"})
    return declined, screened, done


def _rows(client: Client, study: Study, what: str) -> list[dict]:
    page = client.get(reverse("study-export", args=[study.uid, what, "jsonl"]))
    assert page.status_code == 200
    return [json.loads(line) for line in b"".join(page.streaming_content).decode().splitlines()]


def test_the_protocol_comes_back_in_the_exports_and_nothing_of_the_leavers_counts(researcher, dataset):
    study = protocol_study(researcher, dataset, annotators_per_item=1)
    _run_three(study)
    client = Client()
    client.force_login(researcher)
    people = {(r["consent_accepted"], r["qualified"]): r for r in _rows(client, study, "participants")}
    assert set(people) == {(False, None), (True, False), (True, True)}
    finisher = people[True, True]
    assert finisher["consent_version"] == 1 and finisher["consent_at"]
    assert finisher["pre_survey"] == {"english": "yes", "age": 30} and finisher["post_survey"] == {"clear": 5}
    assert finisher["skipped"] == 1 and finisher["edited"] == 1
    skips = _rows(client, study, "skips")
    assert [s["reason"] for s in skips] == ["The text is broken"] and skips[0]["worker"] == finisher["worker"]
    edits = _rows(client, study, "edits")
    assert edits[0]["previous_answer"]["label"] == "positive" and edits[0]["answer"]["label"] == "negative"
    responses = _rows(client, study, "responses")
    assert [r["worker"] for r in responses] == [finisher["worker"]]  # the leavers left no answer
    assert responses[0]["label"] == "negative"
    sheet = client.get(reverse("study-datasheet", args=[study.uid])).content.decode()
    assert "## The protocol" in sheet and "2 workers accepted, 1 declined" in sheet
    assert "1 workers did not qualify" in sheet and "`participants.csv`" in sheet


def test_the_results_page_summarises_the_protocol(researcher, dataset):
    study = protocol_study(researcher, dataset, annotators_per_item=1)
    _run_three(study)
    client = Client()
    client.force_login(researcher)
    html = client.get(reverse("study-results", args=[study.uid])).content.decode()
    assert "protocol-results-heading" in html
    assert "1 qualified, 1 did not" in html
    assert "The text is broken: 1" in html
    assert "Changed answers: 1" in html
    assert "5: 1" in html  # the Likert point the finisher chose


def test_a_study_without_a_protocol_offers_no_protocol_export(study, researcher):
    client = Client()
    client.force_login(researcher)
    assert client.get(reverse("study-export", args=[study.uid, "participants", "csv"])).status_code == 404


def test_the_protocol_page_previews_the_protocol_and_versions_the_consent(
    researcher, other_researcher, dataset
):
    study = protocol_study(researcher, dataset)
    Participant(study, "early").decide("accept")
    client = Client()
    client.force_login(researcher)
    url = reverse("study-protocol", args=[study.uid])
    html = client.get(url).content.decode()
    assert "<strong>research</strong>" in html and "Is English your first language?" in html
    assert "v1 (" in html and "1 decisions" in html
    assert 'id="protocol-plan"' in html and "at most 3" in html
    refused = client.post(url, {"consent": "x" * 20_001})
    assert refused.status_code == 400 and "at most 20000 characters" in refused.content.decode()
    client.post(url, {"consent": "A <b>new</b> text."})
    again = Participant(study, "late")
    assert again.field("version") == "2" and "&lt;b&gt;new&lt;/b&gt;" in again.html
    stranger = Client()
    stranger.force_login(other_researcher)
    assert stranger.get(url).status_code == 404
    assert stranger.post(url, {"consent": "mine"}).status_code == 404
    assert Study.objects.get(pk=study.pk).protocol["consent"] == "A <b>new</b> text."


# ------------------------------------------------------------------ training with feedback


def training_study(owner, tries: int = 2):
    """Six texts, every second with a gold answer; the first two golds are the training examples."""
    data = make_dataset(owner, n=6, name="golds", gold_every=2)
    docs = list(data.documents.order_by("id").values_list("external_id", "metadata"))
    golds = [(ext, meta["gold"]) for ext, meta in docs if meta.get("gold")]
    training = {
        "items": [
            {"document": golds[0][0], "explanation": "The first words say it."},
            {"document": golds[1][0]},
        ],
        "pass_mark": 1.0,
        "tries": tries,
    }
    study = make_study(owner, data, protocol=validate_protocol({"training": training}), start=False)
    start_study(study)
    return study, [g for _, g in golds[:2]]


def train(person: Participant, task: dict, answers: list[dict]) -> list[dict]:
    """Answer the training examples in turn; the feedback of each."""
    said = []
    for given in answers:
        shown = person.api(task["next_url"], token=task["csrf_token"]).json()
        url = task["submit_url_template"].replace("ASSIGNMENT", shown["assignment"])
        body = {**body_for(shown["item"]["payload"]), "answer": given}
        said.append(person.api(url, body, token=task["csrf_token"]).json()["training"])
    return said


def test_training_shows_the_expected_answer_and_lets_the_worker_on_once_passed(researcher):
    study, golds = training_study(researcher)
    person = Participant(study)
    task = task_json(person.html)
    assert task["mode"] == "training" and "training" in task["next_url"]
    refused = person.api(reverse("api-work-next", args=[study.uid]), token=task["csrf_token"])
    assert refused.status_code == 403 and "protocol" in refused.json()["errors"]
    wrong = {"label": "negative" if golds[0]["label"] == "positive" else "positive", "map": golds[0]["map"]}
    said = train(person, task, [wrong, golds[1]])
    assert said[0]["passed"] is False and said[0]["expected_answer"] == golds[0]
    assert said[0]["explanation"] == "The first words say it." and "label" in said[0]["expected"]
    assert said[1]["passed"] is True
    # the attempt failed (pass mark 100 %): the training starts again, saying which attempt it is
    again = person.api(task["next_url"], token=task["csrf_token"]).json()
    assert again["training"] == {"attempt": 2, "tries": 2} and again["progress"]["done"] == 0
    person.html = person.client.get(reverse("work-entry", args=[study.uid])).content.decode()
    assert task_json(person.html)["mode"] == "training"
    assert [s["passed"] for s in train(person, task, golds)] == [True, True]
    over = person.api(task["next_url"], token=task["csrf_token"]).json()
    assert over["done"] and over["completion"]["redirect_url"] == reverse("work-entry", args=[study.uid])
    person.html = person.client.get(reverse("work-entry", args=[study.uid])).content.decode()
    work = task_json(person.html)
    assert "mode" not in work
    handed = person.api(work["next_url"], token=work["csrf_token"]).json()
    training_items = set(study.training_items.values_list("source_id", flat=True))
    assert len(training_items) == 2 and Item.objects.filter(pk__in=training_items, retired=True).count() == 2
    assert handed["item"]["payload"]["words"] not in [
        t.payload["words"] for t in study.training_items.all()
    ]  # a training example is never handed out for data
    assert not Response.objects.exists() and TrainingAnswer.objects.count() == 4
    client = Client()
    client.force_login(researcher)
    rows = _rows(client, study, "training")
    assert [(r["attempt"], r["passed"]) for r in rows] == [(1, False), (1, True), (2, True), (2, True)]
    people = _rows(client, study, "participants")
    assert people[0]["training_attempts"] == 2 and people[0]["training_passed"] is True
    sheet = client.get(reverse("study-datasheet", args=[study.uid])).content.decode()
    assert "### Training" in sheet and "in at most 2 attempt(s)" in sheet and "`training.csv`" in sheet


def test_a_failed_training_ends_the_study_for_the_worker_with_nothing_counted(researcher):
    study, golds = training_study(researcher, tries=1)
    person = Participant(study)
    task = task_json(person.html)
    wrong = {"label": "negative" if golds[0]["label"] == "positive" else "positive", "map": golds[0]["map"]}
    train(person, task, [wrong, golds[1]])
    person.html = person.client.get(reverse("work-entry", args=[study.uid])).content.decode()
    assert 'data-end="training_failed"' in person.html
    assert person.api(reverse("api-work-next", args=[study.uid]), token=task["csrf_token"]).status_code == 403
    again = person.api(task["submit_url_template"].replace("ASSIGNMENT", str(study.training_items.first().pk)),
                       {**body_for({"words": ["a"]}), "answer": golds[0]}, token=task["csrf_token"])  # fmt: skip
    assert again.status_code == 409 and TrainingAnswer.objects.count() == 2
    assert not Assignment.objects.filter(study=study).exists()


def test_a_training_document_without_a_gold_answer_stops_the_start(researcher, dataset):
    first = dataset.documents.order_by("id").first()
    protocol = validate_protocol({"training": {"items": [{"document": first.external_id}]}})
    study = make_study(researcher, dataset, protocol=protocol, start=False)
    with pytest.raises(StudyStateError, match="has no gold answer"):
        start_study(study)
    assert Study.objects.get(pk=study.pk).status == Study.Status.DRAFT


@pytest.mark.parametrize(
    ("training", "field"),
    [
        ({"items": []}, "training.items"),
        ({"items": [{"document": "a"}, {"document": "a"}]}, "training.items"),
        ({"items": [{"document": "a"}], "pass_mark": 2}, "training.pass_mark"),
        ({"items": [{"document": "a"}], "tries": 0}, "training.tries"),
        ({"items": [{"document": "a", "answer": 1}]}, "training.items.0"),
    ],
)
def test_a_bad_training_setting_is_refused_naming_the_field(training, field):
    with pytest.raises(ProtocolInvalid) as refused:
        validate_protocol({"training": training})
    assert field in refused.value.errors


def test_a_failed_training_gets_no_completion_on_the_done_page(researcher):
    study, golds = training_study(researcher, tries=1)
    person = Participant(study)
    task = task_json(person.html)
    flip = {"positive": "negative", "negative": "positive"}
    train(person, task, [{"label": flip[g["label"]], "map": g["map"]} for g in golds])
    done = person.client.get(reverse("work-done", args=[study.uid])).content.decode()
    assert 'data-end="training_failed"' in done and "completion code" not in done.lower()


def test_a_study_without_a_protocol_asks_nothing_more_on_the_hot_path(study, django_assert_max_num_queries):
    from annotate.protocol import stages

    with django_assert_max_num_queries(0):
        assert stages.before_items(study, 1, "") == stages.WORK


# ------------------------------------------------------------------ attention checks


def attention_study(owner, max_failures: int = 0):
    """Six texts, every second with a gold; the first gold is an attention check, the next a gold."""
    data = make_dataset(owner, n=6, name="checks", gold_every=2)
    first = data.documents.order_by("id").first()
    check = {
        "document": first.external_id,
        "instruction": "For this item, choose the label named above the text.",
    }
    protocol = validate_protocol({"attention": {"items": [check], "max_failures": max_failures}})
    study = make_study(owner, data, protocol=protocol, start=False, annotators_per_item=1)
    start_study(study)
    return study, first.metadata["gold"]


def test_a_missed_attention_check_stops_the_worker_and_stays_out_of_gold_trust(researcher):
    from annotate.quality.grading import gold_counts

    study, gold = attention_study(researcher)
    person = Participant(study)
    task = task_json(person.html)
    item = person.api(task["next_url"], token=task["csrf_token"]).json()
    assert item["item"]["payload"]["instruction"].startswith("For this item")
    assert '"gold"' not in json.dumps(item) and "secret" not in json.dumps(item)  # the answer stays hidden
    flip = {"positive": "negative", "negative": "positive"}
    submit = task["submit_url_template"].replace("ASSIGNMENT", item["assignment"])
    body = {**body_for(item["item"]["payload"]), "answer": {"label": flip[gold["label"]], "map": gold["map"]}}
    person.api(submit, body, token=task["csrf_token"])
    assert Response.objects.get().gold_passed is False
    stopped = person.api(task["next_url"], token=task["csrf_token"])
    assert stopped.status_code == 403 and "no longer" in stopped.json()["errors"]["worker"][0]
    entry = person.client.get(reverse("work-entry", args=[study.uid])).content.decode()
    assert 'data-end="attention_failed"' in entry
    assert gold_counts(study) == {}  # an attention check is not a gold for trust
    client = Client()
    client.force_login(researcher)
    quality = client.get(reverse("quality-dashboard", args=[study.uid])).content.decode()
    assert 'id="attention-checks"' in quality and "<td>1</td><td>yes</td>" in quality
    assert _rows(client, study, "participants")[0]["attention_missed"] == 1
    sheet = client.get(reverse("study-datasheet", args=[study.uid])).content.decode()
    assert "### Attention checks" in sheet and "For this item, choose the label named" in sheet


def test_a_passed_attention_check_lets_the_worker_go_on(researcher):
    study, gold = attention_study(researcher)
    person = Participant(study)
    task = task_json(person.html)
    item = person.api(task["next_url"], token=task["csrf_token"]).json()
    submit = task["submit_url_template"].replace("ASSIGNMENT", item["assignment"])
    person.api(submit, {**body_for(item["item"]["payload"]), "answer": gold}, token=task["csrf_token"])
    assert Response.objects.get().gold_passed is True
    following = person.api(task["next_url"], token=task["csrf_token"])
    assert following.status_code == 200 and "instruction" not in following.json()["item"]["payload"]


@pytest.mark.parametrize(
    ("protocol", "field"),
    [
        ({"attention": {"items": [{"document": "a"}]}}, "attention.items.0.instruction"),
        (
            {"attention": {"items": [{"document": "a", "instruction": "x"}], "max_failures": -1}},
            "attention.max_failures",
        ),
        (
            {
                "attention": {"items": [{"document": "a", "instruction": "x"}]},
                "training": {"items": [{"document": "a"}]},
            },
            "attention.items",
        ),
    ],
)
def test_a_bad_attention_setting_is_refused_naming_the_field(protocol, field):
    with pytest.raises(ProtocolInvalid) as refused:
        validate_protocol(protocol)
    assert field in refused.value.errors
