"""The demo's three studies, and the three generators on its tiny CNNs (trained here through the app's
machine pipeline): each selection rule is checked against the stored predictions, and the too-few
error against an independent count of the qualifying texts."""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.test import override_settings

from annotate.kinds.forced_choice.demo import (
    DATASET,
    DEMO_METHODS,
    DEMO_TEXTS,
    GOOD_RUN,
    POOR_RUN,
    demo_configs,
    seed_evaluation_demo,
)
from annotate.kinds.forced_choice.generation import TooFewTexts, build_items, split_external_ids
from annotate.machine.splits import TINY_SPLIT, split_warnings
from annotate.models import Explanation, ModelRun, Prediction, Study
from annotate.tasks import get_kind

METHODS = ["gradcam", "random"]


@pytest.fixture(scope="module")
def trained(django_db_setup, django_db_blocker):
    """The demo: a well-trained and a one-epoch CNN on the evaluation reviews with their predictions
    and explanations, and a running study of each task (stored outside the tests' transactions;
    removed at the end)."""
    media = tempfile.mkdtemp(prefix="hatlab-fc-")
    with django_db_blocker.unblock(), override_settings(MEDIA_ROOT=media):
        owner = User.objects.create_user("trainer", password="x" * 12)
        studies = seed_evaluation_demo(owner)
        good = ModelRun.objects.get(owner=owner, name=GOOD_RUN)
        poor = ModelRun.objects.get(owner=owner, name=POOR_RUN)
        dataset = good.dataset
        yield {
            "owner": owner,
            "dataset": dataset,
            "good": good,
            "poor": poor,
            "media": media,
            "studies": studies,
        }
        Study.objects.filter(owner=owner).delete()
        ModelRun.objects.filter(owner=owner).delete()
        dataset.delete()
        owner.delete()
    shutil.rmtree(media, ignore_errors=True)


def table(run: ModelRun) -> dict[int, tuple[str, str, float]]:
    """``{document: (gold, predicted, max probability)}`` from the stored predictions."""
    rows = Prediction.objects.filter(model_run=run).values_list(
        "document_id", "document__label", "label", "probabilities"
    )
    return {d: (gold, label, max(p.values())) for d, gold, label, p in rows}


def study_of(trained, kind: str, **overrides) -> Study:
    config = {**demo_configs(trained["good"], trained["poor"])[kind], "methods": METHODS, **overrides}
    return Study(
        owner=trained["owner"],
        dataset=trained["dataset"],
        kind=kind,
        config=get_kind(kind).validate_config(config),
    )


def split_counts(items) -> Counter:
    return Counter({d: s for d, s in ((i.document_id, i.secret["split"]) for i in items)}.values())


pytestmark = pytest.mark.django_db


