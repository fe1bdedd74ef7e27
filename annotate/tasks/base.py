"""The task-kind contract: a study is data (a config validated by its kind's schema), not code.

Each kind owns the schema of its study config (a DRF serializer), how a study's items are built,
what of an item the annotator's browser may see, how an answer is validated and how a gold answer is
graded, and which answer categories inter-annotator agreement is computed over.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from rest_framework import serializers
from rest_framework.exceptions import ValidationError


class BaseConfigSerializer(serializers.Serializer):
    """Config options every kind understands."""

    max_items_per_worker = serializers.IntegerField(
        min_value=1,
        required=False,
        allow_null=True,
        default=None,
        help_text="The most items one worker may answer in this study (no limit when empty).",
    )


class TaskKind(ABC):
    """One kind of annotation task.

    ``template`` is the annotator page template rendered by the entry page with the context
    ``task_json`` (see :mod:`annotate.views.work`).
    """

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    template: ClassVar[str] = ""
    config_serializer: ClassVar[type[serializers.Serializer]] = BaseConfigSerializer

    def validate_config(self, config: dict | None) -> dict[str, Any]:
        """The study config with defaults filled in; ``ValidationError`` naming the bad fields."""
        if config is not None and not isinstance(config, dict):
            raise ValidationError({"non_field_errors": ["the config must be an object"]})
        serializer = self.config_serializer(data=config or {})
        serializer.is_valid(raise_exception=True)
        return dict(serializer.validated_data)

    def public_config(self, study) -> dict[str, Any]:
        """What the annotator page may know about the study."""
        return {
            "instructions": study.instructions,
            "time_limit_s": study.time_limit_s,
            "max_items_per_worker": study.config.get("max_items_per_worker"),
        }

    @abstractmethod
    def build_items(self, study) -> list:
        """The unsaved :class:`~annotate.models.Item` rows of ``study`` (saved by the caller)."""

    def public_payload(self, item) -> dict[str, Any]:
        """What the annotator's browser sees of ``item``; never anything from ``item.secret``."""
        return dict(item.payload)

    @abstractmethod
    def validate_answer(self, item, answer: Any, timings: dict[str, Any]) -> dict[str, Any]:
        """The cleaned answer; ``ValidationError`` with ``{"answer": {field: [...]}}`` or
        ``{"timings": {field: [...]}}`` otherwise. ``item.study`` is loaded."""

    def grade_gold(self, item, answer: dict[str, Any]) -> bool | None:
        """Whether ``answer`` passes the gold item ``item``; ``None`` for an item without gold."""
        return None

    @abstractmethod
    def categories(self, study) -> list:
        """The answer categories agreement is computed over."""

    @abstractmethod
    def agreement_value(self, answer: dict[str, Any]) -> Any:
        """The category of ``answer`` (one of :meth:`categories`), or ``None`` when it has none."""
