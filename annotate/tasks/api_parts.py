"""What the project API (:mod:`annotate.api`) and a kind's own API views (``annotate/kinds/<kind>/api.py``)
share: serializer fields whose OpenAPI description says what they take (DRF's ``JSONField`` is described as
"any value", which lets a schema-following client send a number where an object is wanted). The permission
classes are in :mod:`annotate.access`.

A kind's API views stay in its folder and are mounted with its other URLs (a kind is one folder), so what
they share with the project API lives outside :mod:`annotate.api`, which no other module imports."""

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
