"""Questions of paper 004's three tasks, drawn from the predictions and explanations stored in the app.

Paper 004 (Lertvittayakumjorn & Toni 2019), §3 and §4.4, Table 1:

* ``reveal_model`` — two classifiers of clearly different quality; texts both predict as the same
  class; the text, that class and each model's top-m evidence highlighted in it.
* ``justify`` — one classifier; texts it predicts with ``max_c p_c > tau_h``; only the top-m
  evidence texts.
* ``investigate`` — one classifier; texts with ``max_c p_c < tau_l``; the predicted class, its
  probability, the top-m evidence and the top-m counter-evidence (shown as evidence for the other
  classes).

In every task half of the texts are predicted correctly (by both models in ``reveal_model``) and
half are not; each chosen text becomes one question per explanation method. A text qualifies only
when every selected method has explained it for the predicted class (``Explanation.target``);
evidence is taken from the stored word scores by the engine
(:func:`explain_engine.explainers.evidence.select_evidence`) with the study's ``m`` and n-gram
sizes, so one explanation run serves both the word (W) and the n-gram (N) variant of a method.
Which texts, the order of the questions and the left/right side of each model are drawn from a
generator seeded by the study's ``seed``.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from rest_framework.exceptions import ValidationError

from annotate import storage
from annotate.access import is_admin
from annotate.models import Document, Explanation, ModelRun, Prediction, Study
from annotate.tasks._forced_choice import CORRECT, MISCLASSIFIED
from annotate.tasks.highlight import word_breaks
from explain_engine.api import Evidence, select_evidence

SPLIT_FILE = "splits.json"


@dataclass(frozen=True)
class Question:
    """One question: a text (document id), what the page shows, and what it must not."""

    document_id: int
    payload: dict[str, Any]
    secret: dict[str, Any]


class TooFewTexts(ValidationError):
    """Fewer texts qualify than the study asks for; the message says how many did."""

    def __init__(self, message: str, needed: dict[str, int], found: dict[str, int]):
        self.message, self.needed, self.found = message, dict(needed), dict(found)
        super().__init__({"config": {"n_texts": [message]}})


@dataclass
class Pool:
    """The candidate texts of one model run: ids, gold and predicted labels, max probability."""

    ids: np.ndarray
    gold: np.ndarray
    predicted: np.ndarray
    max_prob: np.ndarray

    @property
    def correct(self) -> np.ndarray:
        return self.predicted == self.gold


# --------------------------------------------------------------------------------------------- inputs


def study_run(study: Study, field: str) -> ModelRun:
    """The finished run named by ``study.config[field]``, trained on the study's dataset and visible
    to the study's owner."""
    run = ModelRun.objects.filter(pk=study.config.get(field)).select_related("owner").first()
    if run is None:
        raise ValidationError({"config": {field: [f"no model run {study.config.get(field)!r}"]}})
    if run.status != ModelRun.Status.DONE:
        raise ValidationError({"config": {field: [f"model run {run.pk} has not finished training"]}})
    if study.dataset_id is None or run.dataset_id != study.dataset_id:
        raise ValidationError(
            {"dataset": [f"the study's dataset must be the one model run {run.pk} was trained on"]}
        )
    if run.owner_id != study.owner_id and not is_admin(study.owner):
        raise ValidationError({"config": {field: [f"model run {run.pk} belongs to another researcher"]}})
    return run


def split_external_ids(run: ModelRun, split: str) -> set[str]:
    """External ids of the documents the run put in ``split`` (its artifact's ``splits.json``)."""
    problem = f"model run {run.pk} has no record of its {split} split; set split to 'all'"
    try:
        path = storage.local_artifact(run.artifact) / SPLIT_FILE
        splits = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, OSError):
        raise ValidationError({"config": {"split": [problem]}}) from None
    if split not in splits:
        raise ValidationError({"config": {"split": [problem]}})
    return {str(i) for i in splits[split]}


