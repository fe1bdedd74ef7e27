"""The local crowd: in-house annotators with signed invite links or their own accounts (no platform)."""

from annotate.crowd.providers.local import adapter  # noqa: F401  (registers the provider)
