"""``python -m explain_engine explain --model DIR --data FILE --methods M[,M...] --out FILE.jsonl``.

Explains a trained model's predictions with any registered methods (``all``: every method that fits
the architecture) and writes one JSON line per text: its id, text, canonical words (character
offsets), gold and predicted label, class probabilities, and per method the relevance of every word
(plus, with ``--evidence M``, the top-M evidence and counter-evidence as character spans).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from explain_engine.text import word_spans


def read_data(paths: list[str], texts_dir: str | None = None) -> tuple[str, list[dict]]:
    """Records from data files, and which kind they are: ``rationales``, ``mohseni`` or ``records``.

    Raw YELP-HAT CSVs (header ``Input.label,...``), the movie-review rationales, the 20-newsgroups
    attention lists, and everything :func:`explain_engine.datasets.load_records` reads.
    """
    from explain_engine.datasets import load_records
    from explain_engine.datasets.rationales import read_mohseni, read_movie_rationales
    from explain_engine.datasets.yelphat import read_raw

    kinds, records = set(), []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise FileNotFoundError(f"no such file or folder: {path}")
        head = ""
        if path.is_file():
            with path.open(encoding="utf-8", errors="replace") as fh:
                head = fh.readline()
        if path.suffix == ".csv" and head.startswith("Input.label"):
            kind, found = "records", read_raw(path)
        elif path.suffix == ".jsonl" and '"rationale_spans"' in head:
            kind, found = "rationales", read_movie_rationales(path)
        elif path.suffix == ".jsonl" and head.startswith('{"category"'):
            if texts_dir is None:
                raise ValueError(
                    f"{path}: the 20-newsgroups attention lists carry no article texts; "
                    "pass --texts-dir 20news-bydate-test"
                )
            kind, found = "mohseni", read_mohseni(path, texts_dir)
        else:
            kind, found = "records", load_records(path)
        kinds.add(kind)
        records.extend(found)
    if len(kinds) > 1:
        raise ValueError(f"mixed data kinds {sorted(kinds)}; give files of one kind")
    return kinds.pop() if kinds else "records", records


def parse_params(items: list[str] | None) -> dict[str, dict[str, Any]]:
    """``["lime.n_samples=1000", "gradients.steps=20"]`` → ``{"lime": {"n_samples": 1000}, ...}``."""
    params: dict[str, dict[str, Any]] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        method, dot, name = key.partition(".")
        if not sep or not dot or not method or not name:
            raise ValueError(f"--param {item!r}: use METHOD.NAME=VALUE (e.g. lime.n_samples=1000)")
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            parsed = value
        params.setdefault(method, {})[name] = parsed
    return params


def add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="trained model folder (config.json, model.pt, ...)")
    parser.add_argument("--data", required=True, nargs="+", help="data file(s)")
    parser.add_argument("--methods", default="all", help="comma-separated method names, or 'all'")
    parser.add_argument("--limit", type=int, help="use at most this many documents")
    parser.add_argument("--batch-size", type=int, default=16, help="texts per explanation batch")
    parser.add_argument("--param", action="append", metavar="METHOD.NAME=VALUE", help="a method parameter")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sampled methods")
    parser.add_argument("--device", help="cpu / cuda (default: CUDA when available)")
    parser.add_argument(
        "--texts-dir", help="20news-bydate-test folder, for the 20-newsgroups attention lists"
    )


def load_bundle(args: argparse.Namespace):
    from explain_engine.artifacts import TrainedModel

    return TrainedModel.load(args.model, device=args.device)


def with_seed(params: dict[str, dict[str, Any]], names: list[str], seed: int) -> dict[str, dict[str, Any]]:
    """Give every sampled method the run's seed unless its parameters name one."""
    from explain_engine.explainers import registry

    sampled = {"lime", "limsse_bb", "limsse_ms_s", "limsse_ms_p", "random", "random_ngram"}
    out = {k: dict(v) for k, v in params.items()}
    for name in names:
        if name in sampled and registry.get(name).group is None:
            out.setdefault(name, {}).setdefault("seed", seed)
    return out


def _explain(args: argparse.Namespace) -> int:
    import numpy as np

    from explain_engine.explainers import evidence as ev
    from explain_engine.explainers.registry import explain_many, resolve_methods

    bundle = load_bundle(args)
    _, records = read_data(args.data, args.texts_dir)
    records = records[: args.limit] if args.limit else records
    names = resolve_methods(args.methods, bundle.model.architecture)
    params = with_seed(parse_params(args.param), names, args.seed)
    texts = [r["text"] for r in records]
    started = time.perf_counter()
    probs = bundle.scores(texts, kind="probs")
    relevance = explain_many(bundle, texts, names, batch_size=args.batch_size, params=params)
    sizes = None
    if args.ngrams:
        sizes = tuple(getattr(bundle.model, "filter_sizes", None) or (2, 3, 4))
    with nullcontext(sys.stdout) if args.out == "-" else open(args.out, "w", encoding="utf-8") as out:
        for i, rec in enumerate(records):
            row = {
                "id": rec.get("id", i),
                "text": rec["text"],
                "words": [list(s) for s in word_spans(rec["text"])],
                "label": rec.get("label"),
                "predicted": bundle.labels[int(np.argmax(probs[i]))],
                "probabilities": dict(zip(bundle.labels, map(float, probs[i]), strict=True)),
                "explanations": {m: [float(x) for x in relevance[m][i]] for m in names},
            }
            if args.evidence:
                row["evidence"] = {
                    m: {
                        k: [e.to_dict() for e in v]
                        for k, v in ev.evidence_and_counter(
                            rec["text"], relevance[m][i], args.evidence, sizes
                        ).items()
                    }
                    for m in names
                }
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    elapsed = time.perf_counter() - started
    if args.out != "-":
        print(f"explained {len(records)} texts with {len(names)} methods in {elapsed:.1f} s -> {args.out}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("explain", help="explain a model's predictions", description=__doc__)
    add_common(parser)
    parser.add_argument("--out", required=True, help="output JSON-lines file ('-' for standard output)")
    parser.add_argument("--evidence", type=int, default=0, metavar="M", help="add top-M evidence per method")
    parser.add_argument("--ngrams", action="store_true", help="evidence as n-grams of the CNN's filter sizes")
    parser.set_defaults(func=_explain)
