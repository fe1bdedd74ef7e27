"""Model runs, their training and explanation jobs, artifact storage (MEDIA_ROOT and S3), and the
data of the heat-map page. Jobs run in-process here (``task.apply``); the real broker and worker
are exercised in ``tests/integration/test_celery_worker.py``."""

from __future__ import annotations

import io
import shutil
from datetime import timedelta
from functools import partial
from pathlib import Path

import boto3
import numpy as np
import pytest
import torch
from botocore.response import StreamingBody
from botocore.stub import ANY, Stubber
from django.utils import timezone

from annotate.access import RESEARCHER_GROUP
from annotate.infra import storage
from annotate.jobs import sweeper
from annotate.jobs.base import Superseded, claim, fenced, run_job
from annotate.machine import (
    MachineInputError,
    clean_explanation_params,
    clean_params,
    create_model_run,
    heatmap,
    jobs,
    load_trained,
    queue_for,
    run_explanations,
    training,
)
from annotate.models import Assignment, Explanation, Item, Job, ModelRun, Prediction, Response, Study, Worker
from tests.annotate.conftest import TINY_PARAMS, make_user, tiny_dataset

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.HATLAB_S3_BUCKET = ""
    settings.HATLAB_TORCH_THREADS = 1
    yield
    torch.set_num_threads(1)


@pytest.fixture
def queued(monkeypatch):
    """Capture what would be sent to the broker instead of sending it: ``[(task, args, queue)]``."""
    sent: list[tuple] = []
    for task in (jobs.train_model, jobs.explain_model):
        monkeypatch.setattr(
            task, "apply_async", lambda args, queue, _task=task, **_: sent.append((_task, args, queue))
        )
    return sent


@pytest.fixture
def user(db):
    return make_user("ada", RESEARCHER_GROUP)


@pytest.fixture
def dataset(user):
    return tiny_dataset(user)


def _train(run, queued, django_capture_on_commit_callbacks, gpu=None) -> Job:
    with django_capture_on_commit_callbacks(execute=True):
        job = jobs.enqueue_training(run, run.owner, gpu=gpu)
    task, args, _ = queued[-1]
    task.apply(args=args).get()
    job.refresh_from_db()
    return job


@pytest.fixture
def trained_run(user, dataset, queued, django_capture_on_commit_callbacks):
    run = create_model_run(user, dataset, "bilstm_attention", TINY_PARAMS)
    _train(run, queued, django_capture_on_commit_callbacks)
    run.refresh_from_db()
    return run


# --- validation -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("architecture", "params", "field"),
    [
        ("svm", {}, "architecture"),
        ("cnn", [], "params"),
        ("cnn", {"optimizer": "sgd"}, "params.optimizer"),
        ("cnn", {"epochs": 0}, "params.epochs"),
        ("cnn", {"epochs": 1.5}, "params.epochs"),
        ("cnn", {"lr": -1}, "params.lr"),
        ("cnn", {"fractions": [0.5, 0.5, 0.5]}, "params.fractions"),
        ("cnn", {"model": {"hidden_size": 8}}, "params.model"),
        ("lstm_attention", {"model": {"bidirectional": True}}, "params.model"),
        ("cnn", {"balance": "yes"}, "params.balance"),
        ("cnn", {"seed": None}, "params.seed"),
        ("cnn", {"patience": 0}, "params.patience"),
    ],
)
def test_clean_params_names_the_bad_field(architecture, params, field):
    with pytest.raises(MachineInputError) as caught:
        clean_params(architecture, params)
    assert caught.value.field == field


def test_clean_params_keeps_valid_parameters():
    assert clean_params("cnn", {"epochs": 2, "lr": 0.01, "model": {"num_filters": 4}}) == {
        "epochs": 2,
        "lr": 0.01,
        "model": {"num_filters": 4},
    }
    # null: the paper's value (dropped), or "never" for early stopping (kept).
    assert clean_params("cnn", {"epochs": None, "patience": None}) == {"patience": None}


