"""``python -m explain_engine similarity --maps maps.jsonl --machine preds.jsonl [--json]``: human vs machine.

Compares a machine's attention (``preds.jsonl``: one ``{"id": ..., "attention": [float per canonical
word]}`` per line, as ``predict`` writes) with the human maps of ``maps.jsonl`` (``yelphat convert``)
against each human reference — every annotator slot HAM1, HAM2, …, the consensus map CAM and the
super map SAM — as Sen et al. 2020 does:

* Table 2: behavioral similarity (mean per-text ROC AUC; constant human maps skipped and counted);
* Table 3: lexical similarity LS(M, H) of the machine's top-k words (k = the human count per text),
  the random baseline LS(R, H) (mean ± sd over draws) and the adjusted LS;
* Table 4: cross-sentiment selection rates CSSR_p / CSSR_n of the human maps and of the machine's
  top-k words, with Hu & Liu's lexicon (``--lexicon DIR``);
* with ``--tags-table``, Table 5: the distribution over Penn tags of CAM, machine and corpus words.

POS tags are taken from the records' ``pos`` field (``yelphat convert --pos``) when every record
has one, and computed otherwise.
"""

from __future__ import annotations

import argparse
import json
import math

from explain_engine.datasets.yelphat import read_maps_jsonl
from explain_engine.jsonsafe import json_safe
from explain_engine.metrics.bootstrap import Estimate
from explain_engine.reports import read_predictions, similarity_report


def _est(d: dict) -> str:
    return str(Estimate.from_dict(d))


def format_report(rep: dict, tags_table: bool = False) -> str:
    lines = [
        f"{rep['texts']} texts compared; {rep['texts_without_prediction']} texts had no prediction, "
        f"{rep['predictions_without_text']} predictions had no text",
        "",
        "Behavioral similarity, human vs machine (Sen et al. 2020 Table 2; mean per-text ROC AUC)",
        f"  {'reference':<9} {'k':>7}  similarity",
    ]
    for r in rep["references"]:
        b = r["behavioral"]
        lines.append(f"  {r['reference']:<9} {r['k']['value']:7.1f}  {_est(b)}, skipped {b['skipped']}")
    lines += ["", "Lexical similarity over Penn tags (Sen et al. 2020 Table 3)"]
    lines.append(f"  {'reference':<9} {'random LS':>16}  {'machine LS':<32} adjusted")
    for r in rep["references"]:
        rnd = r["lexical_random"]
        sd = rnd.get("sd")
        rnd_s = f"{rnd['value']:.3f} ± {sd:.3f}" if rnd["value"] is not None and sd is not None else "n/a"
        adj = r["lexical_adjusted"]
        adj_s = "n/a" if adj is None or (isinstance(adj, float) and math.isnan(adj)) else f"{adj:.3f}"
        lines.append(f"  {r['reference']:<9} {rnd_s:>16}  {_est(r['lexical']):<32} {adj_s}")
    if rep["references"] and "cssr_human" in rep["references"][0]:
        lines += ["", "Cross-sentiment selection rate (Sen et al. 2020 Table 4)"]
        lines.append(f"  {'reference':<9} {'human p':>8} {'human n':>8} {'machine p':>10} {'machine n':>10}")
        for r in rep["references"]:
            h, m = r["cssr_human"], r["cssr_machine"]
            vals = [h["cssr_p"], h["cssr_n"], m["cssr_p"], m["cssr_n"]]
            cells = ["n/a" if v["value"] is None else f"{v['value']:.3f}" for v in vals]
            lines.append(f"  {r['reference']:<9} {cells[0]:>8} {cells[1]:>8} {cells[2]:>10} {cells[3]:>10}")
    else:
        lines += ["", "CSSR: pass --lexicon DIR (Hu & Liu positive-words.txt / negative-words.txt)"]
    if tags_table and rep["tag_distribution"]:
        lines += [
            "",
            "Distribution over Penn tags (Sen et al. 2020 Table 5): human = CAM, machine = its top-k",
        ]
        lines.append(f"  {'tag':<5} {'category':<42} {'human':>7} {'machine':>8} {'corpus':>7}")
        for t in rep["tag_distribution"]:
            lines.append(
                f"  {t['tag']:<5} {t['category']:<42} {t['human']:7.4f} {t['machine']:8.4f} {t['corpus']:7.4f}"
            )
    return "\n".join(lines)


def _run(args: argparse.Namespace) -> int:
    records = read_maps_jsonl(args.maps)
    predictions = read_predictions(args.machine, args.key)
    rep = similarity_report(
        records,
        predictions,
        args.lexicon,
        args.max_maps,
        args.min_maps,
        args.select,
        args.draws,
        args.n_boot,
        args.seed,
        progress=None,
    )
    if args.json:
        print(json.dumps(json_safe(rep), indent=2))
    else:
        print(format_report(rep, args.tags_table))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "similarity", help="human vs machine attention (Sen et al. 2020)", description=__doc__
    )
    parser.add_argument("--maps", required=True, help="JSON lines written by 'yelphat convert'")
    parser.add_argument("--machine", required=True, help="JSON lines with 'id' and per-word 'attention'")
    parser.add_argument("--key", default="attention", help="field of --machine holding the scores")
    parser.add_argument("--lexicon", default=None, help="directory of Hu & Liu's lexicon (for CSSR)")
    parser.add_argument(
        "--select", choices=("top_k", "binary"), default="top_k", help="machine word selection"
    )
    parser.add_argument("--draws", type=int, default=10, help="random draws for LS(R, H)")
    parser.add_argument("--max-maps", type=int, default=None, help="use only the first N maps of each text")
    parser.add_argument("--min-maps", type=int, default=1, help="use only texts with at least N maps")
    parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples (0: no intervals)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tags-table", action="store_true", help="also print the Penn tag distribution")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.set_defaults(func=_run)
