"""Raw last-layer attention and attention rollout (Abnar & Zuidema 2020 §3) against a 2-layer example
worked by hand, and the registered methods on a fake transformer that exposes ``attention_maps``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from explain_engine.explainers import explain_many, methods_for
from explain_engine.explainers.attention_rollout import last_layer_attention, rollout, rollout_attention
from tests.engine.transformer_fakes import fake_bundle

torch.set_num_threads(1)

# Layer 1: head 1 is the identity, head 2 swaps tokens 0 and 1; their mean W̄1 and
#   A1 = (W̄1 + I) / 2 = [[.75, .25, 0], [.25, .75, 0], [0, 0, 1]].
LAYER_1 = [
    [[1, 0, 0], [0, 1, 0], [0, 0, 1]],
    [[0, 1, 0], [1, 0, 0], [0, 0, 1]],
]
# Layer 2: W̄2 = [[.2, 0, .8], [1, 0, 0], [0, 1, 0]], so A2 = [[.6, 0, .4], [.5, .5, 0], [0, .5, .5]].
LAYER_2 = [
    [[0, 0, 1], [1, 0, 0], [0, 1, 0]],
    [[0.4, 0, 0.6], [1, 0, 0], [0, 1, 0]],
]
# Rollout A2 · A1 by hand:
#   row 0 = .6·[.75, .25, 0] + .4·[0, 0, 1]                  = [.45, .15, .40]
#   row 1 = .5·[.75, .25, 0] + .5·[.25, .75, 0]              = [.50, .50, 0]
#   row 2 = .5·[.25, .75, 0] + .5·[0, 0, 1]                  = [.125, .375, .5]
ROLLOUT = [[0.45, 0.15, 0.40], [0.50, 0.50, 0.0], [0.125, 0.375, 0.5]]
LAST_ROW_0 = [0.2, 0.0, 0.8]


def hand_maps() -> tuple[torch.Tensor, torch.Tensor]:
    return torch.tensor([LAYER_1], dtype=torch.float64), torch.tensor([LAYER_2], dtype=torch.float64)


def test_rollout_matches_the_hand_worked_two_layer_example():
    maps = hand_maps()
    mask = torch.ones(1, 3, dtype=torch.bool)
    assert np.allclose(rollout(maps, mask)[0].numpy(), ROLLOUT)
    assert np.allclose(rollout_attention(maps, mask, 0)[0].numpy(), ROLLOUT[0])
    assert np.allclose(last_layer_attention(maps, mask, 0)[0].numpy(), LAST_ROW_0)
    # Every row of the rollout is a distribution over the input tokens.
    assert np.allclose(rollout(maps, mask)[0].sum(-1).numpy(), 1.0)


def pad(layer: list, garbage: float) -> list:
    """One head map padded to 4 tokens: the padded query attends anywhere, no real query to it."""
    rows = [[*row, 0.0] for row in layer]
    rows.append([garbage, garbage, 1.0 - 3 * garbage, garbage * 2])
    return rows


def test_rollout_is_batched_and_ignores_padding():
    first, second = hand_maps()
    padded_1 = torch.tensor([[pad(h, 0.3) for h in LAYER_1]], dtype=torch.float64)
    padded_2 = torch.tensor([[pad(h, 0.1) for h in LAYER_2]], dtype=torch.float64)
    maps = (
        torch.cat([padded_1, torch.nn.functional.pad(first, (0, 1, 0, 1))]),
        torch.cat([padded_2, torch.nn.functional.pad(second, (0, 1, 0, 1))]),
    )
    mask = torch.tensor([[True, True, True, False], [True, True, True, False]])
    flows = rollout_attention(maps, mask, 0).numpy()
    assert np.allclose(flows, [[*ROLLOUT[0], 0.0]] * 2)
    assert np.allclose(rollout(maps, mask)[:, :3, :3].numpy(), [ROLLOUT, ROLLOUT])
    # Another query position reads another row.
    assert np.allclose(rollout_attention(maps, mask, 2)[0].numpy(), [*ROLLOUT[2], 0.0])


def test_attention_maps_must_be_square_per_head():
    with pytest.raises(ValueError, match=r"\(B, H, T, T\)"):
        rollout((torch.ones(1, 2, 3, 4),), torch.ones(1, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match="no attention maps"):
        rollout((), torch.ones(1, 3, dtype=torch.bool))


def test_attention_methods_are_declared_for_transformers_only():
    assert {"attention_last", "attention_rollout"} <= set(methods_for("transformer"))
    for arch in ("cnn", "bilstm_attention", "lstm"):
        assert not {"attention_last", "attention_rollout"} & set(methods_for(arch))


def test_registered_methods_read_the_classification_row_and_pool_pieces_onto_words():
    bundle = fake_bundle()
    texts = ["the food was wonderful", "service was slow but friendly"]
    got = explain_many(bundle, texts, ["attention_last", "attention_rollout"], target=1)
    batch = bundle.encode(texts)
    maps = bundle.model.attention_maps(batch.ids, batch.mask)
    for name, fn in (("attention_last", last_layer_attention), ("attention_rollout", rollout_attention)):
        tokens = fn(maps, batch.mask, bundle.model.cls_position).numpy()
        for b, owners in enumerate(batch.owners):
            expected = np.zeros(batch.n_words[b])
            for t, w in enumerate(owners):
                if w >= 0:
                    expected[w] += tokens[b, t]
            assert np.allclose(got[name][b], expected, atol=1e-6), name
            # The classification and separator tokens took mass the words do not get back.
            assert got[name][b].sum() < tokens[b].sum() - 1e-3
    # "wonderful" is two pieces: its relevance is the sum of both (its owner appears twice).
    assert batch.owners[0].count(3) == 2
