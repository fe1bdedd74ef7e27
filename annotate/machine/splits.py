"""The sizes of a model run's held-out splits, the warnings a page shows when one is empty or tiny, and
the split a forced-choice study should default to (one that holds texts for every run)."""

from __future__ import annotations

from collections.abc import Iterable

from annotate.models import ModelRun

#: Fewer held-out texts than this and one text moves the accuracy by more than five points.
TINY_SPLIT = 20
HELD_OUT = ("validation", "test")


def split_sizes(run: ModelRun) -> dict[str, int | None]:
    """``{split: number of texts}`` for the run's validation and test splits (None: not recorded)."""
    metrics = run.metrics or {}
    sizes: dict[str, int | None] = {}
    for split in HELD_OUT:
        n = (metrics.get(split) or {}).get("n")
        sizes[split] = n if isinstance(n, int) and not isinstance(n, bool) else None
    return sizes


def split_warnings(run: ModelRun) -> list[str]:
    """A sentence for each held-out split of a finished run that is empty or tiny."""
    warnings = []
    for split, n in split_sizes(run).items():
        if n == 0:
            warnings.append(
                f"The {split} split is empty: there is no {split} accuracy. Train on more texts, or "
                "evaluate this model on the split “all”."
            )
        elif n is not None and n < TINY_SPLIT:
            warnings.append(
                f"The {split} split has only {n} text{'s' if n != 1 else ''}: one text moves its accuracy "
                f"by {100 / n:.0f} points, so read it with care."
            )
    return warnings


def fitting_split(runs: Iterable[ModelRun]) -> str:
    """The first of test and validation that holds at least :data:`TINY_SPLIT` texts in every run of
    ``runs``; ``all`` when none does (``test`` when there are no runs)."""
    sizes = [split_sizes(run) for run in runs]
    if not sizes:
        return "test"
    for split in ("test", "validation"):
        if all((s[split] or 0) >= TINY_SPLIT for s in sizes):
            return split
    return "all"
