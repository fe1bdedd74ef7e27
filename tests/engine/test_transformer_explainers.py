"""Every method declared for the transformer family, end to end on a tiny BERT loaded through the
engine: word scores per canonical word, special tokens without relevance, integrated gradients
against Captum's ``LayerIntegratedGradients`` on the word-embedding layer, and the pointing game and
explain commands unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from explain_engine.__main__ import main
from explain_engine.artifacts import TrainedModel
from explain_engine.explainers import explain_many, methods_for
from explain_engine.explainers.attention_rollout import last_layer_attention, rollout_attention
from explain_engine.explainers.gradients import gradients
from explain_engine.explainers.registry import predicted_target
from explain_engine.models import build_model
from explain_engine.subword import SubwordVocabulary
from explain_engine.text import word_spans
from tests.engine.tiny_transformer import build_tiny_checkpoint

captum_attr = pytest.importorskip("captum.attr")
torch.set_num_threads(1)

GOOD = ["the food was great", "great service and tasty dishes", "friendly staff, wonderful evening"]
BAD = ["awful food", "cold and slow service", "the waiter was unbelievably rude"]
TEXTS = [*GOOD, *BAD, "great food but cold service", "service"]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny-bert"), TEXTS * 4, vocab_size=60, seed=3)


@pytest.fixture(scope="module")
def bundle(checkpoint) -> TrainedModel:
    """The tiny BERT fine-tuned for a few steps on GOOD / BAD (at its random initialisation every
    logit is within 1e-5 of the others and every explanation is close to zero)."""
    model = build_model("transformer", 0, 2, checkpoint=str(checkpoint))
    vocab = SubwordVocabulary.from_pretrained(checkpoint, model.max_positions)
    batch = vocab.encode([*GOOD, *BAD])
    labels = torch.tensor([1] * len(GOOD) + [0] * len(BAD))
    torch.manual_seed(0)
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(40):
        optimiser.zero_grad()
        torch.nn.functional.cross_entropy(model(batch.ids, batch.mask).logits, labels).backward()
        optimiser.step()
    return TrainedModel(model, vocab, ["neg", "pos"], device="cpu")


def test_words_are_split_into_pieces_and_specials_own_no_word(bundle):
    batch = bundle.encode(TEXTS)
    assert any(len(owners) - 2 > n for owners, n in zip(batch.owners, batch.n_words, strict=True))
    assert all(owners[0] == -1 and owners[-1] == -1 for owners in batch.owners)


def test_every_declared_method_scores_every_canonical_word(bundle):
    names = methods_for("transformer", standalone=True)
    assert {"attention_last", "attention_rollout", "grad_dot_int_s", "lime", "occ_1"} <= set(names)
    params = {n: {"n_samples": 150} for n in names if n.startswith(("lime", "limsse"))}
    params["gradients"] = {"steps": 32}
    got = explain_many(bundle, TEXTS, names, params=params, batch_size=4)
    words = [len(word_spans(t)) for t in TEXTS]
    for name in names:
        assert [len(s) for s in got[name]] == words, name
        assert all(np.isfinite(s).all() for s in got[name]), name
        assert any(np.abs(s).sum() > 0 for s in got[name]), name
    for name in ("grad_dot_int_s", "grad_dot_int_p", "grad_l2_int_s", "grad_l2_int_p"):
        for scores, diag in zip(got[name], got.diagnostics[name], strict=True):
            check = diag["completeness"]
            assert check["converged"], diag
            if name.startswith("grad_dot"):
                # Special tokens stay off the path: the words alone add up to o(X) − o(baseline).
                assert scores.sum() == pytest.approx(check["difference"], rel=0.01, abs=1e-5)


def test_attention_maps_leave_the_special_tokens_out(bundle):
    batch = bundle.encode(TEXTS)
    with torch.no_grad():
        maps = bundle.model.attention_maps(batch.ids, batch.mask)
    assert len(maps) == 2 and maps[0].shape == (len(TEXTS), 2, *batch.ids.shape[1:], batch.ids.shape[1])
    got = explain_many(bundle, TEXTS, ["attention_last", "attention_rollout"])
    for name, fn in (("attention_last", last_layer_attention), ("attention_rollout", rollout_attention)):
        tokens = fn(maps, batch.mask, 0).numpy()
        for b, owners in enumerate(batch.owners):
            owners = np.array(owners)
            expected = np.bincount(
                owners[owners >= 0], tokens[b, : len(owners)][owners >= 0], batch.n_words[b]
            )
            assert np.allclose(got[name][b], expected, atol=1e-6)
            # [CLS] and [SEP] hold some of the mass, and none of it reaches a word.
            assert got[name][b].sum() < tokens[b].sum() - 1e-4


def captum_layer_ig(bundle: TrainedModel, batch, target, output: str, steps: int) -> torch.Tensor:
    """Captum's LayerIntegratedGradients on the word-embedding layer, baseline: the words' ids replaced
    by [PAD] (whose embedding row is zero), the special tokens kept."""
    model = bundle.model
    pad = bundle.vocab.tokenizer.pad_token_id
    assert not model.embedding.weight[pad].any()
    words = batch.word_mask()
    baseline = batch.ids.masked_fill(words, pad)

    def forward(ids: torch.Tensor) -> torch.Tensor:
        logits = model(ids, batch.mask.repeat(ids.shape[0] // batch.ids.shape[0], 1)).logits
        return logits if output == "s" else logits.softmax(-1)

    lig = captum_attr.LayerIntegratedGradients(forward, model.embedding)
    attr = lig.attribute(batch.ids, baselines=baseline, target=target, n_steps=steps, method="gausslegendre")
    return attr.sum(-1).detach()


@pytest.mark.parametrize("output", ["s", "p"])
def test_integrated_gradients_match_captum_layer_integrated_gradients(bundle, output):
    model = bundle.model.double()
    try:
        batch = bundle.encode(TEXTS)
        target = predicted_target(bundle, batch)
        name = f"grad_dot_int_{output}"
        ours = gradients(bundle, batch, target, [name], steps=40, tolerance=None)[name].scores
        theirs = captum_layer_ig(bundle, batch, target, output, 40) * batch.mask
        scale = float(theirs.abs().max())
        assert scale > 0.05
        assert float((ours - theirs).abs().max()) <= 1e-6 * scale  # float64: the same quadrature
        assert not theirs[~batch.word_mask()].any()  # Captum agrees: specials get nothing
    finally:
        model.float()


def test_pointing_game_and_explain_commands_run_on_a_transformer(bundle, tmp_path, capsys):
    folder = bundle.save(tmp_path / "model")
    data = tmp_path / "sentences.jsonl"
    with data.open("w", encoding="utf-8") as fh:
        for i in range(40):
            text, label = (GOOD[i % 3], "pos") if i % 2 == 0 else (BAD[i % 3], "neg")
            fh.write(json.dumps({"id": f"s{i}", "text": text, "label": label}) + "\n")
    argv = ["pointing-game", "--model", str(folder), "--data", str(data), "--subset", "all", "--json"]
    methods = "attention_rollout,grad_dot_int_s,occ_1"
    assert main([*argv, "--methods", methods, "--per-document", "4"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result["accuracy"]) == {"attention_rollout", "grad_dot_int_s", "occ_1", "random"}
    assert result["documents"] + result["discarded"] == 10
    out = tmp_path / "explained.jsonl"
    explain = ["explain", "--model", str(folder), "--data", str(data), "--limit", "3", "--evidence", "1"]
    explain += ["--methods", "attention_last,limsse_ms_s", "--param", "limsse_ms_s.n_samples=60"]
    assert main([*explain, "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 3
    for row in rows:
        assert len(row["explanations"]["attention_last"]) == len(word_spans(row["text"]))
        ev = row["evidence"]["limsse_ms_s"]["evidence"][0]
        assert row["text"][ev["start"] : ev["end"]] == ev["text"]


def test_every_transformer_method_is_the_same_batched_and_one_text_at_a_time(bundle):
    """Texts of different lengths (padded beside the longest when batched): each method's word scores
    equal those of the text explained alone (attention masks keep padding out of every layer)."""
    from explain_engine.explainers import METHODS, explain_many, methods_for
    from tests.engine.test_batch_invariance import FAST

    names = methods_for("transformer", standalone=True)
    params = {**FAST, **{n: {**FAST.get(n, {}), "seed": 3} for n in names if METHODS[n].samples}}
    together = explain_many(bundle, TEXTS, names, batch_size=len(TEXTS), params=params)
    alone = explain_many(bundle, TEXTS, names, batch_size=1, params=params)
    assert {"attention_last", "attention_rollout", "grad_dot_int_s", "lime"} <= set(names)
    for name in names:
        for i, (a, b) in enumerate(zip(together[name], alone[name], strict=True)):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=f"{name}, text {i}")