def test_demo_builds_a_running_study_of_each_task(trained, settings):
    studies = trained["studies"]
    assert [s.kind for s in studies] == ["reveal_model", "justify", "investigate"]
    assert trained["dataset"].name == DATASET
    for study in studies:
        study.refresh_from_db()
        items = list(study.items.all())
        assert study.status == Study.Status.RUNNING and study.annotators_per_item == 3
        assert len(items) == DEMO_TEXTS * len(DEMO_METHODS)
        assert split_counts(items) == {"correct": DEMO_TEXTS // 2, "misclassified": DEMO_TEXTS // 2}
        assert study.provider_config == {"open_enrollment": True} and study.instructions
    settings.MEDIA_ROOT = trained["media"]
    again = seed_evaluation_demo(trained["owner"])  # a second run reuses studies and model runs
    assert [s.pk for s in again] == [s.pk for s in studies]
    assert ModelRun.objects.filter(owner=trained["owner"]).count() == 2


def test_the_models_learned_and_differ(trained):
    good, poor = table(trained["good"]), table(trained["poor"])
    accuracy = {n: np.mean([g == p for g, p, _ in t.values()]) for n, t in (("good", good), ("poor", poor))}
    assert accuracy["good"] > accuracy["poor"] + 0.05
    # as their names say on the model pages: the well-trained one is the better on the held-out test
    # split too, and that split is large enough to say so
    test = {n: trained[n].metrics["test"] for n in ("good", "poor")}
    assert test["good"]["accuracy"] > test["poor"]["accuracy"] + 0.1, test
    assert split_warnings(trained["good"]) == [] and test["good"]["n"] >= TINY_SPLIT
    assert Explanation.objects.filter(model_run=trained["good"], method__in=METHODS).count() == 2 * len(good)


def test_justify_on_a_trained_model(trained):
    preds = table(trained["good"])
    qualified = Counter("correct" if g == y else "misclassified" for g, y, p in preds.values() if p > 0.9)
    n = 2 * min(qualified["misclassified"], 3)
    assert n >= 2, f"negated reviews should fool the model confidently: {qualified}"
    study = study_of(trained, "justify", n_texts=n, seed=3)
    items = build_items(study, get_kind("justify"))
    assert split_counts(items) == {"correct": n // 2, "misclassified": n // 2}
    for item in items:
        gold, predicted, p = preds[item.document_id]
        assert p > 0.9 and item.secret["answer"] == predicted
        assert (gold == predicted) == (item.secret["split"] == "correct")
        assert 1 <= len(item.payload["evidence"]) <= 3
    study.config["n_texts"] = 2 * (qualified["misclassified"] + 1)
    with pytest.raises(TooFewTexts) as caught:
        build_items(study, get_kind("justify"))
    assert caught.value.found == {
        "correct": qualified["correct"],
        "misclassified": qualified["misclassified"],
    }


def test_investigate_on_a_trained_model(trained):
    preds = table(trained["good"])
    qualified = Counter("correct" if g == y else "misclassified" for g, y, p in preds.values() if p < 0.7)
    n = 2 * min(qualified["correct"], qualified["misclassified"], 2)
    assert n >= 2, f"the tiny model should be unsure about some mixed reviews: {qualified}"
    items = build_items(study_of(trained, "investigate", n_texts=n), get_kind("investigate"))
    assert split_counts(items) == {"correct": n // 2, "misclassified": n // 2}
    for item in items:
        gold, predicted, p = preds[item.document_id]
        assert p < 0.7 and item.payload["predicted"] == predicted and item.secret["answer"] == gold
        assert item.payload["probability"] == round(p, 4)
    study = study_of(trained, "investigate", n_texts=2 * (qualified["correct"] + 1))
    with pytest.raises(TooFewTexts) as caught:
        build_items(study, get_kind("investigate"))
    assert caught.value.found == dict(qualified) | {
        k: 0 for k in ("correct", "misclassified") if k not in qualified
    }


def test_reveal_model_on_trained_models(trained):
    good, poor = table(trained["good"]), table(trained["poor"])
    same = {d for d in good if d in poor and good[d][1] == poor[d][1]}
    qualified = Counter("correct" if good[d][0] == good[d][1] else "misclassified" for d in same)
    n = 2 * min(qualified["misclassified"], 3)
    assert n >= 2, f"both models should share some mistakes: {qualified}"
    items = build_items(study_of(trained, "reveal_model", n_texts=n), get_kind("reveal_model"))
    assert split_counts(items) == {"correct": n // 2, "misclassified": n // 2}
    for item in items:
        assert item.document_id in same
        assert item.payload["predicted"] == good[item.document_id][1]
        better_side = "A" if item.secret["sides"]["A"] == trained["good"].pk else "B"
        assert item.secret["answer"] == better_side
    study = study_of(trained, "reveal_model", n_texts=2 * (qualified["misclassified"] + 1))
    with pytest.raises(TooFewTexts) as caught:
        build_items(study, get_kind("reveal_model"))
    assert caught.value.found == {
        "correct": qualified["correct"],
        "misclassified": qualified["misclassified"],
    }


def test_test_split_of_a_trained_run(trained, settings):
    settings.MEDIA_ROOT = trained["media"]
    test_ids = split_external_ids(trained["good"], "test")
    assert test_ids, "training records its test split"
    items = build_items(study_of(trained, "justify", n_texts=2, split="test"), get_kind("justify"))
    docs = dict(trained["dataset"].documents.values_list("id", "external_id"))
    assert len(items) == 2 * len(METHODS)
    assert all(docs[i.document_id] in test_ids for i in items)
    everything = set(docs.values())
    assert len(test_ids) < len(everything) / 4  # the test split is a small part of the dataset
