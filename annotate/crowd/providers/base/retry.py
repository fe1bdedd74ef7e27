"""Retries with capped exponential backoff and full jitter for crowd-platform calls.

Every attempt is logged on the ``annotate.crowd.providers`` logger (operation, attempt, outcome, duration), so
a payment or a publication can always be traced. Whether an error is worth another attempt is decided by
a classifier the provider passes in: it returns ``None`` for a permanent error, or the least number of
seconds to wait (``0.0`` when the platform gave no hint, e.g. no ``Retry-After`` header).

Written by hand rather than with a retry library because the delay must honour the platform's own hint
and the sleep must be injectable, so tests run without waiting.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import requests
from botocore.exceptions import BotoCoreError, ClientError

logger = logging.getLogger("annotate.crowd.providers")

T = TypeVar("T")
Classifier = Callable[[BaseException], "float | None"]


@dataclass(frozen=True)
class Backoff:
    """``attempts`` tries in all; the n-th retry waits a uniform draw in ``[0, min(cap_s, base_s * 2**n)]``
    ("full jitter"), but never less than the platform's own ``Retry-After`` hint."""

    attempts: int = 5
    base_s: float = 0.5
    cap_s: float = 30.0

    def delay(self, retry: int, hint: float, rng: random.Random) -> float:
        ceiling = min(self.cap_s, self.base_s * (2**retry))
        return max(hint, rng.uniform(0.0, ceiling))


DEFAULT_BACKOFF = Backoff()


class ProviderConfigError(ValueError):
    """A study's provider settings are invalid; ``field`` names the offending setting (answered as a 400)."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class ProviderError(Exception):
    """A crowd-platform call failed for good (permanent error, or transient errors on every attempt)."""

    def __init__(self, provider: str, operation: str, message: str, *, code: str = "", status: int = 0):
        super().__init__(f"{provider} {operation}: {message}")
        self.provider = provider
        self.operation = operation
        self.code = code
        self.status = status


def platform_errors() -> tuple[type[BaseException], ...]:
    """The errors a failed platform call may raise (boto3's, requests', ours), for callers that record
    a failure and carry on (a reconciliation run, a batch of blocks)."""
    return (ProviderError, ProviderConfigError, BotoCoreError, ClientError, requests.RequestException)


def call_with_retry(
    provider: str,
    operation: str,
    call: Callable[[], T],
    classify: Classifier,
    *,
    backoff: Backoff = DEFAULT_BACKOFF,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
) -> T:
    """Run ``call()``; on an error that ``classify`` calls transient, wait and try again, up to
    ``backoff.attempts`` tries. The last error (or the first permanent one) is raised unchanged."""
    rng = rng or random.Random()
    attempt = 0
    while True:
        attempt += 1
        started = time.monotonic()
        try:
            result = call()
        except Exception as exc:  # every error is classified, then re-raised or retried
            elapsed_ms = (time.monotonic() - started) * 1000
            hint = classify(exc)
            if hint is None or attempt >= backoff.attempts:
                logger.error(
                    "%s %s failed after %d attempt(s) in %.0f ms: %s",
                    provider,
                    operation,
                    attempt,
                    elapsed_ms,
                    exc,
                    extra={"provider": provider, "operation": operation, "attempt": attempt},
                )
                raise
            wait = backoff.delay(attempt - 1, hint, rng)
            logger.warning(
                "%s %s transient error on attempt %d (%s); retrying in %.2f s",
                provider,
                operation,
                attempt,
                exc,
                wait,
                extra={"provider": provider, "operation": operation, "attempt": attempt},
            )
            sleep(wait)
            continue
        logger.info(
            "%s %s ok in %.0f ms (attempt %d)",
            provider,
            operation,
            (time.monotonic() - started) * 1000,
            attempt,
            extra={"provider": provider, "operation": operation, "attempt": attempt},
        )
        return result
