"""The highlight demo: synthetic restaurant reviews whose sentiment words are known, and a running
read-first study over them (every tenth review a gold item)."""

from __future__ import annotations

from django.db import transaction

from annotate.corpus.demo_reviews import demo_dataset, generate_reviews
from annotate.corpus.imports import TextRecord
from annotate.kinds.highlight.config import KIND
from annotate.models import Study
from annotate.studies.demo import demo_study

DATASET = "demo reviews"
STUDY = "Demo: read-first highlighting"
GOLD_EVERY = 10
INSTRUCTIONS = (
    "Read the review and choose its sentiment first. Then click every word that shows "
    "that sentiment. Choose 'cannot decide' when the review gives no clear sentiment."
)


def seed_demo(owner, reviews: int) -> list[Study]:
    """A running read-first study over ``reviews`` synthetic reviews owned by ``owner``; running it
    again reuses the dataset and the study."""
    records = [
        TextRecord(
            line=i + 1,
            id=r["id"],
            text=r["text"],
            label=r["label"],
            metadata={"sentiment_map": r["map"]}
            | ({"gold": {"label": r["label"], "map": r["map"]}} if i % GOLD_EVERY == 0 else {}),
        )
        for i, r in enumerate(generate_reviews(reviews, seed=7))
    ]
    with transaction.atomic():
        dataset = demo_dataset(
            owner, DATASET, records, "Synthetic restaurant reviews with known sentiment words."
        )
        study = demo_study(owner, dataset, STUDY, KIND, {"mode": "read_first"}, INSTRUCTIONS, judges=3)
    return [study]
