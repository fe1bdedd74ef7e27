"""Benchmark: adaptive redundancy replayed on the real YELP-HAT answers (cost against error).

The raw YELP-HAT files (``../shared/data/yelp-hat/raw/``; three labels and maps per review, Sen et al. 2020)
are replayed in a random order per review under every stopping rule and threshold of
``python -m explain_engine redundancy-replay`` (:mod:`explain_engine.replay`), against the fixed design of
three answers; simulated annotators fitted to the real answers extend it to the maxima of ``--simulate``.

Printed: the replay tables (answers used and saved, texts stopped by their rule, and the change in the label
majority, human accuracy, CAM / SAM k and the human–human AUC), the seconds the replay took, and one JSON
line. ``--plot`` writes the cost-against-error figure. Usage::

    .venv/bin/python bench/redundancy_replay.py [--seeds 5] [--simulate 5 9] [--plot replay.png]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from explain_engine.cli.redundancy_replay import (  # noqa: E402
    CATEGORIES,
    as_dict,
    format_table,
    plot,
    policies,
)
from explain_engine.datasets.yelphat import read_raw  # noqa: E402
from explain_engine.replay import crowd_accuracy, replay_table, simulate  # noqa: E402

RAW = ROOT.parent / "shared" / "data" / "yelp-hat" / "raw"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--raw", default=str(RAW), help="folder of the raw YELP-HAT CSVs")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--simulate", type=int, nargs="*", default=[5, 9])
    parser.add_argument("--plot", help="cost-against-error figure (.png / .svg)")
    args = parser.parse_args()
    files = sorted(Path(args.raw).glob("*.csv"))
    if not files:
        sys.exit(f"no raw YELP-HAT CSV in {args.raw}")
    start = time.perf_counter()
    records = [r for r in read_raw(files) if len(r["annotations"]) >= 3]
    seeds = list(range(args.seeds))
    accuracy = crowd_accuracy(records, CATEGORIES)
    base, rows = replay_table(records, policies(3), 3, seeds, accuracy)
    results = [as_dict("real, max 3", base, rows)]
    tables = [format_table(f"YELP-HAT real answers, fixed N=3, {len(records)} texts", base, rows)]
    for maximum in args.simulate:
        base, rows = replay_table(simulate(records, maximum), policies(maximum), maximum, seeds)
        results.append(as_dict(f"simulated, max {maximum}", base, rows))
        tables.append(format_table(f"simulated annotators, fixed N={maximum}", base, rows))
    elapsed = time.perf_counter() - start
    if args.plot:
        plot(results, args.plot)
    print("\n\n".join(tables))
    print(f"\nreplayed in {elapsed:.1f} s ({len(seeds)} orders per policy)")
    summary = [
        {
            "design": r["design"],
            "policies": [
                {k: p[k] for k in ("rule", "threshold", "min", "max", "saved")}
                | {"majority_same": p["figures"]["majority_same"], "d_hh_auc": p["change"]["hh_auc"]}
                for p in r["policies"]
            ],
        }
        for r in results
    ]
    print(
        json.dumps(
            {
                "bench": "redundancy_replay",
                "texts": len(records),
                "seconds": round(elapsed, 1),
                "results": summary,
            }
        )
    )


if __name__ == "__main__":
    main()
