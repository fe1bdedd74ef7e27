"""``python -m explain_engine yelphat convert RAW.csv [RAW.csv ...] --out maps.jsonl``.

Turns the raw YELP-HAT Mechanical Turk CSVs (Sen et al. 2020) into one JSON object per review (see
:mod:`explain_engine.datasets.yelphat`) and prints the conversion report: reviews, answers and maps
per file, and every answer whose map did not fit its review.
"""

from __future__ import annotations

import argparse
import json
import sys

from explain_engine.datasets.yelphat import convert, write_maps_jsonl
from explain_engine.metrics.pos import tag_documents


def _convert(args: argparse.Namespace) -> int:
    records, report = convert(args.raw, progress=False if args.quiet else None)
    if args.pos:
        tags = tag_documents(
            [r["text"] for r in records],
            [r["words"] for r in records],
            progress=False if args.quiet else None,
        )
        for rec, t in zip(records, tags, strict=True):
            rec["pos"] = t
    write_maps_jsonl(records, args.out)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    elif not args.quiet:
        print(report.summary())
        print(f"wrote {len(records)} reviews to {args.out}")
    if report.mismatches and args.strict:
        print(f"error: {len(report.mismatches)} mismatch(es) (--strict)", file=sys.stderr)
        return 1
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("yelphat", help="YELP-HAT raw data (Sen et al. 2020)", description=__doc__)
    sub = parser.add_subparsers(dest="yelphat_command", required=True, metavar="ACTION")
    conv = sub.add_parser("convert", help="raw MTurk CSVs -> one JSON line per review with its maps")
    conv.add_argument("raw", nargs="+", help="raw CSV file(s), e.g. 'ham_part1(50words).csv'")
    conv.add_argument("--out", required=True, help="output JSON-lines file")
    conv.add_argument("--pos", action="store_true", help="also store Penn Treebank tags per word ('pos')")
    conv.add_argument("--json", action="store_true", help="print the report as JSON")
    conv.add_argument("--strict", action="store_true", help="exit with status 1 when any answer mismatched")
    conv.add_argument("--quiet", action="store_true", help="no progress bar and no report")
    conv.set_defaults(func=_convert)
