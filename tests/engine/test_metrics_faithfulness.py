"""Faithfulness (DeYoung et al. 2020 §4; Jain & Wallace 2019 §4): comprehensiveness and sufficiency against a
plain per-text loop over re-encoded strings on a tiny trained model, τ against SciPy on a hand example, a
faithful explanation against a random one, the bins' word counts, bad input, and the CLI."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
import torch
from scipy.stats import kendalltau

from explain_engine.__main__ import main
from explain_engine.artifacts import TrainedModel
from explain_engine.explainers import explain_many
from explain_engine.metrics.faithfulness import (
    BINS,
    FAITHFULNESS,
    Faithfulness,
    bin_sizes,
    faithfulness,
    summarize,
)
from explain_engine.models import ARCHITECTURES, FROM_CHECKPOINT, build_model
from explain_engine.subword import SubwordVocabulary
from explain_engine.training import TrainConfig, train
from tests.engine.test_explainers import linear_bundle, tiny_bundle

torch.set_num_threads(1)

GOOD = ["great", "tasty", "friendly", "lovely"]
BAD = ["awful", "cold", "rude", "stale"]
FILLER = ["the", "food", "was", "and", "service", "we", "had", "a", "table", "our", "meal", "there"]


def reviews(n: int, seed: int = 0) -> list[dict]:
    """Texts of 5–14 filler words with one to three sentiment words of the label's side."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        label = "pos" if i % 2 else "neg"
        words = list(rng.choice(FILLER, size=int(rng.integers(5, 15))))
        for _ in range(int(rng.integers(1, 4))):
            words.insert(int(rng.integers(0, len(words) + 1)), str(rng.choice(GOOD if i % 2 else BAD)))
        out.append({"id": f"r{i}", "text": " ".join(words), "label": label})
    return out


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny CNN trained in a few seconds on the sentiment words, saved to a folder."""
    records = reviews(120)
    config = TrainConfig(
        architecture="cnn",
        model={"embedding_dim": 8, "num_filters": 4, "fc_size": 6, "filter_sizes": [1, 2]},
        epochs=15,
        batch_size=16,
        lr=0.01,
        patience=None,
        min_count=1,
        device="cpu",
        progress_bar=False,
    )
    folder = tmp_path_factory.mktemp("faith") / "model"
    bundle = train(records, config, out_dir=folder)
    return bundle, folder


def direct(bundle, text: str, scores, bins=BINS):
    """Comprehensiveness and sufficiency written plainly: drop words from the string and score it."""
    words = text.split()
    probs = bundle.scores([text], kind="probs")[0]
    target = int(np.argmax(probs))
    order = sorted(range(len(words)), key=lambda j: (-scores[j], j))
    comp, suff = [], []
    for f in bins:
        k = min(len(words), max(1, math.ceil(round(f * len(words), 9))))
        top = set(order[:k])
        without = " ".join(w for j, w in enumerate(words) if j not in top)
        only = " ".join(w for j, w in enumerate(words) if j in top)
        comp.append(probs[target] - bundle.scores([without], kind="probs")[0][target])
        suff.append(probs[target] - bundle.scores([only], kind="probs")[0][target])
    loo = [
        probs[target] - bundle.scores([" ".join(words[:j] + words[j + 1 :])], kind="probs")[0][target]
        for j in range(len(words))
    ]
    return np.array(comp), np.array(suff), np.array(loo)


def test_bins_round_up_to_at_least_one_word():
    k = bin_sizes([1, 10, 30, 99, 100, 250])
    assert k[:, 0].tolist() == [1, 1, 1, 1, 1, 3]  # 1 %: never an empty bin
    assert k[2].tolist() == [1, 2, 3, 6, 15]  # 0.1 · 30 is 3, not 4
    assert k[0].tolist() == [1, 1, 1, 1, 1]
    assert k[4].tolist() == [1, 5, 10, 20, 50]


def test_comprehensiveness_and_sufficiency_equal_a_direct_loop(trained):
    bundle, _ = trained
    texts = [r["text"] for r in reviews(9, seed=5)]
    rng = np.random.default_rng(1)
    random = [rng.normal(size=len(t.split())).tolist() for t in texts]
    tied = [[float(len(w) % 3) for w in t.split()] for t in texts]  # ties: the earlier word first
    result = faithfulness(bundle, texts, {"random": random, "tied": tied}, batch_size=4)
    as_texts = faithfulness(bundle, texts, {"random": random, "tied": tied}, via="texts")
    for i, text in enumerate(texts):
        for name, scores in (("random", random), ("tied", tied)):
            comp, suff, loo = direct(bundle, text, scores[i])
            np.testing.assert_allclose(result.comprehensiveness[name][i], comp, atol=1e-5)
            np.testing.assert_allclose(result.sufficiency[name][i], suff, atol=1e-5)
            np.testing.assert_allclose(as_texts.comprehensiveness[name][i], comp, atol=1e-5)
            np.testing.assert_allclose(result.loo[i], loo, atol=1e-5)
            assert result.tau[name][i] == pytest.approx(kendalltau(scores[i], loo).statistic, abs=1e-6)
    aopc = result.values("random", "comprehensiveness_aopc")
    np.testing.assert_allclose(aopc, result.comprehensiveness["random"].mean(axis=1))
    assert not np.allclose(result.comprehensiveness["random"], result.comprehensiveness["tied"])


def family_bundle(architecture: str, texts: list[str], folder) -> TrainedModel:
    """A tiny model of ``architecture``: sizes over a word vocabulary, or a tiny BERT checkpoint with its
    sub-word tokenizer, fitted for a few steps to alternating labels so that its class probabilities move
    with the words (at initialisation every logit is within 1e-5 of the others)."""
    if architecture not in FROM_CHECKPOINT:
        return tiny_bundle(architecture, texts)
    tiny = pytest.importorskip("tests.engine.tiny_transformer")
    checkpoint = tiny.build_tiny_checkpoint(folder, texts * 4, vocab_size=60, seed=3)
    model = build_model(architecture, 0, 2, checkpoint=str(checkpoint))
    vocab = SubwordVocabulary.from_pretrained(checkpoint, model.max_positions)
    batch = vocab.encode(texts)
    labels = torch.arange(len(texts)) % 2
    torch.manual_seed(0)
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(20):
        optimiser.zero_grad()
        torch.nn.functional.cross_entropy(model(batch.ids, batch.mask).logits, labels).backward()
        optimiser.step()
    return TrainedModel(model, vocab, ["neg", "pos"], device="cpu")


@pytest.mark.parametrize("architecture", sorted(ARCHITECTURES))
def test_every_family_measures_what_its_re_encoded_texts_give(architecture, tmp_path):
    """The token rows (deleted tokens, rows closed up) against the kept words' strings re-encoded."""
    texts = [r["text"] for r in reviews(5, seed=11)]
    bundle = family_bundle(architecture, texts, tmp_path)
    rng = np.random.default_rng(2)
    scores = {"m": [rng.normal(size=len(t.split())).tolist() for t in texts]}
    rows = faithfulness(bundle, texts, scores, via="tokens")
    strings = faithfulness(bundle, texts, scores, via="texts")
    assert np.ptp(np.concatenate(strings.loo)) > 1e-4  # the model's probabilities move with the words
    np.testing.assert_allclose(rows.comprehensiveness["m"], strings.comprehensiveness["m"], atol=1e-6)
    np.testing.assert_allclose(rows.sufficiency["m"], strings.sufficiency["m"], atol=1e-6)
    np.testing.assert_allclose(np.concatenate(rows.loo), np.concatenate(strings.loo), atol=1e-6)


