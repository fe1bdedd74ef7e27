"""A study's quality policy: the stored row, or the defaults (trust >= 0.70: Pappas & Popescu-Belis
2016, Lertvittayakumjorn & Toni 2019), and the rule as it is applied to the study (:class:`AppliedRule`).

The policy asks for numbers a small study may not reach; the applied rule is what grading, exclusion
and the gold review use, and what every page shows, so that the rule shown is the rule applied:

* A worker is judged after ``min_golds`` gold items, or after every gold item in use when the study has
  fewer (else nobody could ever qualify and every answer would wait for good). With one gold item in use,
  one miss excludes a worker; the quality page says so.
* A gold item is flagged for review when at least ``gold_flag_min_trusted`` workers trusted on the other
  golds saw it, capped at how many workers have answered in the study (a study of three workers can flag
  a gold that all three missed), and at least ``gold_flag_miss_rate`` of them missed it.
"""

from __future__ import annotations

from dataclasses import dataclass

from annotate.models import Item, QualityPolicy, Response


def policy_for(study) -> QualityPolicy:
    """The study's :class:`~annotate.models.QualityPolicy`, created with the defaults on first use."""
    try:
        return study.quality_policy
    except QualityPolicy.DoesNotExist:
        policy, _ = QualityPolicy.objects.get_or_create(study=study)
        study.quality_policy = policy
        return policy


def golds_in_use(study) -> int:
    """The study's gold items that count (retired ones do not)."""
    return Item.objects.filter(study=study, is_gold=True, retired=False).count()


def judged_after(min_golds_asked: int, in_use: int) -> int:
    """Golds a worker answers before their trust decides: the policy's ``min_golds_asked``, or every
    gold ``in_use`` when the study has fewer."""
    return min(min_golds_asked, in_use)


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


@dataclass(frozen=True)
class AppliedRule:
    """The quality policy as applied to one study: what the policy asks and what the study allows."""

    threshold: float
    min_golds_asked: int
    golds_in_use: int
    flag_min_trusted_asked: int
    flag_miss_rate: float
    workers: int

    @property
    def judges(self) -> bool:
        """Whether the study has gold items in use to judge workers by."""
        return self.golds_in_use > 0

    @property
    def min_golds(self) -> int:
        """Golds a worker answers before their trust decides: the policy's, capped at the golds in use."""
        return judged_after(self.min_golds_asked, self.golds_in_use)

    @property
    def golds_short(self) -> bool:
        """Whether the study has fewer gold items in use than the policy asks a worker to answer."""
        return self.judges and self.golds_in_use < self.min_golds_asked

    @property
    def flag_min_trusted(self) -> int:
        """Trusted workers who must have seen a gold before it can be flagged: the policy's, capped at
        the workers who answered in the study (at least one)."""
        return max(1, min(self.flag_min_trusted_asked, self.workers))

    def trust_sentence(self) -> str:
        """The trust rule in words, as applied."""
        if not self.judges:
            return (
                "This study has no gold items in use, so no worker is judged: every verified answer counts."
            )
        text = (
            f"Workers count when they pass at least {self.threshold:.0%} of the gold items they answered, "
            f"judged after {_plural(self.min_golds, 'gold')}; until then their answers wait."
        )
        if self.golds_short:
            text += (
                f" The policy asks for {self.min_golds_asked}, but this study has only "
                f"{_plural(self.golds_in_use, 'gold item')} in use, so a worker is judged after all of them"
                + (": one missed gold excludes them." if self.golds_in_use == 1 else ".")
            )
        return text

    def flag_sentence(self) -> str:
        """The gold review rule in words, as applied."""
        text = (
            f"A gold item is flagged for review when at least {_plural(self.flag_min_trusted, 'trusted worker')} "
            f"saw it and {self.flag_miss_rate:.0%} or more of them missed it"
        )
        if self.flag_min_trusted < self.flag_min_trusted_asked:
            text += (
                f" (the policy asks for {self.flag_min_trusted_asked}; "
                f"{_plural(self.workers, 'worker has', 'workers have')} answered so far)"
            )
        return text + "."

    def as_dict(self) -> dict:
        return {
            "trust_threshold": self.threshold,
            "min_golds": self.min_golds,
            "min_golds_asked": self.min_golds_asked,
            "golds_in_use": self.golds_in_use,
            "gold_flag_min_trusted": self.flag_min_trusted,
            "gold_flag_min_trusted_asked": self.flag_min_trusted_asked,
            "gold_flag_miss_rate": self.flag_miss_rate,
            "workers": self.workers,
            "trust_rule": self.trust_sentence(),
            "flag_rule": self.flag_sentence(),
        }


def applied_rule(study) -> AppliedRule:
    """The study's quality policy as applied to it now (two counting queries)."""
    policy = policy_for(study)
    return AppliedRule(
        threshold=policy.trust_threshold,
        min_golds_asked=policy.min_golds,
        golds_in_use=golds_in_use(study),
        flag_min_trusted_asked=policy.gold_flag_min_trusted,
        flag_miss_rate=policy.gold_flag_miss_rate,
        workers=Response.objects.filter(study=study).counted().values("worker_id").distinct().count(),
    )
