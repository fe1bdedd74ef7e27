"""``python -m explain_engine alignment --data FILE.jsonl``: importance alignment ΔA per oracle
(Prasad et al. 2021 §3.3, eqs. 5–7), each with its paired one-sided t-test of C against C_R.

One JSON object per line: ``id``, ``text``, ``label`` (the gold label), ``explanation`` (a human's
explanation of the example) and ``attributions`` — one number per whitespace word of ``text`` for the
gold label, or ``{target: [...]}`` from which the gold label's are taken (its absence is an error naming
the example). Each example is paired with the explanation of a random other example (a seeded
derangement, or the ``random_partner`` id each record names). Oracles:

* ``hard`` (eq. 2): the words of the text found in the explanation, stop words left out (``--stop-words``:
  ``nltk``, the paper's list, or ``sklearn``); ``--compare-stop-words`` also prints ΔA under the other list;
* ``soft`` (eq. 3), with ``--informed-model DIR``: |IG| of an explanation-informed twin
  (:mod:`explain_engine.soft_oracle`) for the own and for the random explanation, each for the joint
  label y' of its pair — (y, matched) and (y, mismatched); a second row, ``soft (y' matched for both)``,
  takes the random explanation's oracle for (y, matched) too, so that only the explanation differs
  between C and C_R (the paper's y' changes the twin's target as well);
* ``expert`` (eq. 4), when records carry ``expert`` (annotators × words 0/1 marks against their own
  explanation) and ``expert_random`` (marks against their ``random_partner``'s explanation).

Integrated gradients report their completeness here as in ``explain``: the soft oracle's IG per text
(own and random explanation), and the attributions' when a record carries ``completeness`` (as
``informed-twin`` writes it). Each ΔA row counts the texts whose IG is flagged (not complete within
the tolerance at the step cap); ``completeness`` gives the flagged ids and the path points used.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

from explain_engine.completeness import path_point_distribution
from explain_engine.datasets.jsonl import json_lines
from explain_engine.jsonsafe import json_safe
from explain_engine.metrics.alignment import (
    expert_oracle,
    gold_attributions,
    hard_oracle,
    oracle_alignments,
    random_derangement,
)
from explain_engine.metrics.bootstrap import Estimate
from explain_engine.stopwords import DEFAULT_STOP_WORDS, STOP_WORD_LISTS
from explain_engine.text import word_spans, words_of

REQUIRED = ("id", "text", "label", "explanation", "attributions")


def read_alignment_jsonl(path: str) -> list[dict]:
    """The records of ``path``, checked: every field present, attributions for the gold label, one per word."""
    records = []
    for where, rec in json_lines(path):
        missing = [k for k in REQUIRED if not isinstance(rec, dict) or k not in rec]
        if missing:
            raise ValueError(f"{where}: needs {', '.join(repr(k) for k in missing)}")
        assert isinstance(rec, dict)
        rec["id"] = str(rec["id"])
        rec["words"] = words_of(rec["text"], word_spans(rec["text"]))
        values = gold_attributions(rec["id"], rec["attributions"], rec["label"])
        if values.size != len(rec["words"]):
            raise ValueError(
                f"example {rec['id']!r}: {values.size} attributions for {len(rec['words'])} words"
            )
        rec["gold_attributions"] = values
        records.append(rec)
    if len(records) < 2:
        raise ValueError(f"{path}: importance alignment needs at least two examples")
    return records


def partners(records: list[dict], seed: int) -> np.ndarray:
    """Each example's random partner: the ``random_partner`` ids when records name them, else a derangement."""
    named = [r.get("random_partner") for r in records]
    if all(p is None for p in named):
        return random_derangement(len(records), seed=seed)
    index = {r["id"]: i for i, r in enumerate(records)}
    out = []
    for rec, partner in zip(records, named, strict=True):
        if partner is None or str(partner) not in index or str(partner) == rec["id"]:
            raise ValueError(f"example {rec['id']!r}: random_partner must name another example of the file")
        out.append(index[str(partner)])
    return np.asarray(out)


