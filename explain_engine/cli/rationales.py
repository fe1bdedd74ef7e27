"""``python -m explain_engine rationales ACTION``: human rationale data sets in and out, and how plausible
a model's explanations are against them.

* ``import FORMAT PATH [PATH ...] --out maps.jsonl [--texts DIR]``: a public rationale set (``eraser``,
  ``hatexplain``, ``esnli``, ``zaidan``, ``mohseni``, ``yelphat``; :mod:`explain_engine.datasets.public_rationales`)
  as rationale records, one JSON line per text with every annotator's map: the file ``train``,
  ``explain``, ``agreement`` and ``similarity`` read.
* ``export --data maps.jsonl --format eraser|hf --out DIR [--datasheet FILE]``: rationale records as an
  ERASER folder (:mod:`explain_engine.datasets.eraser`) or a Hugging Face ``datasets`` folder
  (:mod:`explain_engine.datasets.hf_folder`).
* ``plausibility --maps maps.jsonl --explanations expl.jsonl [--model DIR]``: token F1, IOU F1 and AUPRC
  as ERASER defines them (DeYoung et al. 2020 §4.1) of each method's explanations against the human maps,
  each with a bootstrap interval; with ``--model``, comprehensiveness and sufficiency (AOPC, same paper)
  of the same explanations beside them.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from explain_engine.datasets.eraser import write_eraser
from explain_engine.datasets.hf_folder import write_hf_folder
from explain_engine.datasets.public_rationales import FORMATS, read_rationales
from explain_engine.datasets.rationale_record import consensus, read_records
from explain_engine.jsonsafe import json_safe
from explain_engine.metrics.bootstrap import N_BOOT, Estimate
from explain_engine.metrics.plausibility import eraser_plausibility, ferret_plausibility

REFERENCES = ("each", "cam", "sam")


def _import(args: argparse.Namespace) -> int:
    records = read_rationales(args.format, args.paths, args.texts)
    with open(args.out, "w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    maps = sum(len(r["annotations"]) for r in records)
    print(f"wrote {len(records)} texts with {maps} human maps to {args.out}")
    return 0


def _export(args: argparse.Namespace) -> int:
    records = read_records(args.data)
    if args.format == "eraser":
        counts = write_eraser(records, args.out)
    else:
        sheet = (
            Path(args.datasheet).read_text(encoding="utf-8")
            if args.datasheet
            else f"Exported from {args.data}."
        )
        counts = write_hf_folder(records, args.out, sheet, pretty_name=Path(args.data).stem)
    print(f"wrote {args.format} to {args.out}: " + ", ".join(f"{s} {n}" for s, n in counts.items()))
    return 0


def human_references(records: list[dict], reference: str) -> tuple[list[int], list[list[int]]]:
    """``(record index, human map)`` pairs: every annotator's map (``each``, ERASER's one instance per
    annotation), or one consensus (``cam``) or super (``sam``) map per text (Sen et al. 2020 Defs. 2.4, 2.5)."""
    index: list[int] = []
    maps: list[list[int]] = []
    for i, rec in enumerate(records):
        given = [a["map"] for a in rec["annotations"]]
        if not given:
            continue
        chosen = given if reference == "each" else [consensus(given)[0 if reference == "cam" else 1]]
        index += [i] * len(chosen)
        maps += chosen
    return index, maps


#: The plausibility sets by name: (figure key, column heading) and what the table's title says of them.
SETS = {
    "eraser": (
        (("token_f1", "token F1"), ("iou_f1", "IOU F1"), ("auprc", "AUPRC")),
        "plausibility as ERASER defines it (DeYoung et al. 2020)",
    ),
    "ferret": (
        (("token_f1", "token F1"), ("token_iou", "token IOU"), ("auprc", "AUPRC")),
        "plausibility as ferret defines it (Attanasio et al. 2023; top-K words, K the mean human rationale size)",
    ),
}


def plausibility_table(records: list[dict], scores: dict[str, list], ids: list[str], args) -> dict:
    """Per method the plausibility figures of ``args.set`` against ``args.reference`` maps of the explained texts."""
    position = {rec["id"]: i for i, rec in enumerate(records)}
    explained = [records[position[i]] for i in ids]
    index, human = human_references(explained, args.reference)
    chosen = getattr(args, "set", "eraser")
    if chosen == "ferret":
        return {
            method: ferret_plausibility(
                human, [per_text[i] for i in index], n_boot=args.n_boot, seed=args.seed
            )
            for method, per_text in scores.items()
        }
    return {
        method: eraser_plausibility(
            human, [per_text[i] for i in index], args.select, n_boot=args.n_boot, seed=args.seed
        )
        for method, per_text in scores.items()
    }


def _plausibility(args: argparse.Namespace) -> int:
    from explain_engine.cli.faithfulness import read_explanations

    records = read_records(args.maps)
    ids, methods, scores = read_explanations(args.explanations, {r["id"]: r["text"] for r in records})
    table = plausibility_table(records, scores, ids, args)
    faith = _faithfulness(args, records, ids, scores) if args.model else {}
    if args.json:
        out = {
            m: {k: e.to_dict() for k, e in figures.items()} | faith.get(m, {}) for m, figures in table.items()
        }
        print(json.dumps(json_safe({"texts": len(ids), "reference": args.reference, "methods": out})))
        return 0
    columns, title = SETS[args.set]
    print(f"{len(ids)} texts; human maps: {args.reference}; {title}")
    head = f"  {'method':<18} " + " ".join(f"{heading:<28}" for _, heading in columns)
    print(head + ("  comprehensiveness AOPC        sufficiency AOPC" if faith else ""))
    for method, figures in table.items():
        cells = [f"{_short(figures[k]):<28}" for k, _ in columns]
        if faith:
            cells += [
                f"{_short(Estimate.from_dict(faith[method][k])):<28}"
                for k in ("comprehensiveness_aopc", "sufficiency_aopc")
            ]
        print(f"  {method:<18} " + " ".join(cells))
    return 0


def _short(e: Estimate) -> str:
    return str(e).rsplit(" (n=", 1)[0]


def _faithfulness(args, records: list[dict], ids: list[str], scores: dict[str, list]) -> dict[str, dict]:
    from explain_engine.artifacts import TrainedModel
    from explain_engine.metrics.faithfulness import faithfulness

    texts = {r["id"]: r["text"] for r in records}
    bundle = TrainedModel.load(args.model, device=args.device)
    result = faithfulness(bundle, [texts[i] for i in ids], scores, ids=ids)
    summary = result.summary(args.n_boot, seed=args.seed)
    return {
        m: {k: summary[m][k].to_dict() for k in ("comprehensiveness_aopc", "sufficiency_aopc")}
        for m in summary
    }


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "rationales", help="human rationale data sets in and out; plausibility (ERASER)", description=__doc__
    )
    sub = parser.add_subparsers(dest="rationales_command", required=True, metavar="ACTION")
    imp = sub.add_parser("import", help="a public rationale set -> rationale records (JSON lines)")
    imp.add_argument("format", choices=FORMATS)
    imp.add_argument("paths", nargs="+", help="the set's file(s), or its folder (eraser)")
    imp.add_argument("--texts", help="mohseni: the 20news-bydate-test folder of article texts")
    imp.add_argument("--out", required=True, help="output JSON-lines file")
    imp.set_defaults(func=_import)
    exp = sub.add_parser("export", help="rationale records -> an ERASER or Hugging Face datasets folder")
    exp.add_argument("--data", required=True, help="rationale records (JSON lines)")
    exp.add_argument("--format", choices=("eraser", "hf"), required=True)
    exp.add_argument("--out", required=True, help="output folder")
    exp.add_argument("--datasheet", help="Markdown file for the dataset card (hf)")
    exp.set_defaults(func=_export)
    pla = sub.add_parser(
        "plausibility", help="plausibility of explanations against human maps (ERASER's or ferret's set)"
    )
    pla.add_argument("--maps", required=True, help="rationale records (JSON lines)")
    pla.add_argument("--explanations", required=True, help="JSON lines written by the explain command")
    pla.add_argument(
        "--reference", choices=REFERENCES, default="each", help="which human maps (default: each annotator's)"
    )
    pla.add_argument(
        "--select", choices=("top_k", "binary"), default="top_k", help="machine word selection (eraser)"
    )
    pla.add_argument(
        "--set",
        choices=tuple(SETS),
        default="eraser",
        help="which plausibility set: ERASER's (token F1, IOU F1, AUPRC; k per text) or ferret's (token F1, "
        "token IOU, AUPRC; one K, the mean human rationale size)",
    )
    pla.add_argument("--model", help="trained model folder: also comprehensiveness and sufficiency")
    pla.add_argument("--device", help="cpu / cuda (default: CUDA when available)")
    pla.add_argument("--n-boot", type=int, default=N_BOOT, help="bootstrap resamples (0: no intervals)")
    pla.add_argument("--seed", type=int, default=0)
    pla.add_argument("--json", action="store_true", help="print one JSON object")
    pla.set_defaults(func=_plausibility)
