"""What the providers' settings modules share: reading a study's provider settings, money, and
the declarations (:class:`Setting`, :class:`FeeRule`) from which the publish page builds its form.

Amounts are :class:`~decimal.Decimal` in the currency's major unit with cents, rounded half up as the
platforms' own price tables are; fees are a rate on an amount, sometimes with a floor (MTurk's one cent).
A bad value in a study's provider settings is a :class:`ProviderConfigError` naming the setting, so the
publish page can point at the field. Nothing here knows Django.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from annotate.crowd.providers.base.retry import ProviderConfigError

CENT = Decimal("0.01")
ZERO = Decimal("0.00")
# Platform ids in URLs (MTurk's workerId / hitId / assignmentId, Prolific's PROLIFIC_PID / STUDY_ID / ...).
ID_PATTERN = re.compile(r"^[A-Za-z0-9]{1,64}$")
# Our own keys for publication batches and top-ups; short enough for every platform's request tokens.
KEY_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,20}$")


def cents(amount: Decimal) -> Decimal:
    """``amount`` rounded half up to whole cents."""
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)


def minor_units(amount: Decimal) -> int:
    """An amount in pounds / dollars as whole pence / cents."""
    return int((amount * 100).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def rate_fee(amount: Decimal, rate: Decimal, minimum: Decimal = ZERO) -> Decimal:
    """``rate`` of ``amount`` in cents, never less than ``minimum``."""
    return max(minimum, cents(amount * rate))


def amount(value: Any, field_name: str, minimum: Decimal = CENT) -> Decimal:
    """An amount with cents from a string or number, at least ``minimum``."""
    try:
        parsed = cents(Decimal(str(value)))
    except (InvalidOperation, ValueError):
        raise ProviderConfigError(field_name, f"not an amount: {value!r}") from None
    if parsed < minimum:
        raise ProviderConfigError(field_name, f"must be at least {minimum}")
    return parsed


def rate(config: dict, name: str, default: str) -> Decimal:
    """A rate in [0, 1] read from ``config[name]``."""
    try:
        value = Decimal(str(config.get(name, default)))
    except (InvalidOperation, ValueError):
        raise ProviderConfigError(name, "must be a number between 0 and 1") from None
    if not Decimal(0) <= value <= Decimal(1):
        raise ProviderConfigError(name, "must be a number between 0 and 1")
    return value


def whole_number(config: dict, name: str, default: int, low: int, high: int) -> int:
    """``config[name]`` (``default`` when absent) as a whole number in ``[low, high]``."""
    value = optional_number(config, name, low, high)
    return default if value is None else value


def optional_number(config: dict, name: str, low: int, high: int) -> int | None:
    """``config[name]`` as a whole number in ``[low, high]``; ``None`` when absent."""
    value = config.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProviderConfigError(name, f"must be a whole number, got {value!r}")
    if not low <= value <= high:
        raise ProviderConfigError(name, f"must be between {low} and {high}")
    return value


def required_number(config: dict, name: str, low: int, high: int) -> int:
    """Like :func:`optional_number`, for a setting without a default."""
    value = optional_number(config, name, low, high)
    if value is None:
        raise ProviderConfigError(name, "is required")
    return value


def text(config: dict, name: str, default: str | None, max_len: int) -> str:
    """``config[name]`` as non-blank text of at most ``max_len`` characters, stripped."""
    value = config.get(name, default)
    if not isinstance(value, str) or not value.strip():
        raise ProviderConfigError(name, "is required")
    if len(value) > max_len:
        raise ProviderConfigError(name, f"must be at most {max_len} characters")
    return value.strip()


def flag(config: dict, name: str, default: bool) -> bool:
    value = config.get(name, default)
    if not isinstance(value, bool):
        raise ProviderConfigError(name, "must be true or false")
    return value


def settings_object(config: Any) -> dict:
    """A study's ``provider_config``, which must be an object."""
    if not isinstance(config, dict):
        raise ProviderConfigError("provider_config", "must be an object")
    return config


def checked_key(value: str, field_name: str) -> str:
    """A batch or top-up key, checked against :data:`KEY_PATTERN`."""
    if not KEY_PATTERN.match(value):
        raise ProviderConfigError(field_name, "must be 1-20 letters, digits, '-' or '_'")
    return value


# --- what a provider declares about its settings: the publish page's form is built from these -----------
KINDS = ("text", "longtext", "money", "whole", "flag", "choice", "choices", "words", "rate")


@dataclass(frozen=True)
class Setting:
    """One study setting a provider reads from ``Study.provider_config``: its key, how it is shown and
    entered (``kind``: one of :data:`KINDS`), its default and limits (the ones ``from_dict`` checks),
    and a help sentence. ``section`` groups settings on the page."""

    name: str
    label: str
    kind: str
    help: str = ""
    default: Any = None
    required: bool = False
    low: Any = None
    high: Any = None
    max_length: int | None = None
    choices: tuple[tuple[str, str], ...] = ()
    unit: str = ""
    section: str = "Task"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"setting {self.name}: kind must be one of {', '.join(KINDS)}")


@dataclass(frozen=True)
class FeeRule:
    """A platform's fee rule as the cost estimate applies it: what it says, where it is published and
    the date it was read there."""

    summary: str
    source: str
    as_of: str