def test_a_run_needs_two_labels(user):
    one_label = tiny_dataset(user, "one", [("good food", "pos"), ("great food", "pos")])
    with pytest.raises(MachineInputError) as caught:
        create_model_run(user, one_label, "cnn", {})
    assert caught.value.field == "dataset"
    assert not ModelRun.objects.exists()


def test_queue_routing(settings):
    settings.HATLAB_GPU_QUEUE = False
    assert queue_for() == "cpu"
    assert queue_for(True) == "gpu"
    settings.HATLAB_GPU_QUEUE = True
    assert queue_for() == "gpu"
    assert queue_for(False) == "gpu"


def test_gpu_queue_from_environment(settings, monkeypatch):
    del settings.HATLAB_GPU_QUEUE
    monkeypatch.setenv("HATLAB_GPU_QUEUE", "true")
    assert queue_for() == "gpu"
    monkeypatch.setenv("HATLAB_GPU_QUEUE", "0")
    assert queue_for() == "cpu"


def test_tasks_acknowledge_late_and_requeue_on_worker_loss():
    for task in (jobs.train_model, jobs.explain_model):
        assert task.acks_late is True
        assert task.reject_on_worker_lost is True


# --- training ---------------------------------------------------------------------------------


def test_training_job_stores_artifact_predictions_and_attention(trained_run, dataset, queued, settings):
    run = trained_run
    assert queued[0][2] == "cpu"
    assert run.status == ModelRun.Status.DONE
    assert run.progress == 1.0
    assert run.finished is not None
    assert run.artifact == f"models/run-{run.pk}-attempt-1"  # each attempt writes its own folder
    folder = Path(settings.MEDIA_ROOT) / run.artifact
    assert {p.name for p in folder.iterdir()} >= {"model.pt", "config.json", "vocab.json", "metrics.json"}
    assert run.metrics["labels"] == ["neg", "pos"]
    assert run.metrics["validation"]["loss"] is None  # no validation documents: NaN stored as null

    predictions = list(Prediction.objects.filter(model_run=run).select_related("document"))
    assert len(predictions) == dataset.documents.count() == 8
    for prediction in predictions:
        assert prediction.label in ("neg", "pos")
        assert sum(prediction.probabilities.values()) == pytest.approx(1.0)
        assert prediction.label == max(prediction.probabilities, key=prediction.probabilities.get)
        assert len(prediction.attention) == len(prediction.document.words)
        assert sum(prediction.attention) == pytest.approx(1.0, abs=1e-6)

    job = Job.objects.get(key=f"train:{run.pk}")
    assert job.status == Job.Status.DONE
    assert job.progress == 1.0
    assert job.result["predictions"] == 8

    bundle = load_trained(run)
    texts = [p.document.text for p in predictions]
    again = bundle.predict(texts)
    assert [r["label"] for r in again] == [p.label for p in predictions]


def test_rerun_of_a_finished_run_is_a_no_op(
    trained_run, queued, django_capture_on_commit_callbacks, settings
):
    weights = Path(settings.MEDIA_ROOT) / trained_run.artifact / "model.pt"
    stamp = weights.stat().st_mtime_ns
    before = list(Prediction.objects.filter(model_run=trained_run).values_list("pk", "label"))
    sent = len(queued)
    with django_capture_on_commit_callbacks(execute=True):
        job = jobs.enqueue_training(trained_run, trained_run.owner)
    assert len(queued) == sent  # nothing queued
    assert jobs.train_model.apply(args=[job.pk]).get()["model_run"] == trained_run.pk
    assert weights.stat().st_mtime_ns == stamp
    assert list(Prediction.objects.filter(model_run=trained_run).values_list("pk", "label")) == before
    assert Job.objects.filter(key=f"train:{trained_run.pk}").count() == 1


