"""Explanation methods: registry, gradients, perturbation, LIMSSE, LIME, random baselines.

References: hand-built linear models whose relevances are known, Captum's own classes, the ``lime``
package, and brute-force re-encoding of perturbed texts.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.stats import chisquare
from torch import nn

from explain_engine.artifacts import TrainedModel
from explain_engine.explainers import METHODS, Fitting, explain, explain_many, methods_for, register, registry
from explain_engine.explainers._forward import cnn_lookup_logits
from explain_engine.explainers.gradients import GRADIENT_METHODS, gradients, integration_points
from explain_engine.explainers.lime_text import kernel_weights, sample_masks, weighted_ridge
from explain_engine.explainers.limsse import SubstringDesign, _solve, fit_least_squares, sample_substrings
from explain_engine.explainers.perturbation import dropped
from explain_engine.explainers.registry import predicted_target, resolve_methods
from explain_engine.models import ARCHITECTURES, FROM_CHECKPOINT, build_model
from explain_engine.models.base import ModelOutput, TextClassifier
from explain_engine.vocab import Vocabulary

# the families built from sizes over a word vocabulary (the transformer: test_transformer.py)
WORD_FAMILIES = sorted(set(ARCHITECTURES) - set(FROM_CHECKPOINT))
WORDS = ["great", "awful", "food", "service", "the", "was", "and", "but", "cold", "friendly", "tasty", "slow"]
# Class-1 ("pos") score of each word; class 0 gets the negative.
WEIGHTS = {"great": 2.0, "awful": -2.5, "tasty": 1.2, "cold": -1.0, "friendly": 0.8, "slow": -0.6}
TEXTS = [
    "the food was great and the service friendly",
    "awful food , cold and slow",
    "tasty but slow service",
]


class LinearBag(TextClassifier):
    """s(k, X) = Σ_t W[x_t, k] + b_k with one-hot embeddings: every word's relevance is known."""

    architecture = "linear_bag"

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor):
        super().__init__(vocab_size=weight.shape[0], num_classes=weight.shape[1])
        self.embedding = nn.Embedding(weight.shape[0], weight.shape[0], padding_idx=0)
        with torch.no_grad():
            self.embedding.weight.copy_(torch.eye(weight.shape[0]))
            self.embedding.weight[0] = 0
        self.out = nn.Linear(weight.shape[0], weight.shape[1])
        with torch.no_grad():
            self.out.weight.copy_(weight.T)
            self.out.bias.copy_(bias)

    def encode(self, embeds: torch.Tensor, mask: torch.Tensor) -> ModelOutput:
        return ModelOutput(self.out((embeds * mask[..., None]).sum(1)))


def vocabulary() -> Vocabulary:
    return Vocabulary(["<pad>", "<unk>", *WORDS, ",", "!"])


def word_weights(vocab: Vocabulary) -> torch.Tensor:
    pos = torch.tensor([WEIGHTS.get(tok, 0.0) for tok in vocab.itos])
    return torch.stack([-pos, pos], dim=1)


def linear_bundle(bias: tuple[float, float] = (0.0, 0.0)) -> TrainedModel:
    vocab = vocabulary()
    model = LinearBag(word_weights(vocab), torch.tensor(bias))
    return TrainedModel(model, vocab, ["neg", "pos"], device="cpu")


def known(text: str, k: int = 1) -> np.ndarray:
    """The linear model's word relevances for class k (punctuation-only words have 0)."""
    sign = 1.0 if k == 1 else -1.0
    return np.array([sign * WEIGHTS.get(w.strip(",!"), 0.0) for w in text.split()])


def tiny_bundle(arch: str, texts=TEXTS, seed: int = 0) -> TrainedModel:
    torch.manual_seed(seed)
    vocab = Vocabulary.build(texts)
    sizes = {"embedding_dim": 12}
    if arch != "cnn":
        sizes["hidden_size"] = 6
    if arch.endswith("attention"):
        sizes["attention_size"] = 6
    if arch == "cnn":
        sizes.update(num_filters=4, fc_size=6)
    return TrainedModel(build_model(arch, len(vocab), 2, **sizes), vocab, ["neg", "pos"], device="cpu")


# --------------------------------------------------------------------------------------------- registry


