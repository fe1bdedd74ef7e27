"""Short notes that go beside a figure when its value is easy to misread.

Chance-corrected agreement (κ, α) drops when one category dominates although raters mostly agree
(the "prevalence paradox", Feinstein & Cicchetti 1990); an interval over few items is wide; a value
can be undefined; mean ROC AUC leaves out texts whose human map is constant. Each helper returns a
list of plain sentences (the page escapes them).
"""

from __future__ import annotations

from collections.abc import Sequence

from explain_engine.api import observed_agreement as observed_agreement

SKEWED_SHARE = 0.80
FEW_ITEMS = 30
FEW_SELECTED_WORDS = 100


def _pct(x: float) -> str:
    return f"{100.0 * x:.0f} %"


def chance_corrected_notes(
    name: str, estimate: dict, shares: Sequence[float], categories: Sequence[str], observed: float | None
) -> list[str]:
    """Notes for a κ or α computed over ratings whose category shares are ``shares``."""
    notes: list[str] = []
    value, n = estimate.get("value"), estimate.get("n", 0)
    if value is None:
        used = sum(1 for s in shares if s > 0)
        if n and used <= 1:
            notes.append(
                f"{name} is undefined: every rating is in one category, so there is no disagreement to measure."
            )
        elif n == 0:
            notes.append(f"{name} is undefined: no item has two or more ratings yet.")
        else:
            notes.append(f"{name} is undefined for these ratings.")
        return notes
    if len(shares) and max(shares) >= SKEWED_SHARE:
        top = categories[max(range(len(shares)), key=shares.__getitem__)]
        agree = f"; raters agree on {_pct(observed)} of pairs" if observed is not None else ""
        notes.append(
            f"{name} may mislead: “{top}” makes up {_pct(max(shares))} of the ratings. With labels this "
            f"skewed the chance correction is large and {name} stays low even when raters mostly agree{agree}."
        )
    if 0 < n < FEW_ITEMS:
        notes.append(f"{name} rests on only {n} items: its interval is wide.")
    low, high = estimate.get("ci_low"), estimate.get("ci_high")
    if low is not None and high is not None and low <= 0.0 <= high:
        notes.append(f"The interval of {name} includes 0: agreement is not distinguishable from chance.")
    dropped = estimate.get("dropped") or estimate.get("unpairable") or 0
    if dropped:
        notes.append(f"{name}: {dropped} items with fewer than two ratings are left out.")
    return notes


def few_texts_note(counts: list[int], what: str = "The figures") -> list[str]:
    """One note when the smallest of ``counts`` (numbers of items behind the figures) is small."""
    positive = [c for c in counts if c]
    if positive and min(positive) < FEW_ITEMS:
        return [f"{what} rest on as few as {min(positive)} texts: their intervals are wide."]
    return []


def auc_notes(name: str, estimate: dict, few: bool = True) -> list[str]:
    """Notes for a mean per-text ROC AUC (behavioral similarity, Sen et al. 2020 Def. 4.1); ``few=False``
    leaves the few-texts note to :func:`few_texts_note`."""
    notes: list[str] = []
    skipped, texts = estimate.get("skipped") or 0, estimate.get("texts")
    if estimate.get("value") is None:
        notes.append(f"{name} is undefined: every human map is all 0 or all 1, which has no ROC AUC.")
    elif skipped:
        of = f" of {texts}" if texts else ""
        notes.append(
            f"{name}: {skipped}{of} texts are left out because their human map selects no word (or every "
            "word) and so has no ROC AUC."
        )
    if few and 0 < estimate.get("n", 0) < FEW_ITEMS:
        notes.append(f"{name} rests on only {estimate['n']} texts: its interval is wide.")
    return notes


def lexical_notes(estimates: list[tuple[str, dict, int]]) -> list[str]:
    """Notes for lexical similarities (Pearson r of two POS distributions, Sen et al. 2020 Def. 4.2), given
    as ``(name, estimate, number of words selected)``: each undefined one, and one note for the
    smallest selection when it is small."""
    notes = [
        f"{name} is undefined: one of the two selections has no tagged word."
        for name, e, _ in estimates
        if e.get("value") is None
    ]
    defined = [(words, name) for name, e, words in estimates if e.get("value") is not None]
    if defined and min(defined)[0] < FEW_SELECTED_WORDS:
        words, name = min(defined)
        notes.append(
            f"Lexical similarity compares distributions over 36 tags of as few as {words} selected words "
            f"({name}): read it as a rough indication."
        )
    return notes


def ratio_notes(name: str, estimate: dict) -> list[str]:
    """Notes for a cross-sentiment selection rate (Sen et al. 2020 Def. 4.3)."""
    if estimate.get("value") is None:
        if estimate.get("n", 0) == 0:
            return [f"{name} is undefined: no text of that class."]
        return [f"{name} is undefined: no selected word of the text's own sentiment is in the lexicon."]
    return []


def _many(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def left_out_notes(
    counts: dict[str, int], figures: str = "every figure except the annotator table"
) -> list[str]:
    """What the figures leave out by the trust rule (:meth:`annotate.dashboards.gather.StudyData.left_out`):
    the answers of excluded workers, and those of workers still short of the minimum number of golds,
    which wait until they qualify."""
    out = []
    if counts["excluded_workers"]:
        out.append(
            f"{_many(counts['excluded_answers'], 'answer')} of {_many(counts['excluded_workers'], 'worker')} "
            f"excluded by their gold trust or for risk are left out of {figures}."
        )
    if counts["waiting_workers"]:
        out.append(
            f"{_many(counts['waiting_answers'], 'answer')} of {_many(counts['waiting_workers'], 'worker')} "
            f"short of the minimum number of golds wait: they are left out of {figures}, "
            "and count once their workers qualify."
        )
    return out