def test_redelivered_training_gives_the_same_rows_without_duplicates(trained_run):
    """A worker died mid-run: the broker delivers the task again and it runs from the start."""
    rows = {p.document_id: p for p in Prediction.objects.filter(model_run=trained_run)}
    ModelRun.objects.filter(pk=trained_run.pk).update(status=ModelRun.Status.RUNNING, progress=0.4)
    job = Job.objects.get(key=f"train:{trained_run.pk}")
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING)
    first = next(iter(rows.values()))
    Prediction.objects.filter(pk=first.pk).update(label="garbage", attention=None)

    jobs.train_model.apply(args=[job.pk]).get()

    trained_run.refresh_from_db()
    assert trained_run.status == ModelRun.Status.DONE
    again = {p.document_id: p for p in Prediction.objects.filter(model_run=trained_run)}
    assert again.keys() == rows.keys()
    for doc_id, old in rows.items():
        new = again[doc_id]
        assert new.pk == old.pk
        assert new.label == old.label
        assert new.attention == pytest.approx(old.attention, abs=1e-6)
        assert new.probabilities == pytest.approx(old.probabilities, abs=1e-6)


def test_a_stalled_run_that_lost_its_job_writes_neither_its_result_nor_its_artifact(
    user, dataset, queued, django_capture_on_commit_callbacks, settings, monkeypatch
):
    """A worker froze after training; the sweeper re-queued its job and another worker claimed it (attempt
    2) and finished. The first worker resumes and runs to its end: its fenced writes are refused, the
    winner's row, predictions and artifact stay, and the artifact it made is removed."""
    run = create_model_run(user, dataset, "bilstm_attention", TINY_PARAMS)
    with django_capture_on_commit_callbacks(execute=True):
        job = jobs.enqueue_training(run, user)
    real_train, outcome = training.engine.train, {}

    def train_then_freeze(*args, **kwargs):
        trained = real_train(*args, **kwargs)
        if "winner" not in outcome:  # the first worker freezes here, and its job goes elsewhere
            outcome["winner"] = {}
            Job.objects.filter(pk=job.pk).update(heartbeat=timezone.now() - timedelta(hours=1))
            assert sweeper.requeue_lost(timezone.now()) == [job.pk]
            outcome["winner"] = run_job(job.pk, jobs.training_work)
            winner = ModelRun.objects.get(pk=run.pk)
            outcome["row"] = (winner.status, winner.artifact, winner.finished, winner.metrics, winner.message)
            outcome["predictions"] = sorted(
                Prediction.objects.filter(model_run=run).values_list("pk", "label", "probabilities")
            )
            weights = Path(settings.MEDIA_ROOT) / winner.artifact / "model.pt"
            outcome["weights"] = (weights, weights.read_bytes())
        return trained

    monkeypatch.setattr(training.engine, "train", train_then_freeze)
    answer = run_job(job.pk, jobs.training_work)

    assert answer == {"superseded": job.pk, "attempt": 1}
    assert outcome["winner"]["artifact"] == f"models/run-{run.pk}-attempt-2"
    row = Job.objects.get(pk=job.pk)
    assert (row.status, row.attempts, row.result) == (Job.Status.DONE, 2, outcome["winner"])
    run.refresh_from_db()
    assert (run.status, run.artifact, run.finished, run.metrics, run.message) == outcome["row"]
    assert run.status == ModelRun.Status.DONE
    predictions = sorted(Prediction.objects.filter(model_run=run).values_list("pk", "label", "probabilities"))
    assert predictions == outcome["predictions"]
    weights, content = outcome["weights"]
    assert weights.read_bytes() == content
    assert not (Path(settings.MEDIA_ROOT) / f"models/run-{run.pk}-attempt-1").exists()


