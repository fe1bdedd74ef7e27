"""A study's quality policy: the stored row, or the defaults (trust >= 0.70: Pappas & Popescu-Belis
2016, Lertvittayakumjorn & Toni 2019)."""

from __future__ import annotations

from annotate.models import QualityPolicy


def policy_for(study) -> QualityPolicy:
    """The study's :class:`~annotate.models.QualityPolicy`, created with the defaults on first use."""
    try:
        return study.quality_policy
    except QualityPolicy.DoesNotExist:
        policy, _ = QualityPolicy.objects.get_or_create(study=study)
        study.quality_policy = policy
        return policy
