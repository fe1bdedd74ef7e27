"""A study's crowd platform as JSON (``/api/crowd/studies/<uid>/``): its state, and the actions of
:mod:`annotate.crowd.publishing` (bad input is a 400 naming the field, a platform failure a 502)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.access import IsResearcher, owned_or_404
from annotate.crowd.publishing import ActionError, crowd_state, perform
from annotate.models import Study


def _study(request, uid) -> Study:
    return owned_or_404(Study.objects.all(), request.user, uid=uid)


class CrowdStudyAPI(APIView):
    """A study's platform state (``?estimate=1`` adds the cost estimate and the balance)."""

    permission_classes = [IsAuthenticated, IsResearcher]

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "estimate", str, enum=["0", "1"], description="1: add the cost estimate and the balance."
            )
        ],
        responses={200: dict},
        description="Publications, submissions by state, spend.",
    )
    def get(self, request, uid):
        study = _study(request, uid)
        estimate = request.query_params.get("estimate", "0")
        if estimate not in ("0", "1"):
            raise ValidationError({"estimate": ["must be 0 or 1"]})
        return Response(crowd_state(study, estimate=estimate == "1"))


class CrowdActionAPI(APIView):
    """``POST /api/crowd/studies/<uid>/<action>/`` with the action's fields as JSON: ``publish``
    (``key``), ``pause``, ``resume``, ``top-up`` (``places``, ``key``), ``expire``, ``extend``
    (``seconds``), ``reconcile``, ``notify`` (``subject``, ``message``)."""

    permission_classes = [IsAuthenticated, IsResearcher]

    @extend_schema(request=dict, responses={200: dict, 400: dict, 409: dict, 502: dict})
    def post(self, request, uid, action: str):
        study = _study(request, uid)
        data = request.data if isinstance(request.data, dict) else {}
        try:
            result = perform(study, action, data)
        except ActionError as exc:
            return Response({"errors": exc.errors}, status=exc.status_code)
        return Response({"action": action, **result, "state": crowd_state(study)}, status=status.HTTP_200_OK)
