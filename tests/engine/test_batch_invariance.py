"""Every explanation is batch-invariant: a text's relevance does not depend on what it is batched with.

Every registered method on every architecture it applies to (tiny models, one thread), and the soft
oracle of an explanation-informed twin, explained on texts of different lengths in one batch and one
text at a time; the two must agree to float32 rounding. A method that reads padding, a pooled
maximum over padded positions, or a ReLU whose kink the batch's rounding moves would make them
differ.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from explain_engine.explainers import METHODS, explain_many, methods_for
from explain_engine.explainers.decision_tree import extract_decision_trees
from explain_engine.models import ARCHITECTURES, FROM_CHECKPOINT
from explain_engine.models.informed import unmatched_mass
from explain_engine.soft_oracle import soft_oracles, train_informed_twin
from tests.engine.test_explainers import tiny_bundle
from tests.engine.test_soft_oracle import TINY, synthetic

torch.set_num_threads(1)

WORD_FAMILIES = sorted(set(ARCHITECTURES) - set(FROM_CHECKPOINT))
# different lengths: the short texts are padded when batched with the long one
TEXTS = [
    "the food was great and the service friendly but the dessert came cold and slow to the table",
    "awful food",
    "tasty but slow service",
    "great",
    "the service was friendly and the food tasty",
]
FAST = {
    "lime": {"n_samples": 80},
    "limsse_bb": {"n_samples": 80},
    "limsse_ms_s": {"n_samples": 80},
    "limsse_ms_p": {"n_samples": 80},
    "gradients": {"steps": 16, "tolerance": None},
}


def assert_same(batched, alone, what: str) -> None:
    for i, (a, b) in enumerate(zip(batched, alone, strict=True)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=f"{what}, text {i}")


def compare(bundle, names: list[str], params: dict, what: str) -> None:
    params = {**params}
    for name in names:
        if METHODS[name].samples:
            params[name] = {**params.get(name, {}), "seed": 3}
    together = explain_many(bundle, TEXTS, names, batch_size=len(TEXTS), params=params)
    alone = explain_many(bundle, TEXTS, names, batch_size=1, params=params)
    for name in names:
        assert_same(together[name], alone[name], f"{what}: {name}")
        for attr in ("counter",):
            if name in getattr(together, attr):
                assert_same(
                    getattr(together, attr)[name], getattr(alone, attr)[name], f"{what}: {name} ({attr})"
                )


@pytest.mark.parametrize("arch", WORD_FAMILIES)
def test_every_method_gives_a_text_the_same_relevance_batched_and_alone(arch):
    bundle = tiny_bundle(arch, TEXTS)
    names = methods_for(arch)
    params = dict(FAST)
    if "decision_tree" in names:
        params["decision_tree"] = {"trees": extract_decision_trees(bundle, TEXTS * 4, TEXTS)}
    assert names and all(METHODS[n].applies_to(arch) for n in names)
    compare(bundle, names, params, arch)


def test_refined_integrated_gradients_are_batch_invariant():
    bundle = tiny_bundle("bilstm", TEXTS)
    params = {"gradients": {"steps": 4, "tolerance": 1e-4, "max_steps": 256}}
    compare(bundle, ["grad_dot_int_s", "grad_l2_int_p"], params, "refined IG")


def test_unmatched_mass_of_a_word_that_occurs_in_x_is_exactly_zero_in_any_batch():
    torch.manual_seed(0)
    table = torch.randn(30, 16)
    x_ids = [torch.tensor([3, 7, 9, 11, 4, 5]), torch.tensor([1, 2]), torch.tensor(list(range(10, 29)))]
    e_ids = [torch.tensor([7, 9]), torch.tensor([2, 1, 2]), torch.tensor([12, 20, 28, 15])]

    def padded(rows):
        width = max(len(r) for r in rows)
        embeds = torch.zeros(len(rows), width, 16)
        mask = torch.zeros(len(rows), width, dtype=torch.bool)
        for b, r in enumerate(rows):
            embeds[b, : len(r)] = table[r]
            mask[b, : len(r)] = True
        return embeds, mask

    for alpha in torch.linspace(0.01, 1.0, 40):
        x, xm = padded(x_ids)
        e, em = padded(e_ids)
        x, e = (alpha * x).requires_grad_(True), (alpha * e).requires_grad_(True)
        mass = unmatched_mass(x, xm, e, em)
        assert mass.tolist() == [0.0, 0.0, 0.0]
        grad_x, grad_e = torch.autograd.grad(mass.sum(), (x, e))
        assert not grad_x.any() and not grad_e.any()
    # a word that is not in x still counts, with its gradient
    x, xm = padded([torch.tensor([3, 4])])
    e, em = padded([torch.tensor([3, 25])])
    e.requires_grad_(True)
    value = unmatched_mass(x, xm, e, em)
    expected = torch.relu(table[25] @ table[25] - torch.max(table[25] @ table[[3, 4]].T)) / 2
    assert float(value) == pytest.approx(float(expected), rel=1e-5)
    (grad,) = torch.autograd.grad(value.sum(), e)
    assert grad[0, 1].abs().sum() > 0 and not grad[0, 0].any()


def test_the_soft_oracle_is_the_same_batched_and_one_text_at_a_time():
    recs = synthetic()
    twin = train_informed_twin(recs, TINY)
    # inputs of different lengths, explanations whose words occur in them (the ReLU's kink)
    texts = [r["text"] + " and more" * (i % 4) for i, r in enumerate(recs[:8])]
    own = [r["explanation"] for r in recs[:8]]
    rand = [r["explanation"] for r in recs[8:16]]
    labels = [r["label"] for r in recs[:8]]
    for expl, matched in ((own, True), (rand, False), (rand, True)):
        together = soft_oracles(twin, texts, expl, labels, matched, batch_size=16)
        alone = soft_oracles(twin, texts, expl, labels, matched, batch_size=1)
        assert_same(together, alone, f"soft oracle (matched={matched})")
