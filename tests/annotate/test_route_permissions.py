"""Every route of the URLconf × every role: the permission matrix is generated from
``get_resolver().url_patterns``, so a new route fails :func:`test_every_route_is_classified` until it
is given a rule below. Each route is requested with GET and with POST (an empty body) as

* ``anonymous``: no session;
* ``worker``: an annotator identified by the real entry page (invite link → signed cookie), not signed in;
* ``user``: signed in without a role;
* ``other``: another researcher; ``owner``: the researcher who owns the study, dataset and model run;
* ``admin``: the admin group.

Rules: a researcher route sends anonymous visitors and workers to sign in (pages) or answers 401/403
(API), and a signed-in user without the role 403; another researcher gets 403/404 on the owner's
objects; the owner and admins get 2xx/3xx, 405 for a method the route does not take, and 400/409
for a POST whose empty body the view refuses (the permission check passed). The Django admin
(``admin/``) has its own staff rules and is checked in ``test_roles.py``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from annotate.crowd.providers.local.adapter import invite_path, make_invite
from annotate.models import (
    Assignment,
    Explanation,
    Invite,
    Job,
    PlatformSubmission,
    Prediction,
    Publication,
    Response,
)
from tests.annotate.conftest import make_dataset, make_study, make_user
from tests.annotate.kinds.forced_choice.test_generation import make_run
from tests.annotate.kinds.forced_choice.test_scoring import study_with_items
from tests.annotate.kinds.nli_pair.test_kind import make_pair_study
from tests.annotate.kinds.sentence_rating.test_kind import make_rating_study
from tests.annotate.kinds.token_marking.test_kind import make_marking_study

pytestmark = pytest.mark.django_db

ROLES = ("anonymous", "worker", "user", "other", "owner", "admin")
OWNED, RESEARCHER, ADMIN, ANNOTATOR_PAGE, ANNOTATOR_API, PUBLIC = (
    "owned", "researcher", "admin", "annotator page", "annotator api", "public",
)  # fmt: skip


@dataclass(frozen=True)
class Rule:
    access: str
    study: str = "highlight"  # which study fills <uid>: its kind's own routes need a study of that kind
    pk: str | None = None  # which object fills <pk>
    reason: str = ""  # why a route is open to visitors who are not signed in
    refuses_bare_get: bool = False  # GET without its query parameters is a 400 (after the permission check)


A = Rule
RULES: dict[str, Rule] = {
    # the annotator's side: open without an account, by design
    "work-entry": A(
        ANNOTATOR_PAGE, reason="the invite/entry page: unidentified visitors see the instructions only"
    ),
    "work-done": A(
        ANNOTATOR_PAGE, reason="the completion page: a completion code only for the cookie's worker"
    ),
    "api-work-next": A(ANNOTATOR_API, reason="needs the worker cookie the entry page set: 403 without it"),
    "api-work-submit": A(ANNOTATOR_API, reason="needs the worker holding the assignment: 403/404 otherwise"),
    # public pages
    "home": A(PUBLIC, reason="the landing page; it links by role"),
    "login": A(PUBLIC, reason="signing in"),
    "admin-login": A(PUBLIC, reason="the Django admin's sign-in (throttled as the login page)"),
    "logout": A(PUBLIC, reason="signing out (POST only)"),
    # the OpenAPI schema and its docs page map the whole API: researchers only
    "api-schema": A(RESEARCHER),
    "api-docs": A(RESEARCHER),
    # researcher lists and forms (no owned object in the URL)
    "dataset-list": A(RESEARCHER),
    "lexicon-settings": A(RESEARCHER),
    "study-list": A(RESEARCHER),
    "study-create": A(RESEARCHER),
    "nli-pair-import": A(RESEARCHER),
    "model-run-list": A(RESEARCHER),
    "model-run-create": A(RESEARCHER),
    "forced-choice-new": A(RESEARCHER),
    "api-dataset-list": A(RESEARCHER),
    "api-study-list": A(RESEARCHER),
    "api-model-run-list": A(RESEARCHER),
    "api-prediction-list": A(RESEARCHER),
    "api-explanation-list": A(RESEARCHER),
    "api-job-list": A(RESEARCHER),
    "api-forced-choice-preview": A(RESEARCHER),
    # the owner's objects
    "dataset-detail": A(OWNED, pk="dataset"),
    "study-detail": A(OWNED),
    "study-invites": A(OWNED),
    "study-invites-csv": A(OWNED),
    "study-invite-revoke": A(OWNED, pk="invite"),
    "study-edit": A(OWNED),
    "study-delete": A(OWNED),
    "study-clone": A(OWNED),
    "study-finish": A(OWNED),
    "study-golds": A(OWNED),
    "study-golds-prepare": A(OWNED),
    "study-golds-import": A(OWNED),
    "study-gold-editor": A(OWNED),
    "study-gold-item": A(OWNED),
    "study-gold-save": A(OWNED),
    "study-gold-remove": A(OWNED),
    "study-action": A(OWNED),
    "study-export": A(OWNED),
    "study-datasheet": A(OWNED),
    "study-export-all": A(OWNED),
    "study-dashboard": A(OWNED),
    "study-dashboard-similarity": A(OWNED),
    "study-dashboard-text": A(OWNED),
    "crowd-page": A(OWNED),
    "crowd-action": A(OWNED),
    "crowd-settings": A(OWNED),
    "crowd-preview": A(OWNED),
    "model-run-detail": A(OWNED, pk="run"),
    "model-run-train": A(OWNED, pk="run"),
    "model-run-explain": A(OWNED, pk="run"),
    "model-run-heatmap": A(OWNED, pk="run"),
    "study-results": A(OWNED, study="justify"),
    "study-results-table": A(OWNED, study="justify"),
    "api-dataset-detail": A(OWNED, pk="dataset"),
    "api-dataset-import-file": A(OWNED, pk="dataset"),
    "api-study-detail": A(OWNED),
    "api-study-export": A(OWNED),
    "api-study-finish": A(OWNED),
    "api-study-invites": A(OWNED),
    "api-study-pause": A(OWNED),
    "api-study-progress": A(OWNED),
    "api-study-start": A(OWNED),
    "api-model-run-detail": A(OWNED, pk="run"),
    "api-model-run-explain": A(OWNED, pk="run"),
    "api-model-run-methods": A(OWNED, pk="run"),
    "api-model-run-train": A(OWNED, pk="run"),
    "api-prediction-detail": A(OWNED, pk="prediction"),
    "api-explanation-detail": A(OWNED, pk="explanation"),
    "api-job-detail": A(OWNED, pk="job"),
    "api-dashboard-study": A(OWNED),
    "api-dashboard-study-csv": A(OWNED),
    "api-dashboard-machine-options": A(OWNED),
    "api-dashboard-similarity": A(OWNED, refuses_bare_get=True),  # needs ?select=<run:method>
    "api-dashboard-similarity-csv": A(OWNED, refuses_bare_get=True),
    "api-dashboard-text": A(OWNED),
    "api-crowd-study": A(OWNED),
    "api-crowd-action": A(OWNED),
    "api-forced-choice-results": A(OWNED, study="justify"),
    # quality control: the study's owner, and admins
    "quality-dashboard": A(OWNED),
    "quality-policy": A(OWNED),
    "quality-regrade": A(OWNED),
    "quality-worker": A(OWNED),
    "quality-gold": A(OWNED),
    "quality-submission": A(OWNED, pk="submission"),
    "quality-aggregate": A(OWNED),
    # admins only: the quality numbers as JSON
    "api-crowd-quality": A(ADMIN),
    "api-crowd-quality-worker": A(ADMIN),
}

# One value for each choice a route's pattern offers (one is enough: the check precedes the choice).
CHOICES = {
    "action": {
        "study-action": "pause",
        "crowd-action": "pause",
        "api-crowd-action": "pause",
        "quality-worker": "block",
        "quality-gold": "keep",
        "api-crowd-quality-worker": "exclude",
    },  # fmt: skip
    "what": "responses",
    "fmt": "csv",
    "decision": "approve",
    "name": "labels",
    "table": "scores",
}


def routes(patterns=None, prefix: str = ""):
    """``(name, route, pattern)`` of every URL pattern below ``patterns`` (the root URLconf)."""
    for p in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(p, URLResolver):
            if str(p.pattern) == "admin/":
                continue
            yield from routes(p.url_patterns, prefix + str(p.pattern))
        elif isinstance(p, URLPattern):
            yield p.name, prefix + str(p.pattern), p


def test_every_route_is_classified():
    found = {name for name, _, _ in routes()}
    unnamed = [route for name, route, _ in routes() if not name]
    assert not unnamed, f"name these routes so the permission matrix can classify them: {unnamed}"
    new = sorted(found - set(RULES))
    assert not new, (
        f"new routes {new}: classify each in RULES of tests/annotate/test_route_permissions.py "
        "(owned / researcher / admin / annotator / public, with a reason for anything open)"
    )
    assert not sorted(set(RULES) - found), (
        f"rules for routes that no longer exist: {sorted(set(RULES) - found)}"
    )


@pytest.fixture
def world(researcher, other_researcher, admin_user, monkeypatch):
    """The owner's objects of every kind, a worker's browser holding an assignment, and the clients."""
    sent: list = []
    monkeypatch.setattr("celery.app.task.Task.apply_async", lambda self, *a, **k: sent.append(self.name))
    dataset = make_dataset(researcher, n=4, name="matrix", gold_every=4)
    study = make_study(researcher, dataset, annotators_per_item=2, name="matrix")
    item = study.items.order_by("position").first()
    gold = study.items.filter(is_gold=True).first()
    run = make_run(researcher, dataset)
    document = item.document
    prediction = Prediction.objects.create(model_run=run, document=document, label="positive")
    explanation = Explanation.objects.create(
        model_run=run, document=document, method="occlusion", target="positive", scores=[0.1]
    )
    job = Job.objects.create(kind="train", key=f"matrix-{uuid.uuid4()}", created_by=researcher)
    studies = {
        "highlight": study,
        "justify": study_with_items(researcher, "justify", [(0, "occ_1", "correct", "positive")], 1)[0],
        "sentence_rating": make_rating_study(researcher),
        "token_marking": make_marking_study(researcher),
        "nli_pair": make_pair_study(researcher),
    }
    worker_client = Client()
    assert (
        worker_client.post(invite_path(study, make_invite(study, "matrix-worker")), follow=True).status_code
        == 200
    )
    held = worker_client.post(reverse("api-work-next", args=[study.uid]), content_type="application/json")
    assert held.status_code == 200, held.content
    assignment = Assignment.objects.get(uid=held.json()["assignment"])
    # a submitted answer of that worker: the quality actions act on workers who answered in the study
    other_item = study.items.exclude(pk=assignment.item_id).order_by("position").first()
    done = Assignment.objects.create(
        study=study, item=other_item, worker=assignment.worker, slot=0, status=Assignment.Status.SUBMITTED,
        expires_at=timezone.now() + timedelta(hours=1),
    )  # fmt: skip
    Response.objects.create(
        assignment=done, study=study, item=other_item, worker=assignment.worker, submission_key=uuid.uuid4(),
        answer={"label": "positive", "map": [1]},
    )  # fmt: skip
    publication = Publication.objects.create(study=study, provider="prolific", places=2, reward="1.00")
    submission = PlatformSubmission.objects.create(
        publication=publication, study=study, provider="prolific", external_id="sub-1",
        worker=assignment.worker, worker_external_id="p-1", platform_status="AWAITING REVIEW",
    )  # fmt: skip
    clients = {"anonymous": Client(), "worker": worker_client}
    for role, user in (
        ("user", make_user("uma")),
        ("other", other_researcher),
        ("owner", researcher),
        ("admin", admin_user),
    ):
        clients[role] = Client()
        clients[role].force_login(user)
    values = {
        "study_uid": study.uid,
        "assignment_uid": assignment.uid,
        "item": item.pk,
        "item_id": gold.pk,
        "worker_id": assignment.worker_id,
        "document_pk": document.pk,
    }
    pks = {"dataset": dataset.pk, "run": run.pk, "prediction": prediction.pk, "explanation": explanation.pk,
           "job": job.pk, "submission": submission.pk,
           "invite": Invite.objects.get(study=study, invitee="matrix-worker").pk}  # fmt: skip
    return {"studies": studies, "values": values, "pks": pks, "clients": clients}


def url_of(name: str, pattern: URLPattern, world) -> str:
    rule = RULES[name]
    kwargs = {}
    for param in pattern.pattern.regex.groupindex:
        if param == "uid":
            kwargs[param] = world["studies"][rule.study].uid
        elif param == "pk":
            kwargs[param] = world["pks"][rule.pk]
        elif param in CHOICES:
            choice = CHOICES[param]
            kwargs[param] = choice[name] if isinstance(choice, dict) else choice
        else:
            kwargs[param] = world["values"][param]
    return reverse(name, kwargs=kwargs)


def is_sign_in(response) -> bool:
    return response.status_code == 302 and response["Location"].startswith(reverse("login"))


def passed(status: int, method: str, rule: Rule) -> bool:
    """The permission check let the request through."""
    refused_input = method == "POST" or rule.refuses_bare_get
    # 415: the empty POST is a form, and the JSON endpoints read their body after the permission check
    refused_type = method == "POST" and status == 415
    return 200 <= status < 400 or status == 405 or (refused_input and status in (400, 409)) or refused_type


def verdict(rule: Rule, role: str, method: str, response) -> str | None:
    """What is wrong with ``response`` for ``role``, or ``None``."""
    status = response.status_code
    if status >= 500:
        return f"server error {status}"
    if status == 405:  # a method the route does not take: the same answer for any object and anyone
        return None
    access = rule.access
    if access in (PUBLIC, ANNOTATOR_PAGE):
        return None if passed(status, method, rule) else f"{status}: {rule.reason}"
    if access == ANNOTATOR_API:
        if role == "worker":
            return None if passed(status, method, rule) else f"{status} for the worker"
        return None if status in (401, 403, 404, 405) else f"{status} without a worker (want 401/403/404)"
    if role in ("anonymous", "worker"):
        return None if is_sign_in(response) or status in (401, 403) else f"{status}, want sign-in or 401/403"
    if role == "user":
        return None if status == 403 else f"{status}, want 403 for a user without a role"
    if role == "admin" or (role == "owner" and access != ADMIN) or (role == "other" and access == RESEARCHER):
        return (
            None
            if passed(status, method, rule)
            else f"{status}, want 2xx/3xx/405 (400/409 for an empty POST)"
        )
    # Another researcher on the owner's objects, a researcher on admin routes. 405 (a method the route
    # does not take) is answered before any object is read, the same for every object: it tells nothing.
    return None if status in (403, 404, 405) else f"{status}, want 403/404"


SUBMISSION = {
    "submission_key": "00000000-0000-4000-8000-000000000001",
    "answer": {"label": "positive", "map": [1]},
    "timings": {"read_ms": 900, "answer_ms": 400},
}
ALL_ROUTES = sorted({(name, str(route)) for name, route, _ in routes()})


@pytest.mark.parametrize("name", [name for name, _ in ALL_ROUTES if name in RULES])
def test_route_permissions(name, world):
    pattern = next(p for n, _, p in routes() if n == name)
    url = url_of(name, pattern, world)
    wrong = []
    for role in ROLES:
        client = world["clients"][role]
        for method in ("GET", "POST"):
            with transaction.atomic():  # every request on the same data: roll back its changes
                if method == "GET":
                    response = client.get(url)
                elif RULES[name].access == ANNOTATOR_API:  # well-formed, so that only who asks decides
                    response = client.post(url, SUBMISSION, content_type="application/json")
                else:
                    response = client.post(url, {})
                transaction.set_rollback(True)
            problem = verdict(RULES[name], role, method, response)
            if problem:
                wrong.append(f"{role} {method} {url}: {problem}")
    assert not wrong, "\n".join(wrong)
