"""Researcher API of the forced-choice evaluation (Lertvittayakumjorn & Toni 2019): a study's results as JSON, and a
preview that says how many questions a would-be study's config yields (or why it yields none)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.access import IsResearcher, visible_to
from annotate.kinds.forced_choice.forms import KINDS, preview
from annotate.kinds.forced_choice.kind import ForcedChoiceKind
from annotate.kinds.forced_choice.results import api_results, evaluation_results
from annotate.models import Study
from annotate.tasks import get_kind
from annotate.tasks.api_parts import JSONObjectField
from explain_engine.api import TESTS


class ResultsQuerySerializer(serializers.Serializer):
    test = serializers.ChoiceField(choices=TESTS, default="wilcoxon")
    alpha = serializers.FloatField(min_value=0.0001, max_value=0.5, default=0.05)


class PreviewSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=[k for k, _ in KINDS])
    config = JSONObjectField(help_text="The study config, as a study of this kind would have it.")


class PreviewResultSerializer(serializers.Serializer):
    kind = serializers.CharField()
    questions = serializers.IntegerField(help_text="Texts × methods.")
    texts = serializers.IntegerField()
    per_split = serializers.DictField(child=serializers.IntegerField(), help_text="Texts per split.")
    methods = serializers.ListField(child=serializers.CharField())


class ForcedChoiceResultsView(APIView):
    """Mean score per method (all / correctly predicted / misclassified texts) with intervals and a
    test against the best method, the score distribution per method, and Fleiss κ with and without
    confidence levels (Lertvittayakumjorn & Toni 2019, Table 4, Figure 3)."""

    permission_classes = [IsAuthenticated, IsResearcher]

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "test", str, enum=list(TESTS), description="Significance test (default wilcoxon)."
            ),
            OpenApiParameter("alpha", float, description="Significance level (default 0.05)."),
        ],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request, uid):
        study = visible_to(Study.objects.all(), request.user).filter(uid=uid).first()
        if study is None or not isinstance(get_kind(study.kind), ForcedChoiceKind):
            raise NotFound({"study": ["no forced-choice study of yours with this id"]})
        query = ResultsQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        results = evaluation_results(
            study, test=query.validated_data["test"], alpha=query.validated_data["alpha"]
        )
        return Response(api_results(results))


class QuestionPreviewView(APIView):
    """Generate a would-be study's questions without storing them: how many questions and texts;
    400 naming the field, or saying how many texts qualify when too few do."""

    permission_classes = [IsAuthenticated, IsResearcher]

    @extend_schema(request=PreviewSerializer, responses={200: PreviewResultSerializer})
    def post(self, request):
        data = PreviewSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        config = data.validated_data["config"]
        if not isinstance(config, dict):
            raise ValidationError({"config": ["must be an object"]})
        try:
            return Response(preview(request.user, data.validated_data["kind"], config))
        except ValidationError as exc:
            detail = exc.detail
            raise ValidationError(detail if isinstance(detail, dict) else {"config": detail}) from None
