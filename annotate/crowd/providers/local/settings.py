"""The local provider's study settings: how long an invite link stays valid, and whether anyone with
the entry link may take part.

``invite_max_age_s`` (default 14 days) bounds the age of an invite token (zero or less refuses every
invite, which revokes the links handed out); with ``open_enrollment`` true, a signed-in account takes
part as itself and any other visitor gets an anonymous identity kept in their session; without it (the
default) the study is invite-only. The local crowd has no platform, so no fees.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from annotate.crowd.providers.base.settings import FeeRule, Setting, flag, settings_object, whole_number

DEFAULT_INVITE_MAX_AGE_S = 14 * 24 * 3600
MAX_INVITE_AGE_S = 10 * 365 * 24 * 3600


@dataclass(frozen=True)
class LocalSettings:
    invite_max_age_s: int = DEFAULT_INVITE_MAX_AGE_S
    open_enrollment: bool = False

    FEES: ClassVar[FeeRule | None] = None
    SETTINGS: ClassVar[tuple[Setting, ...]] = (
        Setting("open_enrollment", "Open enrollment", "flag",
                "Anyone with the study's link may take part; otherwise only those with a personal invite.",
                default=False, section="Access"),
        Setting("invite_max_age_s", "Invite links valid for", "whole",
                "How long an invite link stays valid after it is made (0: every link stops working).",
                default=DEFAULT_INVITE_MAX_AGE_S, low=0, high=MAX_INVITE_AGE_S, unit="seconds",
                section="Access"),
    )  # fmt: skip

    @classmethod
    def from_dict(cls, config: Any) -> LocalSettings:
        config = {} if config is None else settings_object(config)
        return cls(
            invite_max_age_s=whole_number(
                config, "invite_max_age_s", DEFAULT_INVITE_MAX_AGE_S, 0, MAX_INVITE_AGE_S
            ),
            open_enrollment=flag(config, "open_enrollment", False),
        )
