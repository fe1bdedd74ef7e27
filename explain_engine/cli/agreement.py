"""``python -m explain_engine agreement --maps maps.jsonl [--json]``: how much the human annotators agree.

For the output of ``yelphat convert`` (or any file of that shape): average words selected k per
annotator slot (HAM1, HAM2, …), for the consensus (CAM, AND) and super (SAM, OR) maps, the
human–human behavioral similarity of every pair of slots (Sen et al. 2020 Table 2: one map is the truth,
the other the score), Fleiss κ of the annotators' labels, and the annotators' accuracy against the gold
label per slot and for the per-text majority (Sen et al. 2020 Table 1), overall and per part. Every
figure comes with its n and a bootstrap confidence interval over texts.

By default the first three maps of each text are used (Sen et al. 2020: three annotators per review)
and only texts with all three count; the output says how many texts were left out and why.
"""

from __future__ import annotations

import argparse
import json

from explain_engine.datasets.yelphat import read_maps_jsonl
from explain_engine.jsonsafe import json_safe
from explain_engine.metrics.bootstrap import Estimate
from explain_engine.reports import PAPER_MAPS, agreement_report


def _fmt(d: dict) -> str:
    return str(Estimate.from_dict(d))


def format_report(rep: dict, source: str) -> str:
    cov = rep["coverage"]
    lines = [
        f"{source}: {rep['texts']} texts, {rep['maps']} maps (maps per text: {rep['maps_per_text']})",
        f"Texts read {cov['read']}, used {cov['used']} (those with at least {cov['min_maps']} maps"
        + (f"; the first {cov['max_maps']} maps of each)" if cov["max_maps"] is not None else ")"),
    ]
    if cov["left_out"]:
        why = ", ".join(f"{n} with {m} map{'s' if m != '1' else ''}" for m, n in cov["left_out"].items())
        lines.append(
            f"Left out {sum(cov['left_out'].values())} texts with fewer than {cov['min_maps']} maps: {why}"
        )
    else:
        lines.append("Left out no text")
    if cov["capped"]:
        lines.append(
            f"{cov['capped']} texts had more than {cov['max_maps']} maps: only their first {cov['max_maps']} count"
        )
    lines.append("")
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
        "",
        "Human accuracy against the gold label (Sen et al. 2020 Table 1; 'cannot decide' is wrong; a missing",
        "answer is left out of its annotator's share and of the majority vote, and wrong in the pooled figure)",
    ]
    lines += _accuracy_lines(rep["human_accuracy"], "  ")
    for part, acc in rep["human_accuracy"].get("parts", {}).items():
        lines.append(f"  {part}")
        lines += _accuracy_lines(acc, "    ")
    return "\n".join(lines)


def _accuracy_lines(acc: dict, indent: str) -> list[str]:
    lines = []
    for name, d in acc["slots"].items():
        missing = f", {d['missing']} without an answer (left out)" if d.get("missing") else ""
        lines.append(f"{indent}{name:<9} {_fmt(d)}{missing}")
    p = acc["pooled"]
    lines.append(
        f"{indent}{'pooled':<9} {_fmt(p)}, all answers pooled (Table 1's figure); "
        f"{p['missing']} missing answers counted wrong"
    )
    m = acc["majority"]
    lines.append(
        f"{indent}{'majority':<9} {_fmt(m)}, {m['no_majority']} texts without a majority (counted wrong)"
    )
    return lines


def _run(args: argparse.Namespace) -> int:
    records = read_maps_jsonl(args.maps)
    max_maps = args.max_maps if args.max_maps and args.max_maps > 0 else None
    rep = agreement_report(records, max_maps, args.min_maps, args.n_boot, args.seed)
    print(json.dumps(json_safe(rep), indent=2) if args.json else format_report(rep, args.maps))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "agreement", help="human–human agreement of attention maps", description=__doc__
    )
    parser.add_argument("--maps", required=True, help="JSON lines written by 'yelphat convert'")
    parser.add_argument(
        "--max-maps",
        type=int,
        default=PAPER_MAPS,
        help=f"use only the first N maps of each text (default {PAPER_MAPS}, the paper's annotators per text; 0: all)",
    )
    parser.add_argument(
        "--min-maps",
        type=int,
        default=None,
        help="use only texts with at least N maps (default: all of them, i.e. --max-maps)",
    )
    parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples (0: no intervals)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.set_defaults(func=_run)
