"""The NLI pair kind's own page: the import page (a file of pairs becomes a dataset and a draft study).
Its results page is the kind's results class (:class:`annotate.kinds.nli_pair.results.NliPairResults`)."""

from __future__ import annotations

from django.contrib import messages
from django.db import transaction
from django.shortcuts import redirect, render
from rest_framework.exceptions import ValidationError

from annotate.access import researcher_required
from annotate.corpus.imports import CorpusImportError, check_file_size, detect_format
from annotate.infra.field_errors import flatten_errors
from annotate.kinds.nli_pair.forms import PairImportForm
from annotate.kinds.nli_pair.pairs import import_pairs
from annotate.models import Dataset, Study
from annotate.studies import service as study_service
from annotate.tasks.study_form import add_api_errors


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
            for line in exc.sentences():
                form.add_error("name" if exc.field == "name" else "file", line)
        except ValidationError as exc:
            add_api_errors(form, flatten_errors(exc.detail))
        else:
            messages.success(
                request, f"Study {study.name} created with its pairs. Start it when you are ready."
            )
            return redirect("study-detail", uid=study.uid)
    return render(request, "nli_pair/import.html", {"form": form})