def _expert(records: list[dict]) -> tuple[list, list] | None:
    has = ["expert" in r or "expert_random" in r for r in records]
    if not any(has):
        return None
    own: list[np.ndarray] = []
    rand: list[np.ndarray] = []
    for rec in records:
        if "expert" not in rec or "expert_random" not in rec:
            raise ValueError(
                f"example {rec['id']!r}: the expert oracle needs both 'expert' and 'expert_random'"
            )
        for key, into in (("expert", own), ("expert_random", rand)):
            marks = np.asarray(rec[key], dtype=np.float64)
            if marks.ndim != 2 or marks.shape[1] != len(rec["words"]):
                raise ValueError(
                    f"example {rec['id']!r}: {key} must be annotators × {len(rec['words'])} marks"
                )
            into.append(expert_oracle(marks))
    return own, rand


def _soft_oracles(
    records: list[dict],
    informed_model: str,
    explanations: list[str],
    random_expl: list[str],
    batch_size: int = 16,
) -> tuple[dict[str, tuple[list, list]], dict[str, list]]:
    """The soft oracle rows (eq. 3) and, per row, each text's integrated-gradient checks: a text is
    flagged when the IG of its own or of its random explanation is not complete at the step cap."""
    from explain_engine.artifacts import TrainedModel
    from explain_engine.soft_oracle import checked_soft_oracles

    bundle = TrainedModel.load(informed_model)
    texts, labels = [r["text"] for r in records], [str(r["label"]) for r in records]
    own, own_diag = checked_soft_oracles(bundle, texts, explanations, labels, True, batch_size=batch_size)
    rand, rand_diag = checked_soft_oracles(bundle, texts, random_expl, labels, False, batch_size=batch_size)
    both, both_diag = checked_soft_oracles(bundle, texts, random_expl, labels, True, batch_size=batch_size)

    def pair(a: list[dict], b: list[dict]) -> list[list[dict | None]]:
        return [[x.get("completeness"), y.get("completeness")] for x, y in zip(a, b, strict=True)]

    rows = {"soft": (own, rand), "soft (y' matched for both)": (own, both)}
    return rows, {"soft": pair(own_diag, rand_diag), "soft (y' matched for both)": pair(own_diag, both_diag)}


def _completeness(records: list[dict], checks: dict[str, list]) -> dict[str, dict[str, Any]]:
    """Per source of integrated gradients (the attributions, each soft oracle row): how many texts
    carry a completeness check, which are flagged (not complete within the tolerance at the cap) and
    the distribution of path points used."""
    out = {}
    for name, per_text in checks.items():
        entries = [[c] if isinstance(c, dict) or c is None else list(c) for c in per_text]
        checked = [i for i, e in enumerate(entries) if any(isinstance(c, dict) for c in e)]
        flagged = [
            records[i]["id"]
            for i in checked
            if any(isinstance(c, dict) and not c.get("converged", True) for c in entries[i])
        ]
        steps = [int(c["steps"]) for i in checked for c in entries[i] if isinstance(c, dict) and "steps" in c]
        out[name] = {
            "texts": len(records),
            "checked": len(checked),
            "flagged": len(flagged),
            "flagged_ids": flagged,
            "path_points": path_point_distribution(steps),
        }
    return out


def alignment_report(
    records: list[dict],
    stop_words: str = DEFAULT_STOP_WORDS,
    informed_model: str | None = None,
    compare_stop_words: bool = False,
    n_boot: int = 1000,
    seed: int = 0,
    batch_size: int = 16,
) -> dict:
    """ΔA per oracle as plain data (what the command prints); ``batch_size`` texts per batch of the
    soft oracle's integrated gradients (the result does not depend on it)."""
    pairing = partners(records, seed)
    words = [r["words"] for r in records]
    explanations = [r["explanation"] for r in records]
    random_expl = [explanations[j] for j in pairing]

    def hard(stops: str):
        own = [hard_oracle(w, e, stops) for w, e in zip(words, explanations, strict=True)]
        rand = [hard_oracle(w, e, stops) for w, e in zip(words, random_expl, strict=True)]
        return own, rand

    oracles = {"hard": hard(stop_words)}
    checks = {"attributions": [r.get("completeness") for r in records]}
    if informed_model:
        soft, soft_checks = _soft_oracles(records, informed_model, explanations, random_expl, batch_size)
        oracles.update(soft)
        checks.update(soft_checks)
    expert = _expert(records)
    if expert is not None:
        oracles["expert"] = expert
    others = [name for name in STOP_WORD_LISTS if name != stop_words] if compare_stop_words else []
    for other in others:
        oracles[f"hard ({other} stop words)"] = hard(other)
    attributions = [r["gold_attributions"] for r in records]
    results = oracle_alignments(attributions, oracles, n_boot=n_boot, seed=seed)
    completeness = _completeness(records, checks)
    rows = {name: res.to_dict() for name, res in results.items()}
    for name, entry in rows.items():
        flagged = set(completeness["attributions"]["flagged_ids"])
        flagged |= set(completeness.get(name, {}).get("flagged_ids", []))
        entry["flagged_texts"] = len(flagged)
    report = {
        "examples": len(records),
        "stop_words": stop_words,
        "pairing": {r["id"]: records[j]["id"] for r, j in zip(records, pairing, strict=True)},
        "oracles": rows,
        "completeness": completeness,
    }
    for other in others:
        a = results["hard"].delta_a.value
        b = results[f"hard ({other} stop words)"].delta_a.value
        report["stop_word_shift"] = {"against": other, "delta_a_change": b - a}
    return report


