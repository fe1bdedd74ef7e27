"""The worker's controls in the annotator API (the study's protocol allows them): ``skip`` passes on
the open item with a reason and answers what ``next`` would; ``previous`` hands back an answer already
sent, with its item, to change it; ``edit`` replaces that answer (idempotent by ``submission_key``, the
answer before kept). Same guard, error shape and throttle as :mod:`annotate.api.work`."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import ValidationError

from annotate.api.serializers import (
    EditedSerializer,
    PreviousRequestSerializer,
    PreviousSerializer,
    SkippedSerializer,
    SkipSerializer,
    SubmissionSerializer,
)
from annotate.api.work import ERRORS, _Described, _guard, error, next_body, parse_submission, study_for_work
from annotate.crowd.providers.local.adapter import WITHDRAWN, revoked_seats
from annotate.handout.page_tokens import page_token
from annotate.handout.submission import AssignmentNotFound, SubmissionConflict
from annotate.handout.workers import Seat, session_seat, session_seats
from annotate.infra.field_errors import flatten_errors
from annotate.infra.json_input import JSONInputError, parse_json
from annotate.protocol import stages
from annotate.protocol.controls import back_allowed, edit_answer, previous_answer, skip
from annotate.tasks import get_kind

SKIP = "work/assignments/<uuid:assignment_uid>/skip/"
EDIT = "work/assignments/<uuid:assignment_uid>/edit/"
PREVIOUS = "work/<uuid:study_uid>/previous/"
NO_SEAT = "open the study's link first: this session has no worker in it"


def _body(request: HttpRequest) -> dict[str, Any]:
    """The request's JSON object (``ValidationError`` naming the field otherwise)."""
    try:
        data = parse_json(
            request.body or b"{}",
            max_bytes=settings.HATLAB_SUBMISSION_MAX_BYTES,
            max_depth=settings.HATLAB_JSON_MAX_DEPTH,
        )
    except JSONInputError as exc:
        raise ValidationError({exc.field: [exc.message]}) from None
    if not isinstance(data, dict):
        raise ValidationError({"non_field_errors": ["the body must be a JSON object"]})
    return data


def _seats(request: HttpRequest) -> tuple[dict[str, Seat], JsonResponse | None]:
    seats = session_seats(request)
    revoked = revoked_seats(seats)
    for uid in revoked:
        del seats[uid]
    if not seats:
        return seats, error(403, {"worker": [WITHDRAWN if revoked else NO_SEAT]})
    return seats, None


@csrf_exempt  # checked in _guard, to answer with the API's error shape
def skip_view(request: HttpRequest, assignment_uid) -> JsonResponse:
    """POST ``{"reason": "..."}``: skip the open item (it goes to someone else); 200 with what ``next``
    answers now under ``next``."""
    if (refused := _guard(request)) is not None:
        return refused
    seats, refused = _seats(request)
    if refused is not None:
        return refused
    try:
        skipped = skip(assignment_uid, seats, _body(request).get("reason"))
    except ValidationError as exc:
        return error(400, flatten_errors(exc.detail))
    except AssignmentNotFound:
        return error(404, {"assignment": ["no such assignment for this session"]})
    except SubmissionConflict as exc:
        return error(409, {exc.field: [exc.message]})
    study = study_for_work(skipped.study.uid)
    seat = seats.get(str(skipped.study.uid))
    body: dict[str, Any] = {"skipped": skipped.pk, "next": None}
    if study is not None and seat is not None:
        status, following = next_body(request, study, seat)
        body["next"] = following if status == 200 else None
    return JsonResponse(body)


