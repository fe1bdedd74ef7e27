"""``python -m explain_engine pointing-game --model DIR --data FILE --methods all``.

Plays Poerner et al. 2018's pointing game and prints one row per method (accuracy, 95 % bootstrap interval,
hits / documents), the random baseline included:

* on labelled sentences or reviews (SST-2, raw YELP-HAT CSVs, any JSONL/CSV/TSV of records) it builds
  hybrid documents — reviews split into sentences, shuffled, ``--per-document`` (10) per document;
* on the movie-review rationales or the 20-newsgroups attention lists (with ``--texts-dir``) it plays
  against the manual ground truth, on correctly classified documents (``--limit N``: a seeded random
  sample of N documents).

``--methods all`` is every method of the architecture. One that must be fitted first (the CNN's
``decision_tree``) is fitted on the model's training texts from ``--train FILE`` (or the ``--data``
records that the model folder's ``splits.json`` names); without them it is left out and the table
says why.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from explain_engine.cli.explain import (
    add_common,
    fitted_methods,
    load_bundle,
    parse_params,
    read_data,
    with_seed,
)
from explain_engine.datasets.hybrid import hybrid_documents, sentences_of
from explain_engine.explainers import resolve_methods
from explain_engine.metrics.pointing_game import pointing_game


def _label_map(value: str | None) -> dict[str, str] | None:
    if not value:
        return None
    pairs = [item.partition("=") for item in value.split(",") if item]
    if any(not sep for _, sep, _ in pairs):
        raise ValueError(f"--label-map {value!r}: use DATA=MODEL[,DATA=MODEL...] (e.g. 0=neg,1=pos)")
    return {a.strip(): b.strip() for a, _, b in pairs}


def _play(args: argparse.Namespace) -> int:
    bundle = load_bundle(args)
    kind, records = read_data(args.data, args.texts_dir)
    if kind == "records":
        split = (
            not all(str(r.get("id", "")).startswith("sst2-") for r in records)
            if args.split == "auto"
            else (args.split == "yes")
        )
        documents = hybrid_documents(sentences_of(records, split), args.per_document, args.seed, args.limit)
        game_kind = "hybrid"
    else:
        documents = records
        if args.limit and args.limit < len(records):  # a seeded sample, so that every class is in it
            chosen = np.sort(np.random.default_rng(args.seed).choice(len(records), args.limit, replace=False))
            documents = [records[i] for i in chosen]
        game_kind = "manual"
    names = resolve_methods(args.methods, bundle.model.architecture)
    params = with_seed(parse_params(args.param), [*names, "random"], args.seed)
    names, skipped, notes = fitted_methods(args, bundle, names, params, records)
    started = time.perf_counter()
    game = pointing_game(
        bundle,
        documents,
        names,
        kind=game_kind,
        label_map=_label_map(args.label_map),
        batch_size=args.batch_size,
        params=params,
        seed=args.seed,
    )
    elapsed = time.perf_counter() - started
    if args.json:
        result = {**game.to_dict(), "skipped": skipped, "notes": notes, "seconds": round(elapsed, 2)}
        print(json.dumps(result, indent=2))
    else:
        print(f"model {args.model} ({bundle.model.architecture}), data {', '.join(args.data)}")
        print(game.table())
        for line in [*notes, *(f"skipped {m}: {why}" for m, why in skipped.items())]:
            print(line)
        print(f"{elapsed:.1f} s")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "pointing-game",
        help="pointing game of explanation methods (Poerner et al. 2018)",
        description=__doc__,
    )
    add_common(parser)
    parser.add_argument("--per-document", type=int, default=10, help="sentences per hybrid document")
    parser.add_argument(
        "--split",
        choices=("auto", "yes", "no"),
        default="auto",
        help="split records into sentences (auto: not SST-2)",
    )
    parser.add_argument("--label-map", help="data label -> model label, e.g. 0=neg,1=pos")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(func=_play)