def candidate_ids(study: Study, runs: Sequence[ModelRun], split: str) -> dict[int, str]:
    """``{document id: gold label}`` of the study's labelled documents with words, in ``split``
    of every run (``all``: every such document)."""
    rows = (
        Document.objects.filter(dataset_id=study.dataset_id)
        .exclude(label="")
        .exclude(words=[])
        .values_list("id", "external_id", "label")
    )
    if split == "all":
        return {pk: label for pk, _, label in rows}
    allowed = set.intersection(*(split_external_ids(run, split) for run in runs))
    return {pk: label for pk, ext, label in rows if ext in allowed}


def _max_probability(probabilities: Any) -> float:
    if not isinstance(probabilities, dict):
        return float("nan")
    values = [v for v in probabilities.values() if isinstance(v, int | float) and not isinstance(v, bool)]
    return float(max(values)) if values else float("nan")


def prediction_pool(run: ModelRun, gold: dict[int, str]) -> Pool:
    """The run's predictions of the candidate documents ``gold`` (sorted by document id)."""
    rows = sorted(
        (doc, label, _max_probability(probs))
        for doc, label, probs in Prediction.objects.filter(model_run=run).values_list(
            "document_id", "label", "probabilities"
        )
        if doc in gold
    )
    return Pool(
        ids=np.array([r[0] for r in rows], dtype=np.int64),
        gold=np.array([gold[r[0]] for r in rows], dtype=object),
        predicted=np.array([r[1] for r in rows], dtype=object),
        max_prob=np.array([r[2] for r in rows], dtype=np.float64),
    )


def explained_ids(run: ModelRun, targets: dict[int, str], methods: Iterable[str]) -> set[int]:
    """Documents of ``targets`` that every method in ``methods`` explained for the target class."""
    names = set(methods)
    have: dict[int, set[str]] = defaultdict(set)
    ids = list(targets)
    for start in range(0, len(ids), 5000):
        rows = Explanation.objects.filter(
            model_run=run, method__in=names, document_id__in=ids[start : start + 5000]
        ).values_list("document_id", "method", "target")
        for doc, method, target in rows:
            if targets[doc] == target:
                have[doc].add(method)
    return {doc for doc, found in have.items() if found == names}


def explanation_scores(
    run: ModelRun, targets: dict[int, str], methods: Iterable[str]
) -> dict[tuple[int, str], list]:
    """``{(document id, method): word scores}`` for the target class of each document."""
    rows = Explanation.objects.filter(
        model_run=run, method__in=set(methods), document_id__in=list(targets)
    ).values_list("document_id", "method", "target", "scores")
    return {(doc, method): scores for doc, method, target, scores in rows if targets[doc] == target}


# ------------------------------------------------------------------------------------------- choosing


