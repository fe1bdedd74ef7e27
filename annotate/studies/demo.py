"""The demo's studies: a running study of a kind on a demo dataset, made once (``manage.py seed_demo``
calls each kind folder's ``demo.py``, which builds its studies with :func:`demo_study`)."""

from __future__ import annotations

from annotate.models import Dataset, Study
from annotate.studies.lifecycle import start_study
from annotate.tasks import get_kind


def demo_study(
    owner, dataset: Dataset, name: str, kind: str, config: dict, instructions: str, judges: int
) -> Study:
    """``owner``'s running study ``name`` of ``kind`` on ``dataset``, created (open to anyone with the
    link) and started when it does not exist yet."""
    study = Study.objects.filter(owner=owner, name=name).first()
    if study is None:
        study = Study.objects.create(
            name=name,
            owner=owner,
            dataset=dataset,
            kind=kind,
            config=get_kind(kind).validate_config(config),
            instructions=instructions,
            annotators_per_item=judges,
            time_limit_s=900,
            provider_config={"open_enrollment": True},
        )
    if study.status == Study.Status.DRAFT:
        start_study(study)
    return study
