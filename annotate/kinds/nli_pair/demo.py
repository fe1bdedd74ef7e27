"""The NLI pair demo: eight made-up premise–hypothesis pairs (in the style of SNLI's photo captions)
and a running study over them; the first pair carries a gold answer. Running :func:`seed_demo` again
reuses what exists."""

from __future__ import annotations

from django.db import transaction

from annotate.corpus.demo_reviews import demo_dataset
from annotate.corpus.imports import TextRecord
from annotate.kinds.nli_pair.config import KIND
from annotate.models import Study
from annotate.studies.demo import demo_study

DATASET = "demo NLI pairs"
STUDY = "Demo: NLI pair highlighting"
INSTRUCTIONS = (
    "Read the premise and the hypothesis. Choose entailment when the premise makes the hypothesis "
    "true, contradiction when it makes it false, and neutral otherwise. Then highlight the words that "
    "justify your choice: for entailment at least one word of the premise, for contradiction at "
    "least one word of each text, for neutral only words of the hypothesis."
)
#: (premise, hypothesis, label)
PAIRS = (
    (
        "A man in a red jacket is riding a bicycle down a busy street.",
        "A person is cycling outdoors.",
        "entailment",
    ),
    (
        "Two children are building a sandcastle on the beach.",
        "The children are asleep in their beds.",
        "contradiction",
    ),
    (
        "A woman is playing the violin on a stage.",
        "The woman is performing at a famous concert hall.",
        "neutral",
    ),
    ("An old dog sleeps next to the fireplace.", "An animal is resting indoors.", "entailment"),
    ("A chef is chopping onions in a crowded kitchen.", "The kitchen is completely empty.", "contradiction"),
    (
        "Three friends are hiking up a snowy mountain trail.",
        "The friends are training for a marathon.",
        "neutral",
    ),
    ("A girl in a yellow dress holds a kite above her head.", "A child is holding a kite.", "entailment"),
    (
        "A crowd cheers as the runner crosses the finish line.",
        "Nobody is watching the race.",
        "contradiction",
    ),
)
#: The first pair's gold answer: "riding a bicycle" ↔ "cycling", "street" ↔ "outdoors".
GOLD = {
    "label": "entailment",
    "premise_map": [0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 1],
    "hypothesis_map": [0, 0, 0, 1, 1],
}


def seed_demo(owner, reviews: int) -> list[Study]:
    """The running NLI pair study owned by ``owner`` (``reviews`` does not apply: the pairs are fixed)."""
    records = [
        TextRecord(
            i + 1,
            f"nli-{i + 1:02d}",
            premise,
            label,
            {"hypothesis": hypothesis} | ({"gold": GOLD} if i == 0 else {}),
        )
        for i, (premise, hypothesis, label) in enumerate(PAIRS)
    ]
    with transaction.atomic():
        dataset = demo_dataset(owner, DATASET, records, "Made-up premise–hypothesis pairs with their labels.")
        study = demo_study(owner, dataset, STUDY, KIND, {}, INSTRUCTIONS, judges=2)
    return [study]