def test_a_superseded_explanation_run_writes_no_explanations(trained_run):
    job = Job.objects.create(key=f"explain:{trained_run.pk}:probe", kind="explain_model", params={})
    first, _ = claim(job.pk)
    Job.objects.filter(pk=job.pk).update(status=Job.Status.QUEUED, heartbeat=None)  # re-queued
    assert claim(job.pk)[0].attempts == 2  # and claimed again elsewhere
    params = clean_explanation_params(trained_run, {"methods": ["grad_dot_int_s"], "faithfulness": False})
    with pytest.raises(Superseded):
        run_explanations(trained_run.pk, params, fence=partial(fenced, job.pk, first.attempts))
    assert not Explanation.objects.filter(model_run=trained_run).exists()
    assert run_explanations(trained_run.pk, params, fence=partial(fenced, job.pk, 2))["explanations"] == 8


def test_a_superseded_run_cannot_mark_the_job_done_or_failed(user):
    job = Job.objects.create(key="fence:1", kind="probe", params={})
    claimed, _ = claim(job.pk)
    assert claimed is not None and claimed.attempts == 1
    Job.objects.filter(pk=job.pk).update(status=Job.Status.QUEUED, heartbeat=None)  # re-queued
    assert claim(job.pk)[0].attempts == 2  # claimed again elsewhere
    with pytest.raises(Superseded), fenced(job.pk, 1):
        pass
    with fenced(job.pk, 2) as locked:
        assert locked.attempts == 2


def test_torch_threads_follow_settings(trained_run, settings):
    settings.HATLAB_TORCH_THREADS = 2
    job = Job.objects.get(key=f"train:{trained_run.pk}")
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING)
    jobs.train_model.apply(args=[job.pk]).get()
    assert torch.get_num_threads() == 2


def test_failed_training_is_recorded_and_can_be_queued_again(
    user, dataset, queued, django_capture_on_commit_callbacks, monkeypatch
):
    def broken(*args, **kwargs):
        raise ValueError("the data set is cursed")

    monkeypatch.setattr(training.engine, "train", broken)
    run = create_model_run(user, dataset, "cnn", {"epochs": 1})
    job = _train(run, queued, django_capture_on_commit_callbacks, gpu=True)
    assert queued[-1][2] == "gpu"
    run.refresh_from_db()
    assert job.status == Job.Status.FAILED and "cursed" in job.message
    assert run.status == ModelRun.Status.FAILED and "cursed" in run.message
    assert not list(Path(storage.media_root()).rglob("model.pt"))

    with django_capture_on_commit_callbacks(execute=True):
        again = jobs.enqueue_training(run, user)
    assert again.pk == job.pk and again.status == Job.Status.QUEUED
    run.refresh_from_db()
    assert run.status == ModelRun.Status.QUEUED
    assert queued[-1][1] == [job.pk]


# --- explanations -----------------------------------------------------------------------------


def test_explanation_job_stores_scores_and_evidence(trained_run, queued, django_capture_on_commit_callbacks):
    params = clean_explanation_params(trained_run, {"methods": ["grad_l2_1s", "attention"], "m": 2})
    with django_capture_on_commit_callbacks(execute=True):
        job = jobs.enqueue_explanations(trained_run, params, trained_run.owner)
    task, args, queue = queued[-1]
    assert task is jobs.explain_model and queue == "cpu"
    result = task.apply(args=args).get()
    assert result["explanations"] == 16

    job.refresh_from_db()
    assert job.status == Job.Status.DONE and job.progress == 1.0
    rows = Explanation.objects.filter(model_run=trained_run).select_related("document")
    assert rows.count() == 16
    predictions = {p.document_id: p for p in Prediction.objects.filter(model_run=trained_run)}
    for row in rows:
        doc = row.document
        assert row.target == predictions[doc.pk].label
        assert len(row.scores) == len(doc.words)
        if row.method == "attention":
            assert row.scores == pytest.approx(predictions[doc.pk].attention, abs=1e-6)
        assert len(row.evidence) == len(row.counter_evidence) == 2
        best = int(np.argmax(row.scores))
        assert row.evidence[0]["first_word"] == best
        worst = int(np.argmin(row.scores))
        assert row.counter_evidence[0]["first_word"] == worst
        for piece in row.evidence + row.counter_evidence:
            assert doc.text[piece["start"] : piece["end"]] == piece["text"]

    # The same request is the same job; running it again changes nothing.
    ids = sorted(rows.values_list("pk", flat=True))
    with django_capture_on_commit_callbacks(execute=True):
        same = jobs.enqueue_explanations(trained_run, dict(params), trained_run.owner)
    assert same.pk == job.pk
    assert jobs.explain_model.apply(args=[job.pk]).get() == result
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING)  # as if redelivered mid-run
    jobs.explain_model.apply(args=[job.pk]).get()
    assert sorted(Explanation.objects.filter(model_run=trained_run).values_list("pk", flat=True)) == ids


