"""The golds of a study, for its owner (and admins): the items with their gold answers in words, the gold
editor (the kind's own task page in gold mode: the researcher answers with the worker's highlighter,
rating scale or choice, and the answer becomes the item's gold), removing a gold, and importing golds
from a CSV or JSON lines file in the format the page documents (:mod:`annotate.quality.gold_import`).

A draft has no items until something needs them: the page offers to prepare them
(:func:`annotate.studies.drafts.prepare_items`), after which golds are marked on them before the study starts.
"""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import JsonResponse
from django.middleware.csrf import get_token
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST
from rest_framework.exceptions import ValidationError

from annotate.access import owned_or_404, researcher_required
from annotate.corpus.imports import CorpusImportError, check_file_size, detect_format
from annotate.infra.json_input import JSONInputError, parse_json
from annotate.models import Item, Study
from annotate.quality import gold_review
from annotate.quality.gold_import import answer_errors, import_golds, item_number
from annotate.studies import drafts, lifecycle
from annotate.tasks import get_kind

PER_PAGE = 50
#: The gold editor's answer to ``next`` names the item itself where a worker's names an assignment.
GOLD_MODE = "gold"


class GoldFileForm(forms.Form):
    file = forms.FileField(help_text="CSV with a header row, or JSON lines (.jsonl), one gold answer a row.")


def _study(request, uid) -> Study:
    return owned_or_404(Study.objects.select_related("dataset"), request.user, uid=uid)


def _item(study: Study, item_id: int) -> Item:
    return get_object_or_404(Item.objects.select_related("study", "document"), pk=item_id, study=study)


def _sentence(exc: Exception) -> str:
    text = str(exc)
    return f"{text[:1].upper()}{text[1:]}" + ("" if text.endswith(".") else ".")


def _format_help(kind) -> dict:
    """The gold file format of ``kind``, for the page: key columns, answer columns and a sample row."""
    return {
        "keys": [("item", "the item's number on this page"), *kind.gold_key_columns],
        "answers": list(kind.gold_columns),
    }


@researcher_required
def golds_page(request, uid, file_form: GoldFileForm | None = None, import_errors: list[str] | None = None):
    study = _study(request, uid)
    kind = get_kind(study.kind)
    items = Item.objects.filter(study=study).select_related("document").order_by("-is_gold", "position", "id")
    page = Paginator(items, PER_PAGE).get_page(request.GET.get("page"))
    rows = [
        {
            "item": item,
            "number": item_number(item),
            "key": ", ".join(kind.gold_item_key(item)),
            "gold": kind.describe_gold(item, item.secret["gold"])
            if item.is_gold and "gold" in item.secret
            else "",
        }
        for item in page
    ]
    context = {
        "study": study,
        "kind": kind,
        "rows": rows,
        "page": page,
        "golds": Item.objects.filter(study=study, is_gold=True).count(),
        "has_items": page.paginator.count > 0,
        "can_gold": bool(kind.gold_columns),
        "format": _format_help(kind),
        "file_form": file_form or GoldFileForm(),
        "import_errors": import_errors or [],
    }
    return render(request, "annotate/studies/golds.html", context, status=400 if import_errors else 200)


@researcher_required
@require_POST
def golds_prepare(request, uid):
    study = _study(request, uid)
    try:
        made = drafts.prepare_items(study)
    except lifecycle.StudyStateError as exc:
        messages.error(request, _sentence(exc))
    except ValidationError as exc:
        messages.error(request, answer_errors(exc.detail))
    else:
        messages.success(
            request, f"{made} items prepared: mark the golds among them." if made else "Items ready."
        )
    return redirect("study-golds", uid=study.uid)


