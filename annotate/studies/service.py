"""The study rule: what a study's settings may be, and creating, editing and cloning a study by a given
user. The API (:class:`annotate.api.serializers.StudySerializer`), the create and edit pages, the kinds'
own create pages and the draft management all go through these functions, with the acting user passed
explicitly.

The settings (``name``, ``dataset``, ``kind``, ``config``, ``instructions``, ``annotators_per_item``,
``time_limit_s``, ``provider``, ``provider_config``, ``protocol``) are checked in two steps, as one refusal:

* each field on its own (type, bounds, choices, the datasets ``user`` may use: their own, or any for an
  admin; another researcher's dataset reads as one that does not exist);
* then the rules across fields: the kind's config schema (through the kind registry, with the objects
  the config names checked against what ``user`` may see), the opt-in gold rate, the redundancy policy
  (:mod:`annotate.quality.redundancy`: an adaptive one publishes up to its ``max`` answers per item, so
  ``annotators_per_item`` follows it), the dataset a kind needs, with what its documents must hold
  (:attr:`~annotate.tasks.base.TaskKind.document_fields`, e.g. ``metadata.explanation``): a dataset that
  lacks it is refused here, naming the documents, not first when the study starts; and the protocol
  (consent, questionnaires, screening, the worker's controls: :func:`annotate.protocol.config.validate_protocol`).

A refusal is :class:`StudyInvalid`, carrying field → messages. It is a DRF ``ValidationError`` with the
same nested detail the API has always answered, so the API's 400 bodies stay as they were; the pages
show :attr:`StudyInvalid.fields` next to their form fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import transaction
from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from annotate.access import is_admin
from annotate.crowd.providers import PROVIDERS
from annotate.infra.field_errors import flatten_errors
from annotate.infra.strict_fields import StrictCharField
from annotate.models import Dataset, Study
from annotate.protocol.config import ProtocolInvalid, validate_protocol
from annotate.quality.gold_mixing import validate_gold_rate
from annotate.quality.redundancy import ADAPTIVE, validate_redundancy
from annotate.studies.drafts import Rebuilt, build_with_golds, gold_answers, rebuild_items, require_draft
from annotate.tasks import TASK_KINDS, default_kind, get_kind
from annotate.tasks.base import GOLD_RATE_KEY, REDUNDANCY_KEY

#: What a clone's name starts with.
CLONE_PREFIX = "Copy of "
#: The provider settings that follow the edit form rather than the study's stored provider settings.
FORM_PROVIDER_KEYS = ("open_enrollment",)


class StudyInvalid(ValidationError):
    """A study's settings refused; ``detail`` is ``{field: [messages]}`` (``config`` nested as the kind's
    schema names its fields), :attr:`fields` the same flattened to dotted names."""

    def __init__(self, errors: dict[str, Any]) -> None:
        super().__init__(errors)

    @property
    def fields(self) -> dict[str, list[str]]:
        """``{"dotted.field": ["message", ...]}``, e.g. ``{"config.labels": [...], "dataset": [...]}``."""
        return flatten_errors(self.detail)


class _StudyFields(serializers.Serializer):
    """Each setting on its own: type, bounds, choices, and the datasets the acting user may use."""

    name = StrictCharField(max_length=200)
    dataset = serializers.PrimaryKeyRelatedField(
        queryset=Dataset.objects.none(), required=False, allow_null=True
    )
    kind = serializers.ChoiceField(choices=[], default=default_kind)
    config = serializers.JSONField(required=False, default=dict)
    instructions = StrictCharField(allow_blank=True, required=False)
    annotators_per_item = serializers.IntegerField(min_value=1, max_value=50, default=3)
    time_limit_s = serializers.IntegerField(min_value=30, max_value=7 * 24 * 3600, default=1800)
    provider = serializers.ChoiceField(choices=[], default="local")
    provider_config = serializers.JSONField(required=False, default=dict)
    protocol = serializers.JSONField(required=False, default=dict)

    def __init__(self, user, **kwargs) -> None:
        super().__init__(**kwargs)
        self.fields["kind"].choices = sorted(TASK_KINDS)
        self.fields["provider"].choices = sorted(PROVIDERS)
        self.fields["dataset"].queryset = usable_datasets(user)

    def validate_provider_config(self, value: Any) -> dict:
        if not isinstance(value, dict):
            raise ValidationError("must be an object")
        return value


def usable_datasets(user):
    """The datasets ``user`` may build a study on: their own; every one for an admin."""
    datasets = Dataset.objects.all()
    return datasets if is_admin(user) else datasets.filter(owner_id=user.pk)


def _check_rules(user, cleaned: dict[str, Any]) -> dict[str, Any]:
    """The rules across fields on field-checked settings: the kind's config (with the gold rate kept
    aside from its schema) and the dataset the kind needs."""
    kind = get_kind(cleaned.get("kind") or default_kind())
    config = cleaned.get("config")
    gold_rate = None
    if isinstance(config, dict) and GOLD_RATE_KEY in config:
        config = dict(config)
        try:
            gold_rate = validate_gold_rate(config.pop(GOLD_RATE_KEY))
        except ValueError as exc:
            raise StudyInvalid({"config": {GOLD_RATE_KEY: [str(exc)]}}) from None
    redundancy = None
    if isinstance(config, dict) and REDUNDANCY_KEY in config:
        config = dict(config)
        try:
            redundancy = validate_redundancy(config.pop(REDUNDANCY_KEY), kind.name)
        except ValidationError as exc:
            raise StudyInvalid({"config": {REDUNDANCY_KEY: exc.detail}}) from None
    try:
        cleaned["config"] = kind.validate_config(config, user=user)
    except ValidationError as exc:
        raise StudyInvalid({"config": exc.detail}) from None
    if gold_rate is not None:  # opt-in: golds mixed in at this rate instead of at queue positions
        cleaned["config"][GOLD_RATE_KEY] = gold_rate
    if redundancy is not None:
        cleaned["config"][REDUNDANCY_KEY] = redundancy
        if redundancy["mode"] == ADAPTIVE:  # places are published up to the policy's maximum
            cleaned["annotators_per_item"] = redundancy["max"]
    if kind.needs_dataset and not cleaned.get("dataset"):
        raise StudyInvalid({"dataset": [f"a {kind.name} study needs a dataset"]})
    if cleaned.get("dataset") is not None:
        problems = kind.dataset_problems(cleaned["config"], cleaned["dataset"])
        if problems:
            raise StudyInvalid({"dataset": problems})
    try:
        cleaned["protocol"] = validate_protocol(cleaned.get("protocol"))
    except ProtocolInvalid as exc:
        raise StudyInvalid(
            {f"protocol.{field}": problems for field, problems in exc.errors.items()}
        ) from None
    return cleaned


def validate_study(user, data: Any, instance: Study | None = None) -> dict[str, Any]:
    """``data`` (a study's settings, as the API takes them) checked for ``user``: the cleaned settings,
    ready to store (``dataset`` a :class:`Dataset`, ``config`` with the kind's defaults filled in).
    With ``instance`` (a study being edited) its dataset is kept when ``data`` names none, and its
    provider's own settings are kept under those ``data`` gives. :class:`StudyInvalid` otherwise."""
    if instance is not None and isinstance(data, Mapping):
        provider_config = {k: v for k, v in instance.provider_config.items() if k not in FORM_PROVIDER_KEYS}
        given = data.get("provider_config")
        provider_config.update(given if isinstance(given, dict) else {})
        data = {"dataset": instance.dataset_id, **dict(data.items()), "provider_config": provider_config}
    fields = _StudyFields(user, data=data)
    if not fields.is_valid():
        raise StudyInvalid(fields.errors)
    return _check_rules(user, dict(fields.validated_data))


def store_study(user, cleaned: dict[str, Any]) -> Study:
    """A new draft owned by ``user`` with settings :func:`validate_study` cleaned."""
    return Study.objects.create(owner=user, **cleaned)


def create_study(user, data: Any) -> Study:
    """A new draft owned by ``user`` with the settings ``data``; :class:`StudyInvalid` otherwise."""
    return store_study(user, validate_study(user, data))


def _require_owner(user, study: Study, what: str) -> None:
    if not (is_admin(user) or study.owner_id == user.pk):
        raise PermissionDenied(f"only the study's owner can {what} it")


def update_draft(user, study: Study, data: dict[str, Any]) -> Rebuilt:
    """Save ``data`` (a study's settings, as a create form makes them) over ``user``'s draft ``study``, and
    build its items again if it had any (golds carried over where they still fit). The provider's own
    settings are kept; ``open_enrollment`` follows ``data``. :class:`StudyInvalid` names the bad fields and
    ``StudyStateError`` refuses a study that is not a draft; nothing changes then."""
    _require_owner(user, study, "edit")
    require_draft(study, "edited")
    cleaned = validate_study(user, data, instance=study)
    with transaction.atomic():
        for name, value in cleaned.items():
            setattr(study, name, value)
        study.save()
        return rebuild_items(study)


def clone_study(user, study: Study) -> Study:
    """A new draft owned by ``user`` with ``study``'s settings (kind, dataset, config, instructions,
    provider and its settings), from a study of any status that ``user`` owns (an admin: any). Golds
    stored with the dataset's documents come along when it starts; golds marked on the original's items
    are carried to the clone's items, built now for them."""
    _require_owner(user, study, "clone")
    with transaction.atomic():
        clone = Study.objects.create(
            name=(CLONE_PREFIX + study.name)[:200],
            owner=user,
            dataset=study.dataset,
            kind=study.kind,
            config=dict(study.config),
            instructions=study.instructions,
            annotators_per_item=study.annotators_per_item,
            time_limit_s=study.time_limit_s,
            provider=study.provider,
            provider_config=dict(study.provider_config),
            protocol=dict(study.protocol),
        )
        golds = gold_answers(study)
        if golds:
            build_with_golds(clone, golds)
        return clone


def update_consent(user, study: Study, text: str) -> Study:
    """Change the consent text of ``user``'s study in any state: a running study's next participants
    are shown it as a new version (:mod:`annotate.protocol.consent`), and every decision already taken
    keeps the version it was taken on. An empty text removes the consent step for new participants.
    :class:`StudyInvalid` names ``protocol.consent`` when the text is refused."""
    _require_owner(user, study, "edit")
    try:
        protocol = validate_protocol({**(study.protocol or {}), "consent": text})
    except ProtocolInvalid as exc:
        raise StudyInvalid(
            {f"protocol.{field}": problems for field, problems in exc.errors.items()}
        ) from None
    with transaction.atomic():
        locked = Study.objects.select_for_update().get(pk=study.pk)
        locked.protocol = protocol
        locked.save(update_fields=["protocol"])
    study.protocol = protocol
    return study
