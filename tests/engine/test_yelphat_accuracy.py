"""The BiLSTM with attention on the real YELP-HAT reviews, against what the data supports.

Data: every review of the five raw files (parts 1, 2, 6, 7 and 8; part 2 is a withdrawn upload but
its texts and Yelp labels are valid), one record per distinct text, label = ``Input.label`` (the
Yelp star label, not the workers' answers): 2,155 reviews of 50–200 words (Sen et al. 2020 §3).
Balanced and split 80/10/10 by class with seed 13 (Sen et al. 2020 §5.1): 1,700 / 212 / 212.
The split is fixed here and handed to both models, so they are scored on the same 212 texts.

Deviations from Sen et al. 2020 §5.1's training set-up, so that it runs in a few minutes on one CPU
thread with about 1.7k training reviews instead of thousands per subset:
* Adam learning rate 2e-3 instead of 1e-4, batch 32 instead of 128, at most 10 epochs instead of
  64, early stopping after 3 epochs without a better validation loss;
* word dropout 0.2 (a fifth of the training tokens become ``<unk>`` in each batch), which keeps the
  model from memorising rare words of so small a training set;
* the model itself is the paper's: embeddings 100 (not given in the paper), hidden 100 per
  direction, attention 100, dropout 0.2.

What is asserted, and why (measured on this split, one CPU thread):
* training seeds 13 / 1 / 2 gave test accuracy 0.868 / 0.858 / 0.882 (184, 182 and 187 of 212 texts;
  mean 0.870, standard deviation 0.012); a bag-of-words logistic regression (word counts,
  scikit-learn defaults) on the same split gives 0.882, with TF-IDF features 0.896;
* the test set has 212 texts, so one text is 0.0047 and the binomial standard error of an accuracy
  near 0.87 is 0.023 — larger than the spread between seeds, and the honest scale for "another
  machine trains a different but equally good model" (different BLAS kernels or thread counts
  change the float sums, the early-stopping epoch and so the model);
* so the model must be within 0.085 of the bag-of-words baseline on the same texts, i.e. at least
  0.797: 3.1 binomial standard errors (and six seed standard deviations) below the seeds' mean, and
  15 texts below seed 13's result here (the former fixed threshold 0.85 left four). A model that
  learnt nothing scores 0.5 (balanced classes).
The baseline is deterministic and pinned to within one text, so a change in the data or the split
fails here by name.
"""

from __future__ import annotations

import pytest
import torch
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression

from explain_engine.datasets.splits import balanced_split
from explain_engine.datasets.yelphat import read_raw
from explain_engine.training import TrainConfig, train
from tests.conftest import require_shared_data

SPLIT_SEED = 13
RECIPE = {"epochs": 10, "batch_size": 32, "lr": 2e-3, "patience": 3, "word_dropout": 0.2, "seed": 13}
BASELINE = 0.882  # bag-of-words logistic regression on the fixed split (187 of 212 texts)
MARGIN = 0.085  # see the module docstring


def bag_of_words_accuracy(train_recs: list[dict], test_recs: list[dict]) -> float:
    vectorizer = CountVectorizer()
    x_train = vectorizer.fit_transform([r["text"] for r in train_recs])
    clf = LogisticRegression(max_iter=2000).fit(x_train, [r["label"] for r in train_recs])
    return float(
        clf.score(vectorizer.transform([r["text"] for r in test_recs]), [r["label"] for r in test_recs])
    )


@pytest.mark.slow
def test_bilstm_attention_on_yelphat_is_near_a_bag_of_words_baseline():
    raw = require_shared_data("yelp-hat", "raw")
    torch.set_num_threads(1)
    records = read_raw(sorted(raw.glob("*.csv")))
    assert len(records) == len({r["text"] for r in records}) == 2155
    parts = balanced_split(records, (0.8, 0.1, 0.1), SPLIT_SEED)
    assert [len(p) for p in parts] == [1700, 212, 212]
    tagged = [
        dict(r, split=name) for name, p in zip(("train", "validation", "test"), parts, strict=True) for r in p
    ]

    baseline = bag_of_words_accuracy(parts[0], parts[2])
    assert baseline == pytest.approx(BASELINE, abs=0.005), (
        f"the data or split changed: baseline {baseline:.3f}"
    )

    bundle = train(tagged, TrainConfig(architecture="bilstm_attention", progress_bar=False, **RECIPE))
    m = bundle.metrics
    accuracy = m["test"]["accuracy"]
    print(
        f"YELP-HAT BiLSTM+attention: test accuracy {accuracy:.3f} (n={m['n_test']}), bag of words "
        f"{baseline:.3f}, validation {m['validation']['accuracy']:.3f}, best epoch {m['best_epoch']}/{m['epochs_run']}"
    )
    assert (m["n_train"], m["n_validation"], m["n_test"]) == (1700, 212, 212)
    assert accuracy >= baseline - MARGIN
    preds = bundle.predict([r["text"] for r in records[:20]])
    for rec, pred in zip(records[:20], preds, strict=True):
        assert len(pred["attention"]) == len(rec["words"]) and sum(pred["attention"]) == pytest.approx(1.0)
