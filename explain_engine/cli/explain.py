"""``python -m explain_engine explain --model DIR --data FILE --methods M[,M...] --out FILE.jsonl``.

Explains a trained model's predictions with any registered methods (``all``: every method that fits
the architecture) and writes one JSON line per text: its id, text, canonical words (character
offsets), gold and predicted label, class probabilities, and per method the relevance of every word
(plus, with ``--evidence M``, the top-M evidence and counter-evidence as character spans), and the
methods' diagnostics: integrated gradients' completeness and LRP's amplification per text. A line per
integrated-gradient method says how many texts met completeness within 1 % and names those flagged at
the step cap; a line for LRP gives its relevance / class-score ratios and names the texts amplified
past the limit.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np

from explain_engine.artifacts import TrainedModel
from explain_engine.datasets import load_records
from explain_engine.datasets.rationale_record import is_rationale_file, pointing_truth, read_records
from explain_engine.datasets.rationales import read_mohseni, read_movie_rationales
from explain_engine.datasets.splits import given_splits, split_records
from explain_engine.datasets.yelphat import read_raw
from explain_engine.evidence import evidence_and_counter
from explain_engine.explainers import METHODS, explain_many, methods_for, resolve_methods
from explain_engine.explainers.diagnostics import summary_lines
from explain_engine.text import word_spans

FITTED = [name for name, spec in METHODS.items() if spec.fitted_with is not None and spec.fitted_with.fit]


def read_data(paths: list[str], texts_dir: str | None = None) -> tuple[str, list[dict]]:
    """Records from data files, and which kind they are: ``rationales``, ``mohseni`` or ``records``.

    Raw YELP-HAT CSVs (header ``Input.label,...``), the movie-review rationales, the 20-newsgroups
    attention lists, the rationale records ``rationales import`` writes (their SAM is the manual ground
    truth), and everything :func:`explain_engine.datasets.load_records` reads.
    """
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
        elif path.suffix == ".jsonl" and is_rationale_file(head):
            kind, found = "rationales", pointing_truth(read_records(path))
        elif path.suffix == ".jsonl" and '"rationale_spans"' in head:
            kind, found = "rationales", read_movie_rationales(path)
        elif path.suffix == ".jsonl" and head.startswith('{"category"'):
            if texts_dir is None:
                articles = [r["id"] for r in read_mohseni(path)]
                raise ValueError(
                    f"{path}: the 20-newsgroups attention lists hold only the word types annotators "
                    f"marked, not the texts of their {len(articles)} articles ({', '.join(articles[:3])}, "
                    "...); pass --texts-dir DIR, the 20news-bydate-test folder (DIR/<category>/<article>)"
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
    parser.add_argument(
        "--train",
        nargs="+",
        metavar="FILE",
        help=f"the model's training data, for methods fitted on it ({', '.join(FITTED)}): the training and "
        "validation ids of the model folder's splits.json pick the texts, else the records' own split "
        "field, else a seeded 90/10 split. Without it, the --data records named in splits.json serve",
    )


def load_bundle(args: argparse.Namespace) -> TrainedModel:
    return TrainedModel.load(args.model, device=args.device)


def with_seed(params: dict[str, dict[str, Any]], names: list[str], seed: int) -> dict[str, dict[str, Any]]:
    """Give every method that samples (its registry entry says so) the run's seed unless its parameters
    name one; a group's members take the group's parameters."""
    out = {k: dict(v) for k, v in params.items()}
    for name in names:
        spec = METHODS[name]
        if spec.samples:
            out.setdefault(spec.group or name, {}).setdefault("seed", seed)
    return out


def fitting_texts(
    args: argparse.Namespace, records: list[dict] | None = None
) -> tuple[list[str], list[str], str] | None:
    """Training and validation texts to fit a method on, and where they come from; None if there are none.

    From ``--train`` (or, without it, from ``records``, the ``--data`` records): the ids of the model
    folder's ``splits.json`` pick the training and validation texts; ``--train`` records without
    those ids are split by their own ``split`` field, or else 90/10 by class with ``--seed``.
    """
    source = records
    if args.train:
        _, source = read_data(args.train)
    if not source:
        return None
    splits_file = Path(args.model) / "splits.json"
    if splits_file.exists():
        splits = json.loads(splits_file.read_text(encoding="utf-8"))
        by_id = {str(r.get("id")): r["text"] for r in source if r.get("id") is not None}
        train = [by_id[str(i)] for i in splits.get("train", []) if str(i) in by_id]
        valid = [by_id[str(i)] for i in splits.get("validation", []) if str(i) in by_id]
        if train and valid:
            return train, valid, f"the training and validation splits of {splits_file}"
    if not args.train:
        return None
    parts = given_splits(source)
    if parts is not None and parts[0] and parts[1]:
        return [r["text"] for r in parts[0]], [r["text"] for r in parts[1]], "the records' split field"
    train, valid, _ = split_records(source, (0.9, 0.1, 0.0), args.seed)
    if not train or not valid:
        raise ValueError(f"--train {' '.join(args.train)}: too few records to split 90/10 by class")
    return [r["text"] for r in train], [r["text"] for r in valid], f"a 90/10 split (seed {args.seed})"


def fitted_methods(
    args: argparse.Namespace,
    bundle: Any,
    names: list[str],
    params: dict[str, dict[str, Any]],
    records: list[dict] | None = None,
) -> tuple[list[str], dict[str, str], list[str]]:
    """Give the methods that must be fitted first (their registry entry's ``fitted_with``) their fit.

    With ``--methods all`` such a method joins the others when ``--train`` (or the model's training
    split among the ``--data`` records) lets the CLI fit it, and is skipped with its reason otherwise;
    named explicitly, a method that cannot be fitted is an error. Returns the method names, the
    skipped methods with their reasons, and notes on what was fitted (``params`` gains the fits).
    """
    architecture = bundle.model.architecture
    wanted = list(names)
    if args.methods.strip() == "all":
        wanted += [n for n in methods_for(architecture) if METHODS[n].fitted_with]
    skipped: dict[str, str] = {}
    notes: list[str] = []
    texts = None
    for name in [n for n in wanted if METHODS[n].fitted_with]:
        fitting = METHODS[name].fitted_with
        assert fitting is not None
        if any(key in params.get(name, {}) for key in fitting.params):
            continue
        reason = None
        if fitting.fit is None:
            reason = f"needs {fitting.what} (one of the parameters {', '.join(fitting.params)})"
        else:
            texts = texts or fitting_texts(args, records)
            if texts is None:
                reason = f"needs {fitting.what}: pass --train FILE (the data the model was trained on)"
            else:
                train, valid, source = texts
                fitted = fitting.fit(bundle, train, valid)
                params.setdefault(name, {})[fitting.params[0]] = fitted
                summary = f"; {fitting.summary(fitted)}" if fitting.summary else ""
                notes.append(
                    f"{name}: fitted on {len(train)} training and {len(valid)} validation texts ({source}){summary}"
                )
        if reason is None:
            continue
        if name in names:
            raise ValueError(f"method {name!r} {reason}")
        skipped[name] = reason
    kept = [n for n in wanted if n not in skipped]
    return list(dict.fromkeys(kept)), skipped, notes


def _explain(args: argparse.Namespace) -> int:
    bundle = load_bundle(args)
    _, records = read_data(args.data, args.texts_dir)
    records = records[: args.limit] if args.limit else records
    names = resolve_methods(args.methods, bundle.model.architecture)
    params = with_seed(parse_params(args.param), names, args.seed)
    names, skipped, notes = fitted_methods(args, bundle, names, params, records)
    for line in [*notes, *(f"skipped {m}: {why}" for m, why in skipped.items())]:
        print(line, file=sys.stderr)
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
            if relevance.diagnostics:
                row["diagnostics"] = {m: d[i] for m, d in relevance.diagnostics.items()}
            if args.evidence:
                row["evidence"] = {
                    m: {
                        k: [e.to_dict() for e in v]
                        for k, v in evidence_and_counter(
                            rec["text"],
                            relevance[m][i],
                            args.evidence,
                            sizes,
                            counter_scores=relevance.counter[m][i] if m in relevance.counter else None,
                            candidates=relevance.ngrams[m][i] if m in relevance.ngrams else None,
                        ).items()
                    }
                    for m in names
                }
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    elapsed = time.perf_counter() - started
    ids = [rec.get("id", i) for i, rec in enumerate(records)]
    for line in summary_lines(relevance.diagnostics, ids):
        print(line, file=sys.stderr if args.out == "-" else sys.stdout)
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
