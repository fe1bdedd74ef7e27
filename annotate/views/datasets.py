"""Researcher pages: the dataset list with its import form, one dataset's documents, and the import of a
public human-rationale set."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.db import transaction
from django.db.models import Count
from django.shortcuts import redirect, render

from annotate.access import owned_or_404, researcher_required, visible_to
from annotate.corpus.imports import CorpusImportError, check_file_size, detect_format, import_texts
from annotate.corpus.rationales import import_rationales, read_upload
from annotate.models import Dataset
from annotate.tasks import TASK_KINDS, get_kind
from annotate.views.forms import DatasetImportForm, RationaleImportForm
from explain_engine.api import RATIONALE_FORMATS

DOCUMENTS_PER_PAGE = 50


@researcher_required
def dataset_list(request):
    form = DatasetImportForm(request.POST or None, request.FILES or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        dataset = _import(request, form)
        if dataset is not None:
            return redirect("dataset-detail", pk=dataset.pk)
    datasets = visible_to(Dataset.objects.select_related("owner"), request.user).annotate(
        n_documents=Count("documents")
    )
    return render(
        request,
        "annotate/datasets/list.html",
        {"datasets": datasets.order_by("-created"), "form": form, "kind_fields": kind_fields()},
        status=400 if form.errors else 200,
    )


def kind_fields() -> list[dict]:
    """What each task kind needs its dataset's documents to hold (for the import page)."""
    kinds = (get_kind(name) for name in sorted(TASK_KINDS))
    return [
        {"kind": k.name, "label": k.label, "fields": k.document_fields} for k in kinds if k.document_fields
    ]


def _import(request, form: DatasetImportForm) -> Dataset | None:
    """Create the dataset (when new) and import the file in one transaction; errors go on the form."""
    data = form.cleaned_data
    upload = data["file"]
    try:
        check_file_size(upload.size)  # before the file is read
        with transaction.atomic():
            dataset = data.get("dataset") or Dataset.objects.create(
                owner=request.user,
                name=data["name"].strip(),
                description=data.get("description", ""),
                source=upload.name,
            )
            fmt = data.get("format") or detect_format(upload.name)
            done = import_texts(dataset, upload.read(), fmt, data.get("labels"))
    except CorpusImportError as exc:
        problems = exc.problems
        count = len(problems) + getattr(exc, "more", 0)
        form.add_error("file", f"Nothing was imported: {count} problem{'s' if count != 1 else ''}.")
        for line in exc.sentences():
            form.add_error("file", line)
        return None
    messages.success(request, done.sentence(dataset.name))
    return dataset


@researcher_required
def dataset_detail(request, pk: int):
    dataset = owned_or_404(Dataset.objects.select_related("owner"), request.user, pk=pk)
    page = Paginator(dataset.documents.order_by("id"), DOCUMENTS_PER_PAGE).get_page(request.GET.get("page"))
    form = DatasetImportForm(initial={"dataset": dataset.pk}, user=request.user)
    studies = dataset.studies.order_by("-created")
    return render(
        request,
        "annotate/datasets/detail.html",
        {"dataset": dataset, "page": page, "form": form, "studies": studies, "kind_fields": kind_fields()},
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


@researcher_required
def rationale_import(request):
    """Import a public human-rationale set as a dataset and a finished study of its maps."""
    form = RationaleImportForm(request.POST or None, request.FILES or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        upload = data["file"]
        try:
            check_file_size(upload.size)  # before the file is read
            records = read_upload(data["format"], upload.read(), upload.name)
            done = import_rationales(records, request.user, data["name"], data["format"], upload.name)
        except CorpusImportError as exc:
            form.add_error("file", f"Nothing was imported. {exc}")
        else:
            messages.success(
                request,
                f"Imported {_count(done.documents, 'text')} with {_count(done.responses, 'human map')} by "
                f"{_count(done.workers, 'annotator')} into {done.dataset.name}; their study is {done.study.name}.",
            )
            return redirect("study-detail", uid=done.study.uid)
    return render(request, "annotate/datasets/rationales.html", {"form": form, "formats": RATIONALE_FORMATS})