def format_report(rep: dict, source: str) -> str:
    lines = [
        f"{source}: {rep['examples']} examples; C_R from the same oracle of a random other explanation",
        f"stop words: {rep['stop_words']}",
        "",
        f"{'oracle':<28} {'ΔA':<34} {'mean C':>8} {'mean C_R':>9} {'t':>8} {'p (C > C_R)':>12}",
    ]
    for name, d in rep["oracles"].items():
        est = Estimate.from_dict(d["delta_a"])
        t = "-" if d["t_statistic"] is None else f"{d['t_statistic']:.3f}"
        p = "-" if d["p_value"] is None else f"{d['p_value']:.3g}"
        c = "-" if d["mean_c"] is None else f"{d['mean_c']:.3f}"
        cr = "-" if d["mean_c_random"] is None else f"{d['mean_c_random']:.3f}"
        skipped = d["delta_a"].get("skipped", 0)
        note = f"  ({skipped} skipped: constant vector)" if skipped else ""
        flagged = d.get("flagged_texts", 0)
        note += f"  ({flagged} texts with an incomplete IG)" if flagged else ""
        lines.append(f"{name:<28} {str(est):<34} {c:>8} {cr:>9} {t:>8} {p:>12}{note}")
    for name, c in rep.get("completeness", {}).items():
        if not c["checked"]:
            continue
        shown = ", ".join(c["flagged_ids"][:10]) + (", ..." if c["flagged"] > 10 else "")
        points = c["path_points"]
        if points["min"] is None:
            continue
        lines.append(
            f"completeness of IG ({name}): {c['checked'] - c['flagged']} of {c['checked']} texts complete, "
            f"{c['flagged']} flagged{f' ({shown})' if shown else ''}; path points min {points['min']}, "
            f"median {points['median']:g}, 90th percentile {points['p90']:g}, max {points['max']}"
        )
    shift = rep.get("stop_word_shift")
    if shift:
        lines += [
            "",
            f"ΔA (hard) moves by {shift['delta_a_change']:+.4f} with {shift['against']}'s stop words",
        ]
    return "\n".join(lines)


def _run(args: argparse.Namespace) -> int:
    records = read_alignment_jsonl(args.data)
    if args.batch_size < 1:
        raise ValueError("--batch-size must be at least 1")
    rep = alignment_report(
        records,
        args.stop_words,
        args.informed_model,
        args.compare_stop_words,
        args.n_boot,
        args.seed,
        args.batch_size,
    )
    print(json.dumps(json_safe(rep), indent=2) if args.json else format_report(rep, args.data))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "alignment", help="importance alignment ΔA per oracle (Prasad et al. 2021)", description=__doc__
    )
    parser.add_argument(
        "--data", required=True, help="JSON lines: id, text, label, explanation, attributions"
    )
    parser.add_argument("--stop-words", choices=sorted(STOP_WORD_LISTS), default=DEFAULT_STOP_WORDS)
    parser.add_argument(
        "--compare-stop-words", action="store_true", help="also ΔA (hard) under the other list"
    )
    parser.add_argument("--informed-model", help="folder of an explanation-informed twin (soft oracle)")
    parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples (0: no intervals)")
    parser.add_argument(
        "--batch-size",
        type=int,
        default=16,
        help="texts per batch of the soft oracle's IG (1: one at a time)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(func=_run)
