"""Every route of the URLconf × every role × every HTTP method: the permission matrix is generated from
``get_resolver().url_patterns``, so a new route fails :func:`test_every_route_is_classified` until it
is given a rule below. Each route is requested with GET, HEAD, POST, PUT, PATCH, DELETE and OPTIONS (an empty
JSON object under ``/api/``, an empty form elsewhere) as

* ``anonymous``: no session;
* ``worker``: an annotator identified by the real entry page (invite link → signed cookie), not signed in;
* ``mturk`` and ``prolific``: annotators holding a seat (the signed worker cookie) in an MTurk and a Prolific
  study of the owner, provisional and verified;
* ``user``: signed in without a role;
* ``other``: another researcher; ``owner``: the researcher who owns the study, dataset and model run;
* ``admin``: the admin group.

Rules: a researcher route sends anonymous visitors and workers to sign in (pages) or answers 401/403
(API), and a signed-in user without the role 403; another researcher gets 403/404 on the owner's
objects; the owner and admins get 2xx/3xx, 405 for a method the route does not take, and 400/409
for a body the view refuses (the permission check passed). A 415 is not a pass: every body is sent in the
type its route reads, so a 415 would hide a check that never ran. The Django admin (``admin/``) lets staff
only in (:func:`test_admin_site_permissions`). Ids sent in bodies and query strings reach only rows the caller
may see (:func:`test_ids_in_bodies_reach_only_the_callers_rows`); another researcher's rows are not reached
through one's own study's URLs, and a worker both researchers share is acted on in each one's scope only
(:func:`test_rows_shared_between_researchers`).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.contrib import admin
from django.db import transaction
from django.http import HttpResponse
from django.test import Client, RequestFactory
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from annotate.crowd.providers.local.adapter import invite_path, make_invite
from annotate.handout.workers import WORKERS_COOKIE, remember_worker
from annotate.models import (
    Assignment,
    Explanation,
    Invite,
    Job,
    ModelRun,
    PlatformSubmission,
    Prediction,
    Publication,
    Response,
    Study,
    Worker,
    WorkerTrust,
)
from annotate.quality.exclusion import is_blocked
from tests.annotate.conftest import make_dataset, make_study, make_user
from tests.annotate.crowd_helpers import MTURK_CONFIG, PROLIFIC_CONFIG, answer, crowd_study, ordinary
from tests.annotate.kinds.forced_choice.test_generation import make_run
from tests.annotate.kinds.forced_choice.test_scoring import study_with_items
from tests.annotate.kinds.nli_pair.test_kind import make_pair_study
from tests.annotate.kinds.sentence_rating.test_kind import make_rating_study
from tests.annotate.kinds.token_marking.test_kind import make_marking_study

pytestmark = pytest.mark.django_db

ROLES = ("anonymous", "worker", "mturk", "prolific", "user", "other", "owner", "admin")
CROWD_ROLES = ("mturk", "prolific")  # annotators of other studies: strangers to the matrix's study
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
WITH_BODY = ("POST", "PUT", "PATCH")
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
    multipart: bool = False  # the route reads an uploaded file: its bodies are sent as multipart forms


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
    "api-work-skip": A(ANNOTATOR_API, reason="needs the worker holding the assignment: 403/404 otherwise"),
    "api-work-edit": A(ANNOTATOR_API, reason="needs the worker whose answer it is: 403/404 otherwise"),
    "api-work-previous": A(
        ANNOTATOR_API, reason="needs the worker cookie the entry page set: 403 without it"
    ),
    "api-work-training-next": A(
        ANNOTATOR_API, reason="needs the worker cookie the entry page set: 403 without it"
    ),
    "api-work-training-answer": A(
        ANNOTATOR_API, reason="needs the worker in the training phase: 403/409 otherwise"
    ),
    "work-consent": A(
        ANNOTATOR_PAGE,
        reason="the consent form: stored only with the seat's own token, else back to the entry",
    ),
    "work-survey": A(
        ANNOTATOR_PAGE, reason="a questionnaire of the protocol: only for the cookie's worker, else the entry"
    ),
    # public pages
    "home": A(PUBLIC, reason="the landing page; it links by role"),
    "favicon": A(PUBLIC, reason="the site's icon, which browsers ask for on every page"),
    "login": A(PUBLIC, reason="signing in"),
    "admin-login": A(PUBLIC, reason="the Django admin's sign-in (throttled as the login page)"),
    "logout": A(PUBLIC, reason="signing out (POST only)"),
    "account-set-password": A(
        PUBLIC, reason="a one-time set-password link: without a valid token it says the link does not work"
    ),
    # the admin's accounts page
    "account-list": A(ADMIN),
    "account-invite": A(ADMIN),
    "account-reset": A(ADMIN, pk="account"),
    "account-deactivate": A(ADMIN, pk="account"),
    "account-reactivate": A(ADMIN, pk="account"),
    "account-invite-revoke": A(ADMIN, pk="invite"),
    # the OpenAPI schema and its docs page map the whole API: researchers only
    "api-schema": A(RESEARCHER),
    "api-docs": A(RESEARCHER),
    # researcher lists and forms (no owned object in the URL)
    "dataset-list": A(RESEARCHER),
    "dataset-rationale-import": A(RESEARCHER),
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
    "dataset-rename": A(OWNED, pk="dataset"),
    "dataset-delete": A(OWNED, pk="dataset"),
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
    "study-rationales": A(OWNED),
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
    "api-dataset-import-file": A(OWNED, pk="dataset", multipart=True),
    "api-study-detail": A(OWNED),
    "api-study-export": A(OWNED),
    "api-study-rationales": A(OWNED),
    "api-study-finish": A(OWNED),
    "api-study-invites": A(OWNED),
    "api-study-pause": A(OWNED),
    "api-study-progress": A(OWNED),
    "api-study-plan": A(OWNED),
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
    "study-protocol": A(OWNED),
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
    "uidb64": "MQ",
    "token": "not-a-token",
}
#: Routes whose choice differs from the one above: ``{name: {param: value}}``.
ROUTE_CHOICES = {
    "study-rationales": {"fmt": "eraser"},
    "api-study-rationales": {"fmt": "hf"},
    "work-survey": {"phase": "pre"},
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
def world(researcher, other_researcher, admin_user, monkeypatch, settings):
    """The owner's objects of every kind, a worker's browser holding an assignment, and the clients (the
    throttles off: thousands of requests from one address are the matrix, not an attack)."""
    settings.HATLAB_THROTTLES = False
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
    crowd = {}
    for provider, config, ref, verified in (
        ("mturk", MTURK_CONFIG, "ASSIGNMENT-1", False),
        ("prolific", PROLIFIC_CONFIG, "SESSION-1", True),
    ):
        crowd[provider] = crowd_study(researcher, provider, dict(config), n=4)
        clients[provider] = seated_client(crowd[provider], f"{provider.upper()}-W1", provider, ref, verified)
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
           "job": job.pk, "submission": submission.pk, "account": other_researcher.pk,
           "invite": Invite.objects.get(study=study, invitee="matrix-worker").pk}  # fmt: skip
    return {"studies": studies, "values": values, "pks": pks, "clients": clients, "crowd": crowd,
            "study": study, "dataset": dataset, "run": run, "worker": assignment.worker}  # fmt: skip


def seated_client(study, external_id: str, provider: str, ref: str, verified: bool) -> Client:
    """A browser holding the seat the entry page gives a platform's worker: the signed worker cookie."""
    worker = Worker.objects.create(provider=provider, external_id=external_id)
    response = HttpResponse()
    remember_worker(RequestFactory().get("/"), response, study, worker, ref, verified)
    client = Client()
    client.cookies[WORKERS_COOKIE] = response.cookies[WORKERS_COOKIE].value
    return client


