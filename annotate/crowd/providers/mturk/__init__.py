"""Amazon Mechanical Turk: settings and fees, the requester API client, and the adapter."""

from annotate.crowd.providers.mturk import adapter  # noqa: F401  (registers the provider)
