"""Results of an NLI pair study, per text of the pair: label agreement (Fleiss κ), and for the premise
and the hypothesis each the CAM (AND of a pair's maps) and SAM (OR), the words per map k, human–human
behavioral similarity and Fleiss κ of word selections (Sen et al. 2020 §3.2 and Table 2). The numbers
come from the engine (:mod:`explain_engine.api`); this module gathers the answers and lays out the
per-response and per-pair exports. :class:`NliPairResults` is the kind's results page, whose two tables
download as CSV or JSON lines (``?include_unverified=1``: the responses table with the answers not (yet)
verified, and their verification).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Any

from annotate.exports.tables import INCLUDE_UNVERIFIED
from annotate.kinds.nli_pair.config import SIDES, map_field
from annotate.models import Response, Study
from annotate.quality.exclusion import counted_responses
from annotate.tasks.results import BadQuery, FlagField, ResultsPage, Rows, worker_names
from explain_engine.api import (
    N_BOOT,
    HumanMaps,
    average_k,
    fleiss_kappa,
    fleiss_kappa_from_counts,
    human_human_similarity,
)

RESPONSE_COLUMNS = (
    "response",
    "item",
    "pair",
    "worker",
    "label",
    "premise_words",
    "hypothesis_words",
    "premise_map",
    "hypothesis_map",
    "premise_highlighted",
    "hypothesis_highlighted",
    "gold_passed",
    "read_ms",
    "answer_ms",
)
VERIFICATION_COLUMN = "verification"
PAIR_COLUMNS = (
    "item",
    "pair",
    "gold_label",
    "premise_words",
    "hypothesis_words",
    "answers",
    "labels",
    "majority",
    "premise_cam",
    "premise_sam",
    "hypothesis_cam",
    "hypothesis_sam",
)
EXPORTS = {"responses": RESPONSE_COLUMNS, "pairs": PAIR_COLUMNS}
FORMATS = ("csv", "jsonl")


def highlighted(words: list[str], word_map: list[int] | None) -> list[str]:
    """The words a 0/1 map selects, in text order."""
    return [w for w, on in zip(words, word_map or [], strict=False) if on]


def side_figures(records: list[dict], n_boot: int, seed: int = 0) -> dict[str, Any]:
    """One text's human-map figures over ``records`` (``{"id", "words", "annotations": [{"map"}]}``):
    CAM and SAM by record id (only records with two or more maps have them), k of each reference,
    human–human similarity and Fleiss κ over words (each word of a text with two or more maps a unit).
    Records without maps are left out."""
    humans = HumanMaps.from_records(records, min_maps=1)
    refs = humans.references(min_maps=2)
    combined = {}
    for name in ("CAM", "SAM"):
        idx, maps = refs[name]
        combined[name] = {
            humans.ids[int(i)]: [int(v) for v in m] for i, m in zip(idx, maps.to_lists(), strict=True)
        }
    word_table = humans.word_table()
    return {
        "cam": combined["CAM"],
        "sam": combined["SAM"],
        "k": {
            name: average_k(maps, n_boot, seed).to_dict() | {"texts": int(len(idx))}
            for name, (idx, maps) in refs.items()
            if name in ("CAM", "SAM") or len(idx)
        },
        "human_human": human_human_similarity(humans, n_boot, seed=seed),
        "word_kappa": fleiss_kappa_from_counts(word_table, n_boot, seed=seed).to_dict()
        if len(word_table)
        else None,
    }


def pair_results(study: Study, n_boot: int = N_BOOT) -> dict[str, Any]:
    """Per pair (non-gold items, counted answers) the labels and each text's CAM/SAM; over the study
    the label agreement and each text's map figures."""
    items = list(
        study.items.filter(is_gold=False)
        .order_by("position", "id")
        .values_list("id", "document__external_id", "secret__label", "payload")
    )
    answers: dict[int, list[dict]] = defaultdict(list)
    workers = set()
    lengths = {item_id: {s: len(payload[s]["words"]) for s in SIDES} for item_id, _, _, payload in items}
    for item_id, worker_id, answer in (
        counted_responses(study)
        .order_by("item_id", "assignment__slot", "id")
        .values_list("item_id", "worker_id", "answer")
    ):
        if (
            item_id in lengths
            and isinstance(answer, dict)
            and all(len(answer.get(map_field(s)) or []) == lengths[item_id][s] for s in SIDES)
        ):
            answers[item_id].append(answer)
            workers.add(worker_id)
    labels = list(study.config.get("labels", []))
    sides = {
        side: side_figures(
            [
                {
                    "id": str(item_id),
                    "words": payload[side]["words"],
                    "annotations": [{"map": a[map_field(side)]} for a in answers[item_id]],
                }
                for item_id, _, _, payload in items
            ],
            n_boot,
        )
        for side in SIDES
    }
    pairs = []
    for item_id, external, gold_label, payload in items:
        given = [a["label"] for a in answers[item_id]]
        counts = Counter(given)
        top = max(counts.values(), default=0)
        majority = [label for label in labels if counts[label] == top] if given else []
        row: dict[str, Any] = {
            "item": item_id,
            "pair": external,
            "gold_label": gold_label or "",
            "answers": len(given),
            "labels": given,
            "majority": majority[0] if len(majority) == 1 else None,
        }
        for side in SIDES:
            words = payload[side]["words"]
            cam, sam = sides[side]["cam"].get(str(item_id)), sides[side]["sam"].get(str(item_id))
            row[side] = {"words": words, "cam": cam, "sam": sam}
            row[f"{side}_words"] = words
            row[f"{side}_cam"] = None if cam is None else highlighted(words, cam)
            row[f"{side}_sam"] = None if sam is None else highlighted(words, sam)
        pairs.append(row)
    label_kappa = fleiss_kappa([p["labels"] for p in pairs], labels, n_boot) if labels else None
    return {
        "items": len(items),
        "answered": sum(1 for p in pairs if p["answers"]),
        "answers": sum(p["answers"] for p in pairs),
        "workers": len(workers),
        "labels": labels,
        "label_kappa": None if label_kappa is None else label_kappa.to_dict(),
        "sides": {
            side: {k: v for k, v in fig.items() if k not in ("cam", "sam")} for side, fig in sides.items()
        },
        "pairs": pairs,
    }