def test_explanations_for_gold_targets_with_ngram_evidence(trained_run, dataset):
    from annotate.machine import run_explanations

    docs = list(dataset.documents.order_by("id")[:3])
    params = clean_explanation_params(
        trained_run,
        {
            "methods": ["omit_1"],
            "documents": [d.pk for d in docs],
            "target": "gold",
            "ngram_sizes": [2],
            "m": 1,
        },
    )
    result = run_explanations(trained_run.pk, params)
    assert result["explanations"] == 3
    for doc in docs:
        row = Explanation.objects.get(model_run=trained_run, document=doc, method="omit_1")
        assert row.target == doc.label
        (piece,) = row.evidence
        assert piece["end_word"] - piece["first_word"] == 2
        assert piece["score"] == pytest.approx(sum(row.scores[piece["first_word"] : piece["end_word"]]))


def test_explanations_store_their_faithfulness_for_the_explained_class(trained_run, dataset):
    from annotate.machine import run_explanations

    docs = list(dataset.documents.order_by("id")[:3])
    request = {"methods": ["omit_1", "grad_l2_1s"], "documents": [d.pk for d in docs], "target": "gold"}
    run_explanations(trained_run.pk, clean_explanation_params(trained_run, request))
    bundle = load_trained(trained_run)
    for doc in docs:
        for method in ("omit_1", "grad_l2_1s"):
            row = Explanation.objects.get(model_run=trained_run, document=doc, method=method)
            stored = row.faithfulness
            assert stored["target"] == doc.label and len(stored["comprehensiveness"]) == 5
            # the gold class's probability with the top ⌈n/2⌉ words removed, re-encoded from the string
            words = doc.text.split()
            k = -(-len(words) // 2)
            top = set(sorted(range(len(words)), key=lambda j: (-row.scores[j], j))[:k])
            c = bundle.labels.index(doc.label)
            full, without = bundle.scores(
                [doc.text, " ".join(w for j, w in enumerate(words) if j not in top)], kind="probs"
            )[:, c]
            assert stored["comprehensiveness"][-1] == pytest.approx(full - without, abs=1e-5)
            assert stored["probability"] == pytest.approx(full, abs=1e-6)
    off = {**request, "faithfulness": False}
    run_explanations(trained_run.pk, clean_explanation_params(trained_run, off))
    assert not Explanation.objects.filter(model_run=trained_run, faithfulness__isnull=False).exists()
    with pytest.raises(MachineInputError):
        clean_explanation_params(trained_run, {**request, "faithfulness": "yes"})


def test_explanations_store_integrated_gradients_completeness_and_flag_a_low_cap(trained_run, dataset):
    from annotate.machine import run_explanations

    docs = list(dataset.documents.order_by("id")[:4])
    request = {"methods": ["grad_dot_int_s", "attention"], "documents": [d.pk for d in docs]}
    result = run_explanations(trained_run.pk, clean_explanation_params(trained_run, request))
    assert result["flagged_explanations"] == 0
    for row in Explanation.objects.filter(model_run=trained_run, method="grad_dot_int_s"):
        check = row.diagnostics["completeness"]
        assert check["converged"] and check["error"] <= 0.01 and "warnings" not in row.diagnostics
        assert sum(row.scores) == pytest.approx(check["total"], rel=1e-4, abs=1e-6)
        assert row.counter_scores is None
    assert all(
        not d for d in Explanation.objects.filter(method="attention").values_list("diagnostics", flat=True)
    )
    low = {**request, "method_params": {"gradients": {"steps": 1, "max_steps": 1}}}
    result = run_explanations(trained_run.pk, clean_explanation_params(trained_run, low))
    rows = Explanation.objects.filter(model_run=trained_run, method="grad_dot_int_s")
    flagged = [r for r in rows if r.diagnostics.get("warnings")]
    assert flagged and result["flagged_explanations"] == len(flagged)
    assert all(not r.diagnostics["completeness"]["converged"] for r in flagged)


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({}, "methods"),
        ({"methods": ["no_such_method"]}, "methods"),
        ({"methods": ["gradcam"]}, "methods"),  # a CNN method on a BiLSTM
        ({"methods": "attention", "documents": [10**9]}, "documents"),
        ({"methods": "attention", "documents": "all"}, "documents"),
        ({"methods": "attention", "target": "neutral"}, "target"),
        ({"methods": "attention", "m": 0}, "m"),
        ({"methods": "attention", "ngram_sizes": [0]}, "ngram_sizes"),
        ({"methods": "attention", "method_params": {"lime": {"n_samples": 10}}}, "method_params.lime"),
    ],
)
def test_explanation_request_names_the_bad_field(trained_run, data, field):
    with pytest.raises(MachineInputError) as caught:
        clean_explanation_params(trained_run, data)
    assert caught.value.field == field