@csrf_exempt  # checked in _guard, to answer with the API's error shape
def previous_view(request: HttpRequest, study_uid) -> JsonResponse:
    """POST ``{"before": "<assignment uid>" | null}``: the answer sent before that one (the newest
    without it), its item and its stored answer, to change it; 404 when there is none to go back to."""
    if (refused := _guard(request)) is not None:
        return refused
    study = study_for_work(study_uid)
    if study is None:
        return error(404, {"study": ["no such study"]})
    seat = session_seat(request, study.uid)
    if seat is None:
        return error(403, {"worker": [NO_SEAT]})
    if stages.before_items(study, seat.worker_id, seat.ref or "") != stages.WORK:
        return error(403, {"protocol": ["this study has no answers of yours to change"]})
    try:
        before = _body(request).get("before")
        before = None if before is None else uuid.UUID(str(before)[:64])
    except ValidationError as exc:
        return error(400, flatten_errors(exc.detail))
    except ValueError:
        return error(400, {"before": ["must be an assignment id (a UUID) or null"]})
    if not back_allowed(study):
        return error(409, {"study": ["this study does not let answers be changed"]})
    response = previous_answer(study, seat, before)
    if response is None:
        return error(404, {"before": ["there is no earlier answer you can change"]})
    kind = get_kind(study.kind)
    assignment = response.assignment
    return JsonResponse(
        {
            "assignment": str(assignment.uid),
            "page_token": page_token(study.uid, seat.worker_id, assignment.uid),
            "item": {"kind": kind.name, "payload": kind.public_payload(response.item)},
            "answer": response.answer,
            "config": kind.public_config(study),
            "edit": True,
        }
    )


@csrf_exempt  # checked in _guard, to answer with the API's error shape
def edit_view(request: HttpRequest, assignment_uid) -> JsonResponse:
    """POST ``{"submission_key", "answer", "timings"}`` (as ``submit`` takes them): replace the answer to this assignment; 201 ``{"edit": id}``,
    200 with the same body for a retry."""
    if (refused := _guard(request)) is not None:
        return refused
    seats, refused = _seats(request)
    if refused is not None:
        return refused
    try:
        data = parse_submission(request.body)
        edit, created = edit_answer(
            assignment_uid, seats, data["submission_key"], data["answer"], timings=data["timings"]
        )
    except ValidationError as exc:
        return error(400, flatten_errors(exc.detail))
    except AssignmentNotFound:
        return error(404, {"assignment": ["no such answer for this session"]})
    except SubmissionConflict as exc:
        return error(409, {exc.field: [exc.message]})
    return JsonResponse({"edit": edit.pk if edit else None}, status=201 if created else 200)


# ------------------------------------------------------------------ OpenAPI description


class SkipView(_Described):
    @extend_schema(
        operation_id="work_skip",
        request=SkipSerializer,
        responses={200: SkippedSerializer, 400: ERRORS, 403: ERRORS, 404: ERRORS, 409: ERRORS, 429: ERRORS},
        description="Skip the open item with one of the study's reasons; it goes to another worker. "
        "409 names ``reason`` for a reason the study does not offer or past ``max_skips``.",
    )
    def post(self, request, assignment_uid):
        return skip_view(request._request, assignment_uid)


class PreviousView(_Described):
    @extend_schema(
        operation_id="work_previous",
        request=PreviousRequestSerializer,
        responses={200: PreviousSerializer, 400: ERRORS, 403: ERRORS, 404: ERRORS, 409: ERRORS, 429: ERRORS},
        description="The answer sent before ``before`` (the newest without it), to change it; 404 when "
        "there is none left to change, 409 when the study does not let answers be changed.",
    )
    def post(self, request, study_uid):
        return previous_view(request._request, study_uid)


class EditView(_Described):
    @extend_schema(
        operation_id="work_edit",
        request=SubmissionSerializer,
        responses={
            201: EditedSerializer,
            200: EditedSerializer,
            400: ERRORS,
            403: ERRORS,
            404: ERRORS,
            409: ERRORS,
            429: ERRORS,
        },
        description="Replace an answer already sent (the one before is kept). A retry with the same "
        "``submission_key`` answers 200 and changes nothing more.",
    )
    def post(self, request, assignment_uid):
        return edit_view(request._request, assignment_uid)
