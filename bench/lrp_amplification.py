"""LRP on recurrent models: how far its relevances outgrow the class score, and what that does to the pointing game.

    .venv/bin/python bench/lrp_amplification.py                         # a synthetic task, trained here
    .venv/bin/python bench/lrp_amplification.py --model DIR --data FILE  # a trained model and its records

Plays Poerner et al. (2018 §4.1)'s pointing game on hybrid documents from the model's test split with
ε-LRP at several stabilisers ε (both bias factors δ: 1, Arras et al. 2017 §3, and 0, the paper's eq. 8)
against DeepLIFT and gradient × input, and prints per setting the accuracy and the amplification
Σ_t |φ(t)| / |s(k, X)| (median, 90th percentile; :class:`explain_engine.explainers.lrp.Amplification`).

The synthetic task leaves no doubt about the truth: reviews of five sentences of filler words, each
sentence carrying one word of its review's class, and a one-layer LSTM that classifies them perfectly; a
hybrid document's sentences keep their review's label, so the words that decide the prediction are the
class words of the predicted class. It is made here, not taken from any corpus.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from explain_engine.artifacts import TrainedModel  # noqa: E402
from explain_engine.cli.pointing_game import held_out  # noqa: E402
from explain_engine.datasets import load_records  # noqa: E402
from explain_engine.datasets.hybrid import hybrid_documents, sentences_of  # noqa: E402
from explain_engine.metrics.pointing_game import pointing_game  # noqa: E402
from explain_engine.training import TrainConfig, train  # noqa: E402

SETTINGS = [(1e-3, 1.0), (1e-3, 0.0), (1e-2, 1.0), (1e-2, 0.0), (1e-1, 1.0), (1e-1, 0.0)]


def synthetic_reviews(n: int = 3000, seed: int = 0) -> list[dict]:
    """Reviews of five 8–20-word sentences of 60 filler words, each sentence with one of six class words."""
    rng = random.Random(seed)
    filler = [f"n{i}" for i in range(60)]
    marks = {"pos": [f"p{i}" for i in range(6)], "neg": [f"q{i}" for i in range(6)]}
    out = []
    for k in range(n):
        label = ("neg", "pos")[k % 2]
        sentences = []
        for _ in range(5):
            words = [rng.choice(filler) for _ in range(rng.randint(8, 20))]
            words[rng.randrange(len(words))] = rng.choice(marks[label])
            sentences.append(" ".join(words) + " .")
        out.append({"id": f"r{k}", "text": " ".join(sentences), "label": label})
    return out


def amplification(game, method: str) -> tuple[float, float]:
    ratios = np.array([d["amplification"]["ratio"] for d in game.diagnostics[method]])
    return float(np.median(ratios)), float(np.percentile(ratios, 90))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--model", help="trained recurrent model folder (default: train one on the synthetic task)"
    )
    parser.add_argument("--data", help="the model's records (with --model)")
    parser.add_argument("--architecture", default="lstm", help="synthetic task: the architecture to train")
    parser.add_argument("--limit", type=int, default=150, help="hybrid documents")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.model:
        if not args.data:
            parser.error("--model needs --data, the records it was trained on")
        records, model_dir = load_records(args.data), args.model
    else:
        records = synthetic_reviews(seed=args.seed)
        model_dir = str(Path(tempfile.mkdtemp()) / args.architecture)
        config = TrainConfig(
            architecture=args.architecture,
            model={"embedding_dim": 16, "hidden_size": 16},
            epochs=10,
            batch_size=32,
            lr=3e-3,
            seed=13,
            device="cpu",
        )
        trained = train(records, config, model_dir)
        print(
            f"trained {args.architecture} on the synthetic task: test accuracy {trained.metrics['test']['accuracy']:.3f}"
        )
    bundle = TrainedModel.load(model_dir, device="cpu")
    held, source = held_out(records, model_dir, "test")
    split = not all(str(r.get("id", "")).startswith("sst2-") for r in held)
    documents = hybrid_documents(sentences_of(held, split), 10, args.seed, args.limit)
    print(f"{model_dir} ({bundle.model.architecture}): {len(documents)} hybrid documents from {source}")
    print(f"{'method':<28} {'accuracy':>8}   {'sum|phi|/|s| median':>20} {'90th pct':>10}")
    references = pointing_game(bundle, documents, ["deeplift", "grad_dot_1s"], seed=args.seed)
    rows = []
    for name in ("deeplift", "grad_dot_1s", "random"):
        rows.append({"method": name, "accuracy": float(references.hits[name].mean())})
    for eps, delta in SETTINGS:
        params = {"lrp": {"eps": eps, "bias_factor": delta}}
        game = pointing_game(bundle, documents, ["lrp"], params=params, seed=args.seed)
        median, p90 = amplification(game, "lrp")
        label = f"lrp eps={eps:g} delta={delta:g}"
        rows.append(
            {"method": label, "accuracy": float(game.hits["lrp"].mean()), "median": median, "p90": p90}
        )
    for row in rows:
        amp = f"{row['median']:>20.3g} {row['p90']:>10.3g}" if "median" in row else ""
        print(f"{row['method']:<28} {row['accuracy']:>8.3f}   {amp}")
    print(
        json.dumps(
            {"bench": "lrp_amplification", "model": model_dir, "documents": len(documents), "rows": rows}
        )
    )


if __name__ == "__main__":
    main()
