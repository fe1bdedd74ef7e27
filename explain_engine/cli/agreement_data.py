"""``python -m explain_engine agreement-data --out FILE.jsonl [--n 20000] [--seed 0]``.

Writes synthetic subject–verb agreement samples for the morphosyntactic agreement paradigm (Poerner et al.
2018 §2.2, §4.2): generated from a small grammar (subjects, attractor nouns of the other number in
prepositional phrases and relative clauses), not the paper's Wikipedia corpus (Linzen et al. 2016); see
:mod:`explain_engine.datasets.agreement`. One JSON line per sample with ``id``, ``text`` (the words
before the verb), ``label`` (``Sg``/``Pl``), ``target``, ``features``, ``verb`` and ``split``; train a
model on it (``train --data FILE --model lstm``) and play ``pointing-game --paradigm agreement``.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter

from explain_engine.datasets.agreement import agreement_corpus


def run(args: argparse.Namespace) -> int:
    records = agreement_corpus(args.n, args.seed, args.max_modifiers)
    with open(args.out, "w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec) + "\n")
    splits = Counter(r["split"] for r in records)
    labels = Counter(r["label"] for r in records)
    print(f"wrote {len(records)} synthetic agreement samples to {args.out}: {dict(splits)}, {dict(labels)}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "agreement-data",
        help="synthetic subject-verb agreement samples (Poerner et al. 2018 §2.2)",
        description=__doc__,
    )
    p.add_argument("--out", required=True, help="JSON-lines file to write")
    p.add_argument("--n", type=int, default=20000, help="number of distinct samples")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-modifiers", type=int, default=3, help="most attractor phrases per sample")
    p.set_defaults(func=run)
