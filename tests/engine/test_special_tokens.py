"""Every method that applies to all architectures, on a fake transformer whose score needs its
special tokens (classification token first, a separator present) and whose words are split into
pieces: special tokens never get relevance, perturbations keep them, gradients do not move them,
and a word's relevance is the sum over its pieces."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from explain_engine.explainers import METHODS, explain_many, methods_for
from explain_engine.explainers.gradients import GRADIENT_METHODS
from explain_engine.explainers.limsse import limsse_rows
from explain_engine.explainers.perturbation import ngram_perturbations
from explain_engine.text import pool_to_words
from tests.engine.transformer_fakes import CLS, SEP, fake_bundle

torch.set_num_threads(1)

TEXTS = [
    "the food was wonderful",
    "service was slow but friendly",
    "good good food and wonderful service but slow",
]

# Every method that needs no fitting and reads no model internal beyond the embeddings and logits.
MODEL_AGNOSTIC = {
    *GRADIENT_METHODS,
    "lime",
    "limsse_bb",
    "limsse_ms_p",
    "limsse_ms_s",
    *(f"{mode}_{n}" for mode in ("omit", "occ") for n in (1, 3, 7)),
    "random",
    "random_ngram",
}


def test_methods_declared_for_the_transformer_family():
    """The registry's architectures say exactly which methods fit a transformer: the model-agnostic
    ones and the two attention maps; none that reads LSTM/CNN internals."""
    assert set(methods_for("transformer")) == MODEL_AGNOSTIC | {"attention_last", "attention_rollout"}
    assert {name for name, spec in METHODS.items() if spec.architectures is None} == MODEL_AGNOSTIC
    for internal in ("lrp", "deeplift", "cell_decomposition", "gradcam", "decision_tree", "attention"):
        assert internal not in methods_for("transformer")


def test_pool_to_words_leaves_out_tokens_of_no_word():
    scores = np.array([5.0, 1.0, 2.0, 3.0, 7.0])
    assert np.allclose(pool_to_words(scores, [-1, 0, 0, 1, -1], 2), [3.0, 3.0])
    assert np.allclose(pool_to_words(scores, [-1, 0, 0, 1, -1], 2, "max"), [2.0, 3.0])


def test_word_mask_marks_the_pieces_of_words():
    batch = fake_bundle().encode(TEXTS[:2])
    mask = batch.word_mask()
    assert mask[:, 0].sum() == 0  # [CLS]
    assert mask.sum(1).tolist() == [5, 7]  # "wonderful" and "service", "friendly" are two pieces
    assert not mask[batch.ids == SEP].any()


@pytest.mark.parametrize("mode", ["omit", "occ"])
def test_ngram_rows_keep_the_special_tokens(mode):
    batch = fake_bundle().encode(TEXTS)
    perturbed, _ = ngram_perturbations(batch, 3, mode)
    assert (perturbed.ids[:, 0] == CLS).all()
    assert ((perturbed.ids == SEP) & perturbed.mask).sum(1).eq(1).all()
    if perturbed.zero is not None:
        assert not perturbed.zero[perturbed.ids == CLS].any()


def test_limsse_substrings_keep_the_special_tokens_around_them():
    batch = fake_bundle().encode(TEXTS)
    rows, design, _ = limsse_rows(batch, n_samples=200, seed=3)
    lengths = rows.mask.sum(1)
    assert (rows.ids[:, 0] == CLS).all()
    assert (rows.ids[torch.arange(len(rows)), lengths - 1] == SEP).all()
    # Between them, the substring's pieces: as many as its words have.
    first = batch.word_mask().long()
    for r in range(0, len(rows), 37):
        doc, start, length = int(design.doc[r]), int(design.start[r]), int(design.length[r])
        owners = np.array(batch.owners[doc])
        expected = int(((owners >= start) & (owners < start + length)).sum())
        assert int(lengths[r]) == expected + 2 and int(first[doc].sum()) >= expected


EXACT = ["grad_dot_1s", "grad_dot_int_s", "omit_1", "occ_1", "limsse_ms_s", "lime"]


def test_methods_recover_the_known_word_relevance_through_the_special_tokens():
    bundle = fake_bundle()
    params = {"lime": {"output": "s", "alpha": 1e-9, "n_samples": 600}, "limsse_ms_s": {"n_samples": 600}}
    got = explain_many(bundle, TEXTS, EXACT, target=1, params=params)
    for name in EXACT:
        for text, scores in zip(TEXTS, got[name], strict=True):
            assert np.allclose(scores, bundle.known(text), atol=1e-4), (name, text, scores)


def test_integrated_gradients_keep_special_tokens_off_the_path():
    """The baseline keeps [CLS] and [SEP]: o(baseline) = 0, completeness holds over the words."""
    bundle = fake_bundle()
    got = explain_many(bundle, TEXTS, ["grad_dot_int_s", "grad_dot_int_p"], target=1)
    for name in ("grad_dot_int_s", "grad_dot_int_p"):
        for scores, diag in zip(got[name], got.diagnostics[name], strict=True):
            check = diag["completeness"]
            assert check["converged"] and "warnings" not in diag
            assert scores.sum() == pytest.approx(check["difference"], rel=1e-3, abs=1e-5)
    s = [d["completeness"]["difference"] for d in got.diagnostics["grad_dot_int_s"]]
    assert np.allclose(s, [bundle.known(t).sum() for t in TEXTS], atol=1e-5)


def test_every_method_scores_words_only():
    bundle = fake_bundle()
    names = sorted(MODEL_AGNOSTIC | {"attention_last", "attention_rollout"})
    params = {n: {"n_samples": 200} for n in names if n.startswith(("lime", "limsse"))}
    params["gradients"] = {"steps": 8, "max_steps": 64}
    got = explain_many(bundle, TEXTS, names, target=1, params=params)
    for name in names:
        assert [len(s) for s in got[name]] == [len(t.split()) for t in TEXTS], name
        assert all(np.isfinite(s).all() for s in got[name]), name