def test_explanations_need_a_finished_run(user, dataset):
    run = create_model_run(user, dataset, "cnn", {"epochs": 1})
    with pytest.raises(MachineInputError) as caught:
        clean_explanation_params(run, {"methods": ["grad_l2_1s"]})
    assert caught.value.field == "model_run"


# --- storage ----------------------------------------------------------------------------------


def _stubbed_s3():
    client = boto3.client(
        "s3", region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test"
    )
    return client, Stubber(client)


def test_local_storage_publishes_atomically(tmp_path):
    work = storage.work_folder("models/run-5")
    (work / "a.txt").write_text("one")
    assert storage.store_artifact(work, "models/run-5") == "models/run-5"
    assert not work.exists()
    replacement = storage.work_folder("models/run-5")
    (replacement / "b.txt").write_text("two")
    storage.store_artifact(replacement, "models/run-5")
    folder = storage.local_artifact("models/run-5")
    assert sorted(p.name for p in folder.iterdir()) == ["b.txt"]
    with pytest.raises(ValueError):
        storage.work_folder("../escape")


def test_s3_storage_uploads_and_downloads_through_a_cache(settings, tmp_path):
    settings.HATLAB_S3_BUCKET = "hatlab-models"
    client, stub = _stubbed_s3()
    work = storage.work_folder("models/run-3")
    (work / "config.json").write_text('{"a": 1}')
    (work / "sub").mkdir()
    (work / "sub" / "w.bin").write_bytes(b"\x00\x01weights")
    for name in ("config.json", "sub/w.bin"):
        stub.add_response(
            "put_object", {}, {"Bucket": "hatlab-models", "Key": f"models/run-3/{name}", "Body": ANY}
        )
    with stub:
        location = storage.store_artifact(work, "models/run-3", client=client)
    stub.assert_no_pending_responses()
    assert location == "s3://hatlab-models/models/run-3"

    shutil.rmtree(Path(settings.MEDIA_ROOT) / storage.CACHE_FOLDER)
    files = {"config.json": b'{"a": 1}', "sub/w.bin": b"\x00\x01weights"}
    client, stub = _stubbed_s3()
    stub.add_response(
        "list_objects_v2",
        {
            "Contents": [{"Key": f"models/run-3/{k}", "Size": len(v)} for k, v in files.items()],
            "IsTruncated": False,
        },
        {"Bucket": "hatlab-models", "Prefix": "models/run-3/"},
    )
    for name, data in files.items():
        stub.add_response(
            "get_object",
            {"Body": StreamingBody(io.BytesIO(data), len(data))},
            {"Bucket": "hatlab-models", "Key": f"models/run-3/{name}"},
        )
    with stub:
        folder = storage.local_artifact(location, client=client)
        stub.assert_no_pending_responses()
        assert storage.local_artifact(location, client=client) == folder  # cached: no more calls
    assert (folder / "config.json").read_bytes() == files["config.json"]
    assert (folder / "sub" / "w.bin").read_bytes() == files["sub/w.bin"]


