"""Validation errors as one flat mapping, field → messages: how the pages put a refusal next to its form
field and how the annotator endpoints answer ``{"errors": {...}}``. Nested fields are joined by dots
(``config.labels.0``, ``answer.map``)."""

from __future__ import annotations

from typing import Any


def flatten_errors(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    """DRF error details (a dict, a list or one message, nested at will) as ``{"dotted.field": ["message", ...]}``;
    messages outside any field go under ``non_field_errors``."""
    if isinstance(detail, dict):
        out: dict[str, list[str]] = {}
        for key, value in detail.items():
            name = str(key) if not prefix else f"{prefix}.{key}"
            for field, messages in flatten_errors(value, name).items():
                out.setdefault(field, []).extend(messages)
        return out
    if isinstance(detail, list) and any(isinstance(v, dict | list) for v in detail):
        out = {}
        for i, value in enumerate(detail):
            for field, messages in flatten_errors(value, f"{prefix}.{i}" if prefix else str(i)).items():
                out.setdefault(field, []).extend(messages)
        return out
    messages = detail if isinstance(detail, list) else [detail]
    return {prefix or "non_field_errors": [str(m) for m in messages]}
