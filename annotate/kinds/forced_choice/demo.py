"""Demo studies of the three forced-choice tasks (Lertvittayakumjorn & Toni 2019), built from tiny CNNs trained in-process.

The reviews extend :mod:`annotate.corpus.demo_reviews`'s synthetic restaurant reviews with two harder styles, so
that a well-trained model still makes the mistakes the tasks need:

* ``plain`` — one sentiment throughout (the demo reviews);
* ``negated`` — sentiment words under a negation ("The pasta was not fresh."): a model trained on
  plain reviews only reads the adjectives and is confidently wrong (``justify``'s misclassified
  half, ``reveal_model``'s shared mistakes);
* ``mixed`` — one positive and one negative opinion, labelled by the verdict sentence the model
  has never seen: predictions are unsure, right about half of the time (``investigate``).

Both CNNs (Lertvittayakumjorn & Toni 2019 §4.2; tiny sizes) train on the plain reviews only (``train_where``); the poorer
one is the paper's under-trained twin (one epoch), and scores lower on the held-out test split as on
every text. Training, predictions and explanations go
through the app's machine pipeline (:mod:`annotate.machine`), so the model runs appear on the
model pages like any other. With tiny models this takes seconds on one CPU thread.
"""

from __future__ import annotations

import random
from typing import Any

from django.db import transaction

from annotate.corpus.demo_reviews import NEGATIVE, NEUTRAL, NOUNS, POSITIVE, generate_reviews
from annotate.corpus.imports import TextRecord, store_records
from annotate.kinds.forced_choice.kind import ForcedChoiceKind
from annotate.machine import (
    clean_explanation_params,
    create_model_run,
    run_explanations,
    run_training,
    set_torch_threads,
)
from annotate.models import Dataset, ModelRun, Study
from annotate.studies.lifecycle import start_study
from annotate.tasks import get_kind

DATASET = "demo reviews: explanation evaluation"
GOOD_RUN = "demo CNN (well trained)"
POOR_RUN = "demo CNN (one epoch)"
CNN = {"embedding_dim": 16, "filter_sizes": [2, 3], "num_filters": 8, "fc_size": 16, "dropout": 0.2}
GOOD_PARAMS: dict[str, Any] = {
    "epochs": 15,
    "batch_size": 8,
    "lr": 0.01,
    "min_count": 1,
    "patience": None,
    "train_where": {"style": ["plain"]},
    "model": CNN,
}
POOR_PARAMS: dict[str, Any] = {**GOOD_PARAMS, "epochs": 1, "lr": 0.001}
DEMO_METHODS: list[dict[str, Any]] = [
    {"method": "lrp"},
    {"method": "lrp", "ngram_sizes": [2, 3]},
    {"method": "gradcam", "ngram_sizes": [2, 3]},
    {"method": "random"},
]
DEMO_TEXTS = 6
#: Plain reviews: enough that the held-out test split has 20 or more texts and the well-trained CNN
#: meets their words in training (with 48 its 8 test texts scored 0.500, below the one-epoch twin).
PLAIN_REVIEWS = 200
#: Mixed reviews: enough that the better-trained CNN still has unsure predictions (max p < 0.7) right
#: and wrong for ``investigate``.
MIXED_REVIEWS = 60
NEGATED = (
    "The {noun} was not {adj} at all.",
    "I would not call the {noun} {adj}.",
    "Sadly the {noun} was never {adj}.",
)
MIXED = (
    "The {noun} was {pos}, but the {noun2} was {neg}.",
    "I found the {noun} {neg} and the {noun2} {pos}.",
)
VERDICT = {"positive": "Overall we will return.", "negative": "Overall we will not return."}


def _negated(rng: random.Random, i: int) -> dict:
    label = "negative" if i % 2 == 0 else "positive"
    adjectives = POSITIVE if label == "negative" else NEGATIVE
    opinions = [
        rng.choice(NEGATED).format(noun=rng.choice(NOUNS), adj=rng.choice(adjectives)) for _ in range(2)
    ]
    sentences = opinions + rng.sample(NEUTRAL, 2)
    rng.shuffle(sentences)
    return {"id": f"negated-{i + 1:03d}", "text": " ".join(sentences), "label": label, "style": "negated"}


def _mixed(rng: random.Random, i: int) -> dict:
    label = "positive" if i % 2 == 0 else "negative"
    noun, noun2 = rng.sample(NOUNS, 2)
    opinion = rng.choice(MIXED).format(
        noun=noun, noun2=noun2, pos=rng.choice(POSITIVE), neg=rng.choice(NEGATIVE)
    )
    sentences = [opinion, *rng.sample(NEUTRAL, 2)]
    rng.shuffle(sentences)
    return {
        "id": f"mixed-{i + 1:03d}",
        "text": " ".join([*sentences, VERDICT[label]]),
        "label": label,
        "style": "mixed",
    }


