"""``python -m explain_engine agreement --maps maps.jsonl [--json]``: how much the human annotators agree.

For the output of ``yelphat convert`` (or any file of that shape): average words selected k per
annotator slot (HAM1, HAM2, …), for the consensus (CAM, AND) and super (SAM, OR) maps, the
human–human behavioral similarity of every pair of slots (Sen et al. 2020 Table 2: one map is the truth,
the other the score) and Fleiss κ of the annotators' labels. Every figure comes with its n and a
bootstrap confidence interval over texts.
"""

from __future__ import annotations

import argparse
import json

from explain_engine.datasets.yelphat import read_maps_jsonl
from explain_engine.jsonsafe import json_safe
from explain_engine.metrics.bootstrap import Estimate
from explain_engine.reports import agreement_report


def _fmt(d: dict) -> str:
    return str(Estimate.from_dict(d))


def format_report(rep: dict, source: str) -> str:
    lines = [
        f"{source}: {rep['texts']} texts, {rep['maps']} maps (maps per text: {rep['maps_per_text']})",
        "",
    ]
    lines.append("Average words selected per map, k")
    for name, d in rep["k"].items():
        lines.append(f"  {name:<5} {_fmt(d)}")
    slots = sorted({r["truth"] for r in rep["human_human"]}, key=lambda s: int(s[3:]))
    lines += ["", "Human–human behavioral similarity (mean per-text ROC AUC; column = truth, row = score)"]
    cell = {(r["truth"], r["score"]): r["value"] for r in rep["human_human"]}
    lines.append("        " + "".join(f"{s:>8}" for s in slots))
    for score in slots:
        vals = [cell.get((truth, score)) for truth in slots]
        lines.append(f"  {score:<6}" + "".join(f"{'-':>8}" if v is None else f"{v:8.3f}" for v in vals))
    for r in rep["human_human"]:
        lines.append(f"  truth {r['truth']}, score {r['score']}: {_fmt(r)}, skipped {r['skipped']}")
    kd = rep["fleiss_kappa_labels"]
    lines += [
        "",
        f"Fleiss κ of the labels ({' / '.join(kd['categories'])}; missing answers left out): {_fmt(kd)}",
    ]
    return "\n".join(lines)


def _run(args: argparse.Namespace) -> int:
    records = read_maps_jsonl(args.maps)
    rep = agreement_report(records, args.max_maps, args.min_maps, args.n_boot, args.seed)
    print(json.dumps(json_safe(rep), indent=2) if args.json else format_report(rep, args.maps))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "agreement", help="human–human agreement of attention maps", description=__doc__
    )
    parser.add_argument("--maps", required=True, help="JSON lines written by 'yelphat convert'")
    parser.add_argument("--max-maps", type=int, default=None, help="use only the first N maps of each text")
    parser.add_argument("--min-maps", type=int, default=1, help="use only texts with at least N maps")
    parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples (0: no intervals)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.set_defaults(func=_run)
