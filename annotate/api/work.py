"""Annotator API: ``next`` hands out an item, ``submit`` stores an answer.

The worker is the one the session's entry page identified for the study (see
:mod:`annotate.handout.workers`); requests must carry the page's CSRF token (``X-CSRFToken``: the worker's
token from ``task_json``, or Django's), and are throttled per worker (429 with ``Retry-After``). Errors have
one shape: ``{"errors": {"field": ["message"]}}`` with nested fields joined by dots (``answer.map``).

These two endpoints are the service's hot path, so they are plain Django views with hand-written
input checks (a DRF request cycle and serializer cost more than the database work). The DRF views
:class:`NextView` and :class:`SubmitView` at the end describe them in the OpenAPI schema and answer
the same way.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.authentication import CSRFCheck
from rest_framework.exceptions import ValidationError
from rest_framework.renderers import JSONRenderer
from rest_framework.views import APIView

from annotate.api.parsers import LimitedJSONParser
from annotate.api.serializers import (
    MAX_MS,
    MAX_SIGNALS_BYTES,
    ErrorsSerializer,
    NextSerializer,
    SubmissionSerializer,
    SubmittedSerializer,
)
from annotate.crowd.completion import completion_for
from annotate.crowd.providers.local.adapter import WITHDRAWN, revoked_seats
from annotate.handout.assignment import WorkerBlocked, held_assignment, next_with_progress, worker_progress
from annotate.handout.hooks import on_submitted
from annotate.handout.page_tokens import page_token
from annotate.handout.submission import (
    AssignmentNotFound,
    Opened,
    SubmissionConflict,
    open_assignment,
    submit,
)
from annotate.handout.workers import Seat, session_seat, session_seats, session_worker_ids, work_token_matches
from annotate.infra import sql, throttle
from annotate.infra.field_errors import flatten_errors
from annotate.infra.json_input import JSONInputError, parse_json
from annotate.infra.sql import Prepared
from annotate.models import Study
from annotate.protocol import stages
from annotate.quality.exclusion import is_blocked
from annotate.tasks import get_kind

# The annotator endpoints' routes under ``api/`` (the busiest of the site: routed first).
NEXT = "work/<uuid:study_uid>/next/"
SUBMIT = "work/assignments/<uuid:assignment_uid>/submit/"

TIMING_FIELDS = ("read_ms", "answer_ms", "label_at_ms", "first_highlight_at_ms")
STUDY_FIELDS = (
    "id",
    "uid",
    "kind",
    "config",
    "instructions",
    "time_limit_s",
    "status",
    "provider",
    "protocol",
)
_STUDY_BY_UID = Prepared(
    "hatlab_study_by_uid",
    ("uuid",),
    f"SELECT {', '.join(STUDY_FIELDS)} FROM {Study._meta.db_table} WHERE uid = $1",
)


def error(status: int, errors: dict[str, list[str]]) -> JsonResponse:
    return JsonResponse({"errors": errors}, status=status)


def _csrf_failure(request: HttpRequest) -> str | None:
    """Django's CSRF check, answered as data rather than as an HTML page."""
    check = CSRFCheck(lambda _request: None)
    check.process_request(request)
    return check.process_view(request, None, (), {})


def study_for_work(uid) -> Study | None:
    """The study with the fields the annotator API reads (a prepared statement on PostgreSQL)."""
    if not sql.native():
        return Study.objects.only(*STUDY_FIELDS).filter(uid=uid).first()
    with connection.cursor() as cursor:
        _STUDY_BY_UID.execute(cursor, [uid])
        row = cursor.fetchone()
    if row is None:
        return None
    values = dict(zip(STUDY_FIELDS, row, strict=True))
    for name in ("config", "protocol"):
        if isinstance(values[name], str):
            values[name] = json.loads(values[name])
    return Study(**values)


