"""Places an adaptive study no longer needs, given back to the platform (:mod:`annotate.quality.redundancy`).

An adaptive study publishes places up to its policy's maximum per item (the study rule sets the workers per
item to it). Once every item has stopped, by its rule or at its maximum, no further answer is wanted: the
study's open publications are closed, so the platform stops offering places nobody will be given. Neither
platform lowers the places of a live publication (MTurk keeps a HIT's MaxAssignments, Prolific only raises
``total_available_places``), so closing is the one release they allow: MTurk's UpdateExpirationForHIT to
now, Prolific's STOP. A worker who already holds a place may still finish it on either platform.
"""

from __future__ import annotations

from annotate.crowd.providers import get_provider
from annotate.crowd.providers.base import PlatformProvider
from annotate.models import Item, Publication, Study
from annotate.quality.redundancy import policy_of


def needs_more_answers(study: Study) -> bool:
    """Whether an ordinary item of ``study`` still collects answers (gold items keep their own rules)."""
    return Item.objects.filter(study=study, is_gold=False, retired=False, stop_reason="").exists()


def release_unneeded(study: Study) -> int:
    """Close the open publications of an adaptive study on a platform when every item has stopped; the
    number closed (0 for a fixed study, the local provider, or a study that still needs answers)."""
    if not policy_of(study).adaptive or study.status != Study.Status.RUNNING:
        return 0
    provider = get_provider(study.provider)
    if not isinstance(provider, PlatformProvider) or needs_more_answers(study):
        return 0
    closing = provider.publications(study, Publication.Status.OPEN, Publication.Status.PAUSED).count()
    if closing:
        provider.expire(study)
    return closing
