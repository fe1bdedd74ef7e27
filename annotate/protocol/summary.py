"""The protocol's figures for a study's results page: consent decisions by version, the screening's
outcome, the questionnaires' answers counted, the skipped items with their reasons, and the edits."""

from __future__ import annotations

from typing import Any

from django.db.models import Count

from annotate.models import ConsentDecision, ItemSkip, ResponseEdit, Study, SurveyAnswers
from annotate.models.crowd import pseudonym
from annotate.protocol import surveys

#: The skipped items listed on the page (the skips export has them all).
SKIPS_SHOWN = 50


def protocol_summary(study: Study) -> dict[str, Any] | None:
    """The figures of ``study``'s protocol (``None`` without one)."""
    protocol = study.protocol or {}
    if not protocol:
        return None
    decisions = (
        ConsentDecision.objects.filter(study=study)
        .values("version__number", "accepted")
        .annotate(n=Count("id"))
        .order_by("version__number", "accepted")
    )
    skips = ItemSkip.objects.filter(study=study)
    recent = skips.select_related("worker").order_by("-id")[:SKIPS_SHOWN]
    return {
        "consent": bool(protocol.get("consent")),
        "decisions": [
            {"version": d["version__number"], "accepted": d["accepted"], "workers": d["n"]} for d in decisions
        ],
        "screening": bool(protocol.get("screening")),
        "screened_out": SurveyAnswers.objects.filter(study=study, phase="pre", qualified=False).count(),
        "qualified": SurveyAnswers.objects.filter(study=study, phase="pre", qualified=True).count(),
        "survey_parts": [
            ("Questions before the items", surveys.summary(study, "pre")),
            ("Questions after the items", surveys.summary(study, "post")),
        ],
        "skip_reasons": [
            {"reason": r, "items": skips.filter(reason=r).count()} for r in protocol.get("skip_reasons", [])
        ],
        "skips": [
            {
                "item": s.item_id,
                "worker": pseudonym(study.owner_id, s.worker.provider, s.worker.external_id),
                "reason": s.reason,
                "at": s.created,
            }
            for s in recent
        ],
        "edits": ResponseEdit.objects.filter(response__study=study).count(),
        "back": bool(protocol.get("back")),
    }
