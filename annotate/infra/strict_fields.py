"""Serializer fields that take only the JSON type the schema gives them.

DRF's ``CharField`` turns a number into its text and its ``BooleanField`` takes ``"yes"``, ``1`` or
``"on"``; the OpenAPI schema says ``string`` and ``boolean``, so a request it forbids would be accepted.
These refuse anything but a JSON string and ``true``/``false``, with a message naming the type.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers


class StrictCharField(serializers.CharField):
    """A string, and only a string (no number turned into text)."""

    default_error_messages = {"not_a_string": "must be a string"}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("not_a_string")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    """``true`` or ``false``; a form post's ``"true"``/``"false"`` text too (multipart bodies carry text)."""

    default_error_messages = {"not_a_boolean": "must be true or false"}

    def to_internal_value(self, data: Any) -> bool:
        if isinstance(data, bool):
            return data
        if isinstance(data, str) and data in ("true", "false"):
            return data == "true"
        self.fail("not_a_boolean")
        raise AssertionError  # fail raises
