"""The training phase in the annotator API: ``next`` hands out the participant's next training item
(the kind's own payload, as the work API does) and ``answer`` grades an answer and says the expected
answer and its explanation. When the attempt is over, ``next`` answers ``done`` with the entry page as
the way on: it shows the items (passed), the training again (another try) or the end (no try left).
Same guard, error shape and throttle as :mod:`annotate.api.work`."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import ValidationError

from annotate.api.serializers import SubmissionSerializer, TrainingAnsweredSerializer, TrainingNextSerializer
from annotate.api.work import ERRORS, _Described, _guard, error, parse_submission, study_for_work
from annotate.handout.workers import Seat, session_seat
from annotate.infra.field_errors import flatten_errors
from annotate.models import Study, TrainingItem
from annotate.protocol import stages, training
from annotate.tasks import get_kind

TRAINING_NEXT = "work/<uuid:study_uid>/training/next/"
TRAINING_ANSWER = "work/<uuid:study_uid>/training/<int:item_id>/answer/"
NO_SEAT = "open the study's link first: this session has no worker in it"


NOT_IN_TRAINING = "there is no training for you to do now"


def _seat_in_training(
    request: HttpRequest, study_uid
) -> tuple[Study | None, Seat | None, JsonResponse | None]:
    """``(study, seat, refusal)``: the study and the browser's seat when it is in the training phase; a
    seat past (or not yet at) the training is refused with 409 naming ``protocol``."""
    study = study_for_work(study_uid)
    if study is None:
        return None, None, error(404, {"study": ["no such study"]})
    seat = session_seat(request, study.uid)
    if seat is None:
        return study, None, error(403, {"worker": [NO_SEAT]})
    if study.status != Study.Status.RUNNING:
        return study, None, error(409, {"study": ["the study is not running"]})
    if stages.before_items(study, seat.worker_id, seat.ref or "") != stages.TRAINING:
        return study, None, error(409, {"protocol": [NOT_IN_TRAINING]})
    return study, seat, None


def _way_on(study: Study, progress: dict | None = None) -> JsonResponse:
    """``done``: the entry page says what comes next (the items, another try, or the end)."""
    way_on = {"finished": True, "state": "done", "redirect_url": reverse("work-entry", args=[study.uid])}
    return JsonResponse({"done": True, "completion": way_on, "progress": progress or {"done": 0, "total": 0}})


@csrf_exempt  # checked in _guard, to answer with the API's error shape
def training_next_view(request: HttpRequest, study_uid) -> JsonResponse:
    """POST: the next training item of the participant's attempt, or ``done`` with the way on."""
    if (refused := _guard(request)) is not None:
        return refused
    study, seat, refused = _seat_in_training(request, study_uid)
    if refused is not None:
        training_over = study is not None and b"protocol" in refused.content
        return _way_on(study) if training_over and study is not None else refused
    assert study is not None and seat is not None
    item, now = training.next_item(study, seat.worker_id, seat.ref or "")
    assert now is not None
    progress = {"done": now.answered, "total": now.total}
    if item is None:
        return _way_on(study, progress)
    kind = get_kind(study.kind)
    return JsonResponse(
        {
            "assignment": str(item.pk),
            "item": {"kind": kind.name, "payload": kind.public_payload(item)},
            "progress": progress,
            "config": kind.public_config(study),
            "training": {"attempt": now.attempt, "tries": training.settings_of(study).get("tries", 2)},
        }
    )


@csrf_exempt  # checked in _guard, to answer with the API's error shape
def training_answer_view(request: HttpRequest, study_uid, item_id: int) -> JsonResponse:
    """POST an answer (as ``submit`` takes it) to a training item: 201 with the feedback (``passed``,
    the ``expected`` answer in words and as an answer, the ``explanation``); 200 for a repeat."""
    if (refused := _guard(request)) is not None:
        return refused
    study, seat, refused = _seat_in_training(request, study_uid)
    if refused is not None:
        return refused
    assert study is not None and seat is not None
    item = TrainingItem.objects.select_related("source").filter(study=study, pk=item_id).first()
    if item is None:
        return error(404, {"item": ["no such training item in this study"]})
    try:
        data = parse_submission(request.body)
        given, created = training.answer(
            study, seat.worker_id, seat.ref or "", item, data["answer"], data["timings"]
        )
    except ValidationError as exc:
        return error(400, flatten_errors(exc.detail))
    body = {"response": given.pk, "training": training.feedback(study, item, given)}
    return JsonResponse(body, status=201 if created else 200)


# ------------------------------------------------------------------ OpenAPI description


class TrainingNextView(_Described):
    @extend_schema(
        operation_id="work_training_next",
        request=None,
        responses={200: TrainingNextSerializer, 403: ERRORS, 404: ERRORS, 409: ERRORS, 429: ERRORS},
        description="The next training example of the participant's attempt, or ``{done: true}`` with the "
        "entry page as ``completion.redirect_url`` (the items, another try, or the end).",
    )
    def post(self, request, study_uid):
        return training_next_view(request._request, study_uid)


class TrainingAnswerView(_Described):
    @extend_schema(
        operation_id="work_training_answer",
        request=SubmissionSerializer,
        responses={
            201: TrainingAnsweredSerializer,
            200: TrainingAnsweredSerializer,
            400: ERRORS,
            403: ERRORS,
            404: ERRORS,
            409: ERRORS,
            429: ERRORS,
        },
        description="Grade an answer to a training example: whether it was right, the expected answer and "
        "its explanation. A second answer to the same example in the same attempt keeps the first.",
    )
    def post(self, request, study_uid, item_id):
        return training_answer_view(request._request, study_uid, item_id)