def test_a_given_target_is_measured_instead_of_the_prediction(trained):
    bundle, _ = trained
    text = reviews(3, seed=2)[1]["text"]
    scores = [float(i) for i in range(len(text.split()))]
    predicted = int(np.argmax(bundle.scores([text], kind="probs")[0]))
    other = faithfulness(bundle, [text], {"m": [scores]}, target=bundle.labels[1 - predicted])
    probs = bundle.scores([text], kind="probs")[0]
    assert other.target[0] == 1 - predicted and other.probability[0] == pytest.approx(probs[1 - predicted])
    same = faithfulness(bundle, [text], {"m": [scores]})
    np.testing.assert_allclose(other.comprehensiveness["m"], -same.comprehensiveness["m"], atol=1e-9)


def test_kendall_tau_is_scipys_tau_b_on_a_hand_example():
    bundle = linear_bundle()
    text = "great food but cold and slow service"
    # the linear model's leave-one-out drops rank great ≫ friendly words; scores with a tie
    scores = [3.0, 0.0, 0.0, -1.0, 0.0, -0.5, 0.0]
    result = faithfulness(bundle, [text], {"hand": [scores]})
    loo = result.loo[0]
    assert result.tau["hand"][0] == pytest.approx(kendalltau(scores, loo, variant="b").statistic)
    # τ-b by hand: concordant minus discordant pairs over √((n0 − n1)(n0 − n2))
    n = len(scores)
    sign = [
        np.sign(scores[i] - scores[j]) * np.sign(loo[i] - loo[j]) for i in range(n) for j in range(i + 1, n)
    ]
    tie_x = sum(scores[i] == scores[j] for i in range(n) for j in range(i + 1, n))
    tie_y = sum(np.isclose(loo[i], loo[j]) for i in range(n) for j in range(i + 1, n))
    pairs = n * (n - 1) / 2
    assert result.tau["hand"][0] == pytest.approx(sum(sign) / math.sqrt((pairs - tie_x) * (pairs - tie_y)))
    tvd = faithfulness(bundle, [text], {"hand": [scores]}, loo="tvd")
    assert (tvd.loo[0] >= 0).all() and tvd.loo[0] == pytest.approx(np.abs(loo), abs=1e-12)  # two classes


