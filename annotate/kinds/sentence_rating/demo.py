"""The sentence-rating demo (Pappas & Popescu-Belis 2016): synthetic reviews with star ratings for two
aspects (overall, service) that follow their sentiment; every tenth review carries gold levels for the
overall aspect (a sentence with a sentiment word explains the rating "very well", a neutral one "not at
all"). Running :func:`seed_demo` again reuses what exists.
"""

from __future__ import annotations

import random

from django.db import transaction

from annotate.corpus.demo_reviews import demo_dataset, generate_reviews
from annotate.corpus.imports import TextRecord
from annotate.kinds.sentence_rating.config import KIND
from annotate.models import Study
from annotate.studies.demo import demo_study
from explain_engine.api import sentence_spans, word_spans

DATASET = "demo reviews: sentence ratings"
STUDY = "Demo: sentence rating (overall, service)"
#: At most this many reviews: a rating study has an item per sentence and aspect.
MAX_REVIEWS = 8
SEED = 11
INSTRUCTIONS = (
    "Each question shows a review with one sentence highlighted, one aspect and the reviewer's star "
    "rating for it. Answer how much the highlighted sentence explains that rating: only sentences "
    "that express an opinion on the aspect explain it; factual sentences do not."
)
ASPECTS = [
    {"name": "overall", "title": "Overall", "description": "The whole visit: food, service and place."},
    {"name": "service", "title": "Service", "description": "The staff: friendliness, speed, attention."},
]


def aspect_ratings(label: str, rng: random.Random) -> dict[str, int]:
    """Star ratings of the aspects for a review of sentiment ``label`` (4–5 positive, 1–2 negative)."""
    high = label == "positive"
    return {a["name"]: rng.choice((4, 5) if high else (1, 2)) for a in ASPECTS}


def sentence_gold(text: str, word_map: list[int]) -> list[int]:
    """Gold level per sentence: 5 ("very well") when it holds a sentiment word, else 1 ("not at all")."""
    spans = word_spans(text)
    return [5 if any(word_map[first:end]) else 1 for first, end in sentence_spans(text, spans)]


def seed_demo(owner, reviews: int) -> list[Study]:
    """The running demo study over at most :data:`MAX_REVIEWS` synthetic reviews owned by ``owner``."""
    rng = random.Random(SEED)
    records = []
    for i, r in enumerate(generate_reviews(min(reviews, MAX_REVIEWS), seed=SEED)):
        metadata: dict = aspect_ratings(r["label"], rng)
        if i % 10 == 0:
            metadata["gold_ratings"] = {"overall": sentence_gold(r["text"], r["map"])}
        records.append(TextRecord(i + 1, r["id"], r["text"], r["label"], metadata))
    with transaction.atomic():
        dataset = demo_dataset(owner, DATASET, records, "Synthetic reviews with aspect star ratings.")
        study = demo_study(owner, dataset, STUDY, KIND, {"aspects": ASPECTS}, INSTRUCTIONS, judges=4)
    return [study]
