"""A study's MTurk settings and MTurk's requester fees.

The settings (``Study.provider_config`` of an MTurk study) describe one HIT type and how many HITs of it
to publish; :class:`MTurkConfig` validates them with MTurk's own limits (API reference, CreateHITType and
CreateHITWithHITType) and builds the qualification requirements: approval rate, number approved, locale,
and the account's *gold trust* qualification, which mirrors our gold-question trust (auto-granted at 100,
lowered to a worker's trust x 100 once they have answered enough golds, and required to be at least the
study's threshold x 100).

Fees follow MTurk's published requester pricing (requester.mturk.com/pricing): 20 % of rewards and
bonuses, 20 % more on HITs with 10 or more assignments, never less than one cent per assignment or bonus.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, ClassVar

from annotate.crowd.providers.base.retry import ProviderConfigError
from annotate.crowd.providers.base.settings import (
    ID_PATTERN,
    FeeRule,
    Setting,
    amount,
    flag,
    rate_fee,
    settings_object,
    text,
    whole_number,
)

# MTurk's system qualification types.
QUAL_PERCENT_APPROVED = "000000000000000000L0"
QUAL_NUMBER_APPROVED = "00000000000000000040"
QUAL_LOCALE = "00000000000000000071"

FEE_RATE = Decimal("0.20")
LARGE_HIT_EXTRA_RATE = Decimal("0.20")
LARGE_HIT_ASSIGNMENTS = 10
MIN_FEE = Decimal("0.01")
FEES = FeeRule(
    summary="20 % of rewards and bonuses, 20 % more on HITs with 10 or more assignments, "
    "at least $0.01 per assignment or bonus",
    source="https://requester.mturk.com/pricing",
    as_of="2026-11-26",
)
DAY = 86400


def assignment_fee(reward: Decimal, assignments_per_hit: int) -> Decimal:
    """MTurk's fee on one assignment's reward."""
    extra = LARGE_HIT_EXTRA_RATE if assignments_per_hit >= LARGE_HIT_ASSIGNMENTS else Decimal(0)
    return rate_fee(reward, FEE_RATE + extra, MIN_FEE)


def bonus_fee(bonus: Decimal) -> Decimal:
    """MTurk's fee on one bonus."""
    return rate_fee(bonus, FEE_RATE, MIN_FEE)


