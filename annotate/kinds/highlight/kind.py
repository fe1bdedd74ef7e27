"""The highlight kind: read a text, choose its label, mark the words that show it (Sen et al. 2020, §3).

Read-first (the YELP-HAT protocol) asks for the label before any word may be highlighted; the server
rejects a read-first response whose timings show a highlight before the label. Free-style lets the
annotator highlight while reading. The answer is ``{"label": str, "map": [0/1 per word]}`` over the
document's canonical words; the browser sees ``{"words": [...], "breaks": [...]}`` where ``breaks``
lists the indices of words preceded by a line break.
"""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ValidationError

from annotate.exports.tables import ITEM_COLUMNS, ITEM_VERIFICATIONS, item_table
from annotate.kinds.highlight.config import (
    DEFAULT_LABELS,
    FREE,
    KIND,
    READ_FIRST,
    UNDECIDED,
    HighlightConfigSerializer,
)
from annotate.kinds.highlight.forms import StudyForm
from annotate.kinds.highlight.results import HighlightResults
from annotate.models import Item
from annotate.quality.aggregation import LABEL_TABLE
from annotate.tasks import register
from annotate.tasks.base import TaskKind
from annotate.tasks.export_spec import Column, ExportItem, ExportTable, highlighted_words
from annotate.tasks.gold_format import cell, marked_words, word_map
from annotate.tasks.page_words import is_binary_map, map_overlap, map_strategies, word_payload


