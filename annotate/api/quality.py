"""The admin's quality numbers of a study as JSON: the rows of its quality dashboard page
(:mod:`annotate.views.admin_quality`) and the policy that produced them."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.api.permissions import IsAdmin
from annotate.models import Study
from annotate.quality import grading
from annotate.quality.gold_mixing import GOLD_RATE_KEY
from annotate.quality.policy import policy_for
from annotate.quality.report import gold_rows, worker_rows


class QualityAPI(APIView):
    """Workers (gold record, trust, behaviour) and gold items (misses, flags) of a study."""

    permission_classes = [IsAuthenticated, IsAdmin]

    @extend_schema(responses={200: dict})
    def get(self, request, uid):
        study = get_object_or_404(Study, uid=uid)
        grading.refresh_trust(study)
        policy = policy_for(study)
        return Response(
            {
                "study": str(study.uid),
                "policy": {
                    "trust_threshold": policy.trust_threshold,
                    "min_golds": policy.min_golds,
                    "gold_rate": study.config.get(GOLD_RATE_KEY),
                    "block_mode": policy.block_mode,
                },
                "workers": worker_rows(study),
                "golds": gold_rows(study),
            }
        )