def test_a_faithful_explanation_beats_a_random_one(trained):
    bundle, _ = trained
    texts = [r["text"] for r in reviews(40, seed=9)]
    faithful = explain_many(bundle, texts, ["omit_1"], params={"omit_1": {"output": "p"}})["omit_1"]
    rng = np.random.default_rng(3)
    random = [rng.random(len(t.split())).tolist() for t in texts]
    result = faithfulness(bundle, texts, {"omit_1": faithful, "random": random})
    summary = result.summary(n_boot=200)
    good, bad = summary["omit_1"], summary["random"]
    assert good["comprehensiveness_aopc"].ci_low > bad["comprehensiveness_aopc"].ci_high
    assert good["sufficiency_aopc"].value < bad["sufficiency_aopc"].value
    assert good["kendall_tau_loo"].value == pytest.approx(1.0)  # omission of one word, in p, is leave-one-out
    assert abs(bad["kendall_tau_loo"].value) < 0.3
    assert good["comprehensiveness"][0].n == 40 and len(good["comprehensiveness"]) == len(BINS)


def test_summaries_leave_out_missing_values_and_count_them():
    rows = [
        {"comprehensiveness": [0.2, 0.4], "kendall_tau_loo": 0.5},
        {"comprehensiveness": [0.4, None], "kendall_tau_loo": None},
    ]
    out = summarize(rows, n_boot=50)
    assert out["comprehensiveness"][0].value == pytest.approx(0.3) and out["comprehensiveness"][1].n == 1
    assert out["kendall_tau_loo"].n == 1 and out["kendall_tau_loo"].extra["skipped"] == 1
    assert set(FAITHFULNESS) == {
        "comprehensiveness",
        "sufficiency",
        "comprehensiveness_aopc",
        "sufficiency_aopc",
        "kendall_tau_loo",
    }
    assert FAITHFULNESS.meta("sufficiency")["better"] == "lower"


def test_bad_input_names_the_method_and_text():
    bundle = linear_bundle()
    with pytest.raises(ValueError, match="method 'm', text 1: 2 word scores for 3 words"):
        faithfulness(bundle, ["great food", "cold and slow"], {"m": [[1.0, 2.0], [1.0, 2.0]]})
    with pytest.raises(ValueError, match="not one of the model's labels"):
        faithfulness(bundle, ["great food"], {"m": [[1.0, 2.0]]}, target="maybe")
    with pytest.raises(ValueError, match="not a finite number"):
        faithfulness(bundle, ["great food"], {"m": [[1.0, float("nan")]]})


@pytest.mark.parametrize("bins", [(0.0, 0.5), (-0.1,), (0.5, 1.5), (1.01,), ()])
def test_bins_are_fractions_of_the_text_in_zero_to_one(bins):
    """A bin is a fraction of the text's words in (0, 1]: none, a zero or negative one, or one past the
    whole text is refused naming the bins."""
    with pytest.raises(ValueError, match=r"bins must be fractions in \(0, 1\]"):
        faithfulness(linear_bundle(), ["great food"], {"m": [[1.0, 2.0]]}, bins=bins)