def response_rows(study: Study, unverified: bool = False) -> list[dict[str, Any]]:
    """One row per verified response of ``study`` (gold items too), with the words of both texts (the
    maps index them) and the highlighted words of each; with ``unverified``, every response and its ``verification``."""
    responses = Response.objects.filter(study=study)
    rows = list(
        (responses if unverified else responses.counted())
        .order_by("id")
        .values_list(
            "id", "item_id", "item__document__external_id", "worker_id", "answer", "item__payload",
            "gold_passed", "read_ms", "answer_ms", "verification",
        )
    )  # fmt: skip
    names = worker_names(study, {row[3] for row in rows})
    out = []
    for rid, item_id, external, worker_id, answer, payload, gold, read_ms, answer_ms, verification in rows:
        answer = answer if isinstance(answer, dict) else {}
        row = {
            "response": rid,
            "item": item_id,
            "pair": external,
            "worker": names.get(worker_id),
            "label": answer.get("label"),
        }
        for side in SIDES:
            row[f"{side}_words"] = payload[side]["words"]
        for side in SIDES:
            row[f"{side}_map"] = answer.get(map_field(side))
        for side in SIDES:
            row[f"{side}_highlighted"] = highlighted(payload[side]["words"], answer.get(map_field(side)))
        row |= {"gold_passed": gold, "read_ms": read_ms, "answer_ms": answer_ms}
        out.append((row | {VERIFICATION_COLUMN: verification}) if unverified else row)
    return out


def export_rows(
    study: Study, what: str, unverified: bool = False
) -> tuple[tuple[str, ...], list[dict[str, Any]]]:
    """The columns and rows of one export: ``responses`` (with ``unverified``, every response and its
    verification) or ``pairs`` (verified answers only: ``unverified`` is a ``ValueError``)."""
    if what == "responses":
        columns = RESPONSE_COLUMNS + ((VERIFICATION_COLUMN,) if unverified else ())
        return columns, response_rows(study, unverified)
    if unverified:
        raise ValueError("include_unverified: only the responses export can include unverified answers")
    if what == "pairs":
        return PAIR_COLUMNS, [{c: p[c] for c in PAIR_COLUMNS} for p in pair_results(study)["pairs"]]
    raise KeyError(what)


def csv_cells(columns: tuple[str, ...], rows: list[dict[str, Any]]) -> list[list]:
    """Rows as CSV cells: a map as its 0/1 digits joined by spaces, a word list as JSON."""
    cells = []
    for row in rows:
        out = []
        for column in columns:
            value = row[column]
            if isinstance(value, list) and column.endswith("_map"):
                value = " ".join(str(v) for v in value)
            elif isinstance(value, list):
                value = json.dumps(value, ensure_ascii=False)
            out.append(value)
        cells.append(out)
    return cells


def jsonl_text(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def _responses(page: NliPairResults) -> Rows:
    return page.export("responses")


def _pairs(page: NliPairResults) -> Rows:
    return page.export("pairs")


class NliPairResults(ResultsPage):
    """The results page of an NLI pair study: label agreement, each text's CAM/SAM and map agreement."""

    template = "nli_pair/results.html"
    tables = {"responses": _responses, "pairs": _pairs}
    formats = FORMATS
    query_fields = (FlagField(INCLUDE_UNVERIFIED),)

    def compute(self) -> dict[str, Any]:
        return pair_results(self.study)

    def export(self, what: str) -> Rows:
        """One export; the pairs count verified answers only (``include_unverified`` is refused)."""
        try:
            return export_rows(self.study, what, self.query[INCLUDE_UNVERIFIED])
        except ValueError:
            raise BadQuery(INCLUDE_UNVERIFIED, "is for the responses table only") from None

    def variants(self, table: str, fmt: str) -> list[tuple[str, str]]:
        if table != "responses":
            return []
        return [("including unverified answers", self.table_url(table, fmt, **{INCLUDE_UNVERIFIED: "1"}))]

    def file_name(self, table: str) -> str:
        return table + ("-with-unverified" if self.query[INCLUDE_UNVERIFIED] else "")

    def csv_cells(self, columns, rows) -> list[list]:
        return csv_cells(tuple(columns), list(rows))
