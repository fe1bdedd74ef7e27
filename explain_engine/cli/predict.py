"""``python -m explain_engine predict --model DIR --data FILE --out preds.jsonl``: classify texts.

Writes one JSON object per text: ``id``, ``label`` (predicted), ``probabilities`` (label → p)
and, for models with attention or a rationale, ``attention`` (floats over the text's canonical
words).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from explain_engine.artifacts import TrainedModel
from explain_engine.datasets import load_records


def run(args: argparse.Namespace) -> int:
    bundle = TrainedModel.load(args.model, device=args.device)
    records = load_records(args.data, text_field=args.text_field, require_label=False)
    preds = bundle.predict([rec["text"] for rec in records], batch_size=args.batch_size)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as fh:
        for rec, pred in zip(records, preds, strict=True):
            row = {"id": rec["id"], "label": pred["label"], "probabilities": pred["probabilities"]}
            if pred["attention"] is not None:
                row["attention"] = pred["attention"]
            fh.write(json.dumps(row) + "\n")
    print(f"wrote {len(preds)} predictions to {out}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("predict", help="classify texts with a trained model", description=__doc__)
    p.add_argument("--model", required=True, help="folder written by 'train'")
    p.add_argument("--data", required=True, help="JSONL/CSV/TSV file (labels optional)")
    p.add_argument("--out", required=True, help="JSONL file to write")
    p.add_argument("--text-field", default="text")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--device", help="cpu, cuda … (default: CUDA when present)")
    p.set_defaults(func=run)