def test_faithfulness_command(trained, tmp_path, capsys):
    _, folder = trained
    records = reviews(12, seed=4)
    data = tmp_path / "texts.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    explained = tmp_path / "explained.jsonl"
    explain = ["explain", "--model", str(folder), "--data", str(data), "--methods", "omit_1,grad_dot_1s"]
    assert main([*explain, "--param", "omit_1.output=p", "--out", str(explained)]) == 0
    capsys.readouterr()
    args = ["faithfulness", "--model", str(folder), "--data", str(data), "--explanations", str(explained)]
    assert main([*args, "--json", "--quiet"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["texts"] == 12 and set(out["methods"]) == {"omit_1", "grad_dot_1s"}
    assert out["methods"]["omit_1"]["kendall_tau_loo"]["value"] == pytest.approx(1.0)
    assert len(out["methods"]["omit_1"]["comprehensiveness"]) == 5
    assert main([*args, "--quiet"]) == 0
    table = capsys.readouterr().out
    assert "comprehensiveness" in table and "AOPC" in table and "omit_1" in table

    lines = explained.read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[2])
    row["explanations"]["omit_1"] = row["explanations"]["omit_1"][:-1]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([lines[0], lines[1], json.dumps(row)]) + "\n", encoding="utf-8")
    assert main([*args[:-1], str(bad), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:3" in err and "'omit_1'" in err and "word scores" in err
    row = json.loads(lines[0])
    row["id"] = "nobody"
    bad.write_text(json.dumps(row) + "\n", encoding="utf-8")
    assert main([*args[:-1], str(bad), "--quiet"]) == 2
    assert f"{bad}:1" in capsys.readouterr().err


def test_the_table_names_each_bin_as_a_share_and_prints_what_the_json_stores():
    """The plain-text table heads each bin column with its share of the words (1 %, 10 %, 50 %) and prints,
    with its default seed, the very means and intervals the JSON form stores with its default seed: the
    command's two outputs of one result never disagree."""
    rng = np.random.default_rng(5)
    n, bins = 8, (0.01, 0.10, 0.50)
    result = Faithfulness(
        ["m"], [f"t{i}" for i in range(n)], ["neg", "pos"], bins, "drop", np.full(n, 10),
        np.zeros(n, dtype=np.int64), np.full(n, 0.9), [],
        {"m": rng.random((n, len(bins)))}, {"m": rng.random((n, len(bins)))}, {"m": rng.uniform(-1, 1, n)},
    )  # fmt: skip
    lines = result.table(n_boot=300).splitlines()
    header = lines[2].split()
    assert header[:5] == ["method", "1%", "10%", "50%", "AOPC"]
    stored = result.to_dict(n_boot=300)["methods"]["m"]

    def cell(d: dict) -> str:
        return f"{d['value']:.3f} [{d['ci_low']:.3f},{d['ci_high']:.3f}]"

    expected = [cell(d) for d in stored["comprehensiveness"]] + [cell(stored["comprehensiveness_aopc"])]
    assert lines[3].split()[1:-1] == " ".join(expected).split()
    assert lines[-1].split()[1:-1] == cell(stored["kendall_tau_loo"]).split()


class _TextsOnly:
    """A bundle that scores strings but has only half of a word vocabulary's interface: ``encode`` without
    ``vocab``, or ``vocab`` without ``encode``."""

    def __init__(self, inner, keep: str):
        self.model, self.labels, self._inner, self.scored = inner.model, inner.labels, inner, 0
        setattr(self, keep, getattr(inner, keep))

    def scores(self, texts, batch_size=64, kind="logits"):
        self.scored += len(texts)
        return self._inner.scores(texts, batch_size=batch_size, kind=kind)


@pytest.mark.parametrize("keep", ["encode", "vocab"])
def test_auto_cuts_token_rows_only_from_a_bundle_with_a_word_vocabulary(keep):
    """``via="auto"`` builds token rows only when the bundle has both a word vocabulary and an encoder;
    a bundle with one of the two is measured through its texts (every row scored as a string), and
    gives what the texts way gives."""
    inner = linear_bundle()
    texts, scores = ["great food and friendly staff", "cold and slow"], {"m": [[5, 1, 0, 3, 2], [1, 0, 2]]}
    bundle = _TextsOnly(inner, keep)
    got = faithfulness(bundle, texts, scores)
    rows = sum(1 + n + 2 * len(BINS) for n in (5, 3))
    assert bundle.scored == rows
    want = faithfulness(inner, texts, scores, via="texts")
    np.testing.assert_allclose(got.comprehensiveness["m"], want.comprehensiveness["m"])


@pytest.mark.parametrize("blank", ["", "   "])
def test_a_text_with_no_words_is_refused_naming_it(blank):
    """A text with no word has no top words to remove or keep: refused, naming the text, before the model
    runs. A text of one word is measured, its τ NaN (no pair to rank) without a warning; one of two words
    already has a τ (its one pair agrees or not: ±1)."""
    with pytest.raises(ValueError, match="text 1 has no words"):
        faithfulness(linear_bundle(), ["great food", blank], {"m": [[1.0, 2.0], []]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        short = faithfulness(linear_bundle(), ["great", "great cold"], {"m": [[1.0], [2.0, 1.0]]})
    assert short.n_words.tolist() == [1, 2] and math.isnan(short.tau["m"][0])
    assert abs(short.tau["m"][1]) == pytest.approx(1.0)
    assert np.isfinite(short.comprehensiveness["m"]).all()
