"""Crowd labels aggregated per task: (weighted) majority vote and Dawid & Skene (1979).

Both take one entry per answer — the task, the worker, the label given — and return, per task, a
probability over the categories and the chosen label. Written with numpy over integer codes: an answer
table is a few ``np.add.at`` calls and each EM step of Dawid–Skene two ``einsum``s, with no pandas
and no loop over tasks or workers.

Ties are broken deterministically: the chosen label is the *first* most probable category in the
order of ``categories`` (by default the sorted distinct labels), which is also crowd-kit's rule
(``idxmax`` over sorted columns). A crowd label (:func:`winning_category`, used by the majority vote
with ``tie_weights`` and by the sentence ratings) goes to the category with the most answers; a tie to
the one with more trust behind it; a tie in trust too to the first category in order. Dawid–Skene follows crowd-kit's ``DawidSkene`` step for step
(initialised by the unweighted majority vote, error rates clipped at 1e-10, stopped when the evidence
lower bound per answer rises by less than ``tol``), so the two agree to float precision; crowd-kit is
only the tests' reference.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Per-answer columns: a sequence or a NumPy array (a data frame's column as ``to_numpy`` gives it).
Column = Sequence[Hashable] | np.ndarray
WeightColumn = Sequence[float] | np.ndarray

EPS = 1e-10


@dataclass(frozen=True)
class Aggregation:
    """Per task (sorted task ids): its number of answers, the probability of each category, the chosen
    label and its probability.

    ``label`` is None (and the probabilities NaN) for a task whose answers carry no weight at all.
    """

    tasks: np.ndarray
    answers: np.ndarray
    categories: list
    probabilities: np.ndarray
    label: list
    probability: np.ndarray
    iterations: int = 0


@dataclass(frozen=True)
class _Coded:
    tasks: np.ndarray
    task: np.ndarray
    workers: np.ndarray
    worker: np.ndarray
    categories: list
    label: np.ndarray


def _encode(tasks: Column, workers: Column, labels: Column, categories) -> _Coded:
    tasks_a, workers_a = np.asarray(tasks), np.asarray(workers)
    if not (len(tasks_a) == len(workers_a) == len(labels)):
        raise ValueError("tasks, workers and labels need one entry per answer")
    distinct: set[Any] = set(labels)
    cats = sorted(distinct) if categories is None else list(categories)
    index = {c: i for i, c in enumerate(cats)}
    unknown = [lab for lab in labels if lab not in index]
    if unknown:
        raise ValueError(f"label {unknown[0]!r} is not one of the categories {cats}")
    task_ids, task = np.unique(tasks_a, return_inverse=True)
    worker_ids, worker = np.unique(workers_a, return_inverse=True)
    label = np.fromiter((index[lab] for lab in labels), dtype=np.int64, count=len(labels))
    return _Coded(task_ids, task.ravel(), worker_ids, worker.ravel(), cats, label)


def _result(coded: _Coded, probabilities: np.ndarray, iterations: int = 0) -> Aggregation:
    rows = np.arange(probabilities.shape[0])
    defined = np.isfinite(probabilities).all(axis=1)
    best = np.argmax(np.where(defined[:, None], probabilities, -np.inf), axis=1)  # first maximum
    label = [coded.categories[b] if ok else None for b, ok in zip(best, defined, strict=True)]
    probability = np.where(defined, probabilities[rows, best], np.nan)
    answers = np.bincount(coded.task, minlength=coded.tasks.size)
    return Aggregation(coded.tasks, answers, coded.categories, probabilities, label, probability, iterations)


def winning_category(counts: np.ndarray, tie_weights: np.ndarray) -> np.ndarray:
    """Per row of a tasks × categories table, the index of the winning category: the most answers
    (``counts``); among those tied, the most weight behind it (``tie_weights``, e.g. the summed trust
    of the workers who gave it); still tied, the first category. The one tie rule of every crowd label."""
    counts = np.asarray(counts, dtype=np.float64)
    tie_weights = np.asarray(tie_weights, dtype=np.float64)
    if counts.shape != tie_weights.shape or counts.ndim != 2:
        raise ValueError("counts and tie_weights must be tasks × categories tables of one shape")
    if counts.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    tied = np.isclose(counts, counts.max(axis=1, keepdims=True), rtol=1e-12, atol=1e-12)
    weight = np.where(tied, tie_weights, -np.inf)
    best = np.isclose(weight, weight.max(axis=1, keepdims=True), rtol=1e-12, atol=1e-12) & tied
    return np.argmax(best, axis=1)  # the first of the remaining ties


def _vote_table(coded: _Coded, weights: np.ndarray) -> np.ndarray:
    table = np.zeros((coded.tasks.size, len(coded.categories)))
    np.add.at(table, (coded.task, coded.label), weights)
    total = table.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total > 0, table / total, np.nan)


def majority_vote(
    tasks: Column,
    workers: Column,
    labels: Column,
    weights: WeightColumn | None = None,
    categories: Sequence[Hashable] | None = None,
    tie_weights: WeightColumn | None = None,
) -> Aggregation:
    """Per task, the share of the answers (or of the answer ``weights``, e.g. the trust of the worker
    who gave each answer) behind each category, and the category with the largest share.

    With ``tie_weights`` (one per answer), a tie in that share goes to the category with more
    ``tie_weights`` behind it, then to the first category (:func:`winning_category`)."""
    coded = _encode(tasks, workers, labels, categories)
    w = np.ones(coded.label.size) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != coded.label.shape:
        raise ValueError("weights need one entry per answer")
    table = _vote_table(coded, w)
    if tie_weights is None:
        return _result(coded, table)
    tw = np.asarray(tie_weights, dtype=np.float64)
    if tw.shape != coded.label.shape:
        raise ValueError("tie_weights need one entry per answer")
    behind = np.zeros_like(table)
    np.add.at(behind, (coded.task, coded.label), tw)
    result = _result(coded, table)
    defined = np.isfinite(table).all(axis=1)
    best = winning_category(np.nan_to_num(table, nan=0.0), behind)
    rows = np.arange(table.shape[0])
    label = [coded.categories[b] if ok else None for b, ok in zip(best, defined, strict=True)]
    probability = np.where(defined, table[rows, best], np.nan)
    return Aggregation(result.tasks, result.answers, result.categories, table, label, probability)


def dawid_skene(
    tasks: Column,
    workers: Column,
    labels: Column,
    categories: Sequence[Hashable] | None = None,
    n_iter: int = 100,
    tol: float = 1e-5,
) -> Aggregation:
    """Dawid & Skene (1979): EM over each worker's confusion matrix and the class priors.

    E-step: P(z_t = c) ∝ p_c Π_{answers (t, w, l)} e_w[l, c]; M-step: p = mean over tasks of P(z_t),
    e_w[l, c] ∝ Σ_{answers of w with label l} P(z_t = c), normalised over l. Starts from the unweighted
    majority vote; at most ``n_iter`` rounds.
    """
    coded = _encode(tasks, workers, labels, categories)
    n_workers, k = coded.workers.size, len(coded.categories)
    if coded.label.size == 0:
        return _result(coded, np.zeros((0, k)))
    # The (worker, label) pairs that occur; only they hold error rates (crowd-kit's table has no others).
    seen = np.zeros((n_workers, k), dtype=bool)
    seen[coded.worker, coded.label] = True

    def m_step(probas: np.ndarray) -> np.ndarray:
        errors = np.zeros((n_workers, k, k))  # worker × given label × true class
        np.add.at(errors, (coded.worker, coded.label), probas[coded.task])
        errors = np.where(seen[:, :, None], np.maximum(errors, EPS), 0.0)
        return errors / errors.sum(axis=1, keepdims=True)

    def log_errors(errors: np.ndarray, log) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return log(errors[coded.worker, coded.label])  # answers × classes

    probas = _vote_table(coded, np.ones(coded.label.size))
    priors = probas.mean(axis=0)
    errors = m_step(probas)
    loss = -np.inf
    iterations = 0
    for iterations in range(1, n_iter + 1):  # noqa: B007  (the count is reported)
        per_task = np.zeros((coded.tasks.size, k))
        np.add.at(per_task, coded.task, log_errors(errors, np.log2))
        log_like = np.log2(np.maximum(priors, EPS)) + per_task
        scaled = np.exp2(log_like - log_like.max(axis=1, keepdims=True))
        probas = scaled / scaled.sum(axis=1, keepdims=True)
        priors = probas.mean(axis=0)
        errors = m_step(probas)
        # crowd-kit's evidence lower bound (its stopping rule), per answer.
        joint = (probas[coded.task] * (log_errors(errors, np.log) + np.log(np.maximum(priors, EPS)))).sum()
        probas = np.maximum(probas, EPS)
        entropy = -(np.log(probas) * probas).sum()
        new_loss = float(joint + entropy) / coded.label.size
        if new_loss - loss < tol:
            break
        loss = new_loss
    return _result(coded, probas, iterations)


__all__ = ["Aggregation", "dawid_skene", "majority_vote", "winning_category"]
