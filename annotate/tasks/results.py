"""What the researcher's results pages of every kind share: which answers count, worker trust,
the model run a page compares the crowd with, and CSV cells.

Only answers to non-gold items count, and only those of workers the trust rule counts
(:func:`annotate.quality.exclusion.answer_weights`: in a study with gold items, trusted workers,
each weighing their trust; pending workers' answers wait until they qualify).
"""

from __future__ import annotations

import math
from typing import Any

from django.http import Http404, HttpResponse

from annotate.access import owned_or_404
from annotate.infra import csvfile
from annotate.models import ModelRun, Response, Study, Worker
from annotate.quality.exclusion import answer_weights, excluded_worker_ids

#: Bootstrap resamples per interval on a results page: fewer than the engine's default, since a page
#: computes an interval per annotator pair and is rendered while the researcher waits.
N_BOOT = 500


CONTENT_TYPES = {"csv": "text/csv", "jsonl": "application/x-ndjson"}


def download(study: Study, name: str, body: str, fmt: str = "csv") -> HttpResponse:
    """``body`` as the file ``study-<uid>-<name>.<fmt>`` a browser saves."""
    response = HttpResponse(body, content_type=CONTENT_TYPES[fmt])
    response["Content-Disposition"] = f'attachment; filename="study-{study.uid}-{name}.{fmt}"'
    return response


def owned_study_or_404(user, uid, kinds, noun: str) -> Study:
    """The study ``uid`` when ``user`` owns it (or is an admin) and its kind is one of ``kinds``; else 404
    saying it is not ``noun`` (a results page of one kind never shows another kind's study)."""
    study = owned_or_404(Study.objects.select_related("dataset", "owner"), user, uid=uid)
    if study.kind not in kinds:
        raise Http404(f"not {noun}")
    return study


def worker_trust(study: Study, worker_ids) -> dict[int, float]:
    """Each worker's answer weight in ``study`` (:func:`annotate.quality.exclusion.answer_weights`)."""
    return answer_weights(study, worker_ids)


def counted_responses(study: Study):
    """The verified answers to non-gold items of workers not excluded by their gold trust."""
    return (
        Response.objects.filter(study=study, item__is_gold=False)
        .counted()
        .exclude(worker_id__in=excluded_worker_ids(study))
    )


def worker_names(worker_ids) -> dict[int, str]:
    return {w.pk: w.anonymous_id for w in Worker.objects.filter(pk__in=list(worker_ids))}


def csv_text(columns: list[str], rows: list[list]) -> str:
    """A results table as CSV (formula-safe cells, :mod:`annotate.infra.csvfile`)."""
    return csvfile.csv_text(columns, rows, cell=_cell)


def _cell(value) -> Any:
    """A CSV cell: empty for None/NaN."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    return value


def finite_or_none(value) -> float | None:
    """``value`` as a float, or ``None`` when it is missing or not finite (JSON has no NaN)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def chosen_run(request, runs) -> ModelRun | None:
    """The run named by ``?run=`` among ``runs`` (``?run=none``: no model); the newest otherwise."""
    wanted = request.GET.get("run", "")
    if wanted == "none":
        return None
    if wanted:
        if not wanted.isdigit():
            raise Http404("run must be a model run id")
        run = runs.filter(pk=int(wanted)).first()
        if run is None:
            raise Http404("no such model run with results for this study's dataset")
        return run
    return runs.first()
