"""The researcher's pages of an NLI pair study: the import page (a file of pairs becomes a dataset
and a draft study), the results page (label agreement, CAM/SAM and map agreement per text) and the
exports (per response and per pair, CSV or JSON lines)."""

from __future__ import annotations

from django.contrib import messages
from django.db import transaction
from django.http import Http404, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from rest_framework.exceptions import ValidationError

from annotate.access import researcher_required
from annotate.corpus.imports import CorpusImportError, check_file_size, detect_format
from annotate.exports.tables import INCLUDE_UNVERIFIED, include_unverified
from annotate.infra.field_errors import flatten_errors
from annotate.kinds.nli_pair.config import KIND
from annotate.kinds.nli_pair.forms import PairImportForm
from annotate.kinds.nli_pair.pairs import import_pairs
from annotate.kinds.nli_pair.results import EXPORTS, FORMATS, csv_cells, export_rows, jsonl_text, pair_results
from annotate.models import Dataset, Study
from annotate.studies import service as study_service
from annotate.tasks import get_kind
from annotate.tasks.results import csv_text, download, owned_study_or_404


def pair_study(request, uid) -> Study:
    """The researcher's NLI pair study ``uid``; 404 otherwise."""
    return owned_study_or_404(request.user, uid, {KIND}, "an NLI pair study")


def _create(form: PairImportForm, user) -> Study:
    """The imported pairs as a dataset and a draft study over it, both or neither."""
    data = form.cleaned_data
    upload = data["file"]
    fmt = detect_format(upload.name)
    check_file_size(upload.size)  # before the file is read
    with transaction.atomic():
        if Dataset.objects.filter(owner=user, name=data["name"]).exists():
            raise CorpusImportError(None, "name", f"you already have a dataset called {data['name']!r}")
        dataset = Dataset.objects.create(owner=user, name=data["name"], source=upload.name)
        import_pairs(dataset, upload.read(), fmt, data["labels"])
        return study_service.create_study(user, form.study_data(dataset.pk))


@researcher_required
def import_page(request):
    form = PairImportForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        try:
            study = _create(form, request.user)
        except CorpusImportError as exc:
            form.add_error("name" if exc.field == "name" else "file", str(exc))
        except ValidationError as exc:
            for field, problems in flatten_errors(exc.detail).items():
                target = field.split(".")[-1]
                form.add_error(target if target in form.fields else None, "; ".join(problems))
        else:
            messages.success(
                request, f"Study {study.name} created with its pairs. Start it when you are ready."
            )
            return redirect("study-detail", uid=study.uid)
    return render(request, "nli_pair/import.html", {"form": form})


@researcher_required
def results_page(request, uid):
    study = pair_study(request, uid)
    context = {
        "study": study,
        "kind": get_kind(study.kind),
        "results": pair_results(study),
        "downloads": [
            (what, fmt, reverse("nli-pair-export", args=[study.uid, what, fmt]))
            for what in EXPORTS
            for fmt in FORMATS
        ],
    }
    return render(request, "nli_pair/results.html", context)


@researcher_required
def export(request, uid, what: str, fmt: str):
    """One export; ``?include_unverified=1`` adds to the responses export the answers not (yet)
    verified, with their verification (the per-pair figures count verified answers only)."""
    study = pair_study(request, uid)
    if what not in EXPORTS or fmt not in FORMATS:
        raise Http404("no such export")
    try:
        unverified = include_unverified(request.GET.get(INCLUDE_UNVERIFIED))
        columns, rows = export_rows(study, what, unverified)
    except ValueError as exc:
        return HttpResponseBadRequest(str(exc), content_type="text/plain; charset=utf-8")
    body = csv_text(list(columns), csv_cells(columns, rows)) if fmt == "csv" else jsonl_text(rows)
    return download(study, what + ("-with-unverified" if unverified else ""), body, fmt)