def url_of(name: str, pattern: URLPattern, world, ghost: bool = False) -> str:
    """The route's URL on the world's rows; ``ghost``: on rows that do not exist (same choices)."""
    rule = RULES[name]
    kwargs = {}
    for param in pattern.pattern.regex.groupindex:
        if param in ROUTE_CHOICES.get(name, {}):
            kwargs[param] = ROUTE_CHOICES[name][param]
        elif param in CHOICES:
            choice = CHOICES[param]
            kwargs[param] = choice[name] if isinstance(choice, dict) else choice
        elif ghost:
            kwargs[param] = uuid.uuid4() if param.endswith("uid") else 999_999_999
        elif param == "uid":
            kwargs[param] = world["studies"][rule.study].uid
        elif param == "pk":
            kwargs[param] = world["pks"][rule.pk]
        else:
            kwargs[param] = world["values"][param]
    return reverse(name, kwargs=kwargs)


def is_sign_in(response) -> bool:
    return response.status_code == 302 and response["Location"].startswith(reverse("login"))


def passed(status: int, method: str, rule: Rule) -> bool:
    """The permission check let the request through (a 415 does not count: the body had the right type)."""
    refused_input = method in (*WITH_BODY, "DELETE") or rule.refuses_bare_get
    return 200 <= status < 400 or status == 405 or (refused_input and status in (400, 409))


