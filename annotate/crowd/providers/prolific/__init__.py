"""Prolific: settings and fees, the REST API client, and the adapter."""

from annotate.crowd.providers.prolific import adapter  # noqa: F401  (registers the provider)
