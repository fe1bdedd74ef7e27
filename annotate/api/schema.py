"""What the OpenAPI schema describes: every route of the project, plus the DRF twins of the annotator
endpoints' lean views (see :mod:`annotate.api.work`), served as YAML or JSON to researchers only (it maps
every route and field of the API)."""

from __future__ import annotations

from django.urls import get_resolver, path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView
from rest_framework.exceptions import ValidationError

from annotate.access import IsResearcher
from annotate.api import work, work_controls, work_training

_described = [
    path(f"api/{work.NEXT}", work.NextView.as_view()),
    path(f"api/{work.SUBMIT}", work.SubmitView.as_view()),
    path(f"api/{work_controls.SKIP}", work_controls.SkipView.as_view()),
    path(f"api/{work_controls.EDIT}", work_controls.EditView.as_view()),
    path(f"api/{work_controls.PREVIOUS}", work_controls.PreviousView.as_view()),
    path(f"api/{work_training.TRAINING_NEXT}", work_training.TrainingNextView.as_view()),
    path(f"api/{work_training.TRAINING_ANSWER}", work_training.TrainingAnswerView.as_view()),
]

#: The ``?format=`` values the schema view's renderers answer to.
FORMATS = ("json", "yaml")


def schema_patterns() -> list:
    """The project's URL patterns with the annotator endpoints described by their DRF twins."""
    return [*get_resolver().url_patterns, *_described]


class SchemaView(SpectacularAPIView):
    """The OpenAPI schema (YAML, or JSON by content negotiation) of every API route."""

    permission_classes = [IsResearcher]

    @extend_schema(
        responses={
            (200, "application/vnd.oai.openapi"): OpenApiTypes.STR,
            (200, "application/yaml"): OpenApiTypes.STR,
            (200, "application/vnd.oai.openapi+json"): OpenApiTypes.OBJECT,
            (200, "application/json"): OpenApiTypes.OBJECT,
        },
        description="This schema: YAML by default, JSON by content negotiation (``Accept``).",
    )
    def get(self, request, *args, **kwargs):
        chosen = request.query_params.get("format")
        if chosen is not None and chosen not in FORMATS:
            raise ValidationError({"format": [f"must be one of: {', '.join(FORMATS)}"]})
        self.patterns = schema_patterns()
        return super().get(request, *args, **kwargs)