def test_registry_lists_every_method_family():
    names = set(METHODS)
    assert set(GRADIENT_METHODS) <= names
    assert {"omit_1", "omit_3", "omit_7", "occ_1", "occ_3", "occ_7"} <= names
    assert {"limsse_bb", "limsse_ms_s", "limsse_ms_p", "lime", "random", "random_ngram"} <= names
    assert "attention" in methods_for("bilstm_attention")
    assert "attention" not in methods_for("cnn")
    assert "rationale" in methods_for("rationale") and "rationale" not in methods_for("lstm_attention")
    assert set(GRADIENT_METHODS) <= set(methods_for("cnn"))


def test_registry_metadata_says_which_methods_sample_and_which_must_be_fitted():
    sampled = set(METHODS.where(samples=True))
    assert sampled == {"lime", "limsse_bb", "limsse_ms_s", "limsse_ms_p", "random", "random_ngram"}
    fitted = [name for name in METHODS if METHODS.meta(name)["fitted_with"] is not None]
    assert fitted == ["decision_tree"]
    assert METHODS["decision_tree"].fitted_with.params[0] == "trees"
    assert METHODS.meta("grad_l2_1s")["group"] == "gradients"
    assert METHODS.meta("attention")["pooling"] == "model"
    with pytest.raises(ValueError, match="unknown explanation method 'lim'; known: .*lime"):
        METHODS["lim"]


def test_methods_that_must_be_fitted_are_left_out_of_all(monkeypatch):
    scratch = type(METHODS)(METHODS.noun)
    for name, spec in METHODS.items():
        scratch.add(name, spec, **METHODS.meta(name))
    monkeypatch.setattr(registry, "METHODS", scratch)

    @register(
        "needs_trees_for_test",
        title="Needs trees",
        source="this test",
        architectures=("cnn",),
        fitted_with=Fitting(("trees",), "trees"),
    )
    def needs_trees(bundle, batch, target, *, trees=None):
        return batch.mask.float()

    assert "needs_trees_for_test" in methods_for("cnn")
    assert "needs_trees_for_test" not in methods_for("cnn", standalone=True)
    assert "needs_trees_for_test" not in resolve_methods("all", "cnn")
    assert resolve_methods("lime,needs_trees_for_test", "cnn") == ["lime", "needs_trees_for_test"]
    assert "grad_dot_1s" in resolve_methods(["all"], "cnn")
    assert "needs_trees_for_test" not in METHODS


def test_register_refuses_a_taken_name():
    with pytest.raises(ValueError, match="already registered"):
        register("lime", title="LIME again", source="this test")(lambda bundle, batch, target: None)