def parse_submission(body: bytes) -> dict[str, Any]:
    """The submission's fields, checked: ``ValidationError`` naming each bad field otherwise.

    Written by hand rather than with :class:`SubmissionSerializer` (which documents the same rules)
    because this runs on every submission and the serializer costs more than storing the answer. The body
    is read with :func:`annotate.infra.json_input.parse_json` (``HATLAB_SUBMISSION_MAX_BYTES``,
    ``HATLAB_JSON_MAX_DEPTH``; no NaN, NUL or lone surrogate anywhere).
    """
    try:
        data = parse_json(
            body or b"{}",
            max_bytes=settings.HATLAB_SUBMISSION_MAX_BYTES,
            max_depth=settings.HATLAB_JSON_MAX_DEPTH,
        )
    except JSONInputError as exc:
        raise ValidationError({exc.field: [exc.message]}) from None
    if not isinstance(data, dict):
        raise ValidationError({"non_field_errors": ["the body must be a JSON object"]})
    errors: dict[str, Any] = {}
    key = data.get("submission_key")
    try:
        key = uuid.UUID(key) if isinstance(key, str) else None
    except ValueError:
        key = None
    if key is None:
        errors["submission_key"] = ["required: a UUID, fresh for each answer and reused by a retry"]
    if "answer" not in data:
        errors["answer"] = ["required"]
    timings = data.get("timings")
    timings = {} if timings is None else timings
    if not isinstance(timings, dict):
        errors["timings"] = ["must be an object"]
        timings = {}
    for name, value in timings.items():
        if (
            name in TIMING_FIELDS
            and value is not None
            and (type(value) is not int or not 0 <= value <= MAX_MS)
        ):
            errors[f"timings.{name}"] = [f"must be a whole number of milliseconds from 0 to {MAX_MS}"]
    signals = data.get("signals")
    signals = {} if signals is None else signals
    if not isinstance(signals, dict):
        errors["signals"] = ["must be an object"]
    elif len(json.dumps(signals)) > MAX_SIGNALS_BYTES:
        errors["signals"] = [f"larger than {MAX_SIGNALS_BYTES} bytes"]
    then_next = data.get("next", False)
    if type(then_next) is not bool:
        errors["next"] = ["must be true or false"]
    if errors:
        raise ValidationError(errors)
    return {
        "next": then_next,
        "submission_key": key,
        "answer": data["answer"],
        "timings": {k: timings[k] for k in TIMING_FIELDS if timings.get(k) is not None},
        "signals": signals,
    }


def _guard(request: HttpRequest) -> JsonResponse | None:
    if request.method != "POST":
        refused = error(405, {"detail": [f"method {request.method} not allowed; use POST"]})
        refused["Allow"] = "POST"
        return refused
    worker_ids = session_worker_ids(request)
    wait = throttle.work_request(request, worker_ids)
    if wait is not None:
        refused = error(429, {"detail": [f"too many requests: try again in {wait} s"]})
        refused["Retry-After"] = str(wait)
        return refused
    # The worker's own token (task_json's, valid in a crowd platform's frame), else Django's CSRF check.
    reason = None if work_token_matches(request, worker_ids) else _csrf_failure(request)
    if reason:
        return error(403, {"detail": [f"CSRF failed: {reason}"]})
    return None


PAUSED_MESSAGE = "the study is paused: no new items are handed out until it is resumed"


POST_SURVEY_MESSAGE = "One last step: a few questions about the study."


def _done(request, study: Study, seat: Seat, progress: dict) -> dict:
    """Nothing more to hand out: the completion when the worker's share is done, else what is left. A
    post-study questionnaire still to answer comes first: the page goes to it, and the completion is
    shown after it (:func:`annotate.views.work.done`)."""
    completion = completion_for(request, study, seat, progress, nothing_left=True)
    if completion.get("finished") and stages.post_survey_pending(study, seat.worker_id, seat.ref or ""):
        survey = reverse("work-survey", args=[study.uid, "post"])
        completion = {
            "finished": True,
            "state": "done",
            "message": POST_SURVEY_MESSAGE,
            "redirect_url": survey,
        }
    return {"done": True, "completion": completion, "progress": progress}