@researcher_required
@require_POST
def golds_import(request, uid):
    study = _study(request, uid)
    form = GoldFileForm(request.POST, request.FILES)
    if not form.is_valid():
        return golds_page(request, uid, file_form=form, import_errors=["Choose a file of golds to import."])
    upload = form.cleaned_data["file"]
    try:
        fmt = detect_format(upload.name)
        check_file_size(upload.size)  # before the file is read, as a dataset import's
        text = upload.read().decode("utf-8-sig")
    except CorpusImportError as exc:
        return golds_page(request, uid, file_form=form, import_errors=[_sentence(exc.message)])
    except UnicodeDecodeError:
        return golds_page(request, uid, file_form=form, import_errors=["The file is not UTF-8 text."])
    result = import_golds(study, text, fmt)
    if result.errors:
        return golds_page(request, uid, file_form=form, import_errors=result.errors)
    messages.success(
        request, f"{result.saved} gold answer(s) imported; answers already given were graded again."
    )
    return redirect("study-golds", uid=study.uid)


@researcher_required
@require_POST
def gold_remove(request, uid, item_id: int):
    study = _study(request, uid)
    item = _item(study, item_id)
    if item.is_gold:
        gold_review.remove_gold(item)
        messages.success(request, f"Item {item_number(item)} is no longer a gold item.")
    return redirect("study-golds", uid=study.uid)


def _editor_json(request, study: Study, item: Item) -> dict:
    """The task page's configuration in gold mode: its ``next`` and ``submit`` are the gold editor's."""
    kind = get_kind(study.kind)
    return {
        "study": str(study.uid),
        "kind": kind.name,
        "mode": GOLD_MODE,
        "next_url": reverse("study-gold-item", args=[study.uid, item.pk]),
        "submit_url_template": reverse("study-gold-save", args=[study.uid, item.pk]),
        "done_url": reverse("study-golds", args=[study.uid]),
        "csrf_token": get_token(request),
        "config": kind.public_config(study),
    }


@researcher_required
def gold_editor(request, uid, item_id: int):
    """The kind's task page for one item, whose answer becomes the item's gold."""
    study = _study(request, uid)
    item = _item(study, item_id)
    kind = get_kind(study.kind)
    current = kind.describe_gold(item, item.secret["gold"]) if item.is_gold and "gold" in item.secret else ""
    context = {
        "study": study,
        "kind": kind,
        "task_json": _editor_json(request, study, item),
        "gold_editor": {"number": item_number(item), "current": current},
    }
    return render(request, kind.template, context)


@researcher_required
@require_POST
def gold_item(request, uid, item_id: int):
    """The gold editor's ``next``: the item as a worker's page gets it (the public payload only)."""
    study = _study(request, uid)
    item = _item(study, item_id)
    kind = get_kind(study.kind)
    return JsonResponse(
        {
            "assignment": str(item.pk),
            "item": {"kind": kind.name, "payload": kind.public_payload(item)},
            "progress": {"done": 0, "total": 1},
            "config": kind.public_config(study),
        }
    )


@researcher_required
@require_POST
def gold_save(request, uid, item_id: int):
    """The gold editor's ``submit``: the answer becomes the item's gold; 400 with sentences otherwise."""
    study = _study(request, uid)
    item = _item(study, item_id)
    try:
        body = parse_json(
            request.body or b"{}",
            max_bytes=settings.HATLAB_SUBMISSION_MAX_BYTES,
            max_depth=settings.HATLAB_JSON_MAX_DEPTH,
        )
    except JSONInputError as exc:
        field = "answer" if exc.field == "detail" else exc.field
        return JsonResponse({"errors": {field: [_sentence(ValueError(exc.message))]}}, status=400)
    answer = body.get("answer") if isinstance(body, dict) else None
    try:
        gold = gold_review.set_gold(item, answer)
    except ValidationError as exc:
        return JsonResponse({"errors": {"answer": [answer_errors(exc.detail)]}}, status=400)
    kind = get_kind(study.kind)
    message = f"Item {item_number(item)} is a gold item with the answer {kind.describe_gold(item, gold)}."
    return JsonResponse(
        {
            "response": item.pk,
            "next": {"done": True, "completion": {"message": message}, "progress": {"done": 1, "total": 1}},
        },
        status=200,
    )
