"""A worker as the researcher of a study sees them: ``{{ worker|pseudonym:study }}``
(:func:`annotate.models.crowd.pseudonym`, different for every researcher)."""

from django import template

from annotate.models import Study, Worker

register = template.Library()


@register.filter
def pseudonym(worker: Worker | None, study: Study) -> str:
    """The worker's pseudonym for the study's owner; empty for no worker."""
    return "" if worker is None else worker.pseudonym_for(study.owner_id)