def next_body(request: HttpRequest, study: Study, seat: Seat) -> tuple[int, dict]:
    """What ``next`` answers for this browser's seat: ``(HTTP status, body)``."""
    if study.status == Study.Status.FINISHED:
        return 200, _done(request, study, seat, worker_progress(study, seat.worker_id, seat.ref or ""))
    if study.status == Study.Status.PAUSED:
        # Paused: nothing new is handed out, but an item the worker already holds may be finished.
        held = held_assignment(study, seat.worker_id, seat.ref or "")
        if held is not None and is_blocked(study, seat.worker_id):
            return 403, {"errors": {"worker": ["you can no longer work on this study"]}}
        if held is None:
            return 409, {"errors": {"study": [PAUSED_MESSAGE]}}
        return 200, _item_body(study, seat, held, worker_progress(study, seat.worker_id, seat.ref or ""))
    if study.status != Study.Status.RUNNING:
        label = Study.Status(study.status).label.lower()
        return 409, {"errors": {"study": [f"the study is {label}, not running"]}}
    stage = stages.before_items(study, seat.worker_id, seat.ref or "")
    if stage == stages.ATTENTION_FAILED:  # the page's end for a worker who may no longer work
        return 403, {"errors": {"worker": [stages.MESSAGES[stage]]}}
    if stage != stages.WORK:  # consent, the questions before the items, or not a participant
        return 403, {"errors": {"protocol": [stages.MESSAGES[stage]]}}
    try:
        assignment, progress = next_with_progress(
            study, seat.worker_id, ref=seat.ref or "", provisional=not seat.verified
        )
    except WorkerBlocked:
        return 403, {"errors": {"worker": ["you can no longer work on this study"]}}
    if assignment is None:
        return 200, _done(request, study, seat, progress)
    return 200, _item_body(study, seat, assignment, progress)


def _item_body(study: Study, seat: Seat, assignment, progress: dict) -> dict:
    """The ``next`` answer that hands ``assignment``'s item to the worker, with the page token bound to
    it and to this moment (:mod:`annotate.handout.page_tokens`)."""
    kind = get_kind(study.kind)
    return {
        "assignment": str(assignment.uid),
        "page_token": page_token(study.uid, seat.worker_id, assignment.uid),
        "expires_at": assignment.expires_at,
        "item": {"kind": kind.name, "payload": kind.public_payload(assignment.item)},
        "progress": progress,
        "config": kind.public_config(study),
    }


@csrf_exempt  # checked in _guard, to answer with the API's error shape
def next_view(request: HttpRequest, study_uid) -> JsonResponse:
    """POST: the worker's open assignment, a new one, or ``{"done": true, "completion": {...}}``."""
    if (refused := _guard(request)) is not None:
        return refused
    study = study_for_work(study_uid)
    if study is None:
        return error(404, {"study": ["no such study"]})
    seat = session_seat(request, study.uid)
    if seat is None:
        return error(403, {"worker": ["open the study's link first: this session has no worker in it"]})
    if revoked_seats({str(study.uid): seat}):
        return error(403, {"worker": [WITHDRAWN]})
    status, body = next_body(request, study, seat)
    return JsonResponse(body, status=status)


def _open(assignment_uid, seats: dict[str, Seat]) -> tuple[Opened | None, JsonResponse | None]:
    """Before a submission's body is read: on PostgreSQL the assignment itself, read once for the
    submission, which also says whether its seat's invite was withdrawn (``(opened, None)``); elsewhere
    the session's seats of withdrawn invites are dropped (``(None, None)``). ``(None, 403)`` for a
    withdrawn invite's browser; :class:`AssignmentNotFound` when the assignment is none of the session's."""
    if sql.native():
        opened = open_assignment(assignment_uid, seats)
        return (None, error(403, {"worker": [WITHDRAWN]})) if opened.withdrawn else (opened, None)
    revoked = revoked_seats(seats)
    for uid in revoked:  # a withdrawn invite's browser has no seat left
        del seats[uid]
    if not seats:
        return None, error(403, {"worker": [WITHDRAWN]})
    return None, None


