"""The token-marking demo (Prasad et al. 2021's expert token marking, on reviews):
each synthetic review gets a one-sentence explanation that names its sentiment words, and every fifth
review carries those words as its gold marks. Running :func:`seed_demo` again reuses what exists.
"""

from __future__ import annotations

from django.db import transaction

from annotate.corpus.demo_reviews import NEGATIVE, POSITIVE, demo_dataset, generate_reviews
from annotate.corpus.imports import TextRecord
from annotate.kinds.token_marking.config import KIND
from annotate.models import Study
from annotate.studies.demo import demo_study
from explain_engine.api import word_spans

DATASET = "demo reviews: explanations"
STUDY = "Demo: token marking from explanations"
#: At most this many reviews, as few as the sentence-rating demo's.
MAX_REVIEWS = 8
SEED = 11
INSTRUCTIONS = (
    "Each question shows a review, its sentiment and an explanation someone wrote for it. Mark the "
    "words of the review that the explanation's author thought were important."
)
_PUNCT = ".,!?;:\"'()"


def explanation_for(text: str, label: str, word_map: list[int]) -> str:
    """A one-sentence explanation naming the review's sentiment words."""
    words = []
    for (start, end), marked in zip(word_spans(text), word_map, strict=True):
        word = text[start:end].strip(_PUNCT).lower()
        if marked and word not in words:
            words.append(word)
    if not words:
        lexicon = POSITIVE if label == "positive" else NEGATIVE
        return f"Nothing in it sounds {lexicon[0]} or otherwise, but the review is {label}."
    listed = words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
    return f"The reviewer calls things {listed}, which is why the review is {label}."


def seed_demo(owner, reviews: int) -> list[Study]:
    """The running demo study over at most :data:`MAX_REVIEWS` synthetic reviews owned by ``owner``."""
    records = []
    for i, r in enumerate(generate_reviews(min(reviews, MAX_REVIEWS), seed=SEED)):
        explanation = {"explanation": explanation_for(r["text"], r["label"], r["map"])}
        if i % 5 == 0 and any(r["map"]):
            explanation["gold_marks"] = r["map"]
        records.append(TextRecord(i + 1, r["id"], r["text"], r["label"], explanation))
    with transaction.atomic():
        dataset = demo_dataset(owner, DATASET, records, "Synthetic reviews with explanations.")
        study = demo_study(owner, dataset, STUDY, KIND, {}, INSTRUCTIONS, judges=3)
    return [study]
