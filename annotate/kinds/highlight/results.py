"""Results of a highlight study (Sen et al. 2020 §3), read from the database: per text the labels given,
the majority label and the share that chose it, the consensus (AND) and super (OR) attention maps of its
annotators (Defs. 2.4, 2.5), and over the study the label agreement (Fleiss κ, from
:mod:`explain_engine.api`). Only counted answers to non-gold items count
(:func:`annotate.quality.exclusion.counted_responses`). :class:`HighlightResults` is the kind's results page;
its tables download as CSV or JSON lines, and the labels table is the one the kind's exports offer
(:data:`annotate.quality.aggregation.LABEL_TABLE`: majority, trust-weighted confidence, Dawid & Skene).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from annotate.kinds.highlight.config import DEFAULT_LABELS
from annotate.models import Study
from annotate.quality.aggregation import LABEL_TABLE
from annotate.quality.exclusion import counted_responses
from annotate.tasks.export_spec import highlighted_words
from annotate.tasks.results import N_BOOT, ResultsPage, Rows
from explain_engine.api import consensus_maps, fleiss_kappa

TEXT_COLUMNS = (
    "item",
    "document",
    "document_label",
    "words",
    "answers",
    "labels",
    "majority",
    "majority_share",
    "cam_words",
    "sam_words",
    "cam",
    "sam",
)
#: How many texts the page lists (the download has all).
SHOWN = 200


def text_rows(study: Study) -> list[dict[str, Any]]:
    """One row per non-gold item: its words (the maps index them), its counted labels, the majority label (``None`` on a tie) with its
    share, and CAM / SAM over its maps (``None`` with fewer than two maps)."""
    items = list(
        study.items.filter(is_gold=False)
        .order_by("position", "id")
        .values_list("id", "document__external_id", "document__label", "payload__words")
    )
    labels: dict[int, list[str]] = defaultdict(list)
    maps: dict[int, list[list[int]]] = defaultdict(list)
    lengths = {item_id: len(words or []) for item_id, _, _, words in items}
    answers = counted_responses(study).order_by("item_id", "id").values_list("item_id", "answer")
    for item_id, answer in answers:
        if item_id not in lengths or not isinstance(answer, dict) or answer.get("label") is None:
            continue
        labels[item_id].append(answer["label"])
        word_map = answer.get("map")
        if isinstance(word_map, list) and len(word_map) == lengths[item_id]:
            maps[item_id].append(word_map)
    return [
        _text_row(item_id, document, label, words or [], labels[item_id], maps[item_id])
        for item_id, document, label, words in items
    ]


def _text_row(item_id, document, label, words, given: list[str], maps: list[list[int]]) -> dict[str, Any]:
    counts = Counter(given).most_common()
    tied = len(counts) > 1 and counts[0][1] == counts[1][1]
    majority = None if not counts or tied else counts[0][0]
    cam, sam = consensus_maps(maps) if len(maps) >= 2 else (None, None)
    return {
        "item": item_id,
        "document": document,
        "document_label": label,
        "words": words,
        "answers": len(given),
        "labels": given,
        "majority": majority,
        "majority_share": round(counts[0][1] / len(given), 4) if counts else None,
        "cam_words": None if cam is None else highlighted_words(words, cam),
        "sam_words": None if sam is None else highlighted_words(words, sam),
        "cam": cam,
        "sam": sam,
    }


def highlight_results(study: Study, n_boot: int = N_BOOT) -> dict[str, Any]:
    """The texts (:func:`text_rows`), their label agreement (Fleiss κ over the texts with two or more
    labels) and how often each label is the majority."""
    texts = text_rows(study)
    categories = list(study.config.get("labels", DEFAULT_LABELS))
    answered = [t for t in texts if t["answers"]]
    kappa = fleiss_kappa([t["labels"] for t in texts], categories, n_boot) if answered else None
    majorities = Counter(t["majority"] for t in answered)
    return {
        "texts": texts,
        "items": len(texts),
        "answered": len(answered),
        "answers": sum(t["answers"] for t in texts),
        "with_maps": sum(1 for t in texts if t["cam"] is not None),
        "categories": categories,
        "label_kappa": None if kappa is None else kappa.to_dict(),
        "majorities": [{"label": c, "texts": majorities.get(c, 0)} for c in categories],
        "ties": majorities.get(None, 0),
    }


def _texts(page: ResultsPage) -> Rows:
    return TEXT_COLUMNS, page.results["texts"]


def _labels(page: ResultsPage) -> Rows:
    return LABEL_TABLE.rows(page.study, False)


class HighlightResults(ResultsPage):
    """The results page of a highlight study: label agreement, majority labels, CAM and SAM per text."""

    template = "highlight/results.html"
    tables = {"texts": _texts, "labels": _labels}
    formats = ("csv", "jsonl")

    def compute(self) -> dict[str, Any]:
        return highlight_results(self.study)

    def context(self) -> dict[str, Any]:
        return super().context() | {"shown": self.results["texts"][:SHOWN], "shown_limit": SHOWN}

    def csv_cells(self, columns, rows) -> list[list]:
        """Maps as their 0/1 digits joined by spaces; word and label lists as JSON."""
        shaped = ({**row, "cam": _digits(row.get("cam")), "sam": _digits(row.get("sam"))} for row in rows)
        return super().csv_cells(columns, shaped)


def _digits(word_map: list[int] | None) -> str | None:
    return None if word_map is None else " ".join(str(v) for v in word_map)