@csrf_exempt  # checked in _guard, to answer with the API's error shape
def submit_view(request: HttpRequest, assignment_uid) -> JsonResponse:
    """POST: store an answer; 201 ``{"response": id}``, or 200 with the same body for a retry. With
    ``"next": true`` the body also carries the next item under ``next`` (what ``next`` would answer).
    A new, verified gold answer refreshes the worker's trust at once
    (:func:`~annotate.handout.hooks.on_submitted`); any other answer costs no query more."""
    if (refused := _guard(request)) is not None:
        return refused
    # Who may submit is known before the body is read: a session with no worker never has it parsed, nor
    # one whose invite was withdrawn, nor one that names an assignment none of its workers holds.
    seats = session_seats(request)
    if not seats:
        return error(403, {"worker": ["open the study's link first: this session has no worker in it"]})
    try:
        opened, refused = _open(assignment_uid, seats)
        if refused is not None:
            return refused
        data = parse_submission(request.body)
        result = submit(
            assignment_uid,
            seats,
            data["submission_key"],
            data["answer"],
            data["timings"],
            data["signals"],
            opened=opened,
        )
    except ValidationError as exc:
        return error(400, flatten_errors(exc.detail))
    except AssignmentNotFound:
        return error(404, {"assignment": ["no such assignment for this session"]})
    except SubmissionConflict as exc:
        return error(409, {exc.field: [exc.message]})
    # A new gold answer moves the worker's trust now (and may block them before the next item); the
    # answer is already committed, and a failed refresh leaves it so (the quality job catches up).
    on_submitted(result)
    body: dict[str, Any] = result.body()
    if data["next"]:
        # The next item in the same round trip; ``null`` sends the page to ``next`` for the error
        # (or when the stored response was found without its study: a retry that raced the first).
        body["next"] = None
        seat = None if result.study is None else seats.get(str(result.study.uid))
        if seat is not None and result.study is not None:
            status, following = next_body(request, result.study, seat)
            body["next"] = following if status == 200 else None
    return JsonResponse(body, status=201 if result.created else 200)


# ------------------------------------------------------------------ OpenAPI description

ERRORS = OpenApiResponse(ErrorsSerializer, description='{"errors": {"field": ["message"]}}')


class _Described(APIView):
    """DRF twins of the views above, for the OpenAPI schema; they answer exactly as the views do."""

    authentication_classes: list = []
    permission_classes: list = []
    parser_classes = [LimitedJSONParser]
    renderer_classes = [JSONRenderer]


class NextView(_Described):
    @extend_schema(
        operation_id="work_next",
        request=None,
        responses={200: NextSerializer, 403: ERRORS, 404: ERRORS, 409: ERRORS, 429: ERRORS},
        description="The worker's open assignment, a new one, or ``{done: true, completion}``. "
        "Needs the session opened by the study link and its CSRF token.",
    )
    def post(self, request, study_uid):
        return next_view(request._request, study_uid)


class SubmitView(_Described):
    @extend_schema(
        operation_id="work_submit",
        request=SubmissionSerializer,
        responses={
            201: SubmittedSerializer,
            200: SubmittedSerializer,
            400: ERRORS,
            403: ERRORS,
            404: ERRORS,
            409: ERRORS,
            429: ERRORS,
        },
        description="Store an answer. A retry with the same ``submission_key`` answers 200 with the same "
        "body; a slot that expired and went to another annotator, or a finished study, answers 409.",
    )
    def post(self, request, assignment_uid):
        return submit_view(request._request, assignment_uid)
