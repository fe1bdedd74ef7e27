"""Researcher pages of the machine side: model runs (list, new, detail with live progress) and the
heat map of one document's relevance beside its human attention maps."""

from __future__ import annotations

import json

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from annotate.access import owned_or_404, researcher_required, visible_to
from annotate.jobs.dispatch import QUEUE_DOWN_NOTE
from annotate.jobs.sweeper import sweep_soon
from annotate.machine import create_model_run, heatmap
from annotate.machine.forms import ExplainForm, ModelRunForm
from annotate.machine.jobs import EXPLAIN_KIND, enqueue_explanations, enqueue_training, training_key
from annotate.machine.runs import documents_with_words
from annotate.machine.splits import split_warnings
from annotate.models import Job, ModelRun, Prediction, Study

PREDICTIONS_PER_PAGE = 50


def _job_message(request, job: Job, subject: str) -> None:
    """Say where the job stands now (a job may already be done when the page answers: the demo runs jobs
    in the request), and that a queued one waits for the job queue when the broker could not be reached."""
    job.refresh_from_db()
    if job.status == Job.Status.DONE:
        messages.success(request, f"{subject} is done.")
    elif job.status == Job.Status.FAILED:
        messages.error(request, f"{subject} failed: {job.message or 'see the job below'}.")
    elif job.status == Job.Status.RUNNING:
        messages.success(request, f"{subject} is running.")
    elif job.sent is None and job.message == QUEUE_DOWN_NOTE:
        messages.warning(request, f"{subject} is queued. Note: {QUEUE_DOWN_NOTE}.")
    else:
        messages.success(request, f"{subject} is queued.")


@researcher_required
def model_run_list(request):
    runs = visible_to(ModelRun.objects.select_related("dataset", "owner"), request.user).order_by("-created")
    return render(request, "annotate/machine/run_list.html", {"runs": runs})


@researcher_required
def model_run_create(request):
    form = ModelRunForm(
        request.POST or None, user=request.user, initial={"dataset": request.GET.get("dataset")}
    )
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        run = create_model_run(
            request.user, data["dataset"], data["architecture"], data["params"], data["name"]
        )
        job = enqueue_training(run, request.user, gpu=data["gpu"])
        _job_message(request, job, f"Training of {run.name}")
        return redirect("model-run-detail", pk=run.pk)
    return render(request, "annotate/machine/run_form.html", {"form": form})


def _detail_context(request, run: ModelRun, explain_form: ExplainForm | None = None) -> dict:
    predictions = Prediction.objects.filter(model_run=run).select_related("document").order_by("document_id")
    page = Paginator(predictions, PREDICTIONS_PER_PAGE).get_page(request.GET.get("page"))
    jobs = Job.objects.filter(kind=EXPLAIN_KIND, params__model_run=run.pk).order_by("-created")
    return {
        "run": run,
        "params_json": json.dumps(run.params, sort_keys=True),
        "training_job": Job.objects.filter(key=training_key(run)).first(),
        "page": page,
        "explain_form": explain_form
        if explain_form is not None
        else (ExplainForm(model_run=run) if run.status == ModelRun.Status.DONE else None),
        "explanation_jobs": jobs,
        "test_metrics": run.metrics.get("test") or {},
        "validation_metrics": run.metrics.get("validation") or {},
        "split_warnings": split_warnings(run) if run.status == ModelRun.Status.DONE else [],
        "compare_studies": Study.objects.filter(dataset_id=run.dataset_id, owner=request.user).order_by(
            "name"
        )
        if run.status == ModelRun.Status.DONE
        else Study.objects.none(),
    }


@researcher_required
def model_run_detail(request, pk: int):
    sweep_soon()
    run = owned_or_404(ModelRun.objects.select_related("dataset", "owner"), request.user, pk=pk)
    return render(request, "annotate/machine/run_detail.html", _detail_context(request, run))


@require_POST
@researcher_required
def model_run_train(request, pk: int):
    run = owned_or_404(ModelRun.objects.all(), request.user, pk=pk)
    job = enqueue_training(run, request.user, gpu=bool(request.POST.get("gpu")))
    if run.status == ModelRun.Status.DONE:
        messages.success(request, "Already trained.")
    else:
        _job_message(request, job, "Training")
    return redirect("model-run-detail", pk=run.pk)


@require_POST
@researcher_required
def model_run_explain(request, pk: int):
    run = owned_or_404(ModelRun.objects.select_related("dataset", "owner"), request.user, pk=pk)
    if run.status != ModelRun.Status.DONE:
        messages.error(request, "Explanations need a trained model.")
        return redirect("model-run-detail", pk=run.pk)
    form = ExplainForm(request.POST, model_run=run)
    if not form.is_valid():
        return render(
            request, "annotate/machine/run_detail.html", _detail_context(request, run, form), status=400
        )
    job = enqueue_explanations(run, form.cleaned_data["params"], request.user, gpu=form.cleaned_data["gpu"])
    _job_message(request, job, f"Explanation job {job.pk}")
    return redirect("model-run-detail", pk=run.pk)


@researcher_required
def model_run_heatmap(request, pk: int, document_pk: int):
    run = owned_or_404(ModelRun.objects.select_related("dataset"), request.user, pk=pk)
    document = get_object_or_404(documents_with_words(run.dataset), pk=document_pk)
    options = heatmap.machine_options(run, document)
    method = request.GET.get("method", "")
    target = request.GET.get("target", "")
    chosen = next((o for o in options if o == (method, target)), None)
    if chosen is None:
        chosen = next((o for o in options if o[0] == method), options[0] if options else None)
    row = heatmap.machine_row(run, document, *chosen) if chosen else None
    prediction = Prediction.objects.filter(model_run=run, document=document).first()
    words = heatmap.page_words(document)
    human = heatmap.human_rows(document)
    explanation = None
    if chosen and chosen[0] != heatmap.ATTENTION:
        explanation = run.explanations.filter(document=document, method=chosen[0], target=chosen[1]).first()
    neighbours = list(documents_with_words(run.dataset).values_list("pk", flat=True))
    position = neighbours.index(document.pk)
    return render(
        request,
        "annotate/machine/heatmap.html",
        {
            "run": run,
            "document": document,
            "prediction": prediction,
            "options": options,
            "methods": list(dict.fromkeys(m for m, _ in options)),
            "targets": list(dict.fromkeys(t for _, t in options)),
            "chosen": chosen,
            "machine": _cells(words, row.levels, row.scores) if row else None,
            "human": [{"row": r, "cells": _cells(words, r.levels)} for r in human],
            "explanation": explanation,
            "legend": [heatmap.level_class(v) for v in range(-heatmap.LEVELS, heatmap.LEVELS + 1, 2)],
            "previous": neighbours[position - 1] if position > 0 else None,
            "next": neighbours[position + 1] if position + 1 < len(neighbours) else None,
        },
    )


def _cells(words: list[dict], levels: list[int], scores: list[float] | None = None) -> list[dict]:
    """One cell per word: its text, CSS class, the line break before it, and its score (as a tooltip)."""
    return [
        {
            "text": w["text"],
            "break": w["break"],
            "css": heatmap.level_class(level),
            "score": None if scores is None else scores[i],
        }
        for i, (w, level) in enumerate(zip(words, levels, strict=True))
    ]
