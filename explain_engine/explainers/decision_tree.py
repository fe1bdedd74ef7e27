"""Decision-tree model extraction for 1D CNNs (Lertvittayakumjorn & Toni 2019 §4.3.2; Bastani et al. 2017).

**Global**: CART trees (Gini; scikit-learn) mimic the CNN's fully-connected part: given the
max-pooled filter vector ``v`` they predict the class the CNN predicts, ``DT(v) = argmax_j FC(v)_j``.
One tree per class, one-vs-rest (tree ``j`` answers "does the CNN predict ``j``?"), learnt on the
CNN's predictions for the training texts. Each tree is pruned by minimal cost-complexity: among
the ``ccp_alpha`` values of its pruning path (at most ``max_candidates`` of them, evenly spread
over the path), the one with the highest validation fidelity (macro-F1 of the tree against the
CNN's one-vs-rest decision on the validation texts) is kept, ties going to the larger alpha (the
smaller tree); with two classes the two problems are one with the labels swapped, so the search
runs once. Fidelity is reported per tree and for the trees together (the class whose tree
gives the highest probability of "yes", against the CNN's prediction; macro-F1, as Lertvittayakumjorn & Toni 2019
Table 5 reports it).

Each filter ``f`` also gets its *most correlated class* ``c_f``: the class whose score ``FC(v)_j``
(before the softmax) has the highest Pearson correlation with ``v_f`` over the training texts.

**Local** (the word relevance of a text ``X`` for class ``k``): ``X`` goes down tree ``k``. A
decision node on its path "passes" when ``v_f`` exceeds the node's threshold (the path turns
right). Each filter ``f`` tested by at least one passed node contributes its n-gram ``N_f(X)``
(the window its max-pool picked) once, as evidence when ``c_f = k`` and as counter-evidence
otherwise:

    φ_dt(t, k, X) = Σ_{f passed on the path of X in tree k} (+1 if c_f = k else −1) · I[t ∈ N_f(X)].

Tokens in no such n-gram score 0. CART and the pruning path come from scikit-learn; the rest
(fitting loop, correlation, path reading) is a few vectorised numpy lines written here.
"""

from __future__ import annotations

import pickle
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sklearn.metrics import f1_score
from sklearn.tree import DecisionTreeClassifier

from explain_engine.explainers.gradcam import ngram_membership
from explain_engine.explainers.registry import SEED, Fitting, Param, register
from explain_engine.models.base import EncodedBatch
from explain_engine.models.cnn import KimCNN


@dataclass
class DecisionTreeExtraction:
    """One pruned CART tree per class, the filters' most correlated classes, and the fidelities."""

    trees: list[DecisionTreeClassifier]
    correlated_class: np.ndarray
    ccp_alphas: list[float]
    fidelity: dict[str, Any] = field(default_factory=dict)

    def positive_proba(self, features: np.ndarray) -> np.ndarray:
        """``(N, K)``: each class's tree's probability that the CNN predicts that class."""
        features = np.asarray(features, dtype=np.float32)
        return np.stack([_positive_proba(tree, features) for tree in self.trees], axis=1)

    def predict(self, features: np.ndarray) -> np.ndarray:
        """The class whose one-vs-rest tree is most confident, ``(N,)``."""
        return self.positive_proba(features).argmax(axis=1)

    def describe(self) -> list[dict[str, Any]]:
        """Per class: nodes, depth, leaves, the chosen alpha and the validation fidelity (Lertvittayakumjorn & Toni 2019 Table 5)."""
        per_class = self.fidelity.get("per_class", [None] * len(self.trees))
        return [
            {
                "class": j,
                "nodes": int(tree.tree_.node_count),
                "depth": int(tree.get_depth()),
                "leaves": int(tree.get_n_leaves()),
                "ccp_alpha": float(alpha),
                "fidelity": per_class[j],
            }
            for j, (tree, alpha) in enumerate(zip(self.trees, self.ccp_alphas, strict=True))
        ]

    def passed_filters(self, features: np.ndarray, target: np.ndarray) -> np.ndarray:
        """``(N, F)`` in {−1, 0, +1}: the sign of each filter passed on the path of its text's target tree."""
        features = np.asarray(features, dtype=np.float32)
        target = np.asarray(target, dtype=np.int64)
        out = np.zeros(features.shape, dtype=np.float64)
        sign = np.where(self.correlated_class[None, :] == target[:, None], 1.0, -1.0)
        for k in np.unique(target):
            rows = np.flatnonzero(target == k)
            tree = self.trees[int(k)].tree_
            on_path = self.trees[int(k)].decision_path(features[rows]).toarray().astype(bool)
            internal = np.flatnonzero(tree.children_right >= 0)
            went_right = on_path[:, internal] & on_path[:, tree.children_right[internal]]
            one_hot = np.zeros((internal.size, features.shape[1]))
            one_hot[np.arange(internal.size), tree.feature[internal]] = 1.0
            used = (went_right.astype(np.float64) @ one_hot) > 0
            out[rows] = used * sign[rows]
        return out

    def save(self, path: str | Path) -> Path:
        """Pickle to ``path`` (scikit-learn trees are pickled; load only files you wrote)."""
        path = Path(path)
        path.write_bytes(pickle.dumps(self))
        return path

    @classmethod
    def load(cls, path: str | Path) -> DecisionTreeExtraction:
        obj = pickle.loads(Path(path).read_bytes())
        if not isinstance(obj, cls):
            raise TypeError(f"{path} does not hold a {cls.__name__}")
        return obj