def verdict(rule: Rule, role: str, method: str, response, ghost=None) -> str | None:
    """What is wrong with ``response`` for ``role``, or ``None``. ``ghost``: the same request's response on
    rows that do not exist (an OPTIONS answer that is the same for them tells nothing of the owner's rows)."""
    status = response.status_code
    if method == "OPTIONS" and ghost is not None and status == ghost.status_code == 200:
        return (
            None if response.content == ghost.content else "OPTIONS tells the owner's rows from missing ones"
        )
    if status >= 500:
        return f"server error {status}"
    if status == 405:  # a method the route does not take: the same answer for any object and anyone
        return None
    access = rule.access
    if access in (PUBLIC, ANNOTATOR_PAGE):
        return None if passed(status, method, rule) else f"{status}: {rule.reason}"
    if access == ANNOTATOR_API:
        if role == "worker" and method != "OPTIONS":
            return None if passed(status, method, rule) else f"{status} for the worker"
        return None if status in (401, 403, 404, 405) else f"{status} without a worker (want 401/403/404)"
    if role in ("anonymous", "worker", *CROWD_ROLES):
        return None if is_sign_in(response) or status in (401, 403) else f"{status}, want sign-in or 401/403"
    if role == "user":
        return None if status == 403 else f"{status}, want 403 for a user without a role"
    if role == "admin" or (role == "owner" and access != ADMIN) or (role == "other" and access == RESEARCHER):
        return (
            None
            if passed(status, method, rule)
            else f"{status}, want 2xx/3xx/405 (400/409 for an empty body)"
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
        for method in METHODS:
            with transaction.atomic():  # every request on the same data: roll back its changes
                response = send(client, method, url, RULES[name])
                ghost = None
                if method == "OPTIONS" and (elsewhere := url_of(name, pattern, world, ghost=True)) != url:
                    ghost = send(client, method, elsewhere, RULES[name])
                transaction.set_rollback(True)
            problem = verdict(RULES[name], role, method, response, ghost)
            if problem:
                wrong.append(f"{role} {method} {url}: {problem}")
    assert not wrong, "\n".join(wrong)


def send(client: Client, method: str, url: str, rule: Rule):
    """``method`` on ``url`` with a body of the type the route reads: the annotator API a well-formed answer
    (so that only who asks decides), the JSON API an empty object, the pages an empty form."""
    if method not in WITH_BODY:
        return client.generic(method, url)
    if rule.access == ANNOTATOR_API:
        return client.generic(method, url, json.dumps(SUBMISSION), content_type="application/json")
    if rule.multipart:
        return client.generic(method, url, encode_multipart(BOUNDARY, {}), content_type=MULTIPART_CONTENT)
    if url.startswith("/api/"):
        return client.generic(method, url, "{}", content_type="application/json")
    return client.generic(method, url, "", content_type="application/x-www-form-urlencoded")


def test_the_crowd_annotators_are_real_seats(world):
    """The MTurk and Prolific clients of the matrix are annotators of their own studies (so their refusals
    above are refusals of who they are, not of a broken cookie)."""
    for provider in CROWD_ROLES:
        study = world["crowd"][provider]
        reply = world["clients"][provider].post(reverse("api-work-next", args=[study.uid]))
        assert reply.status_code == 200 and "assignment" in reply.json(), (provider, reply.content)


# --- the Django admin ---------------------------------------------------------------------------------------


def admin_urls(world) -> list[str]:
    """The admin's index, every registered model's list and add form, and one object's change form."""
    urls = ["/admin/"]
    for model in admin.site._registry:
        urls.append(reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist"))
        urls.append(reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_add"))
    urls.append(reverse("admin:annotate_study_change", args=[world["study"].pk]))
    urls.append(reverse("admin:annotate_worker_change", args=[world["worker"].pk]))
    return urls


def test_admin_site_permissions(world):
    """Staff only: everyone else (researchers and the admin group without staff status included) is sent to
    the admin's sign-in, whatever the method; the superuser passes, but the change log stays read-only."""
    superuser = Client()
    superuser.force_login(make_user("root", is_superuser=True, is_staff=True))
    wrong = []
    for url in admin_urls(world):
        for method in METHODS:
            for role in ROLES:
                with transaction.atomic():
                    response = world["clients"][role].generic(method, url)
                    transaction.set_rollback(True)
                to_sign_in = response.status_code == 302 and response["Location"].startswith("/admin/login/")
                if not (to_sign_in or response.status_code in (403, 405)):
                    wrong.append(f"{role} {method} {url}: {response.status_code}")
            with transaction.atomic():
                status = superuser.generic(method, url).status_code
                transaction.set_rollback(True)
            refused = "/changelog/add/" in url and status == 403
            if not (status < 400 or status in (400, 405) or refused):
                wrong.append(f"superuser {method} {url}: {status}")
    assert not wrong, "\n".join(wrong)
    assert superuser.post("/admin/annotate/changelog/add/", {}).status_code == 403


# --- ids in bodies, and rows shared between researchers ------------------------------------------------------


def test_ids_in_bodies_reach_only_the_callers_rows(world, other_researcher):
    """The attack: another researcher names the owner's dataset or model run in a body or a query string."""
    other = world["clients"]["other"]
    dataset, run = world["dataset"], world["run"]
    studies_before, runs_before = Study.objects.count(), ModelRun.objects.count()
    created = other.post(
        "/api/studies/",
        {"name": "theirs", "dataset": dataset.pk, "kind": "highlight"},
        content_type="application/json",
    )
    assert created.status_code == 400 and "dataset" in created.content.decode(), created.content
    trained = other.post(
        "/api/model-runs/", {"dataset": dataset.pk, "architecture": "cnn"}, content_type="application/json"
    )
    assert trained.status_code == 400 and "dataset" in trained.content.decode(), trained.content
    page = other.post(reverse("model-run-create"), {"dataset": dataset.pk, "architecture": "cnn"})
    assert page.status_code == 200 and "dataset" in page.context["form"].errors
    page = other.post(reverse("study-create"), {"dataset": dataset.pk, "name": "theirs", "kind": "highlight"})
    assert page.status_code in (200, 400) and "dataset" in page.context["form"].errors
    assert (Study.objects.count(), ModelRun.objects.count()) == (studies_before, runs_before)
    # their own study's dashboard asked for the owner's model run
    own = make_study(other_researcher, make_dataset(other_researcher, n=2, name="theirs"), name="theirs")
    select = {"select": f"{run.pk}:attention (training)"}
    for url in (
        reverse("api-dashboard-similarity", args=[own.uid]),
        reverse("api-dashboard-similarity-csv", args=[own.uid, "labels"]),
    ):
        reply = other.get(url, select)
        assert reply.status_code in (400, 404), (url, reply.status_code)
        assert "charts" not in reply.content.decode()  # a refusal, no figures of the owner's run


ROW_IDS = {"item_id", "worker_id", "pk", "document_pk", "item"}  # URL parameters that name a row


def test_rows_shared_between_researchers(world, other_researcher):
    """A worker who answered in both researchers' studies: the other researcher acts on them in their own
    study, and the owner's study sees nothing of it; and no route of the other's own study reaches the
    owner's rows by their ids."""
    other = world["clients"]["other"]
    study, worker = world["study"], world["worker"]
    theirs = crowd_study(other_researcher, n=4)
    answer(theirs, worker, ordinary(theirs)[0])
    base = f"/studies/{theirs.uid}/quality/workers/{worker.pk}"
    assert other.post(f"{base}/block/").status_code == 302
    assert other.post(f"{base}/exclude/").status_code == 302
    assert is_blocked(theirs, worker.pk) and not is_blocked(study, worker.pk)
    mine = WorkerTrust.objects.filter(study=study, worker=worker).first()
    assert mine is None or (not mine.blocked and mine.risk_exclusion == "")
    assert other.post(f"/studies/{study.uid}/quality/workers/{worker.pk}/unblock/").status_code == 404
    # the owner's rows through the other's own study: the owner-only gold item, invite, platform submission
    wrong = []
    for name, _, pattern in routes():
        params = set(pattern.pattern.regex.groupindex)
        rule = RULES[name]
        if rule.access != OWNED or "uid" not in params or not params & ROW_IDS or rule.study != "highlight":
            continue
        url = url_of(name, pattern, world).replace(str(study.uid), str(theirs.uid))
        if "worker_id" in params:  # the shared worker is the other's too: take one only the owner has
            owners_only = Worker.objects.create(provider="local", external_id="owner-only")
            url = url.replace(f"/workers/{worker.pk}/", f"/workers/{owners_only.pk}/")
        for method in ("GET", "POST"):
            with transaction.atomic():
                status = send(other, method, url, RULES[name]).status_code
                transaction.set_rollback(True)
            if status not in (403, 404, 405):
                wrong.append(f"other {method} {url}: {status}")
    assert not wrong, "\n".join(wrong)
