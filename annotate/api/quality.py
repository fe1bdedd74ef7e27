"""The admin's quality numbers of a study as JSON: the rows of its quality dashboard page
(:mod:`annotate.views.admin_quality`) and the policy that produced them."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.access import IsAdmin
from annotate.models import Study, Worker
from annotate.quality import exclusion, grading, redundancy
from annotate.quality.policy import applied_rule, policy_for
from annotate.quality.report import gold_rows, worker_rows
from annotate.quality.risk import study_risks
from annotate.tasks.base import GOLD_RATE_KEY


class QualityAPI(APIView):
    """Workers (gold record, trust, behaviour, risk score with reasons) and gold items (misses, flags)
    of a study. A policy that excludes for risk is applied first."""

    permission_classes = [IsAuthenticated, IsAdmin]

    @extend_schema(responses={200: dict})
    def get(self, request, uid):
        study = get_object_or_404(Study, uid=uid)
        grading.refresh_trust(study)
        risks = study_risks(study)
        exclusion.apply_risk(study, risks)
        policy = policy_for(study)
        return Response(
            {
                "study": str(study.uid),
                "policy": {
                    "trust_threshold": policy.trust_threshold,
                    "min_golds": policy.min_golds,
                    "gold_rate": study.config.get(GOLD_RATE_KEY),
                    "block_mode": policy.block_mode,
                    "max_wpm": policy.max_wpm,
                    "risk_threshold": policy.risk_threshold,
                    "risk_action": policy.risk_action,
                },
                "applied": applied_rule(study).as_dict(),
                "workers": worker_rows(study, risks),
                "golds": gold_rows(study),
            }
        )


class QualityWorkerAPI(APIView):
    """A researcher's decision on one worker of a study: ``exclude`` leaves their answers out of the
    results, ``include`` keeps them in whatever their risk score; either stands over the risk policy.
    Answers the worker's standing after it (:func:`annotate.quality.exclusion.standing`): ``excluded``
    (by gold trust or for risk), or ``pending`` (their answers wait until they qualify), or neither."""

    permission_classes = [IsAuthenticated, IsAdmin]

    @extend_schema(request=None, responses={200: dict})
    def post(self, request, uid, worker_id: int, action: str):
        study = get_object_or_404(Study, uid=uid)
        worker = get_object_or_404(Worker.objects.filter(responses__study=study).distinct(), pk=worker_id)
        exclusion.set_risk_exclusion(study, worker, exclude=action == "exclude")
        redundancy.refresh_for_workers(study, [worker.pk])  # their items may stop or reopen
        standing = exclusion.standing(study, [worker.pk])
        return Response(
            {
                "worker": worker.pk,
                "excluded": worker.pk in standing.excluded,
                "pending": worker.pk in standing.waiting,
            }
        )