def test_training_with_s3_configured_stores_and_reloads_the_model(
    user, dataset, queued, django_capture_on_commit_callbacks, settings, monkeypatch
):
    settings.HATLAB_S3_BUCKET = "hatlab-models"
    uploaded: dict[str, bytes] = {}

    class RecordingS3:
        """Stubbed client whose put_object also keeps the bytes, to serve them back on download."""

        def __init__(self):
            self.client, self.stub = _stubbed_s3()

        def put_object(self, Bucket, Key, Body):
            self.stub.add_response("put_object", {}, {"Bucket": Bucket, "Key": Key, "Body": ANY})
            uploaded[Key] = Body.read()
            with self.stub:
                return self.client.put_object(Bucket=Bucket, Key=Key, Body=b"")

    monkeypatch.setattr(storage, "s3_client", RecordingS3)
    run = create_model_run(user, dataset, "bilstm_attention", TINY_PARAMS)
    _train(run, queued, django_capture_on_commit_callbacks)
    run.refresh_from_db()
    assert run.status == ModelRun.Status.DONE
    assert run.artifact == f"s3://hatlab-models/models/run-{run.pk}-attempt-1"
    assert sorted(uploaded) == [
        f"models/run-{run.pk}-attempt-1/{n}"
        for n in ("config.json", "metrics.json", "model.pt", "splits.json", "vocab.json")
    ]
    assert not (Path(settings.MEDIA_ROOT) / "models").exists()

    shutil.rmtree(Path(settings.MEDIA_ROOT) / storage.CACHE_FOLDER)
    client, stub = _stubbed_s3()
    stub.add_response(
        "list_objects_v2",
        {"Contents": [{"Key": k, "Size": len(v)} for k, v in sorted(uploaded.items())], "IsTruncated": False},
        {"Bucket": "hatlab-models", "Prefix": f"models/run-{run.pk}-attempt-1/"},
    )
    for key, data in sorted(uploaded.items()):
        stub.add_response(
            "get_object",
            {"Body": StreamingBody(io.BytesIO(data), len(data))},
            {"Bucket": "hatlab-models", "Key": key},
        )
    monkeypatch.setattr(storage, "s3_client", lambda: client)
    with stub:
        bundle = load_trained(run)
    stub.assert_no_pending_responses()
    prediction = Prediction.objects.filter(model_run=run).select_related("document").first()
    (fresh,) = bundle.predict([prediction.document.text])
    assert fresh["label"] == prediction.label
    assert fresh["attention"] == pytest.approx(prediction.attention, abs=1e-6)


# --- heat-map data ----------------------------------------------------------------------------


def test_signed_levels_scale_by_the_largest_magnitude():
    assert heatmap.signed_levels([0.5, -1.0, 0.0, None, 0.26]) == [5, -10, 0, 0, 3]
    assert heatmap.signed_levels([0.0, 0.0]) == [0, 0]
    assert heatmap.signed_levels([float("nan"), 2.0]) == [0, 10]
    assert [heatmap.level_class(v) for v in (0, 3, -10)] == ["heat-0", "heat-p3", "heat-n10"]


