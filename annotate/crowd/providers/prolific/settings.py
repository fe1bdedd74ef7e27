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
from typing import Any, ClassVar

from annotate.crowd.providers.base.retry import ProviderConfigError
from annotate.crowd.providers.base.settings import (
    FeeRule,
    Setting,
    amount,
    optional_number,
    rate,
    rate_fee,
    required_number,
    settings_object,
)

DEFAULT_CURRENCY = "GBP"
DEFAULT_FEE_RATE = Decimal("0.3333")
DEVICES = frozenset({"desktop", "tablet", "mobile"})
CURRENCIES = frozenset({"GBP", "USD"})
FEES = FeeRule(
    summary="a platform fee of 33.33 % of rewards and bonuses, plus VAT on the fee where it applies "
    "(the study's fee rate and VAT rate settings)",
    source="https://www.prolific.com/pricing",
    as_of="2026-11-26",
)


@dataclass(frozen=True)
class ProlificConfig:
    """A study's Prolific settings (``Study.provider_config``), validated."""

    name: str
    description: str
    reward: Decimal
    places: int
    estimated_minutes: int
    max_minutes: int | None = None
    currency: str = DEFAULT_CURRENCY
    devices: tuple[str, ...] = ("desktop",)
    workspace_id: str = ""
    project_id: str = ""
    only_trusted: bool = False
    fee_rate: Decimal = DEFAULT_FEE_RATE
    vat_rate: Decimal = Decimal("0")

    FEES: ClassVar[FeeRule] = FEES
    SETTINGS: ClassVar[tuple[Setting, ...]] = (
        Setting("name", "Name", "text", "What participants see in Prolific's list of studies.",
                required=True, max_length=255),
        Setting("description", "Description", "longtext", "What the study asks, shown before they start.",
                required=True, max_length=10000),
        Setting("reward", "Reward per place", "money", "Paid for each approved submission.",
                required=True, low=Decimal("0.01")),
        Setting("currency", "Currency", "choice", "The workspace's currency.", default="GBP",
                choices=(("GBP", "GBP"), ("USD", "USD"))),
        Setting("places", "Places", "whole", "How many participants can take part.", required=True,
                low=1, high=100000, section="Places"),
        Setting("estimated_minutes", "Estimated completion time", "whole",
                "Prolific shows it and judges the reward per hour by it.", required=True, low=1, high=1440,
                unit="minutes", section="Times"),
        Setting("max_minutes", "Maximum time", "whole",
                "Past it Prolific times the submission out (empty: Prolific's default).", low=2, high=10080,
                unit="minutes", section="Times"),
        Setting("devices", "Devices", "choices", "The devices participants may use.",
                default=["desktop"], choices=(("desktop", "Desktop"), ("tablet", "Tablet"),
                                              ("mobile", "Mobile")), section="Who may work"),
        Setting("only_trusted", "Only the allow-list", "flag",
                "Only participants on this workspace's hatlab allow-list group (those who passed the hidden "
                "check questions of earlier studies) may take part.", default=False, section="Who may work"),
        Setting("workspace_id", "Workspace", "text", "Prolific workspace id (empty: the token's first).",
                default="", max_length=64, section="Account"),
        Setting("project_id", "Project", "text", "Prolific project id (empty: the workspace's default).",
                default="", max_length=64, section="Account"),
        Setting("fee_rate", "Fee rate", "rate", "Prolific's fee as a share of what is paid.",
                default="0.3333", low=0, high=1, section="Fees"),
        Setting("vat_rate", "VAT on the fee", "rate", "VAT charged on the fee (0 where none applies).",
                default="0", low=0, high=1, section="Fees"),
    )  # fmt: skip

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
        return platform_fee(paid, self.fee_rate, self.vat_rate)


def platform_fee(
    paid: Decimal, fee_rate: Decimal = DEFAULT_FEE_RATE, vat_rate: Decimal = Decimal(0)
) -> Decimal:
    """Prolific's fee at ``fee_rate``, with ``vat_rate`` on the fee, on paying ``paid``."""
    return rate_fee(paid, fee_rate * (1 + vat_rate))
