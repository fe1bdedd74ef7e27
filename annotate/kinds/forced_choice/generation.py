"""What generating the questions of the three forced-choice tasks shares (Lertvittayakumjorn & Toni
2019 §3 and §4.4, Table 1): candidate texts from the predictions and explanations stored in the app.

In every task half of the texts are predicted correctly (by both models in the model-comparison task)
and half are not; each chosen text becomes one question per explanation method. A text qualifies
only when every selected method has explained it for the predicted class (``Explanation.target``);
evidence is taken from the stored word scores by the engine
(:func:`explain_engine.api.select_evidence`) with the study's ``m`` and n-gram
sizes, so one explanation run serves both the word (W) and the n-gram (N) variant of a method;
counter-evidence from the stored counter-evidence scores of a method that ranks it apart
(Grad-CAM-Text: evidence from max(∂FC/∂v, 0)·v, counter-evidence from the min, eq. 1).
Which texts, the order of the questions and the left/right side of each model are drawn from a
generator seeded by the study's ``seed``. Each task's module says which texts qualify and what a
question shows (:func:`single_run_questions` runs that for the one-model tasks).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from rest_framework.exceptions import ValidationError

from annotate.access import is_admin
from annotate.infra import storage
from annotate.machine.explaining import DETECTED_NGRAMS
from annotate.models import Document, Explanation, Item, ModelRun, Prediction, Study
from explain_engine.api import Evidence, select_evidence

SPLIT_FILE = "splits.json"
CORRECT = "correct"
MISCLASSIFIED = "misclassified"


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


@dataclass(frozen=True)
class WordScores:
    """A stored explanation's word scores, and the scores its counter-evidence is ranked by when the
    method ranks it apart (Grad-CAM-Text's min part, Lertvittayakumjorn & Toni 2019 eq. 1), else None."""

    values: list
    counter: list | None = None
    #: The word ranges the method detected itself, the only candidates for evidence (None: any n-gram).
    candidates: list[tuple[int, int]] | None = None


def explanation_scores(
    run: ModelRun, targets: dict[int, str], methods: Iterable[str]
) -> dict[tuple[int, str], WordScores]:
    """``{(document id, method): word scores}`` for the target class of each document."""
    rows = Explanation.objects.filter(
        model_run=run, method__in=set(methods), document_id__in=list(targets)
    ).values_list("document_id", "method", "target", "scores", "counter_scores", "diagnostics")
    return {
        (doc, method): WordScores(scores, counter, _detected(diagnostics))
        for doc, method, target, scores, counter, diagnostics in rows
        if targets[doc] == target
    }


def _detected(diagnostics: object) -> list[tuple[int, int]] | None:
    """The stored word ranges a method detected (:data:`annotate.machine.explaining.DETECTED_NGRAMS`)."""
    found = diagnostics.get(DETECTED_NGRAMS) if isinstance(diagnostics, dict) else None
    return None if found is None else [(int(s), int(e)) for s, e in found]


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
    doc: Document, scores: WordScores, m: int, sizes: Sequence[int] | None, counter: bool = False
) -> list[Evidence]:
    """The top-m evidence (``counter``: counter-evidence, the bottom m) of ``doc`` from stored word
    scores — counter-evidence from the method's own counter-evidence scores when it stored them; a
    missing score (stored as null) counts as 0."""
    chosen = scores.counter if counter and scores.counter is not None else scores.values
    values = np.array([np.nan if v is None else v for v in chosen], dtype=np.float64)
    try:
        return select_evidence(
            doc.text,
            np.nan_to_num(values, nan=0.0),
            m,
            sizes,
            counter,
            doc.words,
            candidates=scores.candidates,
        )
    except ValueError as exc:
        raise ValidationError({"config": {"methods": [f"document {doc.external_id!r}: {exc}"]}}) from None


def documents_by_id(ids: Iterable[int]) -> dict[int, Document]:
    docs = Document.objects.filter(pk__in=list(ids)).only("id", "external_id", "text", "words", "label")
    return {doc.pk: doc for doc in docs}


def study_methods(study: Study) -> list[dict]:
    return list(study.config["methods"])


def common_secret(method: dict, doc: Document, split: str, m: int) -> dict[str, Any]:
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


#: Which texts of a one-model task qualify: ``(mask over the pool, description)`` from the pool and config.
Rule = Callable[[Pool, dict], tuple[np.ndarray, str]]
#: What a one-model question shows and its correct option: ``(payload, answer)`` from the text's
#: document, its word scores, the method, ``m``, the predicted class and its probability, and the labels.
Show = Callable[[Document, WordScores, dict, int, str, float, list[str]], tuple[dict[str, Any], str]]


def single_run_questions(study: Study, rule: Rule, show: Show) -> list[Question]:
    """Questions of a task on one classifier (``study.config["model_run"]``): the texts that meet
    ``rule``, half predicted correctly and half not, each shown per method as ``show`` says."""
    config = study.config
    run = study_run(study, "model_run")
    rng = np.random.default_rng(config.get("seed", 0))
    methods = study_methods(study)
    names = sorted({m["method"] for m in methods})
    pool = prediction_pool(run, candidate_ids(study, [run], config.get("split", "test")))
    mask, describe = rule(pool, config)
    qualified, unexplained = _rule_pool(pool, mask, run, names)
    chosen = choose_half_and_half(
        rng, qualified.ids, qualified.correct, config["n_texts"], describe, unexplained
    )
    index = {int(d): i for i, d in enumerate(qualified.ids)}
    targets = {int(d): qualified.predicted[index[int(d)]] for ids in chosen.values() for d in ids}
    scores = explanation_scores(run, targets, names)
    docs = documents_by_id(targets)
    m = config.get("m", 3)
    labels = list(config.get("labels") or [])
    questions = []
    for split, ids in chosen.items():
        for doc_id in ids.tolist():
            doc, i = docs[doc_id], index[doc_id]
            predicted, probability = str(qualified.predicted[i]), float(qualified.max_prob[i])
            for method in methods:
                values = scores[(doc_id, method["method"])]
                payload, answer = show(doc, values, method, m, predicted, probability, labels)
                secret = {
                    **common_secret(method, doc, split, m),
                    "model_run": run.pk,
                    "predicted": predicted,
                    "probability": probability,
                    "answer": answer,
                }
                questions.append(Question(doc_id, payload, secret))
    return questions


def build_items(study: Study, kind) -> list:
    """The unsaved items of a forced-choice study: its kind's questions in a seeded random order
    (so neither the method nor the split can be read off the order)."""
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
