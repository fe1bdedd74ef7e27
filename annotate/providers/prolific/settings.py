"""A study's Prolific settings and Prolific's fees.

The settings (``Study.provider_config`` of a Prolific study) describe one Prolific study per publication:
name, description, reward, places, estimated and maximum minutes, devices, workspace and project, and
whether only workers on our allow-list may take part. Prolific does not publish its fee in the API: the
estimate uses ``fee_rate`` (default 1/3 of rewards, Prolific's published platform fee) plus ``vat_rate``
on the fee, both settable per study.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from annotate.providers.base.retry import ProviderConfigError
from annotate.providers.base.settings import (
    amount,
    optional_number,
    rate,
    rate_fee,
    required_number,
    settings_object,
)

DEVICES = frozenset({"desktop", "tablet", "mobile"})
CURRENCIES = frozenset({"GBP", "USD"})


@dataclass(frozen=True)
class ProlificConfig:
    """A study's Prolific settings (``Study.provider_config``), validated."""

    name: str
    description: str
    reward: Decimal
    places: int
    estimated_minutes: int
    max_minutes: int | None = None
    currency: str = "GBP"
    devices: tuple[str, ...] = ("desktop",)
    workspace_id: str = ""
    project_id: str = ""
    only_trusted: bool = False
    fee_rate: Decimal = Decimal("0.3333")
    vat_rate: Decimal = Decimal("0")

    @classmethod
    def from_dict(cls, config: Any) -> ProlificConfig:
        config = settings_object(config)
        for key in ("name", "description"):
            if not isinstance(config.get(key), str) or not config[key].strip():
                raise ProviderConfigError(key, "is required")
        devices = config.get("devices", ["desktop"])
        if not isinstance(devices, list) or not devices or not set(devices) <= DEVICES:
            raise ProviderConfigError("devices", "must be a non-empty list of desktop / tablet / mobile")
        currency = config.get("currency", "GBP")
        if currency not in CURRENCIES:
            raise ProviderConfigError("currency", "must be GBP or USD")
        for key in ("workspace_id", "project_id"):
            if not isinstance(config.get(key, ""), str):
                raise ProviderConfigError(key, "must be a string")
        if not isinstance(config.get("only_trusted", False), bool):
            raise ProviderConfigError("only_trusted", "must be true or false")
        places = required_number(config, "places", 1, 100000)
        estimated = required_number(config, "estimated_minutes", 1, 1440)
        maximum = optional_number(config, "max_minutes", 2, 10080)
        if maximum is not None and maximum < estimated:
            raise ProviderConfigError("max_minutes", "must not be less than estimated_minutes")
        return cls(
            name=config["name"].strip()[:255],
            description=config["description"].strip(),
            reward=amount(config.get("reward", ""), "reward"),
            places=places,
            estimated_minutes=estimated,
            max_minutes=maximum,
            currency=currency,
            devices=tuple(devices),
            workspace_id=config.get("workspace_id", ""),
            project_id=config.get("project_id", ""),
            only_trusted=config.get("only_trusted", False),
            fee_rate=rate(config, "fee_rate", "0.3333"),
            vat_rate=rate(config, "vat_rate", "0"),
        )

    def fee(self, paid: Decimal) -> Decimal:
        """Prolific's fee, VAT included, on paying ``paid``."""
        return rate_fee(paid, self.fee_rate * (1 + self.vat_rate))