@register
class HighlightKind(TaskKind):
    name = KIND
    label = "Highlight the words that show a text's label"
    default = True
    attention_maps = True
    rationale_fields = ("map",)
    stopping_rules = ("label_share", "label_posterior", "map_agreement", "ci_width")
    rationale_import = "texts"
    title = "Highlight the words that show the label"
    page_script = "hatlab/kinds/highlight.js"
    needs_dataset = True
    config_serializer = HighlightConfigSerializer
    create_form = StudyForm
    results = HighlightResults
    gold_columns = (
        ("label", "the gold label, one of the study's labels"),
        ("words", "the numbers of the words that show it, from 1, separated by spaces (e.g. 3 4 9)"),
    )

    def public_config(self, study) -> dict[str, Any]:
        config = study.config
        return {
            **super().public_config(study),
            "mode": config.get("mode", READ_FIRST),
            "labels": config.get("labels", list(DEFAULT_LABELS)),
            "undecided_label": config.get("undecided_label", UNDECIDED),
            "require_highlight": config.get("require_highlight", True),
        }

    def rationale_config(self, labels: list[str]) -> dict[str, Any]:
        """Free-style, no highlight required: a published set holds maps given in any order, and empty ones."""
        return {"mode": FREE, "labels": labels, "require_highlight": False}

    def build_items(self, study) -> list:
        """One item per document of the study's dataset, in document order. A document whose
        ``metadata["gold"]`` is ``{"label", "map"}`` becomes a gold item graded against it."""
        if study.dataset_id is None:
            raise ValidationError({"dataset": ["a highlight study needs a dataset"]})
        labels = study.config.get("labels", list(DEFAULT_LABELS))
        items = []
        documents = study.dataset.documents.only("id", "external_id", "text", "words", "label", "metadata")
        for position, doc in enumerate(documents.order_by("id").iterator(chunk_size=500)):
            secret: dict[str, Any] = {"label": doc.label}
            gold = doc.metadata.get("gold") if isinstance(doc.metadata, dict) else None
            if gold is not None:
                if not (
                    isinstance(gold, dict)
                    and gold.get("label") in labels
                    and is_binary_map(gold.get("map"), len(doc.words))
                ):
                    raise ValidationError(
                        {
                            "dataset": [
                                f"document {doc.external_id!r}: metadata.gold must be "
                                f"{{'label': one of {labels}, 'map': {len(doc.words)} values of 0/1}}"
                            ]
                        }
                    )
                secret["gold"] = {"label": gold["label"], "map": list(gold["map"])}
            items.append(
                Item(
                    study=study,
                    document=doc,
                    position=position,
                    payload=word_payload(doc.text, doc.words),
                    secret=secret,
                    is_gold=gold is not None,
                    responses_needed=study.annotators_per_item,
                )
            )
        return items

    def validate_answer(self, item, answer: Any, timings: dict[str, Any]) -> dict[str, Any]:
        config = self.public_config(item.study)
        labels = config["labels"]
        n_words = len(item.payload.get("words", ()))
        if not isinstance(answer, dict):
            raise ValidationError({"answer": {"non_field_errors": ["must be an object with label and map"]}})
        errors: dict[str, list[str]] = {}
        label, word_map = answer.get("label"), answer.get("map")
        if not isinstance(label, str) or label not in labels:
            errors["label"] = [f"must be one of {', '.join(labels)}"]
        if not is_binary_map(word_map, n_words):
            errors["map"] = [f"must be a list of {n_words} values, each 0 or 1 (one per word)"]
        elif (
            config["require_highlight"]
            and "label" not in errors
            and label != config["undecided_label"]
            and 1 not in word_map
        ):
            errors["map"] = [f'Highlight at least one word in the text that shows "{label}".']
        if errors:
            raise ValidationError({"answer": errors})
        assert word_map is not None  # is_binary_map held
        if config["mode"] == READ_FIRST:
            self._check_read_first(word_map, timings)
        return {"label": label, "map": list(word_map)}

    @staticmethod
    def _check_read_first(word_map: list[int], timings: dict[str, Any]) -> None:
        """Read-first (Sen et al. 2020): the label is chosen before the first highlight."""
        label_at, first_highlight = timings.get("label_at_ms"), timings.get("first_highlight_at_ms")
        if label_at is None:
            raise ValidationError(
                {"timings": {"label_at_ms": ["a read-first response needs the time the label was chosen"]}}
            )
        if first_highlight is None and 1 in word_map:
            raise ValidationError(
                {"timings": {"first_highlight_at_ms": ["needed when words are highlighted"]}}
            )
        if first_highlight is not None and first_highlight < label_at:
            raise ValidationError(
                {
                    "timings": {
                        "first_highlight_at_ms": [
                            "read-first study: highlighting started before the label was chosen"
                        ]
                    }
                }
            )

    def gold_answer(self, item, row: dict[str, Any]) -> Any:
        return {"label": cell(row, "label"), "map": word_map(row.get("words"), item.payload.get("words", []))}

    def describe_gold(self, item, gold: dict[str, Any]) -> str:
        return f"label “{gold['label']}”; words {marked_words(item.payload.get('words', []), gold['map'])}"

    def grade_gold(self, item, answer: dict[str, Any]) -> bool | None:
        """Passed when the label equals the gold label and the map overlaps the gold map by at least
        ``gold_overlap`` (Pappas & Popescu-Belis 2016's gold test questions, applied to highlights)."""
        gold = item.secret.get("gold")
        if not gold:
            return None
        config = item.study.config
        if answer.get("label") != gold["label"]:
            return False
        overlap = map_overlap(answer["map"], gold["map"], config.get("overlap_measure", "f1"))
        return overlap >= config.get("gold_overlap", 0.5)

    def categories(self, study) -> list:
        return list(study.config.get("labels", DEFAULT_LABELS))

    def agreement_value(self, answer: dict[str, Any]) -> Any:
        return answer.get("label")

    def stop_answer(self, answer: dict[str, Any]) -> dict[str, Any]:
        """The label and the map over the document's words."""
        given = answer.get("map")
        return {"label": answer.get("label"), "map": given if isinstance(given, list) else None}

    def fixed_strategies(self, study, answer: dict[str, Any]) -> list[str]:
        return [*super().fixed_strategies(study, answer), *map_strategies(answer.get("map"))]

    def export_columns(self, study) -> tuple[Column, ...]:
        return (
            ("label", "the label the worker chose"),
            ("map", "0/1 per word of the document: 1 where the worker highlighted it"),
            ("highlighted", "the highlighted words, in order"),
        )

    def export_answer(self, study, item: ExportItem, answer: dict[str, Any]) -> dict[str, Any]:
        word_map = answer.get("map")
        return {
            "label": answer.get("label"),
            "map": word_map,
            "highlighted": highlighted_words(item.words, word_map),
        }

    def export_tables(self, study) -> tuple[ExportTable, ...]:
        """The items with their consensus and super attention maps (Sen et al. 2020, Defs. 2.4, 2.5),
        then the labels by majority."""
        items = ExportTable(
            "items",
            "Items with CAM and SAM",
            "per item: its labels, the consensus (AND) and super (OR) attention maps",
            ITEM_COLUMNS,
            item_table,
            takes_unverified=True,
            unverified_columns=((ITEM_VERIFICATIONS, "the verification state of each of its labels"),),
        )
        return (items, LABEL_TABLE)
