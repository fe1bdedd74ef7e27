"""Amazon Mechanical Turk: settings and fees, the requester API client, and the adapter."""

from annotate.providers.mturk import adapter  # noqa: F401  (registers the provider)
