"""Who may see a study's dashboards, and the validated parameters of a human-vs-machine request.

Dashboards are for the study's owner (a researcher) and for admins: anyone else gets 403. A
selection names a model run the user may see, trained on the study's dataset, and a method with
stored maps for it (``"<run id>:<method>"``; the training attention is ``attention (training)``).
"""

from __future__ import annotations

from collections.abc import Sequence

from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404
from rest_framework.exceptions import ValidationError

from annotate.access import is_admin, is_researcher, visible_to
from annotate.dashboards.gather import TARGET_PREDICTED, TARGETS, Selection, machine_options
from annotate.dashboards.similarity import MAX_SELECTIONS
from annotate.models import Item, ModelRun, Study

SELECT_HELP = "choose at least one model run and method, as <model run id>:<method>"


def study_for(user, uid) -> Study:
    """The study ``uid`` (404 when there is none) if ``user`` owns it or is an admin; 403 otherwise."""
    study = get_object_or_404(Study.objects.select_related("dataset", "owner"), uid=uid)
    if not is_researcher(user) or not (is_admin(user) or study.owner_id == user.pk):
        raise PermissionDenied("The dashboards of a study are for its owner and for admins.")
    return study


def item_for(study: Study, item_pk: int) -> Item:
    """An item of ``study`` that shows a document (404 otherwise)."""
    return get_object_or_404(
        Item.objects.select_related("document"), pk=item_pk, study=study, document__isnull=False
    )


def runs_for(user, study: Study):
    """Finished model runs on the study's dataset that ``user`` may see."""
    if study.dataset_id is None:
        return ModelRun.objects.none()
    return (
        visible_to(ModelRun.objects.all(), user)
        .filter(dataset_id=study.dataset_id, status=ModelRun.Status.DONE)
        .order_by("-created")
    )


def options_for(user, study: Study, *, duplicates: bool = False) -> list[dict]:
    """The runs and methods a human-vs-machine dashboard may compare (see :func:`machine_options`)."""
    return machine_options(runs_for(user, study), duplicates=duplicates)


def clean_target(value: str | None) -> str:
    """The explained class a dashboard shows: ``predicted`` when the parameter is absent; an empty or other
    value is refused (the schema's enum), not read as the default."""
    target = TARGET_PREDICTED if value is None else value
    if target not in TARGETS:
        raise ValidationError({"target": [f"must be one of {list(TARGETS)}"]})
    return target


def clean_selections(user, study: Study, values: Sequence[str], required: bool = True) -> list[Selection]:
    """The distinct selections of ``values`` (in order); ``ValidationError`` on field ``select`` otherwise."""
    if not values:
        if required:
            raise ValidationError({"select": [SELECT_HELP]})
        return []
    selections: list[Selection] = []
    for value in values:
        try:
            sel = Selection.parse(value)
        except ValueError as exc:
            raise ValidationError({"select": [str(exc)]}) from None
        if sel not in selections:
            selections.append(sel)
    if len(selections) > MAX_SELECTIONS:
        raise ValidationError({"select": [f"compare at most {MAX_SELECTIONS} model runs × methods at once"]})
    options = options_for(user, study, duplicates=True)
    available = {m["key"] for run in options for m in run["methods"]}
    runs = {run["run"] for run in options}
    for sel in selections:
        if sel.key not in available:
            if sel.run not in runs:
                why = (
                    f"model run {sel.run} is not a finished run of yours on this study's dataset"
                    if study.dataset_id is not None
                    else "this study has no dataset, so no model run can be compared with it"
                )
            else:
                why = f"model run {sel.run} has no stored maps for method {sel.method!r}"
            raise ValidationError({"select": [why]})
    return selections


def similarity_params(selections: Sequence[Selection], target: str) -> dict:
    """The canonical parameters of a human-vs-machine dashboard (its cache key)."""
    return {"selections": [[s.run, s.method] for s in selections], "target": target}
