"""Seconds per review of every explanation method on trained models, over YELP-HAT's raw reviews.

    .venv/bin/python bench/yelphat_methods.py --model runs/bilstm_attention runs/cnn [--per-part 25]
        [--device cuda] [--methods all] [--train yelp.jsonl]

The reviews come from every raw part of YELP-HAT (``../shared/data/yelp-hat/raw``, 50-, 100- and
200-word parts): ``--per-part`` reviews of each part, a seeded sample, or all of them with
``--per-part 0``. Each method runs alone over the sample, in batches of ``--batch-size`` texts, with
the parameters of the paper it comes from (the registry's defaults); one untimed warm-up batch goes
first. A method that must be fitted first (the CNN's decision tree) is fitted on ``--train`` (the
model's training records, as ``explain`` does) and the fit is not timed; without it the method is
left out. Integrated-gradient methods also report how many reviews met completeness within 1 %.
On CUDA a figure is wall time after synchronising; on the CPU, one thread, the process's CPU time.
Prints a table and, last, one JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.explain import clock  # noqa: E402
from explain_engine.artifacts import TrainedModel  # noqa: E402
from explain_engine.cli.explain import fitted_methods, with_seed  # noqa: E402
from explain_engine.datasets.yelphat import read_raw  # noqa: E402
from explain_engine.explainers import explain_many, resolve_methods  # noqa: E402

RAW = ROOT.parent / "shared" / "data" / "yelp-hat" / "raw"


def sample_reviews(per_part: int, seed: int) -> list[tuple[str, str]]:
    """``(part, text)`` pairs: ``per_part`` distinct reviews of every raw part (all when 0), seeded."""
    rng = np.random.default_rng(seed)
    picked: list[tuple[str, str]] = []
    for path in sorted(RAW.glob("*.csv")):
        texts = sorted({r["text"] for r in read_raw([path])})
        if per_part and len(texts) > per_part:
            texts = [texts[i] for i in sorted(rng.choice(len(texts), per_part, replace=False))]
        picked += [(path.name, t) for t in texts]
    return picked


def time_method(bundle: TrainedModel, texts: list[str], name: str, params: dict, batch_size: int) -> dict:
    """Seconds for ``name`` over ``texts`` (after one warm-up batch) and its completeness count."""
    explain_many(bundle, texts[:batch_size], [name], batch_size=batch_size, params=params)
    start = clock(bundle.device)
    result = explain_many(bundle, texts, [name], batch_size=batch_size, params=params)
    seconds = clock(bundle.device) - start
    row = {"method": name, "seconds": seconds, "per_review_ms": 1000 * seconds / len(texts)}
    diagnostics = result.diagnostics.get(name)
    if diagnostics:
        row["complete_within_1pct"] = sum(not d.get("warnings") for d in diagnostics)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", nargs="+", required=True, help="trained model folder(s)")
    parser.add_argument("--per-part", type=int, default=25, help="reviews per raw part (0: all)")
    parser.add_argument("--methods", default="all", help="comma-separated methods, or 'all'")
    parser.add_argument("--train", help="the models' training records (fits the decision tree)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--device", help="cpu / cuda (default: CUDA when present)")
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args(argv)
    if not RAW.is_dir():
        parser.error(f"YELP-HAT's raw parts are not at {RAW}")
    torch.set_num_threads(1)
    reviews = sample_reviews(args.per_part, args.seed)
    texts = [t for _, t in reviews]
    words = np.array([len(t.split()) for t in texts])
    parts = sorted({p for p, _ in reviews})
    device_name = "cpu"
    results = []
    for folder in args.model:
        bundle = TrainedModel.load(folder, device=args.device)
        if bundle.device.type == "cuda":
            device_name = torch.cuda.get_device_name(bundle.device)
        names = resolve_methods(args.methods, bundle.model.architecture)
        fit_args = argparse.Namespace(
            model=folder, train=[args.train] if args.train else None, seed=args.seed, methods=args.methods
        )
        params = with_seed({}, names, args.seed)
        names, skipped, _ = fitted_methods(fit_args, bundle, names, params, None)
        for name, why in skipped.items():
            print(f"{bundle.model.architecture}: skipped {name}: {why}", file=sys.stderr)
        for name in names:
            row = time_method(bundle, texts, name, params, args.batch_size)
            row["architecture"] = bundle.model.architecture
            results.append(row)
            done = (
                f", complete {row['complete_within_1pct']}/{len(texts)}"
                if "complete_within_1pct" in row
                else ""
            )
            print(
                f"{row['architecture']:<18}{name:<28}{row['seconds']:>9.2f} s {row['per_review_ms']:>10.1f} ms/review{done}",
                flush=True,
            )
    print(
        f"{len(texts)} reviews from {len(parts)} parts ({', '.join(parts)}), {words.mean():.0f} words on average "
        f"(max {words.max()}), device {device_name}"
    )
    print(
        json.dumps(
            {
                "bench": "yelphat_methods",
                "device": device_name,
                "reviews": len(texts),
                "parts": parts,
                "mean_words": float(words.mean()),
                "results": results,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
