"""``python -m explain_engine informed-twin --data FILE --model ARCH --out DIR``: the soft oracle end to
end (Prasad et al. 2021 §3.2 eq. 3, §3.3, §4.1).

The data is the movie-review rationales file (Zaidan et al. 2007; each review's rationale snippets
stand in for a written explanation, :func:`~explain_engine.datasets.rationales.rationale_explanations`)
or JSON lines with ``id``, ``text``, ``label`` and ``explanation``. The examples are split once
(seeded, stratified); then

1. the target model ``ARCH`` is trained on the inputs alone (``DIR/target``);
2. its explanation-informed twin on matched and mismatched pairs (``DIR/twin``), and its accuracy on
   the test pairs is printed: joint label, task half, matched / mismatched half (chance 0.5);
3. the target's integrated gradients for the gold label of every test example are written with the
   examples to ``DIR/alignment.jsonl`` and ΔA per oracle (hard, soft) is printed with its t-test —
   what ``python -m explain_engine alignment --data DIR/alignment.jsonl --informed-model DIR/twin``
   prints. Each row of ``alignment.jsonl`` carries its IG's ``completeness``; ΔA's output counts the
   texts flagged there and in the soft oracle's IG.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from explain_engine.cli.alignment import alignment_report, format_report, read_alignment_jsonl
from explain_engine.datasets.jsonl import json_lines
from explain_engine.datasets.rationales import rationale_explanations
from explain_engine.jsonsafe import json_safe
from explain_engine.models import ARCHITECTURES
from explain_engine.soft_oracle import (
    IG_METHOD,
    informed_records,
    matched_accuracy,
    train_informed_twin,
    with_splits,
)
from explain_engine.training import TrainConfig, train


def read_explained(path: str, max_words: int | None) -> list[dict]:
    """The movie-review rationales as explained examples, or JSON lines that already are."""
    with open(path, encoding="utf-8") as fh:
        first = next((line for line in fh if line.strip()), "")
    if "rationale_spans" in first:
        return rationale_explanations(path, max_words=max_words)
    records = []
    for where, rec in json_lines(path):
        missing = [
            k for k in ("id", "text", "label", "explanation") if not isinstance(rec, dict) or k not in rec
        ]
        if missing:
            raise ValueError(f"{where}: needs {', '.join(repr(k) for k in missing)}")
        assert isinstance(rec, dict)
        if max_words is not None:
            rec["text"] = " ".join(rec["text"].split()[:max_words])
        records.append({k: rec[k] for k in ("id", "text", "label", "explanation")})
    return records


def run(args: argparse.Namespace) -> int:
    # imported here: the explainers load torch's autograd machinery
    from explain_engine.explainers import explain_many

    out = Path(args.out)
    config = TrainConfig(
        architecture=args.model,
        model={} if args.embedding_dim is None else {"embedding_dim": args.embedding_dim},
        epochs=args.epochs,
        patience=None,
        seed=args.seed,
        device=args.device,
        progress_bar=False,
    )
    records = with_splits(read_explained(args.data, args.max_words), config)
    target = train(records, config, out / "target")
    twin = train_informed_twin(records, config, out / "twin", seed=args.seed)
    pairs = [p for p in informed_records(records, args.seed) if p["split"] == "test"]
    test = [r for r in records if r["split"] == "test"]
    summary = {
        "examples": len(records),
        "test_examples": len(test),
        "target_test_accuracy": target.metrics["test"]["accuracy"],
        "twin_test": matched_accuracy(twin, pairs),
    }
    explained = explain_many(target, [r["text"] for r in test], [IG_METHOD], [r["label"] for r in test])
    checks = explained.diagnostics.get(IG_METHOD, [{} for _ in test])
    path = out / "alignment.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for rec, attr, check in zip(test, explained[IG_METHOD], checks, strict=True):
            row = {**{k: rec[k] for k in ("id", "text", "label", "explanation")}}
            row["attributions"] = [float(v) for v in attr]
            if "completeness" in check:
                row["completeness"] = check["completeness"]
            fh.write(json.dumps(json_safe(row)) + "\n")
    report = alignment_report(
        read_alignment_jsonl(str(path)), informed_model=str(out / "twin"), n_boot=args.n_boot, seed=args.seed
    )
    if args.json:
        print(json.dumps(json_safe({**summary, "alignment": report}), indent=2))
    else:
        print(json.dumps(summary))
        print(format_report(report, str(path)))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "informed-twin",
        help="train a target and its explanation-informed twin; ΔA of the hard and soft oracles",
        description=__doc__,
    )
    p.add_argument("--data", required=True, help="movie_rationales.jsonl, or JSON lines with an explanation")
    p.add_argument("--model", required=True, choices=sorted(ARCHITECTURES), help="target architecture")
    p.add_argument("--out", required=True, help="folder for the target, the twin and alignment.jsonl")
    p.add_argument("--max-words", type=int, default=150, help="keep the first N words of each input")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--embedding-dim", type=int)
    p.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples (0: no intervals)")
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--device", help="cpu / cuda (default: CUDA when available)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=run)
