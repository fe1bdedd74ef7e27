"""Serializer fields whose OpenAPI description says what they take: DRF's ``JSONField`` is described as "any
value", which lets a schema-following client send a number where an object is wanted."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers


@extend_schema_field(OpenApiTypes.OBJECT)
class JSONObjectField(serializers.JSONField):
    """A JSON object (its keys and values are checked by whoever reads it: a task kind, a trainer)."""


@extend_schema_field(
    {
        "oneOf": [
            {"type": "array", "items": {"type": "string"}, "minItems": 1},
            {"type": "string", "enum": ["all"]},
        ]
    }
)
class MethodNamesField(serializers.JSONField):
    """Explanation method names, or ``"all"``."""
