"""Demo studies of the sentence_rating (paper 001) and token_marking (paper 003) kinds.

Both use :mod:`annotate.demo`'s synthetic restaurant reviews. For sentence rating each review gets star
ratings for two aspects (overall, service) that follow its sentiment; every tenth review carries gold
levels for the overall aspect (a sentence with a sentiment word explains the rating "very well", a
neutral one "not at all"). For token marking each review gets a one-sentence explanation that names
its sentiment words, and every fifth review carries those words as its gold marks. Running
:func:`seed_rating_demos` again reuses what exists.
"""

from __future__ import annotations

import random

from django.db import transaction

from annotate.corpus import TextRecord, store_records
from annotate.demo import NEGATIVE, POSITIVE, generate_reviews
from annotate.lifecycle import start_study
from annotate.models import Dataset, Study
from annotate.tasks import get_kind
from explain_engine.text import sentence_spans, word_spans

RATING_DATASET = "demo reviews: sentence ratings"
MARKING_DATASET = "demo reviews: explanations"
RATING_STUDY = "Demo: sentence rating (overall, service)"
MARKING_STUDY = "Demo: token marking from explanations"
ASPECTS = [
    {"name": "overall", "title": "Overall", "description": "The whole visit: food, service and place."},
    {"name": "service", "title": "Service", "description": "The staff: friendliness, speed, attention."},
]
_PUNCT = ".,!?;:\"'()"


def aspect_ratings(label: str, rng: random.Random) -> dict[str, int]:
    """Star ratings of the aspects for a review of sentiment ``label`` (4–5 positive, 1–2 negative)."""
    high = label == "positive"
    return {a["name"]: rng.choice((4, 5) if high else (1, 2)) for a in ASPECTS}


def sentence_gold(text: str, word_map: list[int]) -> list[int]:
    """Gold level per sentence: 5 ("very well") when it holds a sentiment word, else 1 ("not at all")."""
    spans = word_spans(text)
    return [5 if any(word_map[first:end]) else 1 for first, end in sentence_spans(text, spans)]


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


def _dataset(owner, name: str, records: list[TextRecord], description: str) -> Dataset:
    dataset, created = Dataset.objects.get_or_create(
        owner=owner, name=name, defaults={"description": description, "source": "demo"}
    )
    if created:
        store_records(dataset, records)
    return dataset


def _study(
    owner, dataset: Dataset, name: str, kind: str, config: dict, instructions: str, judges: int
) -> Study:
    study = Study.objects.filter(owner=owner, name=name).first()
    if study is None:
        study = Study.objects.create(
            name=name,
            owner=owner,
            dataset=dataset,
            kind=kind,
            config=get_kind(kind).validate_config(config),
            instructions=instructions,
            annotators_per_item=judges,
            time_limit_s=900,
            provider_config={"open_enrollment": True},
        )
    if study.status == Study.Status.DRAFT:
        start_study(study)
    return study


def seed_rating_demos(owner, reviews: int = 8, seed: int = 11) -> list[Study]:
    """Create (or reuse) the two demo datasets and their running studies; returns the studies."""
    rng = random.Random(seed)
    generated = generate_reviews(reviews, seed=seed)
    rating_records, marking_records = [], []
    for i, r in enumerate(generated):
        metadata = aspect_ratings(r["label"], rng)
        if i % 10 == 0:
            metadata["gold_ratings"] = {"overall": sentence_gold(r["text"], r["map"])}
        rating_records.append(TextRecord(i + 1, r["id"], r["text"], r["label"], metadata))
        explanation = {"explanation": explanation_for(r["text"], r["label"], r["map"])}
        if i % 5 == 0 and any(r["map"]):
            explanation["gold_marks"] = r["map"]
        marking_records.append(TextRecord(i + 1, r["id"], r["text"], r["label"], explanation))
    with transaction.atomic():
        rating_data = _dataset(
            owner, RATING_DATASET, rating_records, "Synthetic reviews with aspect star ratings."
        )
        marking_data = _dataset(
            owner, MARKING_DATASET, marking_records, "Synthetic reviews with explanations."
        )
        rating = _study(
            owner,
            rating_data,
            RATING_STUDY,
            "sentence_rating",
            {"aspects": ASPECTS},
            "Each question shows a review with one sentence highlighted, one aspect and the reviewer's star "
            "rating for it. Answer how much the highlighted sentence explains that rating: only sentences "
            "that express an opinion on the aspect explain it; factual sentences do not.",
            judges=4,
        )
        marking = _study(
            owner,
            marking_data,
            MARKING_STUDY,
            "token_marking",
            {},
            "Each question shows a review, its sentiment and an explanation someone wrote for it. Mark the "
            "words of the review that the explanation's author thought were important.",
            judges=3,
        )
    return [rating, marking]
