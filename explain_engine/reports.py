"""Reports over human attention maps, as plain data: what the ``agreement`` and ``similarity`` commands
print and what the web app's dashboards store.

* :func:`agreement_report` — how much the annotators agree: k per map, human–human behavioral
  similarity and Fleiss κ of their labels (Sen et al. 2020 §4.1, Table 2), and how often their labels
  match the gold label, per map and for the majority (Sen et al. 2020 Table 1), over the texts that have
  all their maps (how many were left out, and why, is part of the report);
* :func:`similarity_report` — a machine's attention against every human reference (HAM1…, CAM, SAM):
  behavioral and lexical similarity and cross-sentiment selection rates (Sen et al. 2020 §4.1–§4.3,
  Tables 2–5).

They live in the library, not in the CLI, so that the web app and the command line compute one thing.
"""

from __future__ import annotations

from collections import Counter

from explain_engine.datasets.jsonl import json_lines
from explain_engine.datasets.yelphat import LABEL_CATEGORIES
from explain_engine.lexicon import load_opinion_lexicon
from explain_engine.metrics.agreement import fleiss_kappa
from explain_engine.metrics.behavioral import HumanMaps, average_k, human_human_similarity
from explain_engine.metrics.cssr import polarity_codes
from explain_engine.metrics.human_accuracy import human_accuracy
from explain_engine.metrics.human_machine import compare_to_humans
from explain_engine.metrics.lexical import encode_tags
from explain_engine.metrics.pos import tag_documents
from explain_engine.metrics.ragged import Ragged
from explain_engine.text import words_of

#: Sen et al. (2020 §3.1): three annotators per review. The ``agreement`` report takes the first three
#: maps of each text and, by default, only texts that have all three.
PAPER_MAPS = 3
#: YELP-HAT's gold labels (``Input.label``: 0 for 1–2 stars, 1 for 4–5) as the annotators' answer labels.
GOLD_ANSWER = {0: "negative", 1: "positive"}


def part_of(text_id: str) -> str:
    """The part (source file) of a converted YELP-HAT id ``"<file>:<row>"``."""
    return str(text_id).rsplit(":", 1)[0]


def agreement_report(
    records: list[dict],
    max_maps: int | None = PAPER_MAPS,
    min_maps: int | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> dict:
    """All figures the ``agreement`` command prints, as plain data.

    The first ``max_maps`` maps of each text are used (``None``: all); only texts with at least
    ``min_maps`` maps count, by default texts with all of them (``max_maps``, or the most any text has
    when ``max_maps`` is None), so that CAM and SAM always combine the same number of maps.
    ``coverage`` says how many texts were read, used and left out (by their number of maps), and how
    many had more maps than were used.
    """
    per_record = Counter(len(r["annotations"]) for r in records)
    full = max_maps if max_maps is not None else max(per_record, default=0)
    need = full if min_maps is None else min_maps
    if need < 1:
        raise ValueError("min_maps must be at least 1")
    humans = HumanMaps.from_records(records, max_maps=max_maps, min_maps=need)
    refs = humans.references(min_maps=max(2, need))
    k = {
        name: average_k(maps, n_boot, seed).to_dict() | {"texts": int(len(idx))}
        for name, (idx, maps) in refs.items()
    }
    table = humans.annotation_table()
    labels = [[humans.answers[a] if a >= 0 else None for a in row] for row in table]
    kappa = fleiss_kappa(labels, LABEL_CATEGORIES, n_boot, seed=seed)
    per_text = humans.maps_per_text
    used = [r for r in records if len(r["annotations"]) >= need]
    parts = sorted({part_of(r["id"]) for r in used})
    accuracy = human_accuracy(humans, GOLD_ANSWER, n_boot, seed=seed)
    if len(parts) > 1:
        accuracy["parts"] = {
            part: human_accuracy(
                HumanMaps.from_records(
                    [r for r in used if part_of(r["id"]) == part], max_maps=max_maps, min_maps=need
                ),
                GOLD_ANSWER,
                n_boot,
                seed=seed,
            )
            for part in parts
        }
    return {
        "texts": len(humans),
        "maps": int(per_text.sum()),
        "maps_per_text": {str(int(m)): int((per_text == m).sum()) for m in sorted(set(per_text.tolist()))},
        "coverage": {
            "read": len(records),
            "used": len(humans),
            "min_maps": need,
            "max_maps": max_maps,
            "left_out": {str(m): n for m, n in sorted(per_record.items()) if m < need},
            "capped": sum(n for m, n in per_record.items() if max_maps is not None and m > max_maps),
        },
        "k": k,
        "human_human": human_human_similarity(humans, n_boot, seed=seed),
        "fleiss_kappa_labels": kappa.to_dict() | {"categories": list(LABEL_CATEGORIES)},
        "human_accuracy": accuracy,
    }


def read_predictions(path: str, key: str = "attention") -> dict[str, list[float]]:
    """``id → scores`` from a predictions JSON-lines file (``ValueError`` naming a bad line)."""
    out: dict[str, list[float]] = {}
    for where, rec in json_lines(path):
        if not isinstance(rec, dict) or "id" not in rec or key not in rec:
            raise ValueError(f"{where}: needs 'id' and {key!r}")
        out[str(rec["id"])] = rec[key]
    return out


def similarity_report(
    records: list[dict],
    predictions: dict[str, list[float]],
    lexicon_dir: str | None = None,
    max_maps: int | None = None,
    min_maps: int = 1,
    select: str = "top_k",
    draws: int = 10,
    n_boot: int = 1000,
    seed: int = 0,
    progress: bool | None = None,
) -> dict:
    """All figures the ``similarity`` command prints, as plain data."""
    kept = [r for r in records if str(r["id"]) in predictions]
    for r in kept:
        n_scores, n_words = len(predictions[str(r["id"])]), len(r["words"])
        if n_scores != n_words:
            raise ValueError(f"prediction for {r['id']!r} has {n_scores} scores for {n_words} words")
    humans = HumanMaps.from_records(kept, max_maps=max_maps, min_maps=min_maps)
    by_id = {str(r["id"]): r for r in kept}
    recs = [by_id[i] for i in humans.ids]
    machine = Ragged.from_lists([predictions[i] for i in humans.ids])
    if recs and all("pos" in r for r in recs):
        tag_lists = [r["pos"] for r in recs]
    else:
        tag_lists = tag_documents([r["text"] for r in recs], [r["words"] for r in recs], progress=progress)
    tags = encode_tags(tag_lists)
    polarity = None
    if lexicon_dir:
        polarity = polarity_codes(
            [words_of(r["text"], r["words"]) for r in recs], load_opinion_lexicon(lexicon_dir)
        )
    result = compare_to_humans(
        humans, machine, tags, polarity, select, draws, max(2, min_maps), n_boot, seed=seed
    )
    return {
        "texts": len(humans),
        "texts_without_prediction": len(records) - len(kept),
        "predictions_without_text": len(set(predictions) - {str(r["id"]) for r in records}),
        "selection": select,
        "references": result["references"],
        "tag_distribution": result["tag_distribution"],
    }


__all__ = [
    "GOLD_ANSWER",
    "PAPER_MAPS",
    "agreement_report",
    "part_of",
    "read_predictions",
    "similarity_report",
]
