"""The pointing game (Poerner et al. 2018 §2, §4): does the maximally relevant word land where it should?

* hybrid documents: hit(φ, X) = I[y(X, rmax(X, φ)) = f(X)] (eq. 1); documents whose predicted
  class is not the gold label of any of their words are discarded;
* manual ground truth: hit(φ, X) = I[rmax(X, φ) ∈ gt(X)], on correctly classified documents only;
* morphosyntactic agreement: hit_target = I[rmax = target(X)] (the subject) and
  hit_feat = I[feat(X, rmax) = f(X)] (a noun with the predicted number).

rmax is the position of the maximal relevance for the predicted class; ties (a 0/1 rationale mask,
say) are broken uniformly at random so that no position is favoured. Pointing-game accuracy is
hits / documents, reported with its n and a bootstrap interval. The ``random`` method is always
played as the baseline.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from explain_engine.datasets.hybrid import HybridDocument
from explain_engine.explainers.diagnostics import summary_lines
from explain_engine.explainers.registry import Explained, explain_many, resolve_methods
from explain_engine.metrics.bootstrap import Estimate, mean_estimate

BASELINE = "random"


def rmax(scores: Sequence[float] | np.ndarray, rng: np.random.Generator | None = None) -> int:
    """Index of the maximal score; ties broken uniformly by ``rng`` (the first one without it)."""
    values = np.asarray(scores, dtype=np.float64)
    if values.size == 0:
        raise ValueError("no scores")
    best = np.flatnonzero(values == values.max())
    if rng is None or len(best) == 1:
        return int(best[0])
    return int(rng.choice(best))


def hit_hybrid(
    scores, word_labels: Sequence[str], predicted: str, rng: np.random.Generator | None = None
) -> bool:
    """Poerner et al. 2018 eq. 1: the maximally relevant word comes from a fragment of the predicted class."""
    if len(scores) != len(word_labels):
        raise ValueError(f"{len(scores)} scores for {len(word_labels)} words")
    return str(word_labels[rmax(scores, rng)]) == str(predicted)


def hit_manual(scores, relevant: Sequence[int] | set[int], rng: np.random.Generator | None = None) -> bool:
    """The maximally relevant word is in the manual ground truth gt(X)."""
    return rmax(scores, rng) in set(int(i) for i in relevant)


def hit_target(scores, target: int, rng: np.random.Generator | None = None) -> bool:
    """Morphosyntactic agreement: rmax is the subject position target(X)."""
    return rmax(scores, rng) == int(target)


def hit_feat(
    scores, features: Sequence[str | None], predicted: str, rng: np.random.Generator | None = None
) -> bool:
    """Morphosyntactic agreement: rmax falls on a word whose feature (e.g. number) is the predicted one."""
    return features[rmax(scores, rng)] == predicted


@dataclass
class PointingGame:
    """Pointing-game accuracies of several methods on one set of documents.

    ``hits``: per method, one hit per kept document (for the agreement paradigm: hit_target, on the
    correctly classified documents only, as Poerner et al. 2018 Table 2 C16–C19). ``feat_hits``:
    the agreement paradigm's hit_feat per method over all kept documents, ``correct`` marking those
    classified correctly (Table 2 C20–C27 split them). ``diagnostics``: per method, the methods'
    per-document reports (integrated gradients' completeness, LRP's amplification), ``ids`` the kept documents' ids,
    ``seconds`` the wall seconds each method (or group of methods sharing their passes) took.
    """

    kind: str
    n_documents: int
    n_discarded: int
    hits: dict[str, np.ndarray] = field(default_factory=dict)
    feat_hits: dict[str, np.ndarray] = field(default_factory=dict)
    correct: np.ndarray | None = None
    diagnostics: dict[str, list[dict]] = field(default_factory=dict)
    ids: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    def accuracy(self, method: str, n_boot: int = 1000) -> Estimate:
        return mean_estimate(self.hits[method].astype(np.float64), n_boot=n_boot)

    def feat_accuracy(self, method: str, correct: bool, n_boot: int = 1000) -> Estimate:
        """hit_feat of ``method`` on the correctly (``correct``) or wrongly classified documents."""
        assert self.correct is not None  # set by the agreement game
        chosen = self.correct if correct else ~self.correct
        return mean_estimate(self.feat_hits[method][chosen].astype(np.float64), n_boot=n_boot)

    def report_lines(self) -> list[str]:
        """One line per method that reports on its documents (integrated gradients' completeness, LRP's amplification),
        and the seconds each method took."""
        lines = summary_lines(self.diagnostics, self.ids or None)
        if self.seconds:
            lines.append("seconds: " + ", ".join(f"{m} {s:.1f}" for m, s in self.seconds.items()))
        return lines

    def _reports(self, key: str) -> dict[str, list[dict]]:
        """``{method: [{"id": document id, **report[key]}, ...]}`` for the methods that report ``key``."""
        found = {
            m: [{"id": i, **d[key]} for i, d in zip(self.ids, ds, strict=True) if key in d]
            for m, ds in self.diagnostics.items()
        }
        return {m: r for m, r in found.items() if r}

    def to_dict(self, n_boot: int = 1000) -> dict:
        out = {
            "kind": self.kind,
            "documents": self.n_documents,
            "discarded": self.n_discarded,
            "accuracy": {m: self.accuracy(m, n_boot).to_dict() for m in self.hits},
            "method_seconds": {m: round(s, 3) for m, s in self.seconds.items()},
        }
        if self.kind == "agreement":
            assert self.correct is not None
            out["correctly_classified"] = int(self.correct.sum())
            out["hit_target"] = out.pop("accuracy")
            out["hit_feat"] = {
                m: {
                    "correct": self.feat_accuracy(m, True, n_boot).to_dict(),
                    "incorrect": self.feat_accuracy(m, False, n_boot).to_dict(),
                }
                for m in self.feat_hits
            }
        checks = self._reports("completeness")
        if checks:
            out["completeness"] = {
                m: {
                    "within_tolerance": sum(c["converged"] for c in cs),
                    "documents": len(cs),
                    "flagged": [c["id"] for c in cs if not c["converged"]],
                    "steps": [c["steps"] for c in cs],
                }
                for m, cs in checks.items()
            }
        amplified = self._reports("amplification")
        if amplified:
            out["amplification"] = {
                m: {
                    "ratios": [a["ratio"] for a in rs],
                    "eps": rs[0]["eps"],
                    "limit": rs[0]["limit"],
                    "flagged": [a["id"] for a in rs if a["flagged"]],
                    "near_zero_score": [a["id"] for a in rs if a.get("near_zero_score")],
                }
                for m, rs in amplified.items()
            }
        return out

    def table(self, n_boot: int = 1000) -> str:
        width = max([len("method"), *(len(m) for m in self.hits)])
        if self.kind == "agreement":
            return self._agreement_table(width, n_boot)
        lines = [
            f"pointing game ({self.kind}): {self.n_documents} documents, {self.n_discarded} discarded",
            f"{'method':<{width}}  accuracy  95% interval     hits",
        ]
        for method in self.hits:
            est = self.accuracy(method, n_boot)
            hits = int(self.hits[method].sum())
            lines.append(
                f"{method:<{width}}  {est.value:8.3f}  [{est.ci_low:.3f}, {est.ci_high:.3f}]  {hits:>5}/{est.n}"
            )
        return "\n".join(lines + self.report_lines())

    def _agreement_table(self, width: int, n_boot: int) -> str:
        assert self.correct is not None
        n_correct = int(self.correct.sum())
        lines = [
            f"pointing game (morphosyntactic agreement): {self.n_documents} documents, "
            f"{n_correct} classified correctly (f(X) = y(X)), {self.n_documents - n_correct} not",
            f"{'method':<{width}}  hit_target f=y      hit_feat f=y        hit_feat f≠y",
        ]

        def cell(est: Estimate) -> str:
            return f"{est.value:.3f} [{est.ci_low:.2f},{est.ci_high:.2f}]" if est.n else f"{'-':<18}"

        for method in self.hits:
            lines.append(
                f"{method:<{width}}  {cell(self.accuracy(method, n_boot))}  {cell(self.feat_accuracy(method, True, n_boot))}  "
                f"{cell(self.feat_accuracy(method, False, n_boot))}"
            )
        return "\n".join(lines + self.report_lines())


def _label_index(labels: Sequence[str], label_map: Mapping[str, str] | None) -> Callable[[Any], int | None]:
    names = [str(x) for x in labels]

    def index(label: Any) -> int | None:
        label = str(label)
        label = (label_map or {}).get(label, label)
        return names.index(label) if label in names else None

    return index


def last_word(n_words: int) -> np.ndarray:
    """The ``last`` baseline of the agreement paradigm: all relevance on the word just before the verb."""
    scores = np.zeros(n_words)
    scores[-1] = 1.0
    return scores


def pointing_game(
    bundle: Any,
    documents: Sequence[dict] | Sequence[HybridDocument],
    methods: str | Sequence[str] = "all",
    *,
    kind: str = "hybrid",
    label_map: Mapping[str, str] | None = None,
    batch_size: int = 16,
    params: dict[str, dict[str, Any]] | None = None,
    seed: int = 0,
    progress: Callable[[int, int, Explained], None] | None = None,
) -> PointingGame:
    """Play the pointing game for ``methods`` on ``documents``.

    ``kind="hybrid"``: documents ``{text, word_labels}`` (see :mod:`.hybrid`); ``kind="manual"``:
    documents ``{text, label, relevant}`` (word indices); ``kind="agreement"``: documents ``{text,
    label, target, features}`` (see :mod:`explain_engine.datasets.agreement`), scored by hit_target on
    the correctly classified ones and hit_feat on all, with the ``last`` baseline (the word before the
    verb) beside ``random``. ``label_map`` renames data labels to the model's labels (e.g.
    ``{"0": "neg"}``). ``progress`` is :func:`explain_many`'s, called after each batch of documents.
    """
    if kind not in ("hybrid", "manual", "agreement"):
        raise ValueError(f"unknown pointing game {kind!r}; use 'hybrid', 'manual' or 'agreement'")
    names = resolve_methods(methods, bundle.model.architecture)
    if BASELINE not in names:
        names.append(BASELINE)
    index = _label_index(bundle.labels, label_map)
    documents = [d.to_dict() if isinstance(d, HybridDocument) else d for d in documents]
    texts = [d["text"] for d in documents]
    predicted = bundle.scores(texts, batch_size=max(batch_size, 64)).argmax(1) if texts else np.zeros(0, int)
    keep = []
    for d, p in zip(documents, predicted, strict=True):
        if kind == "hybrid":
            ok = any(index(label) == p for label in set(d["word_labels"]))
        elif kind == "manual":
            ok = index(d["label"]) == p and bool(d["relevant"])
        else:
            ok = index(d["label"]) is not None
        keep.append(ok)
    kept = [i for i, ok in enumerate(keep) if ok]
    game = PointingGame(kind, len(kept), len(documents) - len(kept))
    game.ids = [str(documents[i].get("id", i)) for i in kept]
    if kind == "agreement":
        game.correct = np.array([index(documents[i]["label"]) == predicted[i] for i in kept], dtype=bool)
    if not kept:
        game.hits = {m: np.zeros(0, dtype=bool) for m in names}
        return game
    targets = [int(predicted[i]) for i in kept]
    relevance = explain_many(
        bundle,
        [texts[i] for i in kept],
        names,
        target=targets,
        batch_size=batch_size,
        params=params,
        progress=progress,
    )
    game.diagnostics = dict(relevance.diagnostics)
    game.seconds = dict(relevance.seconds)
    if kind == "agreement":
        relevance["last"] = [last_word(len(r)) for r in relevance[BASELINE]]
        names.append("last")
    rng = np.random.default_rng(seed)
    for method in names:
        hits = np.zeros(len(kept), dtype=bool)
        feats = np.zeros(len(kept), dtype=bool)
        for j, i in enumerate(kept):
            doc, scores = documents[i], relevance[method][j]
            if kind == "hybrid":
                word_idx = [index(label) for label in doc["word_labels"]]
                hits[j] = word_idx[rmax(scores, rng)] == targets[j]
            elif kind == "manual":
                hits[j] = hit_manual(scores, doc["relevant"], rng)
            else:
                at = rmax(scores, rng)
                hits[j] = at == int(doc["target"])
                feature = doc["features"][at]
                feats[j] = feature is not None and index(feature) == targets[j]
        if kind == "agreement":
            game.hits[method] = hits[game.correct]
            game.feat_hits[method] = feats
        else:
            game.hits[method] = hits
    return game