def test_human_rows_come_from_highlight_responses(user, dataset):
    from django.utils import timezone

    doc = dataset.documents.order_by("id").first()  # "good great food"
    study = Study.objects.create(name="hl", owner=user, dataset=dataset, kind="highlight")
    item = Item.objects.create(study=study, document=doc)
    maps = [[1, 1, 0], [1, 0, 0]]
    for n, word_map in enumerate(maps):
        worker = Worker.objects.create(external_id=f"w{n}")
        assignment = Assignment.objects.create(
            study=study, item=item, worker=worker, slot=n, expires_at=timezone.now()
        )
        Response.objects.create(
            assignment=assignment,
            study=study,
            item=item,
            worker=worker,
            submission_key=f"00000000-0000-0000-0000-00000000000{n}",
            answer={"label": "pos", "map": word_map},
        )
    rows = heatmap.human_rows(doc)
    assert [r.kind for r in rows] == ["human", "human", "consensus", "consensus"]
    assert rows[0].levels == [10, 10, 0] and rows[0].label == "pos"
    assert rows[2].levels == [10, 0, 0]  # CAM
    assert rows[3].levels == [10, 10, 0]  # SAM
    # pseudonyms only (a random pseudonym may contain "w0" by chance: compare whole names)
    workers = Worker.objects.filter(external_id__in=["w0", "w1"]).order_by("external_id")
    assert [r.name for r in rows[:2]] == [f"annotator {w.pseudonym_for(user.pk)}" for w in workers]
    assert not {r.name.removeprefix("annotator ") for r in rows} & {"w0", "w1"}


def test_row_progress_is_throttled_and_never_goes_back(user, dataset):
    from annotate.machine.progress import RowProgress

    run = create_model_run(user, dataset, "cnn", {})
    job = Job.objects.create(kind="x", key="progress-test")
    progress = RowProgress(model_run_id=run.pk, job_id=job.pk, interval=3600, step=0.5)

    def stored() -> tuple[float, float]:
        run.refresh_from_db()
        job.refresh_from_db()
        return run.progress, job.progress

    progress(0.1, "first")
    assert stored() == (0.1, 0.1)
    progress(0.2)  # too soon and too small a step
    assert stored() == (0.1, 0.1)
    progress(0.7, "epoch 3")
    assert stored() == (0.7, 0.7) and run.message == "epoch 3"
    progress(1.0)
    assert stored() == (1.0, 1.0)
    progress(0.3)  # never backwards
    assert progress.fraction == 1.0 and stored() == (1.0, 1.0)


def test_grad_cam_text_stores_the_ngrams_its_filters_detected_and_picks_evidence_among_them(
    user, dataset, queued, django_capture_on_commit_callbacks
):
    """The explanation job keeps each text's detected n-grams with its scores (Lertvittayakumjorn & Toni
    2019 §4.3.1), so its evidence, and the questions made later from the stored row, lie among them."""
    from annotate.machine import run_explanations
    from annotate.machine.explaining import DETECTED_NGRAMS

    tiny_cnn = {"embedding_dim": 8, "num_filters": 4, "filter_sizes": [2, 3], "fc_size": 8}
    run = create_model_run(user, dataset, "cnn", {**TINY_PARAMS, "model": tiny_cnn})
    job = _train(run, queued, django_capture_on_commit_callbacks)
    assert job.status == Job.Status.DONE, job.error
    run.refresh_from_db()
    docs = list(dataset.documents.order_by("id")[:3])
    params = clean_explanation_params(
        run, {"methods": ["gradcam"], "documents": [d.pk for d in docs], "ngram_sizes": [2, 3], "m": 2}
    )
    assert run_explanations(run.pk, params)["explanations"] == 3
    for doc in docs:
        row = Explanation.objects.get(model_run=run, document=doc, method="gradcam")
        detected = {tuple(r) for r in row.diagnostics[DETECTED_NGRAMS]}
        assert detected and all(0 <= a < b <= len(doc.words) for a, b in detected)
        assert {(e["first_word"], e["end_word"]) for e in row.evidence} <= detected
