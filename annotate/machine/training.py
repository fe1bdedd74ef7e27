"""Training a model run and storing its machine attention maps.

:func:`run_training` is what the Celery job calls. It is idempotent: a finished run is left as
it is; an unfinished one (queued, failed, or running when its worker died) is trained again from
the start with the same seed, its artifact folder replaced and its ``Prediction`` rows upserted
on ``(model_run, document)``, so a re-run stores the same result and never duplicates rows.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from django.utils import timezone

from annotate.infra import storage
from annotate.jobs.base import Superseded
from annotate.machine.progress import Progress, no_progress
from annotate.machine.runs import dataset_records, documents_with_words, train_config
from annotate.models import ModelRun, Prediction
from explain_engine import api as engine
from explain_engine.api import json_safe

if TYPE_CHECKING:
    from explain_engine.api import TrainedModel

#: Opens the transaction of a run's final writes, or raises Superseded (annotate.jobs.base.fenced).
Fence = Callable[[], AbstractContextManager[Any]]

TRAIN_SHARE = 0.9  # of the progress bar; storing the predictions takes the rest
PREDICT_CHUNK = 256


def load_trained(model_run: ModelRun, device: str | None = None) -> TrainedModel:
    """The trained bundle of a finished run, loaded from MEDIA_ROOT (or from the S3 cache)."""
    if model_run.status != ModelRun.Status.DONE or not model_run.artifact:
        raise ValueError(f"model run {model_run.pk} has not finished training")
    return engine.TrainedModel.load(storage.local_artifact(model_run.artifact), device=device)


def _train_message(info: dict) -> str:
    if info.get("phase") == "done":
        return "training finished"
    parts = [f"epoch {info['epoch']}"] if "epoch" in info else []
    if "val_loss" in info and info["val_loss"] is not None:
        parts.append(f"validation loss {info['val_loss']:.4f}")
    elif "loss" in info:
        parts.append(f"loss {info['loss']:.4f}")
    return ", ".join(parts)


def predicted_rows(
    model_run: ModelRun, trained: TrainedModel, progress: Progress = no_progress, start: float = 0.0
) -> list[Prediction]:
    """One unsaved ``Prediction`` per document of the run's dataset; ``progress`` moves from ``start`` to 1.0."""
    documents = list(documents_with_words(model_run.dataset).only("id", "text"))
    rows: list[Prediction] = []
    for first in range(0, len(documents), PREDICT_CHUNK):
        chunk = documents[first : first + PREDICT_CHUNK]
        results = trained.predict([doc.text for doc in chunk])
        rows += [
            Prediction(
                model_run=model_run,
                document=doc,
                label=res["label"],
                probabilities=json_safe(res["probabilities"]),
                attention=json_safe(res["attention"]),
            )
            for doc, res in zip(chunk, results, strict=True)
        ]
        done = first + len(chunk)
        progress(
            start + (1.0 - start) * done / len(documents), f"predicted {done} of {len(documents)} documents"
        )
    return rows


def save_predictions(rows: list[Prediction]) -> None:
    """Upsert ``rows`` (one per run and document)."""
    for first in range(0, len(rows), PREDICT_CHUNK):
        Prediction.objects.bulk_create(
            rows[first : first + PREDICT_CHUNK],
            update_conflicts=True,
            unique_fields=["model_run", "document"],
            update_fields=["label", "probabilities", "attention"],
        )


def store_predictions(
    model_run: ModelRun, trained: TrainedModel, progress: Progress = no_progress, start: float = 0.0
) -> int:
    """Predict every document of the run's dataset; upsert one ``Prediction`` per document.

    Returns the number of documents. ``progress`` moves from ``start`` to 1.0.
    """
    rows = predicted_rows(model_run, trained, progress, start)
    save_predictions(rows)
    return len(rows)


def _mark_failed(run_id: int, exc: Exception, fence: Fence) -> None:
    try:
        with fence():
            ModelRun.objects.filter(pk=run_id).update(
                status=ModelRun.Status.FAILED, message=f"{type(exc).__name__}: {exc}"[:2000]
            )
    except Superseded:
        pass  # the run belongs to a later attempt: its failure is not ours to record


def run_training(
    model_run_id: int,
    progress: Progress = no_progress,
    *,
    attempt: int | None = None,
    fence: Fence = nullcontext,
) -> ModelRun:
    """Train run ``model_run_id``, publish its artifact and store its predictions and attention maps.

    A run already ``done`` is returned untouched. On an error the run is marked ``failed`` with the
    message, and the error is raised again (the job decides whether to retry). A job's run passes its
    ``attempt`` and ``fence`` (:func:`annotate.jobs.base.fenced`): the artifact goes under the attempt's
    own key, and the run's row and predictions are written in one fenced transaction, so a run that lost
    its job to a later attempt raises :class:`~annotate.jobs.base.Superseded`, writes nothing to the run
    and removes the artifact it made.
    """
    run = ModelRun.objects.select_related("dataset").get(pk=model_run_id)
    if run.status == ModelRun.Status.DONE:
        return run
    with fence():
        ModelRun.objects.filter(pk=run.pk).update(
            status=ModelRun.Status.RUNNING, progress=0.0, message="training", finished=None
        )
    key = storage.model_run_key(run.pk, attempt)
    work, location = None, None
    try:
        config = train_config(run)
        records = dataset_records(run.dataset)
        work = storage.work_folder(key)
        trained = engine.train(
            records,
            config,
            out_dir=work,
            on_progress=lambda fraction, info: progress(TRAIN_SHARE * fraction, _train_message(info)),
        )
        location = storage.store_artifact(work, key)
        work = None
        rows = predicted_rows(run, trained, progress, start=TRAIN_SHARE)
        with fence():
            ModelRun.objects.filter(pk=run.pk).update(
                artifact=location,
                metrics=json_safe(trained.metrics),
                status=ModelRun.Status.DONE,
                progress=1.0,
                message=f"trained; predictions stored for {len(rows)} documents",
                finished=timezone.now(),
            )
            save_predictions(rows)
    except Superseded:
        if location is not None:
            storage.remove_artifact(location)
        raise
    except Exception as exc:
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)
        _mark_failed(run.pk, exc, fence)
        raise
    run.refresh_from_db()
    return run