def _positive_proba(tree: DecisionTreeClassifier, features: np.ndarray) -> np.ndarray:
    proba = tree.predict_proba(features)
    classes = list(tree.classes_)
    return proba[:, classes.index(1)] if 1 in classes else np.zeros(len(features))


def correlated_classes(features: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """``c_f = argmax_j pearson(v_f, FC(v)_j)`` over the rows; constant filters get class 0."""
    v = np.asarray(features, dtype=np.float64)
    s = np.asarray(scores, dtype=np.float64)
    v = v - v.mean(0)
    s = s - s.mean(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        corr = (v.T @ s) / np.outer(np.sqrt((v**2).sum(0)), np.sqrt((s**2).sum(0)))
    corr = np.where(np.isfinite(corr), corr, -np.inf)
    return corr.argmax(axis=1)


def _candidate_alphas(alphas: np.ndarray, max_candidates: int) -> np.ndarray:
    if alphas.size <= max_candidates:
        return alphas
    return alphas[np.unique(np.linspace(0, alphas.size - 1, max_candidates).round().astype(int))]


def _fidelity(truth: np.ndarray, predicted: np.ndarray) -> float:
    return float(f1_score(truth, predicted, average="macro", zero_division=0))


def _pruned_tree(
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_valid: np.ndarray,
    y_valid: np.ndarray,
    max_candidates: int,
    random_state: int,
) -> tuple[DecisionTreeClassifier, float, float]:
    """The CART tree whose ``ccp_alpha`` gives the best validation fidelity (ties: larger alpha)."""
    y_train, y_valid = y_train.astype(int), y_valid.astype(int)
    full = DecisionTreeClassifier(criterion="gini", random_state=random_state)
    path = full.cost_complexity_pruning_path(x_train, y_train)
    best: tuple[DecisionTreeClassifier, float, float] | None = None
    for alpha in _candidate_alphas(np.maximum(path.ccp_alphas, 0.0), max_candidates):
        tree = DecisionTreeClassifier(criterion="gini", ccp_alpha=float(alpha), random_state=random_state)
        tree.fit(x_train, y_train)
        score = _fidelity(y_valid, tree.predict(x_valid))
        if best is None or score >= best[2]:
            best = (tree, float(alpha), score)
    assert best is not None  # the pruning path has at least one alpha (zero)
    return best


def fit_decision_trees(
    train_features: np.ndarray,
    train_scores: np.ndarray,
    valid_features: np.ndarray,
    valid_scores: np.ndarray,
    *,
    max_candidates: int = 25,
    random_state: int = 0,
) -> DecisionTreeExtraction:
    """Fit and prune one CART tree per class on the CNN's pooled features and class scores.

    ``*_features`` are ``(N, F)`` max-pooled filter values ``v``; ``*_scores`` the CNN's class
    scores ``(N, K)`` on the same texts (the predicted class is their argmax).
    """
    x_train = np.asarray(train_features, dtype=np.float32)
    x_valid = np.asarray(valid_features, dtype=np.float32)
    train_scores = np.asarray(train_scores, dtype=np.float64)
    y_train = train_scores.argmax(1)
    y_valid = np.asarray(valid_scores).argmax(1)
    n_classes = train_scores.shape[1]
    found = {}
    # With two classes both one-vs-rest problems are one problem with the labels swapped (Gini is
    # symmetric), so alpha is searched once, on class 1, and reused for class 0.
    for j in [1] if n_classes == 2 else range(n_classes):
        found[j] = _pruned_tree(x_train, y_train == j, x_valid, y_valid == j, max_candidates, random_state)
    if n_classes == 2:
        alpha = found[1][1]
        tree = DecisionTreeClassifier(criterion="gini", ccp_alpha=alpha, random_state=random_state)
        tree.fit(x_train, (y_train == 0).astype(int))
        found[0] = (tree, alpha, _fidelity((y_valid == 0).astype(int), tree.predict(x_valid)))
    trees = [found[j][0] for j in range(n_classes)]
    chosen = [found[j][1] for j in range(n_classes)]
    per_class = [found[j][2] for j in range(n_classes)]
    extraction = DecisionTreeExtraction(trees, correlated_classes(x_train, train_scores), chosen)
    extraction.fidelity = {
        "per_class": per_class,
        "overall": _fidelity(y_valid, extraction.predict(x_valid)),
        "train_overall": _fidelity(y_train, extraction.predict(x_train)),
        "n_train": int(len(x_train)),
        "n_valid": int(len(x_valid)),
    }
    return extraction


def cnn_features(bundle: Any, texts: Sequence[str], batch_size: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """The pooled filter vectors ``v`` ``(N, F)`` and class scores ``(N, K)`` of a CNN bundle on ``texts``."""
    features, scores = [], []
    with torch.no_grad():
        for start in range(0, len(texts), batch_size):
            batch = bundle.encode(list(texts[start : start + batch_size]))
            output = bundle.model(batch.ids, batch.mask)
            features.append(output.extras["features"].double().cpu().numpy())
            scores.append(output.logits.double().cpu().numpy())
    return np.concatenate(features), np.concatenate(scores)


def extract_decision_trees(
    bundle: Any, train_texts: Sequence[str], valid_texts: Sequence[str], **fit_params: Any
) -> DecisionTreeExtraction:
    """Fit the per-class trees of a CNN bundle from its training and validation texts."""
    if not isinstance(bundle.model, KimCNN):
        raise TypeError("decision-tree extraction applies to the Kim CNN only")
    was_training = bundle.model.training
    bundle.model.eval()
    try:
        return fit_decision_trees(
            *cnn_features(bundle, train_texts), *cnn_features(bundle, valid_texts), **fit_params
        )
    finally:
        bundle.model.train(was_training)


_FITTED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _trees_for(bundle: Any, trees: DecisionTreeExtraction | None, train_texts, valid_texts, fit_params):
    if trees is not None:
        return trees
    attached = getattr(bundle, "decision_trees", None)
    if attached is not None:
        return attached
    if train_texts is None or valid_texts is None:
        raise ValueError(
            "decision_tree needs fitted trees: pass trees=extract_decision_trees(bundle, train, valid), "
            "or train_texts= and valid_texts="
        )
    key = (hash(tuple(train_texts)), hash(tuple(valid_texts)), tuple(sorted(fit_params.items())))
    cache = _FITTED.setdefault(bundle.model, {})
    if key not in cache:
        cache[key] = extract_decision_trees(bundle, train_texts, valid_texts, **fit_params)
    return cache[key]


def tree_relevance(
    model: KimCNN,
    extraction: DecisionTreeExtraction,
    ids: torch.Tensor,
    mask: torch.Tensor,
    target: torch.Tensor,
) -> torch.Tensor:
    """Token relevance ``(B, T)`` from the decision path of each text in its target's tree."""
    with torch.no_grad():
        extras = model(ids, mask).extras
    features = extras["features"].double().cpu().numpy()
    signs = extraction.passed_filters(features, target.cpu().numpy())
    signs_t = torch.as_tensor(signs, dtype=extras["features"].dtype, device=ids.device)
    members = ngram_membership(model, extras["argmax"], mask).to(signs_t.dtype)
    return torch.einsum("bf,bft->bt", signs_t, members)


def _summary(extraction: DecisionTreeExtraction) -> str:
    return f"validation fidelity {extraction.fidelity['overall']:.3f}"


FITTING = Fitting(
    params=("trees", "train_texts"),
    what="trees fitted on the model's training texts",
    fit=extract_decision_trees,
    summary=_summary,
)


@register(
    "decision_tree",
    title="Decision-tree extraction",
    source="Lertvittayakumjorn & Toni 2019 §4.3.2",
    architectures=("cnn",),
    fitted_with=FITTING,
    params={"max_candidates": Param(int, 1, 200), "random_state": SEED},
)
def decision_tree(
    bundle: Any,
    batch: EncodedBatch,
    target: torch.Tensor,
    *,
    trees: DecisionTreeExtraction | None = None,
    train_texts: Sequence[str] | None = None,
    valid_texts: Sequence[str] | None = None,
    max_candidates: int = 25,
    random_state: int = 0,
    **_: Any,
) -> torch.Tensor:
    """Decision-tree extraction: n-grams of the filters passed on the text's path (Lertvittayakumjorn & Toni 2019 §4.3.2)."""
    fit_params = {"max_candidates": max_candidates, "random_state": random_state}
    extraction = _trees_for(bundle, trees, train_texts, valid_texts, fit_params)
    return tree_relevance(bundle.model, extraction, batch.ids, batch.mask, target)
