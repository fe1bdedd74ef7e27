"""``python -m explain_engine train --data FILE --model ARCH --out DIR``: train a classifier.

The data is any file or folder :func:`explain_engine.datasets.load_records` reads. Unless the
records carry a ``split`` field they are balanced and split 80/10/10 with ``--seed``. Options
left unset take the paper's value for the architecture (Sen et al. 2020 App. A; Lertvittayakumjorn & Toni 2019 §4.2). The folder written
holds the weights, vocabulary, configuration, metrics and the ids of each split; the test
metrics are printed as JSON. ``--model transformer --checkpoint DIR_OR_HUB_NAME`` fine-tunes a
pre-trained transformer (the optional extra ``transformers``) with its own tokenizer.
"""

from __future__ import annotations

import argparse
import json

from explain_engine.datasets import load_records
from explain_engine.models import ARCHITECTURES
from explain_engine.training import TrainConfig, train, weaker_twin


def _model_overrides(args: argparse.Namespace) -> dict:
    names = {
        "embedding_dim": args.embedding_dim,
        "hidden_size": args.hidden_size,
        "dropout": args.dropout,
        "checkpoint": args.checkpoint,
    }
    return {k: v for k, v in names.items() if v is not None}


def run(args: argparse.Namespace) -> int:
    if args.checkpoint and args.model != "transformer":
        raise ValueError(f"--checkpoint is for --model transformer, not {args.model!r}")
    records = load_records(args.data, text_field=args.text_field, label_field=args.label_field)
    config = TrainConfig(
        architecture=args.model,
        model=_model_overrides(args),
        epochs=args.epochs,
        batch_size=args.batch_size,
        lr=args.lr,
        patience=args.patience,
        min_count=args.min_count,
        max_len=args.max_len,
        seed=args.seed,
        device=args.device,
        progress_bar=not args.quiet,
    )
    if args.weaker:
        config = weaker_twin(config, args.weaker, fraction=args.subset_fraction)
    bundle = train(records, config, out_dir=args.out)
    summary = {
        k: bundle.metrics[k] for k in ("architecture", "device", "n_train", "epochs_run", "best_epoch")
    }
    print(json.dumps({**summary, "test": bundle.metrics["test"], "out": str(args.out)}))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("train", help="train a text classifier", description=__doc__)
    p.add_argument(
        "--data", required=True, help="JSONL/CSV/TSV file, SST-2 folder or labelled-sentences folder"
    )
    p.add_argument("--model", required=True, choices=sorted(ARCHITECTURES), help="architecture")
    p.add_argument("--out", required=True, help="folder to write the trained model to")
    p.add_argument("--text-field", default="text")
    p.add_argument("--label-field", default="label")
    p.add_argument("--epochs", type=int)
    p.add_argument("--batch-size", type=int)
    p.add_argument("--lr", type=float)
    p.add_argument("--patience", type=int, default=5, help="early stopping patience in epochs")
    p.add_argument("--min-count", type=int, default=2, help="rarer tokens become <unk>")
    p.add_argument(
        "--max-len", type=int, help="keep the first N model tokens of each text (transformer: 256)"
    )
    p.add_argument("--embedding-dim", type=int)
    p.add_argument("--hidden-size", type=int)
    p.add_argument("--dropout", type=float)
    p.add_argument(
        "--checkpoint", help="transformer: the pre-trained model to fine-tune (a local folder or a hub name)"
    )
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--device", help="cpu, cuda, cuda:1 … (default: CUDA when present)")
    p.add_argument(
        "--weaker",
        choices=["one_epoch", "subset"],
        help="train the weaker twin for the reveal-model task (Lertvittayakumjorn & Toni 2019 §4.2)",
    )
    p.add_argument(
        "--subset-fraction", type=float, default=0.25, help="share of training data for --weaker subset"
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)
