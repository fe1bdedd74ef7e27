"""``python -m explain_engine faithfulness --model DIR --data FILE --explanations FILE``.

Measures how faithful each method's explanations are to the model (:mod:`explain_engine.metrics.faithfulness`):
comprehensiveness and sufficiency at the ERASER bins (1, 5, 10, 20, 50 % of the words) and their AOPC
(DeYoung et al. 2020 §4), and Kendall's τ-b with leave-one-word-out importance (Jain & Wallace 2019 §4),
each as a mean over the texts with n and a 95 % bootstrap interval, for the class the model predicts.

``--data``: a JSON-lines file of texts (``id``, ``text``, any other fields). ``--explanations``: the
JSON-lines file the ``explain`` command writes (``id``, ``text``, ``explanations``: method → one score per
word); every line must name a text of ``--data`` by its id, with the same text. Texts of ``--data``
without an explanation line are left out and counted.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from tqdm import tqdm

from explain_engine.artifacts import TrainedModel
from explain_engine.datasets.jsonl import json_lines, read_jsonl
from explain_engine.jsonsafe import json_safe
from explain_engine.metrics.bootstrap import N_BOOT
from explain_engine.metrics.faithfulness import LOO_KINDS, faithfulness
from explain_engine.text import word_spans


def read_explanations(
    path: str | Path, texts: dict[str, str]
) -> tuple[list[str], list[str], dict[str, list]]:
    """The ids (file order), the methods and per method the word scores of an ``explain`` output file.

    ``texts`` maps the ``--data`` ids to their texts; a line naming another id, a different text, another
    set of methods than the first line, or a method whose scores are not one number per word is refused
    with the file, the line and the field.
    """
    if not Path(path).exists():
        raise FileNotFoundError(f"no such file: {path}")
    ids: list[str] = []
    seen: dict[str, str] = {}
    methods: list[str] | None = None
    scores: dict[str, list] = {}
    for where, row in json_lines(path):
        if not isinstance(row, dict):
            raise ValueError(f"{where}: expected a JSON object, got {type(row).__name__}")
        if row.get("id") in (None, ""):
            raise ValueError(f"{where}: missing field 'id'")
        ident = str(row["id"])
        if ident not in texts:
            raise ValueError(f"{where}: id {ident!r} is not a text of --data")
        if ident in seen:
            raise ValueError(f"{where}: id {ident!r} already explained at {seen[ident]}")
        if "text" in row and row["text"] != texts[ident]:
            raise ValueError(f"{where}: field 'text' differs from the text of id {ident!r} in --data")
        explained = row.get("explanations")
        if not isinstance(explained, dict) or not explained:
            raise ValueError(f"{where}: field 'explanations' must map method names to word scores")
        if methods is None:
            methods = list(explained)
            scores = {m: [] for m in methods}
        elif set(explained) != set(methods):
            raise ValueError(
                f"{where}: field 'explanations' has methods {sorted(explained)}, the first line {sorted(methods)}"
            )
        n = len(word_spans(texts[ident]))
        for method in methods:
            values = explained[method]
            if (
                not isinstance(values, list)
                or len(values) != n
                or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
            ):
                got = f"{len(values)} values" if isinstance(values, list) else type(values).__name__
                raise ValueError(
                    f"{where}: field 'explanations' → {method!r} must hold {n} word scores (numbers), one per "
                    f"word of the text; got {got}"
                )
            scores[method].append([float(v) for v in values])
        seen[ident] = where
        ids.append(ident)
    if not ids:
        raise ValueError(f"{path}: no explanation lines")
    return ids, methods or [], scores


def _faithfulness(args: argparse.Namespace) -> int:
    if not Path(args.data).exists():
        raise FileNotFoundError(f"no such file: {args.data}")
    records = read_jsonl(args.data, require_label=False)
    texts = {r["id"]: r["text"] for r in records}
    ids, methods, scores = read_explanations(args.explanations, texts)
    if args.methods:
        wanted = [m.strip() for m in args.methods.split(",") if m.strip()]
        unknown = [m for m in wanted if m not in methods]
        if unknown:
            raise ValueError(
                f"--methods: {', '.join(unknown)} not in {args.explanations} ({', '.join(methods)})"
            )
        methods, scores = wanted, {m: scores[m] for m in wanted}
    if args.limit:
        ids, scores = ids[: args.limit], {m: s[: args.limit] for m, s in scores.items()}
    bundle = TrainedModel.load(args.model, device=args.device)
    started = time.perf_counter()
    with tqdm(total=len(ids), desc="faithfulness", unit="text", disable=args.quiet) as bar:

        def progress(fraction: float, _: str) -> None:
            bar.update(round(fraction * len(ids)) - bar.n)

        result = faithfulness(
            bundle,
            [texts[i] for i in ids],
            scores,
            ids=ids,
            loo=args.loo,
            batch_size=args.batch_size,
            progress=progress,
        )
    elapsed = time.perf_counter() - started
    left_out = len(records) - len(ids) if not args.limit else 0
    if args.json:
        out = {**result.to_dict(args.n_boot, args.seed), "left_out": left_out, "seconds": round(elapsed, 2)}
        print(json.dumps(json_safe(out)))
    else:
        print(f"model {args.model} ({bundle.model.architecture}), explanations {args.explanations}")
        print(result.table(args.n_boot, args.seed))
        if left_out:
            print(f"{left_out} texts of {args.data} have no explanation line and are left out")
        print(f"{elapsed:.1f} s")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "faithfulness",
        help="comprehensiveness, sufficiency and τ of explanations (DeYoung et al. 2020; Jain & Wallace 2019)",
        description=__doc__,
    )
    parser.add_argument("--model", required=True, help="trained model folder (config.json, model.pt, ...)")
    parser.add_argument("--data", required=True, help="JSON-lines file of texts (id, text, ...)")
    parser.add_argument(
        "--explanations", required=True, help="JSON-lines file written by the explain command"
    )
    parser.add_argument("--methods", help="comma-separated methods of the explanations file (default: all)")
    parser.add_argument("--limit", type=int, help="use at most this many explained texts")
    parser.add_argument("--batch-size", type=int, default=16, help="texts whose perturbations run together")
    parser.add_argument(
        "--loo",
        choices=LOO_KINDS,
        default="drop",
        help="leave-one-out importance: drop of p of the predicted class, or tvd (Jain & Wallace 2019)",
    )
    parser.add_argument("--n-boot", type=int, default=N_BOOT, help="bootstrap resamples (0: no intervals)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap")
    parser.add_argument("--device", help="cpu / cuda (default: CUDA when available)")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON line")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=_faithfulness)
