"""Synthetic restaurant reviews with known sentiment words, for the demo and for tests, and the demo datasets
made of them (the demo studies over them are :mod:`annotate.studies.demo`).

Each review mixes sentences that carry its sentiment (an adjective from a small positive or negative
list) with neutral sentences, so the words a careful annotator should highlight are known: they are
returned as a 0/1 map over the canonical words. The text is generated here from word lists; no
review is copied from anywhere. :func:`demo_dataset` and :func:`demo_study` are what every kind's
``demo.py`` uses to store its demo data once and start its study.
"""

from __future__ import annotations

import random

from annotate.corpus.imports import TextRecord, store_records
from annotate.models import Dataset
from explain_engine.api import word_spans

POSITIVE = (
    "delicious",
    "friendly",
    "fantastic",
    "fresh",
    "wonderful",
    "excellent",
    "cozy",
    "generous",
    "attentive",
    "perfect",
    "lovely",
    "crisp",
)
NEGATIVE = (
    "bland",
    "rude",
    "terrible",
    "stale",
    "awful",
    "dirty",
    "overpriced",
    "slow",
    "cold",
    "disappointing",
    "soggy",
    "noisy",
)
NOUNS = (
    "pasta",
    "staff",
    "service",
    "coffee",
    "dessert",
    "waiter",
    "room",
    "pizza",
    "salad",
    "soup",
    "bread",
)
OPINIONS = (
    "The {noun} was {adj}.",
    "I found the {noun} {adj}.",
    "Honestly, the {noun} seemed {adj} to me.",
    "Our {noun} was {adj} and {adj2}.",
    "What a {adj} {noun}!",
    "Everyone at the table agreed the {noun} was {adj}.",
)
NEUTRAL = (
    "We came here on a Tuesday evening.",
    "Parking was on the street around the corner.",
    "The menu has a page of daily specials.",
    "We sat near the window.",
    "It was my second visit this year.",
    "They open at noon on weekends.",
    "My sister ordered the same thing.",
)
_PUNCT = ".,!?;:\"'()"


def sentiment_map(text: str, label: str) -> list[int]:
    """1 for each canonical word that is one of the label's sentiment adjectives, else 0."""
    lexicon = set(POSITIVE if label == "positive" else NEGATIVE)
    return [int(text[s:e].strip(_PUNCT).lower() in lexicon) for s, e in word_spans(text)]


def generate_reviews(n: int, seed: int = 0) -> list[dict]:
    """``n`` reviews ``{"id", "text", "label", "map"}``, half positive and half negative, reproducible
    from ``seed``; ``map`` marks the sentiment adjectives (the words that show the label)."""
    rng = random.Random(seed)
    reviews = []
    for i in range(n):
        label = "positive" if i % 2 == 0 else "negative"
        adjectives = POSITIVE if label == "positive" else NEGATIVE
        sentences = [
            rng.choice(OPINIONS).format(
                noun=rng.choice(NOUNS), adj=rng.choice(adjectives), adj2=rng.choice(adjectives)
            )
            for _ in range(rng.randint(2, 3))
        ]
        sentences += rng.sample(NEUTRAL, rng.randint(1, 3))
        rng.shuffle(sentences)
        cut = rng.randint(1, len(sentences) - 1)
        text = " ".join(sentences[:cut]) + ("\n\n" if rng.random() < 0.4 else " ") + " ".join(sentences[cut:])
        reviews.append(
            {"id": f"demo-{i + 1:04d}", "text": text, "label": label, "map": sentiment_map(text, label)}
        )
    return reviews


def demo_dataset(owner, name: str, records: list[TextRecord], description: str) -> Dataset:
    """``owner``'s dataset ``name``, created with ``records`` when it does not exist yet."""
    dataset, created = Dataset.objects.get_or_create(
        owner=owner, name=name, defaults={"description": description, "source": "demo"}
    )
    if created:
        store_records(dataset, records)
    return dataset