def half_counts(n_texts: int) -> dict[str, int]:
    """Correctly predicted and misclassified texts wanted: half each (the odd one is a correct one)."""
    return {CORRECT: (n_texts + 1) // 2, MISCLASSIFIED: n_texts // 2}


def choose_half_and_half(
    rng: np.random.Generator,
    ids: np.ndarray,
    correct: np.ndarray,
    n_texts: int,
    describe: str,
    unexplained: int,
) -> dict[str, np.ndarray]:
    """Draw ``half_counts(n_texts)`` texts from the qualifying ``ids`` (``correct`` marks the
    correctly predicted ones); :class:`TooFewTexts` naming how many qualified otherwise."""
    needed = half_counts(n_texts)
    groups = {CORRECT: ids[correct], MISCLASSIFIED: ids[~correct]}
    found = {k: int(len(v)) for k, v in groups.items()}
    if any(found[k] < needed[k] for k in needed):
        message = (
            f"{describe}: the study needs {needed[CORRECT]} correctly predicted and {needed[MISCLASSIFIED]} "
            f"misclassified texts, but only {found[CORRECT]} correctly predicted and {found[MISCLASSIFIED]} "
            f"misclassified texts qualify"
        )
        if unexplained:
            message += (
                f" ({unexplained} more meet the rule but lack an explanation by every selected method "
                "for the predicted class: run the explanation job on them)"
            )
        raise TooFewTexts(message + ".", needed, found)
    return {k: np.sort(rng.choice(groups[k], size=needed[k], replace=False)) for k in needed}


def evidence_of(
    doc: Document, scores: Sequence, m: int, sizes: Sequence[int] | None, counter: bool = False
) -> list[Evidence]:
    """The top-m evidence (``counter``: counter-evidence) of ``doc`` from stored word scores; a
    missing score (stored as null) counts as 0."""
    values = np.array([np.nan if v is None else v for v in scores], dtype=np.float64)
    try:
        return select_evidence(doc.text, np.nan_to_num(values, nan=0.0), m, sizes, counter, doc.words)
    except ValueError as exc:
        raise ValidationError({"config": {"methods": [f"document {doc.external_id!r}: {exc}"]}}) from None


def _documents(ids: Iterable[int]) -> dict[int, Document]:
    docs = Document.objects.filter(pk__in=list(ids)).only("id", "external_id", "text", "words", "label")
    return {doc.pk: doc for doc in docs}


def _methods(study: Study) -> list[dict]:
    return list(study.config["methods"])


def _common_secret(method: dict, doc: Document, split: str, m: int) -> dict[str, Any]:
    return {
        "method": method["method"],
        "method_label": method["label"],
        "ngram_sizes": method["ngram_sizes"],
        "m": m,
        "document": doc.pk,
        "external_id": doc.external_id,
        "split": split,
        "true_label": doc.label,
    }


def _rule_pool(pool: Pool, rule: np.ndarray, run: ModelRun, names: list[str]) -> tuple[Pool, int]:
    """The part of ``pool`` that meets ``rule`` and is explained by every method; and how many met
    the rule without being explained."""
    ids = pool.ids[rule]
    targets = dict(zip(ids.tolist(), pool.predicted[rule].tolist(), strict=True))
    explained = explained_ids(run, targets, names)
    keep = rule & np.isin(pool.ids, np.fromiter(explained, dtype=np.int64, count=len(explained)))
    return (
        Pool(pool.ids[keep], pool.gold[keep], pool.predicted[keep], pool.max_prob[keep]),
        int(rule.sum() - keep.sum()),
    )


# ------------------------------------------------------------------------------------------- the tasks


def single_run_questions(study: Study, task: str) -> list[Question]:
    """Questions of ``justify`` (``max p > tau_h``) or ``investigate`` (``max p < tau_l``)."""
    config = study.config
    run = study_run(study, "model_run")
    rng = np.random.default_rng(config.get("seed", 0))
    methods = _methods(study)
    names = sorted({m["method"] for m in methods})
    pool = prediction_pool(run, candidate_ids(study, [run], config.get("split", "test")))
    if task == "justify":
        tau = config.get("tau_h", 0.9)
        rule, describe = pool.max_prob > tau, f"justify: texts predicted with max probability > {tau}"
    else:
        tau = config.get("tau_l", 0.7)
        rule, describe = pool.max_prob < tau, f"investigate: texts predicted with max probability < {tau}"
    qualified, unexplained = _rule_pool(pool, rule, run, names)
    chosen = choose_half_and_half(
        rng, qualified.ids, qualified.correct, config["n_texts"], describe, unexplained
    )
    index = {int(d): i for i, d in enumerate(qualified.ids)}
    targets = {int(d): qualified.predicted[index[int(d)]] for ids in chosen.values() for d in ids}
    scores = explanation_scores(run, targets, names)
    docs = _documents(targets)
    m = config.get("m", 3)
    labels = list(config.get("labels") or [])
    questions = []
    for split, ids in chosen.items():
        for doc_id in ids.tolist():
            doc, i = docs[doc_id], index[doc_id]
            predicted, probability = str(qualified.predicted[i]), float(qualified.max_prob[i])
            for method in methods:
                values = scores[(doc_id, method["method"])]
                secret = {
                    **_common_secret(method, doc, split, m),
                    "model_run": run.pk,
                    "predicted": predicted,
                    "probability": probability,
                }
                evidence = [e.text for e in evidence_of(doc, values, m, method["ngram_sizes"])]
                if task == "justify":
                    payload = {"evidence": evidence}
                    secret["answer"] = predicted
                else:
                    counter = [
                        e.text for e in evidence_of(doc, values, m, method["ngram_sizes"], counter=True)
                    ]
                    payload = {
                        "predicted": predicted,
                        "probability": round(probability, 4),
                        "evidence": evidence,
                        "counter_evidence": counter,
                        "counter_labels": [label for label in labels if label != predicted],
                    }
                    secret["answer"] = doc.label
                questions.append(Question(doc_id, payload, secret))
    return questions


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
    methods = _methods(study)
    names = sorted({m["method"] for m in methods})
    gold = candidate_ids(study, [better, worse], config.get("split", "test"))
    good, poor = prediction_pool(better, gold), prediction_pool(worse, gold)
    common = np.intersect1d(good.ids, poor.ids)
    good_at = np.searchsorted(good.ids, common)
    poor_at = np.searchsorted(poor.ids, common)
    good = Pool(common, good.gold[good_at], good.predicted[good_at], good.max_prob[good_at])
    poor = Pool(common, poor.gold[poor_at], poor.predicted[poor_at], poor.max_prob[poor_at])
    gap = config.get("min_accuracy_gap", 0.05)
    acc_good, acc_poor = model_accuracy(good), model_accuracy(poor)
    if not acc_good - acc_poor >= gap:
        raise ValidationError(
            {
                "config": {
                    "better_run": [
                        f"the two models must differ clearly in quality: accuracy {acc_good:.3f} (run {better.pk}) "
                        f"against {acc_poor:.3f} (run {worse.pk}) on the {len(common)} candidate texts, "
                        f"a gap under min_accuracy_gap {gap}"
                    ]
                }
            }
        )
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
    docs = _documents(picked)
    m = config.get("m", 3)
    questions = []
    for split, ids in chosen.items():
        for doc_id in ids.tolist():
            doc = docs[doc_id]
            words = [doc.text[s:e] for s, e in doc.words]
            for method in methods:
                sides = [better.pk, worse.pk] if rng.random() < 0.5 else [worse.pk, better.pk]
                evidence = {
                    side: [
                        [e.first_word, e.end_word]
                        for e in evidence_of(
                            doc, scores[run_id][(doc_id, method["method"])], m, method["ngram_sizes"]
                        )
                    ]
                    for side, run_id in zip(("A", "B"), sides, strict=True)
                }
                payload = {
                    "words": words,
                    "breaks": word_breaks(doc.text, doc.words),
                    "predicted": picked[doc_id],
                    "evidence": evidence,
                }
                secret = {
                    **_common_secret(method, doc, split, m),
                    "predicted": picked[doc_id],
                    "better_run": better.pk,
                    "worse_run": worse.pk,
                    "sides": {"A": sides[0], "B": sides[1]},
                    "answer": "A" if sides[0] == better.pk else "B",
                }
                questions.append(Question(doc_id, payload, secret))
    return questions


def build_items(study: Study, kind) -> list:
    """The unsaved items of a forced-choice study: its kind's questions in a seeded random order
    (so neither the method nor the split can be read off the order)."""
    from annotate.models import Item

    questions = kind.generate(study)
    order = np.random.default_rng([study.config.get("seed", 0), 1]).permutation(len(questions))
    return [
        Item(
            study=study,
            document_id=questions[i].document_id,
            position=position,
            payload=questions[i].payload,
            secret=questions[i].secret,
            responses_needed=study.annotators_per_item,
        )
        for position, i in enumerate(order.tolist())
    ]