def evaluation_reviews(
    plain: int = PLAIN_REVIEWS, negated: int = 14, mixed: int = MIXED_REVIEWS, seed: int = 11
) -> list[dict]:
    """Reviews ``{"id", "text", "label", "style"}``: ``plain`` demo reviews, ``negated`` and ``mixed``
    ones; reproducible from ``seed``; half of each style positive."""
    rng = random.Random(seed)
    reviews = [
        {**r, "id": f"plain-{i + 1:03d}", "style": "plain"}
        for i, r in enumerate(generate_reviews(plain, seed))
    ]
    reviews += [_negated(rng, i) for i in range(negated)]
    reviews += [_mixed(rng, i) for i in range(mixed)]
    return [{k: r[k] for k in ("id", "text", "label", "style")} for r in reviews]


def evaluation_dataset(owner, name: str = DATASET, **sizes: int) -> Dataset:
    """The dataset of :func:`evaluation_reviews` (created once per owner and name)."""
    dataset, created = Dataset.objects.get_or_create(
        owner=owner,
        name=name,
        defaults={"description": "Synthetic reviews: plain, negated and mixed sentiment.", "source": "demo"},
    )
    if created:
        records = [
            TextRecord(
                line=i + 1, id=r["id"], text=r["text"], label=r["label"], metadata={"style": r["style"]}
            )
            for i, r in enumerate(evaluation_reviews(**sizes))
        ]
        store_records(dataset, records)
    return dataset


def trained_run(owner, dataset: Dataset, name: str, params: dict, methods: list[str]) -> ModelRun:
    """A CNN run of ``dataset`` trained in this process with its predictions and the explanations
    of ``methods`` for the predicted class (reused when a finished run of that name exists)."""
    run = ModelRun.objects.filter(
        owner=owner, dataset=dataset, name=name, status=ModelRun.Status.DONE
    ).first()
    if run is None:
        run = create_model_run(owner, dataset, "cnn", params, name=name)
        run = run_training(run.pk)
    explanation = clean_explanation_params(run, {"methods": methods, "target": "predicted", "m": 3})
    run_explanations(run.pk, explanation)
    return run


def demo_configs(good: ModelRun, poor: ModelRun, n_texts: int = DEMO_TEXTS) -> dict[str, dict]:
    """The three demo studies' configs. The demo draws from all documents (``split: all``): its
    dataset is too small for a test split of useful size."""
    common = {"methods": DEMO_METHODS, "m": 3, "n_texts": n_texts, "split": "all", "seed": 5}
    return {
        "reveal_model": {**common, "better_run": good.pk, "worse_run": poor.pk},
        "justify": {**common, "model_run": good.pk, "tau_h": 0.9},
        "investigate": {**common, "model_run": good.pk, "tau_l": 0.7},
    }


def seed_evaluation_demo(researcher, annotators_per_item: int = 3, start: bool = True) -> list[Study]:
    """Running demo studies of ``reveal_model``, ``justify`` and ``investigate`` owned by
    ``researcher`` (existing ones of the same names are reused)."""
    set_torch_threads()
    dataset = evaluation_dataset(researcher)
    names = sorted({m["method"] for m in DEMO_METHODS})
    good = trained_run(researcher, dataset, GOOD_RUN, GOOD_PARAMS, names)
    poor = trained_run(researcher, dataset, POOR_RUN, POOR_PARAMS, names)
    studies = []
    for kind_name, config in demo_configs(good, poor).items():
        kind = get_kind(kind_name)
        assert isinstance(kind, ForcedChoiceKind)
        title = f"Demo: {kind_name.replace('_', ' ')} (Lertvittayakumjorn & Toni 2019)"
        with transaction.atomic():
            study = Study.objects.filter(owner=researcher, name=title).first()
            if study is None:
                study = Study.objects.create(
                    name=title,
                    owner=researcher,
                    dataset=dataset,
                    kind=kind_name,
                    config=kind.validate_config(config),
                    instructions=kind.instructions,
                    annotators_per_item=annotators_per_item,
                    time_limit_s=900,
                    provider_config={"open_enrollment": True},
                )
            if start and study.status == Study.Status.DRAFT:
                start_study(study)
        studies.append(study)
    return studies


def seed_demo(owner, reviews: int) -> list[Study]:
    """The family's demo studies (``reviews`` does not apply: the classifiers need the corpus above)."""
    return seed_evaluation_demo(owner)
