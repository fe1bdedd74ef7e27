"""The machine side of the JSON API: model runs, predictions, explanations and jobs."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from annotate.access import RESEARCHER_GROUP
from annotate.machine import create_model_run, jobs
from annotate.models import Explanation, Job, ModelRun
from tests.annotate.conftest import TINY_PARAMS, make_user, tiny_dataset, train_now

pytestmark = [pytest.mark.django_db]


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.HATLAB_S3_BUCKET = ""


@pytest.fixture
def sent(monkeypatch):
    """Jobs sent to the broker: ``[(task name, args, queue)]``."""
    out: list[tuple] = []
    for task in (jobs.train_model, jobs.explain_model):
        monkeypatch.setattr(
            task, "apply_async", lambda args, queue, _t=task, **_: out.append((_t.name, args, queue))
        )
    return out


@pytest.fixture
def ada():
    return make_user("ada", RESEARCHER_GROUP)


@pytest.fixture
def client(ada):
    api = APIClient()
    api.force_authenticate(ada)
    return api


@pytest.fixture
def dataset(ada):
    return tiny_dataset(ada)


@pytest.fixture
def trained(ada, dataset, monkeypatch):
    run = create_model_run(ada, dataset, "bilstm_attention", TINY_PARAMS)
    train_now(run, monkeypatch)
    return run


def test_only_researchers_reach_the_machine_api(dataset):
    anonymous = APIClient()
    assert anonymous.get("/api/model-runs/").status_code == 403
    annotator = APIClient()
    annotator.force_authenticate(User.objects.create_user("bob"))
    assert annotator.get("/api/model-runs/").status_code == 403
    assert annotator.get("/api/jobs/").status_code == 403


def test_creating_a_run_queues_its_training(
    client, dataset, sent, django_capture_on_commit_callbacks, settings
):
    settings.HATLAB_GPU_QUEUE = False
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(
            "/api/model-runs/",
            {"dataset": dataset.pk, "architecture": "cnn", "params": {"epochs": 2}, "gpu": True},
            format="json",
        )
    assert answer.status_code == 201, answer.json()
    body = answer.json()
    assert body["status"] == "queued" and body["params"] == {"epochs": 2}
    assert body["name"] == "cnn on tiny"
    job = Job.objects.get(pk=body["training_job"])
    assert sent == [("annotate.machine.train_model", [job.pk], "gpu")]

    # Asking to train it again while queued sends nothing more.
    with django_capture_on_commit_callbacks(execute=True):
        again = client.post(f"/api/model-runs/{body['id']}/train/", {}, format="json")
    assert again.status_code == 202 and again.json()["id"] == job.pk
    assert len(sent) == 1


@pytest.mark.parametrize(
    ("payload", "errors"),
    [
        ({"architecture": "svm"}, {"architecture"}),
        ({"architecture": "cnn", "params": {"epochs": 0}}, {"params"}),
        ({"architecture": "cnn", "params": {"dropout": 0.1}}, {"params"}),
        ({"architecture": "cnn", "dataset": None}, {"dataset"}),
    ],
)
def test_bad_run_requests_get_a_400_naming_the_field(client, dataset, payload, errors):
    answer = client.post("/api/model-runs/", {"dataset": dataset.pk, **payload}, format="json")
    assert answer.status_code == 400
    assert set(answer.json()) == errors
    assert not ModelRun.objects.exists()


def test_nested_parameter_errors_name_the_parameter(client, dataset):
    answer = client.post(
        "/api/model-runs/",
        {"dataset": dataset.pk, "architecture": "cnn", "params": {"epochs": 0}},
        format="json",
    )
    assert "epochs" in answer.json()["params"]


def test_another_researchers_dataset_and_runs_are_out_of_reach(client, dataset, ada):
    eve = make_user("eve", RESEARCHER_GROUP)
    theirs = tiny_dataset(eve, "eve's")
    answer = client.post("/api/model-runs/", {"dataset": theirs.pk, "architecture": "cnn"}, format="json")
    assert answer.status_code == 400 and "dataset" in answer.json()
    their_run = create_model_run(eve, theirs, "cnn", {})
    assert client.get(f"/api/model-runs/{their_run.pk}/").status_code == 404
    assert client.get("/api/model-runs/").json()["count"] == 0


def test_run_progress_predictions_and_methods(client, trained):
    run = client.get(f"/api/model-runs/{trained.pk}/").json()
    assert run["status"] == "done" and run["progress"] == 1.0
    assert run["metrics"]["labels"] == ["neg", "pos"]
    predictions = client.get(f"/api/predictions/?model_run={trained.pk}").json()
    assert predictions["count"] == 8
    first = predictions["results"][0]
    assert set(first) >= {"label", "probabilities", "attention", "document"}
    one = client.get(f"/api/predictions/?model_run={trained.pk}&document={first['document']}").json()
    assert one["count"] == 1
    assert client.get("/api/predictions/?model_run=x").status_code == 400
    methods = client.get(f"/api/model-runs/{trained.pk}/methods/").json()
    assert "attention" in methods and "gradcam" not in methods


def test_explain_queues_one_job_per_request_and_results_are_listed(
    client, trained, sent, django_capture_on_commit_callbacks
):
    request = {"methods": ["attention"], "m": 2}
    with django_capture_on_commit_callbacks(execute=True):
        first = client.post(f"/api/model-runs/{trained.pk}/explain/", request, format="json")
        second = client.post(f"/api/model-runs/{trained.pk}/explain/", request, format="json")
    assert first.status_code == second.status_code == 202
    assert first.json()["id"] == second.json()["id"]
    assert [s[0] for s in sent] == ["annotate.machine.explain_model"]

    jobs.explain_model.apply(args=sent[0][1]).get()
    job = client.get(f"/api/jobs/{first.json()['id']}/").json()
    assert job["status"] == "done" and job["progress"] == 1.0
    assert job["result"]["explanations"] == 8
    listed = client.get(f"/api/explanations/?model_run={trained.pk}&method=attention").json()
    assert listed["count"] == Explanation.objects.count() == 8
    assert len(listed["results"][0]["evidence"]) == 2


def test_explain_measures_faithfulness_unless_asked_not_to(
    client, trained, sent, django_capture_on_commit_callbacks
):
    for measure in (False, True):
        with django_capture_on_commit_callbacks(execute=True):
            queued = client.post(
                f"/api/model-runs/{trained.pk}/explain/",
                {"methods": ["grad_l2_1s"], "faithfulness": measure},
                format="json",
            )
        assert queued.status_code == 202 and queued.json()["params"]["request"]["faithfulness"] is measure
        jobs.explain_model.apply(args=sent[-1][1]).get()
        listed = client.get(f"/api/explanations/?model_run={trained.pk}&method=grad_l2_1s").json()["results"]
        assert len(listed) == 8
        assert all((row["faithfulness"] is not None) is measure for row in listed)


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"methods": ["gradcam"]}, "methods"),
        ({"methods": ["attention"], "target": "neutral"}, "target"),
        ({"methods": ["attention"], "m": "many"}, "m"),
        ({"methods": ["attention"], "documents": [123456]}, "documents"),
        ({"methods": ["attention"], "faithfulness": "sometimes"}, "faithfulness"),
    ],
)
def test_bad_explanation_requests_get_a_400_naming_the_field(client, trained, payload, field):
    answer = client.post(f"/api/model-runs/{trained.pk}/explain/", payload, format="json")
    assert answer.status_code == 400
    assert field in answer.json()
    assert not Job.objects.filter(kind=jobs.EXPLAIN_KIND).exists()


def test_explaining_an_untrained_run_is_refused(client, ada, dataset):
    run = create_model_run(ada, dataset, "cnn", {})
    answer = client.post(f"/api/model-runs/{run.pk}/explain/", {"methods": ["grad_l2_1s"]}, format="json")
    assert answer.status_code == 400 and "model_run" in answer.json()


def test_jobs_are_visible_to_their_owner_only(client, trained):
    job = Job.objects.get(key=f"train:{trained.pk}")
    assert client.get(f"/api/jobs/{job.pk}/").status_code == 200
    other = APIClient()
    other.force_authenticate(make_user("eve", RESEARCHER_GROUP))
    assert other.get(f"/api/jobs/{job.pk}/").status_code == 404
    assert other.get(f"/api/predictions/?model_run={trained.pk}").json()["count"] == 0


@pytest.mark.parametrize(
    ("params", "field", "words"),
    [
        ({"lime": {"n_samples": 1e9}}, "lime.n_samples", "from 1 to 20000"),
        ({"lime": {"n_samples": 10**9}}, "lime.n_samples", "from 1 to 20000"),
        ({"gradients": {"max_steps": 10**8}}, "gradients.max_steps", "from 1 to 4096"),
        ({"grad_l2_1s": {"max_steps": 1e8}}, "grad_l2_1s.max_steps", "from 1 to 4096"),
        ({"lime": {"n_samples": 100, "workers": 64}}, "lime.workers", "not a parameter of lime"),
        ({"lime": {"mode": "everything"}}, "lime.mode", "one of"),
        ({"lime": {"seed": True}}, "lime.seed", "whole number"),
        ({"attention": {"anything": 1}}, "attention.anything", "its parameters: none"),
        ({"limsse_bb": {"loss": "ms_s"}}, "limsse_bb.loss", "not a parameter"),
        ({"omit_1": {"n": 500}}, "omit_1.n", "not a parameter"),
    ],
)
def test_method_parameters_are_bounded_by_the_registry(client, trained, params, field, words):
    """Every method's parameters are declared with their types and ranges in the engine's registry; an
    unknown key or a value out of range is refused by name before a job is queued."""
    methods = sorted({"grad_l2_1s" if k == "gradients" else k for k in params} | {"attention"})
    payload = {"methods": methods, "method_params": params}
    answer = client.post(f"/api/model-runs/{trained.pk}/explain/", payload, format="json")
    assert answer.status_code == 400, answer.content
    errors = answer.json()["method_params"]
    assert words in errors[field][0]
    assert not Job.objects.filter(kind=jobs.EXPLAIN_KIND).exists()


def test_method_parameters_within_their_ranges_are_taken(client, trained, sent):
    payload = {
        "methods": ["lime", "grad_l2_1s", "occ_1"],
        "method_params": {
            "lime": {"n_samples": 20, "seed": 3, "mode": "zero"},
            "gradients": {"steps": 8, "max_steps": 64, "tolerance": None},
            "occ_1": {"unit": "token"},
        },
    }
    answer = client.post(f"/api/model-runs/{trained.pk}/explain/", payload, format="json")
    assert answer.status_code == 202, answer.content
    stored = answer.json()["params"]["request"]["method_params"]
    assert stored["lime"] == {"n_samples": 20, "seed": 3, "mode": "zero"}
    assert stored["gradients"]["max_steps"] == 64


def test_a_retried_model_run_request_under_one_idempotency_key_makes_one_run(client, ada, dataset, sent):
    body = {"dataset": dataset.pk, "architecture": "bilstm_attention", "params": TINY_PARAMS}
    first = client.post("/api/model-runs/", body, format="json", HTTP_IDEMPOTENCY_KEY="retry-1")
    assert first.status_code == 201, first.content
    assert "Idempotent-Replayed" not in first
    # the client timed out and sends the same request again: the same run, not a second one
    again = client.post("/api/model-runs/", body, format="json", HTTP_IDEMPOTENCY_KEY="retry-1")
    assert again.status_code == 201 and again["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == first.json()["id"]
    # the key may come in the body instead, with the same effect
    in_body = client.post("/api/model-runs/", {**body, "idempotency_key": "retry-1"}, format="json")
    assert in_body.json()["id"] == first.json()["id"]
    assert ModelRun.objects.filter(owner=ada).count() == 1
    assert Job.objects.filter(key=f"train:{first.json()['id']}").count() == 1
    # no key: every request is a new run
    assert client.post("/api/model-runs/", body, format="json").json()["id"] != first.json()["id"]
    assert ModelRun.objects.filter(owner=ada).count() == 2


def test_another_body_under_a_used_idempotency_key_is_refused_naming_the_key(client, ada, dataset, sent):
    body = {"dataset": dataset.pk, "architecture": "bilstm_attention", "params": TINY_PARAMS}
    assert client.post("/api/model-runs/", body, format="json", HTTP_IDEMPOTENCY_KEY="k").status_code == 201
    other = client.post(
        "/api/model-runs/", {**body, "name": "another run"}, format="json", HTTP_IDEMPOTENCY_KEY="k"
    )
    assert other.status_code == 409
    assert "idempotency_key" in other.json() and "'k' was already used" in other.json()["idempotency_key"][0]
    assert ModelRun.objects.filter(owner=ada).count() == 1
    # header and body naming different keys, or an empty header: 400 naming the field
    both = client.post(
        "/api/model-runs/", {**body, "idempotency_key": "a"}, format="json", HTTP_IDEMPOTENCY_KEY="b"
    )
    assert both.status_code == 400 and "idempotency_key" in both.json()
    empty = client.post("/api/model-runs/", body, format="json", HTTP_IDEMPOTENCY_KEY=" ")
    assert empty.status_code == 400 and "idempotency_key" in empty.json()
    long = client.post("/api/model-runs/", body, format="json", HTTP_IDEMPOTENCY_KEY="x" * 201)
    assert long.status_code == 400 and "idempotency_key" in long.json()
    assert ModelRun.objects.filter(owner=ada).count() == 1


def test_idempotency_keys_are_per_researcher(client, dataset, sent):
    bob = make_user("bob", RESEARCHER_GROUP)
    other = APIClient()
    other.force_authenticate(bob)
    mine = client.post(
        "/api/model-runs/",
        {"dataset": dataset.pk, "architecture": "bilstm_attention", "params": TINY_PARAMS},
        format="json",
        HTTP_IDEMPOTENCY_KEY="shared",
    )
    theirs = other.post(
        "/api/model-runs/",
        {"dataset": tiny_dataset(bob).pk, "architecture": "cnn"},
        format="json",
        HTTP_IDEMPOTENCY_KEY="shared",
    )
    assert mine.status_code == theirs.status_code == 201
    assert mine.json()["id"] != theirs.json()["id"]


@pytest.mark.django_db(transaction=True)
def test_two_requests_racing_under_one_key_make_one_run(ada, dataset, sent):
    """Both pass the look-up before either has written: the unique constraint makes the second one the
    first one's replay."""
    from annotate.machine.runs import create_model_run_once

    digest = "d" * 64
    original = ModelRun.objects.filter
    seen: list = []

    def blind_filter(*args, **kwargs):  # the look-up that would find the first run finds nothing, once
        rows = original(*args, **kwargs)
        if kwargs.get("idempotency_key") == "race" and not seen:
            seen.append(1)
            return rows.none()
        return rows

    first, created = create_model_run_once(ada, dataset, "cnn", {}, idempotency_key="race", digest=digest)
    assert created
    ModelRun.objects.filter = blind_filter
    try:
        second, created = create_model_run_once(
            ada, dataset, "cnn", {}, idempotency_key="race", digest=digest
        )
    finally:
        ModelRun.objects.filter = original
    assert not created and second.pk == first.pk
    assert ModelRun.objects.filter(owner=ada).count() == 1


def test_the_schema_documents_the_idempotency_key():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    create = schema["paths"]["/api/model-runs/"]["post"]
    header = [p for p in create["parameters"] if p["in"] == "header" and p["name"] == "Idempotency-Key"]
    assert header and header[0]["schema"]["type"] == "string"
    body = schema["components"]["schemas"]["ModelRunCreateRequest"]["properties"]["idempotency_key"]
    assert body["maxLength"] == 200
    assert "409" in create["responses"]
