"""``python -m explain_engine pointing-game --model DIR --data FILE --methods all``.

Plays Poerner et al. 2018's pointing game and prints one row per method (accuracy, 95 % bootstrap interval,
hits / documents), the random baseline included:

* on labelled sentences or reviews (SST-2, raw YELP-HAT CSVs, any JSONL/CSV/TSV of records) it builds
  hybrid documents — reviews split into sentences, shuffled, ``--per-document`` (10) per document —
  from the model's test split only (``--subset``: the ids in the model folder's ``splits.json``, else
  the records' ``split`` field), as Poerner et al. 2018 §4.1 build them from test sentences;
* with ``--paradigm agreement``, on samples from ``agreement-data`` (test split), the morphosyntactic
  agreement paradigm: hit_target on correctly classified samples, hit_feat on all, split by whether the
  prediction is correct (Poerner et al. 2018 Table 2 C16–C27), with the ``last`` baseline;
* on the movie-review rationales or the 20-newsgroups attention lists (with ``--texts-dir``) it plays
  against the manual ground truth, on correctly classified documents (``--limit N``: a seeded random
  sample of N documents).

``--methods all`` is every method of the architecture. One that must be fitted first (the CNN's
``decision_tree``) is fitted on the model's training texts from ``--train FILE`` (or the ``--data``
records that the model folder's ``splits.json`` names); without them it is left out and the table
says why. Integrated-gradient methods report completeness per document; the table says how many met it
within 1 % and names those flagged at the step cap. LRP reports how far its relevances outgrow the class
score (:class:`~explain_engine.explainers.lrp.Amplification`) and names the documents amplified past the
limit: there its ranking is numerical noise, and ``--param lrp.eps=0.1`` damps it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from explain_engine.cli.explain import (
    add_common,
    fitted_methods,
    load_bundle,
    parse_params,
    read_data,
    with_seed,
)
from explain_engine.datasets.hybrid import HybridDocument, hybrid_documents, sentences_of
from explain_engine.datasets.splits import SPLIT_NAMES, given_splits
from explain_engine.explainers import Explained, resolve_methods
from explain_engine.metrics.pointing_game import pointing_game


def _label_map(value: str | None) -> dict[str, str] | None:
    if not value:
        return None
    pairs = [item.partition("=") for item in value.split(",") if item]
    if any(not sep for _, sep, _ in pairs):
        raise ValueError(f"--label-map {value!r}: use DATA=MODEL[,DATA=MODEL...] (e.g. 0=neg,1=pos)")
    return {a.strip(): b.strip() for a, _, b in pairs}


def held_out(records: list[dict], model_dir: str, subset: str) -> tuple[list[dict], str]:
    """The records of the model's ``subset`` split (``all``: every record) and where that came from.

    The ids of the model folder's ``splits.json`` decide; records without those ids fall back to
    their own ``split`` field. Documents built from training sentences would reward explanations
    of what the model memorised, so the pointing game plays on the test split by default.
    """
    if subset == "all":
        return records, "all records"
    splits_file = Path(model_dir) / "splits.json"
    if splits_file.exists():
        wanted = {str(i) for i in json.loads(splits_file.read_text(encoding="utf-8")).get(subset, [])}
        chosen = [r for r in records if str(r.get("id")) in wanted]
        if chosen:
            return chosen, f"the {subset} split of {splits_file} ({len(chosen)} of {len(records)} records)"
    parts = given_splits(records)
    if parts is not None:
        chosen = parts[SPLIT_NAMES.index(subset)]
        if chosen:
            return chosen, f"the records' own {subset} split ({len(chosen)} of {len(records)} records)"
    raise ValueError(
        f"--subset {subset}: none of the {len(records)} records is in the model's {subset} split "
        f"({splits_file} names none of their ids and they carry no split field); pass --subset all to "
        "play on every record"
    )


def _play(args: argparse.Namespace) -> int:
    bundle = load_bundle(args)
    kind, records = read_data(args.data, args.texts_dir)
    source = "all records"
    documents: list[dict] | list[HybridDocument]
    if args.paradigm == "agreement":
        if kind != "records" or any("target" not in r or "features" not in r for r in records):
            raise ValueError(
                "--paradigm agreement needs records with 'target' and 'features' (python -m explain_engine "
                "agreement-data writes them)"
            )
        documents, source = held_out(records, args.model, args.subset)
        documents = documents[: args.limit] if args.limit else documents
        game_kind = "agreement"
    elif kind == "records":
        held, source = held_out(records, args.model, args.subset)
        split = (
            not all(str(r.get("id", "")).startswith("sst2-") for r in held)
            if args.split == "auto"
            else (args.split == "yes")
        )
        documents = hybrid_documents(sentences_of(held, split), args.per_document, args.seed, args.limit)
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
        progress=_progress_printer(time.perf_counter()) if args.progress else None,
    )
    elapsed = time.perf_counter() - started
    if args.json:
        result = {
            **game.to_dict(),
            "source": source,
            "skipped": skipped,
            "notes": notes,
            "seconds": round(elapsed, 2),
        }
        print(json.dumps(result, indent=2))
    else:
        print(f"model {args.model} ({bundle.model.architecture}), data {', '.join(args.data)}: {source}")
        print(game.table())
        for line in [*notes, *(f"skipped {m}: {why}" for m, why in skipped.items())]:
            print(line)
        print(f"{elapsed:.1f} s")
    return 0


def _progress_printer(started: float) -> Callable[[int, int, Explained], None]:
    """A line on stderr after each batch: documents done, seconds so far, and each method's share, so a run
    cut short by a time limit still tells how far it got and which method took the time."""

    def show(done: int, total: int, so_far: Explained) -> None:
        methods = ", ".join(f"{m} {s:.1f}" for m, s in so_far.seconds.items())
        print(
            f"{done}/{total} documents, {time.perf_counter() - started:.1f} s ({methods})",
            file=sys.stderr,
            flush=True,
        )

    return show


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
    parser.add_argument(
        "--paradigm",
        choices=("auto", "agreement"),
        default="auto",
        help="auto: hybrid documents from labelled records, manual ground truth from rationales; "
        "agreement: the morphosyntactic agreement paradigm on agreement-data records",
    )
    parser.add_argument(
        "--subset",
        choices=(*SPLIT_NAMES, "all"),
        default="test",
        help="which of the model's splits hybrid documents and agreement samples come from (default: test)",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument(
        "--progress",
        action="store_true",
        help="after each batch, print documents done and seconds per method to stderr",
    )
    parser.set_defaults(func=_play)