@dataclass(frozen=True)
class MTurkConfig:
    """A study's MTurk settings (``Study.provider_config``), validated; limits are MTurk's."""

    title: str
    description: str
    reward: Decimal
    keywords: str = ""
    hits: int = 1
    assignments_per_hit: int = 3
    assignment_duration_s: int = 3600
    lifetime_s: int = 7 * 86400
    auto_approval_delay_s: int = 3 * 86400
    frame_height: int = 800
    min_approval_rate: int = 95
    min_approved: int = 100
    locales: tuple[str, ...] = ()
    trust_qualification: bool = True
    trust_qualification_name: str = "hatlab gold trust"
    custom_qualification_id: str = ""
    custom_qualification_min: int = 1
    exclude_qualification_id: str = ""

    FEES: ClassVar[FeeRule] = FEES
    SETTINGS: ClassVar[tuple[Setting, ...]] = (
        Setting("title", "Title", "text", "What workers see in MTurk's list of HITs.", required=True,
                max_length=128),
        Setting("description", "Description", "longtext", "What the task asks, in one or two sentences.",
                required=True, max_length=2000),
        Setting("keywords", "Keywords", "words", "Comma-separated words workers can search for.",
                default="", max_length=1000),
        Setting("reward", "Reward per assignment", "money", "Paid for each approved assignment.",
                required=True, low=Decimal("0.01"), unit="USD"),
        Setting("hits", "HITs", "whole", "How many HITs one publication makes.", default=1, low=1,
                high=10000, section="Places"),
        Setting("assignments_per_hit", "Assignments per HIT", "whole",
                "How many workers can take each HIT; 10 or more raises MTurk's fee by 20 %.", default=3,
                low=1, high=1000, section="Places"),
        Setting("assignment_duration_s", "Time per assignment", "whole",
                "How long a worker has to finish an accepted HIT.", default=3600, low=30, high=31536000,
                unit="seconds", section="Times"),
        Setting("lifetime_s", "Lifetime", "whole", "How long the HITs stay listed.", default=7 * DAY,
                low=30, high=31536000, unit="seconds", section="Times"),
        Setting("auto_approval_delay_s", "Auto-approval delay", "whole",
                "After this long MTurk approves a submitted assignment no one reviewed.", default=3 * DAY,
                low=0, high=30 * DAY, unit="seconds", section="Times"),
        Setting("frame_height", "Frame height", "whole", "Height of the task frame in MTurk's page.",
                default=800, low=0, high=5000, unit="pixels", section="Task"),
        Setting("min_approval_rate", "Minimum approval rate", "whole",
                "Workers need at least this share of approved assignments (0: no requirement).",
                default=95, low=0, high=100, unit="%", section="Who may work"),
        Setting("min_approved", "Minimum approved HITs", "whole",
                "Workers need at least this many approved HITs (0: no requirement).", default=100, low=0,
                high=1000000, section="Who may work"),
        Setting("locales", "Countries", "words",
                "ISO 3166 two-letter codes, comma-separated (e.g. US, GB); empty: any country.",
                default="", section="Who may work"),
        Setting("trust_qualification", "Gold-trust qualification", "flag",
                "Keep out workers whose trust from hidden check questions fell below the study's threshold.",
                default=True, section="Who may work"),
        Setting("trust_qualification_name", "Gold-trust qualification name", "text",
                "The qualification type hatlab keeps the trust in (one per account).",
                default="hatlab gold trust", max_length=200, section="Who may work"),
        Setting("custom_qualification_id", "Custom qualification", "text",
                "A qualification type id of yours that workers must hold (empty: none).", default="",
                max_length=64, section="Who may work"),
        Setting("custom_qualification_min", "Custom qualification: least score", "whole",
                "The score workers need in the custom qualification.", default=1, low=0, high=100,
                section="Who may work"),
        Setting("exclude_qualification_id", "Has not done this study before", "text",
                "A qualification type id whose holders may not accept, e.g. the one you granted the "
                "workers of an earlier run of this study (empty: none).", default="", max_length=64,
                section="Who may work"),
    )  # fmt: skip

    @classmethod
    def from_dict(cls, config: Any) -> MTurkConfig:
        config = settings_object(config)
        keywords = config.get("keywords", "")
        if isinstance(keywords, list | tuple):
            keywords = ", ".join(str(k).strip() for k in keywords if str(k).strip())
        if not isinstance(keywords, str) or len(keywords) > 1000:
            raise ProviderConfigError("keywords", "must be a list of words or a comma-separated string")
        locales = config.get("locales", [])
        if isinstance(locales, str):
            locales = [locales]
        if not isinstance(locales, list | tuple) or not all(
            isinstance(c, str) and len(c) == 2 and c.isalpha() and c.isupper() for c in locales
        ):
            raise ProviderConfigError(
                "locales", "must be ISO 3166 two-letter country codes, e.g. ['US', 'GB']"
            )
        return cls(
            title=text(config, "title", None, 128),
            description=text(config, "description", None, 2000),
            reward=amount(config.get("reward", ""), "reward"),
            keywords=keywords,
            hits=whole_number(config, "hits", 1, 1, 10000),
            assignments_per_hit=whole_number(config, "assignments_per_hit", 3, 1, 1000),
            assignment_duration_s=whole_number(config, "assignment_duration_s", 3600, 30, 31536000),
            lifetime_s=whole_number(config, "lifetime_s", 7 * 86400, 30, 31536000),
            auto_approval_delay_s=whole_number(config, "auto_approval_delay_s", 3 * 86400, 0, 2592000),
            frame_height=whole_number(config, "frame_height", 800, 0, 5000),
            min_approval_rate=whole_number(config, "min_approval_rate", 95, 0, 100),
            min_approved=whole_number(config, "min_approved", 100, 0, 1000000),
            locales=tuple(locales),
            trust_qualification=flag(config, "trust_qualification", True),
            trust_qualification_name=text(config, "trust_qualification_name", "hatlab gold trust", 200),
            custom_qualification_id=_qualification_id(config, "custom_qualification_id"),
            custom_qualification_min=whole_number(config, "custom_qualification_min", 1, 0, 100),
            exclude_qualification_id=_qualification_id(config, "exclude_qualification_id"),
        )

    @property
    def places(self) -> int:
        return self.hits * self.assignments_per_hit

    def requirements(self, trust_qualification_id: str | None, threshold: float) -> list[dict]:
        """MTurk QualificationRequirements for this config (guarding accept; preview stays open)."""
        reqs: list[dict] = []
        if self.min_approval_rate:
            reqs.append(_requirement(QUAL_PERCENT_APPROVED, "GreaterThanOrEqualTo", [self.min_approval_rate]))
        if self.min_approved:
            reqs.append(_requirement(QUAL_NUMBER_APPROVED, "GreaterThanOrEqualTo", [self.min_approved]))
        if self.locales:
            reqs.append(
                {
                    "QualificationTypeId": QUAL_LOCALE,
                    "Comparator": "In",
                    "LocaleValues": [{"Country": c} for c in self.locales],
                    "ActionsGuarded": "Accept",
                }
            )
        if trust_qualification_id:
            reqs.append(
                _requirement(trust_qualification_id, "GreaterThanOrEqualTo", [trust_score(threshold)])
            )
        if self.custom_qualification_id:
            reqs.append(
                _requirement(
                    self.custom_qualification_id, "GreaterThanOrEqualTo", [self.custom_qualification_min]
                )
            )
        if self.exclude_qualification_id:
            reqs.append(
                {
                    "QualificationTypeId": self.exclude_qualification_id,
                    "Comparator": "DoesNotExist",
                    "ActionsGuarded": "DiscoverPreviewAndAccept",
                }
            )
        return reqs


def _qualification_id(config: dict, name: str) -> str:
    """An optional qualification type id (MTurk's ids are letters and digits)."""
    value = config.get(name, "")
    if value is None:
        return ""
    if not isinstance(value, str) or (value.strip() and not ID_PATTERN.match(value.strip())):
        raise ProviderConfigError(name, "must be a qualification type id: letters and digits only")
    return value.strip()


def _requirement(qualification_id: str, comparator: str, values: list[int]) -> dict:
    return {
        "QualificationTypeId": qualification_id,
        "Comparator": comparator,
        "IntegerValues": values,
        "ActionsGuarded": "Accept",
    }


def trust_score(trust: float) -> int:
    """Trust in [0, 1] as the integer MTurk qualification value in [0, 100]."""
    return int(round(max(0.0, min(1.0, trust)) * 100))
