"""Researcher API: datasets (list, create, import) and studies (create, start, progress, export)."""

from __future__ import annotations

from django.db.models import Count
from django.http import HttpResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import APIException, NotFound, ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from annotate.access import IsOwnerOrAdmin, IsResearcher, visible_to
from annotate.api.parsers import LimitedJSONParser
from annotate.api.serializers import (
    DatasetImportSerializer,
    DatasetSerializer,
    ImportResultSerializer,
    InviteRequestSerializer,
    InviteResultSerializer,
    PlanSerializer,
    ProgressSerializer,
    StudySerializer,
)
from annotate.crowd.providers.local.adapter import invite_path, make_invite
from annotate.exports import tables as exports
from annotate.exports.rationales import rationale_zip, rationale_zip_name
from annotate.exports.tables import UnknownExport
from annotate.models import Dataset, Study
from annotate.studies import lifecycle
from annotate.studies.plan import study_plan
from annotate.studies.progress import study_progress

RESEARCHER = [IsAuthenticated, IsResearcher, IsOwnerOrAdmin]
WRONG_STATE = OpenApiResponse(
    {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}},
    description='The study is not in a state for this: {"status": ["..."]}.',
)


class Conflict(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The request conflicts with the present state."
    default_code = "conflict"


class DatasetViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet
):
    """Datasets of documents. Create one empty or with a CSV / JSONL file; import more files later."""

    serializer_class = DatasetSerializer
    permission_classes = RESEARCHER
    parser_classes = [LimitedJSONParser, MultiPartParser, FormParser]

    def get_queryset(self):
        qs = Dataset.objects.select_related("owner").annotate(n_documents=Count("documents"))
        return visible_to(qs, self.request.user).order_by("-created")

    @extend_schema(request=DatasetImportSerializer, responses={201: ImportResultSerializer})
    @action(detail=True, methods=["post"], url_path="import", parser_classes=[MultiPartParser, FormParser])
    def import_file(self, request, pk=None):
        """Add the documents of a CSV or JSONL file (all or nothing)."""
        dataset = self.get_object()
        serializer = DatasetImportSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        imported = serializer.save_into(dataset)
        return Response(
            {
                "imported": imported.documents,
                "documents": dataset.documents.count(),
                "labels": imported.labels,
            },
            status=status.HTTP_201_CREATED,
        )


class StudyViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet
):
    """Studies: one task kind over a dataset, with its config validated by the kind's schema."""

    serializer_class = StudySerializer
    permission_classes = RESEARCHER
    lookup_field = "uid"

    def get_queryset(self):
        return visible_to(Study.objects.select_related("owner"), self.request.user).order_by("-created")

    def _transition(self, action_name: str):
        study = self.get_object()
        try:
            lifecycle.apply(study, action_name)
        except lifecycle.StudyStateError as exc:
            raise Conflict({"status": [str(exc)]}) from None
        except ValidationError as exc:
            raise Conflict(exc.detail) from None
        return Response(self.get_serializer(study).data)

    @extend_schema(request=None, responses={200: StudySerializer, 409: WRONG_STATE})
    @action(detail=True, methods=["post"])
    def start(self, request, uid=None):
        """Start a draft (its items are created) or resume a paused study."""
        return self._transition("start")

    @extend_schema(request=None, responses={200: StudySerializer, 409: WRONG_STATE})
    @action(detail=True, methods=["post"])
    def pause(self, request, uid=None):
        return self._transition("pause")

    @extend_schema(request=None, responses={200: StudySerializer, 409: WRONG_STATE})
    @action(detail=True, methods=["post"])
    def finish(self, request, uid=None):
        return self._transition("finish")

    @extend_schema(responses={200: ProgressSerializer})
    @action(detail=True, methods=["get"])
    def progress(self, request, uid=None):
        """Items done of total, and responses per anonymised annotator."""
        return Response(ProgressSerializer(study_progress(self.get_object())).data)

    @extend_schema(responses={200: PlanSerializer})
    @action(detail=True, methods=["get"])
    def plan(self, request, uid=None):
        """What the study will take: answers and workers needed under its kind's share rules, expected
        time, cost on each platform, and the settings it cannot meet."""
        return Response(PlanSerializer(study_plan(self.get_object()).as_dict()).data)

    @extend_schema(
        parameters=[
            OpenApiParameter(
                exports.INCLUDE_UNVERIFIED,
                OpenApiTypes.STR,
                enum=["0", "1", "false", "true"],
                description="1: also export the answers not (yet) verified (provisional or set aside), "
                "each response row with its ``verification`` and each item row with the "
                "``verifications`` of its labels. Default 0: verified answers only.",
            )
        ],
        responses={
            (200, "text/csv"): OpenApiTypes.STR,
            (200, "application/x-ndjson"): OpenApiTypes.STR,
            400: OpenApiResponse(description="Bad include_unverified"),
            404: OpenApiResponse(description="No such study, or an export its kind does not offer"),
        },
        description="``responses``: one row per verified response with the answer's fields of the study's kind; "
        "the other exports are the ones the kind offers (the study page lists them), e.g. ``items``: one "
        "row per item with CAM and SAM of its verified responses (highlight studies).",
    )
    @action(detail=True, methods=["get"], url_path=r"export/(?P<what>[a-z_]+)\.(?P<fmt>csv|jsonl)")
    def export(self, request, what: str, fmt: str, uid=None):
        """Stream an export as CSV or JSON lines."""
        study = self.get_object()
        try:
            unverified = exports.include_unverified(request.query_params.get(exports.INCLUDE_UNVERIFIED))
            body = exports.stream(study, what, fmt, unverified)
        except exports.UnknownExport as exc:
            raise NotFound(str(exc)) from None
        except ValueError as exc:
            raise ValidationError({exports.INCLUDE_UNVERIFIED: [str(exc)]}) from None
        response = StreamingHttpResponse(body, content_type=exports.content_type(fmt))
        response["Content-Disposition"] = (
            f'attachment; filename="{exports.filename(study, what, fmt, unverified)}"'
        )
        return response

    @extend_schema(
        responses={
            (200, "application/zip"): OpenApiTypes.BINARY,
            404: OpenApiResponse(description="No such study, or a kind without maps over words"),
        },
        description="The study's verified human maps as a rationale data set, zipped: ``eraser`` (ERASER's "
        "docs/ and {train,val,test}.jsonl, with character offsets, CAM and SAM beside them) or ``hf`` (a "
        "Hugging Face datasets folder: Parquet and a dataset card carrying the datasheet). Highlighting "
        "kinds only (highlight, nli_pair, token_marking).",
    )
    @action(detail=True, methods=["get"], url_path=r"export/rationales-(?P<fmt>eraser|hf)\.zip")
    def rationales(self, request, fmt: str, uid=None):
        """Download the study's human maps as an ERASER or Hugging Face datasets folder (zip)."""
        study = self.get_object()
        try:
            body = rationale_zip(study, fmt)
        except UnknownExport as exc:
            raise NotFound(str(exc)) from None
        response = HttpResponse(body, content_type="application/zip")
        response["Content-Disposition"] = f'attachment; filename="{rationale_zip_name(study, fmt)}"'
        return response

    @extend_schema(request=InviteRequestSerializer, responses={201: InviteResultSerializer})
    @action(detail=True, methods=["post"])
    def invites(self, request, uid=None):
        """Signed invite links for a study of the local provider."""
        study = self.get_object()
        if study.provider != "local":
            raise ValidationError({"provider": ["invite links are for studies of the local provider"]})
        serializer = InviteRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        links = [
            request.build_absolute_uri(invite_path(study, make_invite(study, created_by=request.user)))
            for _ in range(serializer.validated_data["count"])
        ]
        return Response({"links": links}, status=status.HTTP_201_CREATED)
