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
from typing import Any

from annotate.providers.base.retry import ProviderConfigError
from annotate.providers.base.settings import amount, flag, rate_fee, settings_object, text, whole_number

# MTurk's system qualification types.
QUAL_PERCENT_APPROVED = "000000000000000000L0"
QUAL_NUMBER_APPROVED = "00000000000000000040"
QUAL_LOCALE = "00000000000000000071"

FEE_RATE = Decimal("0.20")
LARGE_HIT_EXTRA_RATE = Decimal("0.20")
LARGE_HIT_ASSIGNMENTS = 10
MIN_FEE = Decimal("0.01")


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
        return reqs


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
