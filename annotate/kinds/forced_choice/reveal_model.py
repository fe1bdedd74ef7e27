"""The ``reveal_model`` kind (Lertvittayakumjorn & Toni 2019 §3.1, task 1): can explanations reveal the poorer model?

Two classifiers of clearly different quality (``better_run``, ``worse_run``; their accuracies on the
candidate texts must differ by ``min_accuracy_gap``); texts both predict as the same class, half
correctly and half wrongly. The annotator sees the text twice, side by side, with model A's and
model B's top-m evidence highlighted, and the predicted class; they pick the more reasonable model,
confident or not, or "no preference". Which model is A is drawn per question and recorded in the
item's secret; an answer is correct when it picks the better model.
"""

from __future__ import annotations

import numpy as np
from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from annotate.kinds.forced_choice.config import ForcedChoiceConfigSerializer
from annotate.kinds.forced_choice.generation import (
    Pool,
    Question,
    candidate_ids,
    choose_half_and_half,
    common_secret,
    documents_by_id,
    evidence_of,
    explained_ids,
    explanation_scores,
    prediction_pool,
    study_methods,
    study_run,
)
from annotate.kinds.forced_choice.kind import ForcedChoiceKind
from annotate.models import Document, ModelRun, Study
from annotate.tasks import register
from annotate.tasks.page_words import word_breaks

SIDES = ["A", "B"]


class RevealModelConfigSerializer(ForcedChoiceConfigSerializer):
    better_run = serializers.IntegerField(help_text="The better classifier (a finished model run).")
    worse_run = serializers.IntegerField(help_text="The poorer classifier, trained on the same dataset.")
    min_accuracy_gap = serializers.FloatField(
        min_value=0.0,
        max_value=1.0,
        default=0.05,
        help_text="The better run's accuracy on the candidate texts must exceed the poorer one's by this.",
    )

    def validate(self, data: dict) -> dict:
        data = super().validate(data)
        if data["better_run"] == data["worse_run"]:
            raise ValidationError({"worse_run": ["must be another model run than better_run"]})
        better = self.finished_run(data["better_run"], "better_run")
        worse = self.finished_run(data["worse_run"], "worse_run")
        if better.dataset_id != worse.dataset_id:
            raise ValidationError({"worse_run": ["must be trained on the same dataset as better_run"]})
        self.fill_labels(data, better, "better_run")
        return data


@register
class RevealModelKind(ForcedChoiceKind):
    name = "reveal_model"
    label = "Reveal the model: which of two models is more reasonable? (task 1)"
    task = 1
    title = "Which model is more reasonable?"
    config_serializer = RevealModelConfigSerializer
    payload_keys = frozenset({"words", "breaks", "predicted", "evidence"})
    instructions = (
        "Two models gave the same class to this text. The words each model relied on are highlighted. "
        "Which model is more reasonable? Say whether you are confident, or choose 'no preference'."
    )

    def options(self, study) -> list[str]:
        return list(SIDES)

    def generate(self, study) -> list[Question]:
        return reveal_model_questions(study)


def model_accuracy(pool: Pool) -> float:
    """Share of the pool's texts the run predicts correctly."""
    return float(pool.correct.mean()) if len(pool.ids) else float("nan")


def reveal_model_questions(study: Study) -> list[Question]:
    """Questions of ``reveal_model``: texts both runs predict as the same class; per method, each
    run's evidence highlighted in the text; the better run on a random side (recorded)."""
    config = study.config
    better, worse = study_run(study, "better_run"), study_run(study, "worse_run")
    if better.pk == worse.pk:
        raise ValidationError({"config": {"worse_run": ["must be another model run than better_run"]}})
    rng = np.random.default_rng(config.get("seed", 0))
    methods = study_methods(study)
    names = sorted({m["method"] for m in methods})
    gold = candidate_ids(study, [better, worse], config.get("split", "test"))
    good, poor = _common_pools(prediction_pool(better, gold), prediction_pool(worse, gold))
    _check_accuracy_gap(good, poor, config.get("min_accuracy_gap", 0.05), better, worse)
    common = good.ids
    same = good.predicted == poor.predicted
    targets = dict(zip(common[same].tolist(), good.predicted[same].tolist(), strict=True))
    explained = explained_ids(better, targets, names) & explained_ids(worse, targets, names)
    keep = same & np.isin(common, np.fromiter(explained, dtype=np.int64, count=len(explained)))
    chosen = choose_half_and_half(
        rng,
        common[keep],
        good.correct[keep],
        config["n_texts"],
        "reveal_model: texts both models predict as the same class",
        int(same.sum() - keep.sum()),
    )
    picked = {int(d): targets[int(d)] for ids in chosen.values() for d in ids}
    scores = {
        better.pk: explanation_scores(better, picked, names),
        worse.pk: explanation_scores(worse, picked, names),
    }
    docs = documents_by_id(picked)
    m = config.get("m", 3)
    return [
        _question(rng, docs[doc_id], split, method, picked[doc_id], (better.pk, worse.pk), scores, m)
        for split, ids in chosen.items()
        for doc_id in ids.tolist()
        for method in methods
    ]


def _common_pools(good: Pool, poor: Pool) -> tuple[Pool, Pool]:
    """Both runs' pools narrowed to the texts both have, in the same (id) order."""
    common = np.intersect1d(good.ids, poor.ids)
    good_at = np.searchsorted(good.ids, common)
    poor_at = np.searchsorted(poor.ids, common)
    return (
        Pool(common, good.gold[good_at], good.predicted[good_at], good.max_prob[good_at]),
        Pool(common, poor.gold[poor_at], poor.predicted[poor_at], poor.max_prob[poor_at]),
    )


def _check_accuracy_gap(good: Pool, poor: Pool, gap: float, better: ModelRun, worse: ModelRun) -> None:
    """Refuse two runs whose accuracies on the candidate texts differ by less than ``gap``."""
    acc_good, acc_poor = model_accuracy(good), model_accuracy(poor)
    if not acc_good - acc_poor >= gap:
        raise ValidationError(
            {
                "config": {
                    "better_run": [
                        f"the two models must differ clearly in quality: accuracy {acc_good:.3f} (run {better.pk}) "
                        f"against {acc_poor:.3f} (run {worse.pk}) on the {len(good.ids)} candidate texts, "
                        f"a gap under min_accuracy_gap {gap}"
                    ]
                }
            }
        )


def _question(
    rng: np.random.Generator,
    doc: Document,
    split: str,
    method: dict,
    predicted: str,
    runs: tuple[int, int],
    scores: dict[int, dict],
    m: int,
) -> Question:
    """One question: the text with the better and the poorer run (``runs``) on sides drawn from ``rng``,
    each side's top-``m`` evidence of ``method``."""
    better, worse = runs
    sides = [better, worse] if rng.random() < 0.5 else [worse, better]
    evidence = {
        side: [
            [e.first_word, e.end_word]
            for e in evidence_of(doc, scores[run_id][(doc.pk, method["method"])], m, method["ngram_sizes"])
        ]
        for side, run_id in zip(("A", "B"), sides, strict=True)
    }
    payload = {
        "words": [doc.text[s:e] for s, e in doc.words],
        "breaks": word_breaks(doc.text, doc.words),
        "predicted": predicted,
        "evidence": evidence,
    }
    secret = {
        **common_secret(method, doc, split, m),
        "predicted": predicted,
        "better_run": better,
        "worse_run": worse,
        "sides": {"A": sides[0], "B": sides[1]},
        "answer": "A" if sides[0] == better else "B",
    }
    return Question(doc.pk, payload, secret)