def test_explain_returns_one_array_per_text_over_canonical_words():
    bundle = linear_bundle()
    texts = ["great food!", "awful , cold"]
    out = explain(bundle, texts, method="grad_dot_1s", target=1)
    assert [len(a) for a in out] == [2, 3]
    # "food!" is two tokens (food, !) pooled by sum; "!" has weight 0.
    np.testing.assert_allclose(out[0], [2.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(out[1], [-2.5, 0.0, -1.0], atol=1e-6)


def test_target_defaults_to_the_predicted_class_and_accepts_label_names():
    bundle = linear_bundle()
    texts = ["great food", "awful food"]
    default = explain(bundle, texts, method="grad_dot_1s")
    np.testing.assert_allclose(default[0], [2.0, 0.0], atol=1e-6)  # predicted pos
    np.testing.assert_allclose(default[1], [2.5, 0.0], atol=1e-6)  # predicted neg: relevance for neg
    by_name = explain(bundle, texts, method="grad_dot_1s", target="neg")
    np.testing.assert_allclose(by_name[0], [-2.0, 0.0], atol=1e-6)
    per_text = explain(bundle, texts, method="grad_dot_1s", target=[1, 1])
    np.testing.assert_allclose(per_text[1], [-2.5, 0.0], atol=1e-6)
    with pytest.raises(ValueError, match="unknown label"):
        explain(bundle, texts, method="grad_dot_1s", target="maybe")
    with pytest.raises(ValueError, match="unknown explanation method"):
        explain(bundle, texts, method="nope")


def test_methods_refuse_architectures_they_do_not_fit():
    with pytest.raises(ValueError, match="does not apply"):
        explain(tiny_bundle("cnn"), TEXTS, method="attention")


# -------------------------------------------------------------------------------------------- gradients


def test_gradient_variants_on_a_linear_model_match_the_closed_form():
    bundle = linear_bundle(bias=(0.3, -0.2))
    text = "the food was great and the service friendly"
    out = explain_many(bundle, [text], GRADIENT_METHODS, target=1)
    w = known(text)
    np.testing.assert_allclose(out["grad_dot_1s"][0], w, atol=1e-5)
    np.testing.assert_allclose(out["grad_dot_int_s"][0], w, atol=1e-5)
    # |∂s/∂e_t| = the L2 norm of W's row difference structure: for a one-hot embedding, ‖∂s_k/∂e_t‖ is the
    # norm of column k of the output layer, the same for every word.
    norm = np.linalg.norm(word_weights(vocabulary())[:, 1].numpy())
    np.testing.assert_allclose(out["grad_l2_1s"][0], norm, rtol=1e-5)
    # ∂p/∂e = p(1 − p) ∂(s_1 − s_0)/∂e for two classes.
    s = bundle.scores([text])[0]
    p = np.exp(s[1]) / np.exp(s).sum()
    np.testing.assert_allclose(out["grad_dot_1p"][0], p * (1 - p) * 2 * w, rtol=1e-4, atol=1e-7)


def test_explain_many_shares_passes_and_equals_separate_runs():
    bundle = tiny_bundle("bigru_attention")
    calls = []
    handle = bundle.model.register_forward_pre_hook(
        lambda module, args, kwargs: calls.append(1), with_kwargs=True
    )
    try:
        together = explain_many(bundle, TEXTS, GRADIENT_METHODS, params={"gradients": {"tolerance": None}})
        shared_calls = len(calls)
        calls.clear()
        one = explain_many(bundle, TEXTS, ["grad_dot_int_s"], params={"gradients": {"tolerance": None}})
        single_calls = len(calls)
    finally:
        handle.remove()
    # One prediction pass plus the path passes, whether one variant or all eight are asked for.
    assert shared_calls == single_calls
    for name in GRADIENT_METHODS:
        alone = explain(bundle, TEXTS, method=name, tolerance=None)
        for a, b in zip(together[name], alone, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    for a, b in zip(one["grad_dot_int_s"], together["grad_dot_int_s"], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def _endpoint_difference(
    bundle: TrainedModel, texts: list[str], target: torch.Tensor, output: str
) -> torch.Tensor:
    model = bundle.model
    batch = bundle.encode(texts)
    handle = None
    if model.architecture == "rationale":
        with torch.no_grad():
            z = model(batch.ids, batch.mask).attention
        handle = model.selector.register_forward_hook(lambda m, i, o: (z[..., None] - 0.5) * 100)
    try:
        with torch.no_grad():
            x = model(batch.ids, batch.mask).logits
            zero = torch.zeros_like(model.embed(batch.ids))
            b = model(batch.ids, batch.mask, embeds=zero).logits
    finally:
        if handle is not None:
            handle.remove()
    if output == "p":
        x, b = x.softmax(-1), b.softmax(-1)
    return (x - b).gather(1, target[:, None]).squeeze(1)


@pytest.mark.parametrize("arch", WORD_FAMILIES)
def test_integrated_gradients_are_complete_within_one_percent(arch):
    texts = [*TEXTS, "the service was slow but the food was tasty and the staff friendly"]
    bundle = tiny_bundle(arch, texts)
    target = predicted_target(bundle, bundle.encode(texts))
    out = explain_many(bundle, texts, ["grad_dot_int_s", "grad_dot_int_p"], target=target)
    for output in ("s", "p"):
        expected = _endpoint_difference(bundle, texts, target, output).numpy()
        totals = np.array([a.sum() for a in out[f"grad_dot_int_{output}"]])
        np.testing.assert_allclose(totals, expected, rtol=0.01, atol=1e-6)


def test_integration_rules():
    for rule in ("riemann_right", "riemann_trapezoid", "gausslegendre"):
        a, w = integration_points(50, rule)
        assert w.sum() == pytest.approx(1.0)
        exact = 51 * 101 / (6 * 50**2) if rule == "riemann_right" else 1 / 3  # Σ (m/M)² / M
        assert np.sum(w * a**2) == pytest.approx(exact, rel=1e-3)
    a, _ = integration_points(50, "riemann_right")
    np.testing.assert_allclose(a, np.arange(1, 51) / 50)  # Poerner et al. 2018 eq. 5


def test_against_captum_on_the_cnn():
    from captum.attr import IntegratedGradients, Saliency

    bundle = tiny_bundle("cnn", seed=3)
    model = bundle.model
    batch = bundle.encode(TEXTS)
    target = predicted_target(bundle, batch)
    embeds = model.embed(batch.ids).detach()

    def forward_s(e, ids, mask):
        return model(ids, mask, embeds=e).logits

    def forward_p(e, ids, mask):
        return forward_s(e, ids, mask).softmax(-1)

    extra = (batch.ids, batch.mask)

    ours = gradients(bundle, batch, target, list(GRADIENT_METHODS), tolerance=None)
    mask = batch.mask[..., None]
    for output, fn in (("s", forward_s), ("p", forward_p)):
        dot = IntegratedGradients(fn).attribute(embeds, target=target, additional_forward_args=extra)
        avg = IntegratedGradients(fn, multiply_by_inputs=False).attribute(
            embeds, target=target, additional_forward_args=extra
        )
        grad = Saliency(fn).attribute(
            embeds.clone().requires_grad_(), target=target, abs=False, additional_forward_args=extra
        )
        torch.testing.assert_close(
            ours[f"grad_dot_int_{output}"].scores, (dot * mask).sum(-1), rtol=1e-4, atol=1e-6
        )
        torch.testing.assert_close(
            ours[f"grad_l2_int_{output}"].scores, (avg * mask).norm(dim=-1), rtol=1e-4, atol=1e-6
        )
        torch.testing.assert_close(
            ours[f"grad_l2_1{output}"], (grad * mask).norm(dim=-1), rtol=1e-4, atol=1e-6
        )
        torch.testing.assert_close(
            ours[f"grad_dot_1{output}"], (grad * embeds * mask).sum(-1), rtol=1e-4, atol=1e-6
        )


# ------------------------------------------------------------------------------------ omission, occlusion


def _score(bundle: TrainedModel, texts: list[str], k: int) -> np.ndarray:
    return bundle.scores(texts)[:, k]


@pytest.mark.parametrize("n", [1, 3, 7])
def test_omission_equals_deleting_ngrams_from_the_text(n):
    bundle = tiny_bundle("gru_attention")
    text = "the food was great and the service friendly but slow"
    words = text.split()
    k = 1
    out = explain(bundle, [text], method=f"omit_{n}", target=k)[0]
    full = _score(bundle, [text], k)[0]
    expected = np.zeros(len(words))
    for start in range(-(n - 1), len(words)):
        kept = [w for i, w in enumerate(words) if not start <= i < start + n]
        change = full - _score(bundle, [" ".join(kept)], k)[0]
        for t in range(max(start, 0), min(start + n, len(words))):
            expected[t] += change / n
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("n", [1, 3])
def test_occlusion_equals_zeroing_ngrams(n):
    bundle = tiny_bundle("cnn")
    model = bundle.model
    text = "awful food , cold and slow service"
    batch = bundle.encode([text])
    k = 0
    out = explain(bundle, [text], method=f"occ_{n}", target=k)[0]
    words = batch.owners[0]
    with torch.no_grad():
        embeds = model.embed(batch.ids)
        full = model(batch.ids, batch.mask).logits[0, k].item()
        expected = np.zeros(batch.n_words[0])
        for start in range(-(n - 1), batch.n_words[0]):
            hide = torch.tensor([start <= w < start + n for w in words])
            e = embeds.clone()
            e[0, hide] = 0
            change = full - model(batch.ids, batch.mask, embeds=e).logits[0, k].item()
            for t in range(max(start, 0), min(start + n, batch.n_words[0])):
                expected[t] += change / n
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)


def test_single_word_omission_and_occlusion_recover_a_linear_model():
    bundle = linear_bundle(bias=(0.1, 0.4))
    for method in ("omit_1", "occ_1"):
        out = explain(bundle, TEXTS, method=method, target=1)
        for text, scores in zip(TEXTS, out, strict=True):
            np.testing.assert_allclose(scores, known(text), atol=1e-5)


def test_dropped_rows_shift_left_and_an_empty_row_becomes_one_zero_embedding():
    ids = torch.tensor([[5, 6, 7, 0], [5, 6, 7, 0]])
    keep = torch.tensor([[True, False, True, False], [False, False, False, False]])
    rows = dropped(ids, keep, torch.tensor([0, 0]))
    assert rows.ids.tolist() == [[5, 7], [0, 0]]
    assert rows.mask.tolist() == [[True, True], [True, False]]
    assert rows.zero.tolist() == [[False, False], [True, False]]


def test_cnn_lookup_forward_equals_the_model():
    torch.manual_seed(1)
    model = build_model(
        "cnn", 30, 3, embedding_dim=10, num_filters=5, fc_size=7, filter_sizes=(2, 3, 5)
    ).eval()
    ids = torch.randint(1, 30, (6, 9))
    lengths = torch.tensor([9, 7, 4, 3, 1, 2])
    mask = torch.arange(9)[None, :] < lengths[:, None]
    ids = ids.masked_fill(~mask, 0)
    zero = (torch.rand(6, 9) < 0.3) & mask
    with torch.no_grad():
        plain = model(ids, mask).logits
        zeroed = model(ids, mask, embeds=model.embed(ids).masked_fill(zero[..., None], 0.0)).logits
        torch.testing.assert_close(cnn_lookup_logits(model, ids, mask, None), plain, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(cnn_lookup_logits(model, ids, mask, zero), zeroed, rtol=1e-5, atol=1e-5)
        short = cnn_lookup_logits(model, ids[:, :2], mask[:, :2], None)
        torch.testing.assert_close(short, model(ids[:, :2], mask[:, :2]).logits, rtol=1e-5, atol=1e-5)


def test_banded_solve_handles_singular_and_undrawn_units():
    band = np.array([[[1.0, 1.0], [1.0, 0.0]]])  # G = [[1, 1], [1, 1]]: two units always drawn together
    np.testing.assert_allclose(_solve(band, np.array([[2.0, 2.0]]), 0.0), [[1.0, 1.0]])
    band = np.array([[[2.0, 0.0, 3.0], [0.0, 0.0, 0.0]]])  # the middle unit is never drawn
    np.testing.assert_allclose(_solve(band, np.array([[1.0, 0.0, 3.0]]), 0.0), [[0.5, 0.0, 1.0]])


# --------------------------------------------------------------------------------------------- LIMSSE


def test_limsse_substring_sampling():
    rng = np.random.default_rng(0)
    starts, lengths, counts = sample_substrings(rng, 10, 3000)
    assert counts.sum() == 3000
    assert lengths.min() == 1 and lengths.max() == 6
    assert np.all(starts >= 0) and np.all(starts + lengths <= 10)
    assert len(starts) == len(set(zip(starts, lengths, strict=True)))
    short = sample_substrings(rng, 3, 100)
    assert short[1].max() <= 3


def test_substring_design_equals_the_dense_design_matrix():
    rng = np.random.default_rng(4)
    docs, starts, lengths = [], [], []
    for b, n_units in enumerate((9, 4)):
        s, n, _ = sample_substrings(rng, n_units, 200)
        docs.append(np.full(len(s), b))
        starts.append(s)
        lengths.append(n)
    doc, start, length = np.concatenate(docs), np.concatenate(starts), np.concatenate(lengths)
    count = rng.integers(1, 5, len(doc)).astype(float)
    design = SubstringDesign(doc, start, length, count, 2, 9)
    z = (np.arange(9)[None, :] >= start[:, None]) & (np.arange(9)[None, :] < (start + length)[:, None])
    z = z.astype(float)
    values = rng.normal(size=len(doc))
    v = rng.normal(size=(2, 9))
    for b in range(2):
        rows = doc == b
        np.testing.assert_allclose(design.gram(values)[b], (z[rows] * values[rows, None]).T @ z[rows])
        np.testing.assert_allclose(design.moment(values)[b], z[rows].T @ values[rows])
        np.testing.assert_allclose(design.predict(v)[rows], z[rows] @ v[b])
        band = design.band(values)[b]
        for d in range(design.bands):
            np.testing.assert_allclose(band[d, : 9 - d], np.diagonal(design.gram(values)[b], -d))
    # Weighted least squares through the design equals numpy's solution on the dense matrix.
    y = rng.normal(size=len(doc))
    fitted = fit_least_squares(design, y)
    rows = doc == 0
    root = np.sqrt(count[rows])
    dense = np.linalg.lstsq(z[rows] * root[:, None], y[rows] * root, rcond=None)[0]
    np.testing.assert_allclose(fitted[0], dense, atol=1e-6)
    assert np.all(fitted[1, 4:] == 0)  # units past the end of the shorter text


def test_limsse_magnitude_sensitive_recovers_a_linear_model_exactly():
    bundle = linear_bundle()
    out = explain(bundle, TEXTS, method="limsse_ms_s", target=1)
    for text, scores in zip(TEXTS, out, strict=True):
        np.testing.assert_allclose(scores, known(text), atol=1e-6)


@pytest.mark.parametrize("method", ["limsse_bb", "limsse_ms_p"])
def test_limsse_black_box_and_probability_rank_the_known_words(method):
    bundle = linear_bundle()
    text = "the food was great and the service was slow"
    scores = explain(bundle, [text], method=method, target=1)[0]
    words = text.split()
    assert words[int(np.argmax(scores))] == "great"
    assert words[int(np.argmin(scores))] == "slow"


def test_limsse_substrings_run_alone_through_the_model():
    # A text-length-dependent model: each substring is classified on its own, so ms_s on a model whose
    # score is the number of tokens gives every word relevance 1.
    class Count(LinearBag):
        def encode(self, embeds, mask):
            n = mask.sum(1, keepdim=True).float()
            return ModelOutput(torch.cat([-n, n], dim=1))

    vocab = vocabulary()
    bundle = TrainedModel(Count(word_weights(vocab), torch.zeros(2)), vocab, ["neg", "pos"], device="cpu")
    scores = explain(bundle, ["the food was great and tasty"], method="limsse_ms_s", target=1)[0]
    np.testing.assert_allclose(scores, 1.0, atol=1e-6)


# ----------------------------------------------------------------------------------------------- LIME


def test_lime_samples_and_kernel_follow_the_lime_package():
    from sklearn.metrics.pairwise import pairwise_distances

    masks = sample_masks(np.random.default_rng(1), 8, 500)
    assert masks[0].all() and not masks[1:].all(axis=1).any()
    removed = (~masks[1:]).sum(1)
    assert removed.min() == 1 and removed.max() == 8
    distances = (
        pairwise_distances(masks.astype(float), masks[:1].astype(float), metric="cosine").ravel() * 100
    )
    np.testing.assert_allclose(kernel_weights(masks), np.sqrt(np.exp(-(distances**2) / 25**2)), atol=1e-12)


def test_lime_regression_equals_lime_base_on_the_same_neighbourhood():
    from lime.lime_base import LimeBase

    rng = np.random.default_rng(2)
    masks = sample_masks(rng, 9, 400).astype(float)
    y = masks @ rng.normal(size=9) + 0.1 * rng.normal(size=400)
    labels = np.stack([1 - y, y], axis=1)
    distances = (1.0 - np.sqrt(masks.sum(1) / 9)) * 100

    def kernel(d):
        return np.sqrt(np.exp(-(d**2) / 25**2))

    intercept, exp, _, _ = LimeBase(kernel, random_state=0).explain_instance_with_data(
        masks, labels, distances, 1, num_features=9
    )
    theirs = np.zeros(9)
    for feature, weight in exp:
        theirs[feature] = weight
    beta, b = weighted_ridge(masks, y, kernel_weights(masks.astype(bool)), alpha=1.0)
    np.testing.assert_allclose(beta, theirs, atol=1e-8)
    assert b == pytest.approx(intercept)


def test_lime_recovers_a_linear_model():
    bundle = linear_bundle(bias=(0.2, -0.1))
    exact = explain(bundle, TEXTS, method="lime", target=1, output="s", alpha=1e-9, n_samples=500)
    for text, scores in zip(TEXTS, exact, strict=True):
        np.testing.assert_allclose(scores, known(text), atol=1e-5)
    text = "the food was great and the service was slow"
    scores = explain(bundle, [text], method="lime", target=1)[0]
    assert text.split()[int(np.argmax(scores))] == "great"
    assert text.split()[int(np.argmin(scores))] == "slow"


def test_lime_agrees_with_the_lime_package():
    from lime.lime_text import LimeTextExplainer

    bundle = tiny_bundle("bilstm_attention", seed=5)
    text = "our food was great and the service friendly but slow"  # distinct words: same features
    target = int(predicted_target(bundle, bundle.encode([text]))[0])
    ours = explain(bundle, [text], method="lime", n_samples=5000, seed=0)[0]
    explainer = LimeTextExplainer(class_names=bundle.labels, random_state=0)

    def classify(texts):
        return bundle.scores([t if t.strip() else "<pad>" for t in texts], batch_size=1024, kind="probs")

    exp = explainer.explain_instance(text, classify, labels=(target,), num_features=20, num_samples=5000)
    theirs = dict(exp.as_list(label=target))
    reference = np.array([theirs[w] for w in text.split()])
    assert np.corrcoef(ours, reference)[0, 1] > 0.99
    np.testing.assert_allclose(ours, reference, atol=0.1 * np.abs(reference).max())


# ------------------------------------------------------------------------------- seeds and random methods


@pytest.mark.parametrize("method", ["lime", "limsse_bb", "random", "random_ngram"])
def test_sampled_methods_are_reproducible_and_independent_of_batching(method):
    bundle = tiny_bundle("cnn")
    params = {"n_samples": 300} if method in ("lime", "limsse_bb") else {}
    a = explain(bundle, TEXTS, method=method, seed=7, batch_size=3, **params)
    b = explain(bundle, TEXTS, method=method, seed=7, batch_size=1, **params)
    c = explain(bundle, TEXTS, method=method, seed=8, batch_size=3, **params)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)
    assert any(not np.allclose(x, z) for x, z in zip(a, c, strict=True))


def test_random_baselines():
    bundle = tiny_bundle("cnn")
    text = " ".join(["word"] * 40)
    words = explain(bundle, [text], method="random")[0]
    assert words.shape == (40,) and np.all((words >= 0) & (words < 1)) and len(set(words)) == 40
    grams = explain(bundle, [text], method="random_ngram", sizes=(3,))[0]
    runs = [len(list(g)) for _, g in __import__("itertools").groupby(grams)]
    assert all(r <= 3 for r in runs) and all(r == 3 for r in runs[1:-1])
    # The rmax of the word-level baseline is uniform over the positions.
    texts = [" ".join([*["word"] * 39, f"end{i}"]) for i in range(400)]
    hits = np.bincount(
        [np.argmax(a) for a in explain(bundle, texts, method="random", batch_size=100)], minlength=40
    )
    assert hits.max() < 30 and (hits > 0).sum() > 30
    assert chisquare(hits).pvalue > 0.001


# -------------------------------------------------------------------------------------------- attention


def test_attention_and_rationale_read_the_models_own_maps():
    bundle = tiny_bundle("bilstm_attention")
    predicted = bundle.predict(TEXTS)
    out = explain(bundle, TEXTS, method="attention")
    for scores, result in zip(out, predicted, strict=True):
        np.testing.assert_allclose(scores, result["attention"], atol=1e-6)
        assert scores.sum() == pytest.approx(1.0, abs=1e-5)
    rationale = tiny_bundle("rationale")
    masks = explain(rationale, TEXTS, method="rationale")
    for scores, result in zip(masks, rationale.predict(TEXTS), strict=True):
        assert set(np.unique(scores)) <= {0.0, 1.0}
        np.testing.assert_allclose(scores, result["attention"])


def test_every_method_runs_on_every_architecture():
    texts = TEXTS[:2]
    fast = {"lime": {"n_samples": 60}, "limsse_bb": {"n_samples": 60}, "limsse_ms_s": {"n_samples": 60}}
    fast["limsse_ms_p"] = {"n_samples": 60}
    fast["gradients"] = {"steps": 4, "tolerance": None}
    for arch in WORD_FAMILIES:
        bundle = tiny_bundle(arch)
        names = [m for m in methods_for(arch) if METHODS[m].group == "gradients" or m in _MINE]
        out = explain_many(bundle, texts, names, params=fast)
        for name in names:
            assert [len(a) for a in out[name]] == [len(t.split()) for t in texts], (arch, name)
            assert all(np.isfinite(a).all() for a in out[name]), (arch, name)


_MINE = {
    "attention",
    "rationale",
    "omit_1",
    "omit_3",
    "omit_7",
    "occ_1",
    "occ_3",
    "occ_7",
    "limsse_bb",
    "limsse_ms_s",
    "limsse_ms_p",
    "lime",
    "random",
    "random_ngram",
}


def test_register_refuses_a_method_without_a_title_or_source():
    with pytest.raises(ValueError, match="needs a title and a source"):
        register("untitled_for_test", title="", source="this test")(lambda bundle, batch, target: None)
    assert "untitled_for_test" not in METHODS
