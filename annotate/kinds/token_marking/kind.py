"""The token_marking kind: mark the input tokens a natural-language explanation refers to (the NLI importance-alignment paper, §3.2).

The annotator sees the input, its gold label and the explanation a person wrote for it
(``Document.metadata["explanation"]``), and marks the input's words that they believe the
explanation's author thought important. The share of annotators who marked a word is the paper's
expert oracle (eq. 4). The answer is ``{"map": [0/1 per word]}`` over the document's canonical
words; the browser sees ``{"words", "breaks", "label", "explanation"}``.

A document whose ``metadata["gold_marks"]`` is a 0/1 map becomes a gold item: an answer passes when
its map overlaps the gold map by at least ``gold_overlap`` (F1 or Jaccard).

With ``random_controls`` the study also holds one *control* item per (non-gold) input: the same input
shown with the explanation of a random other input (a seeded derangement). Its marks give the expert
oracle of the random explanation, from which the paper computes the expert oracle's C_R (eq. 6). To
the worker a control is an ordinary item (same payload fields); only ``Item.secret["control"]``, which
never leaves the server, names the input whose explanation it borrows.
"""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ValidationError

from annotate.kinds.token_marking.config import (
    CONTROL_SECRET,
    CONTROL_SEED,
    EXPLANATION_FIELD,
    GOLD_FIELD,
    KIND,
    TokenMarkingConfigSerializer,
)
from annotate.kinds.token_marking.forms import TokenMarkingStudyForm
from annotate.kinds.token_marking.results import TokenMarkingResults, marking_results, marking_table
from annotate.models import Item
from annotate.tasks import register
from annotate.tasks.base import MAX_DATASET_PROBLEMS, TaskKind, capped
from annotate.tasks.export_spec import Column, ExportItem, ExportTable, highlighted_words
from annotate.tasks.gold_format import marked_words, word_map
from annotate.tasks.page_words import is_binary_map, map_overlap, map_strategies, word_payload
from explain_engine.api import random_derangement

QUESTION = "Mark the words of the input that the explanation's author thought were important."


@register
class TokenMarkingKind(TaskKind):
    name = KIND
    label = "Mark the words a written explanation refers to"
    title = "Mark the words the explanation refers to"
    rationale_fields = ("map",)
    stopping_rules = ("map_agreement",)
    page_script = "hatlab/kinds/token_marking.js"
    results = TokenMarkingResults
    needs_dataset = True
    config_serializer = TokenMarkingConfigSerializer
    create_form = TokenMarkingStudyForm
    default_answer_s = 40.0
    gold_columns = (("words", "the numbers of the marked words, from 1, separated by spaces (e.g. 2 5)"),)

    def public_config(self, study) -> dict[str, Any]:
        return {
            **super().public_config(study),
            "question": QUESTION,
            "require_mark": study.config.get("require_mark", True),
        }

    document_fields = ((f"metadata.{EXPLANATION_FIELD}", "the written explanation shown beside the text"),)

    def dataset_problems(self, config: dict[str, Any], dataset) -> list[str]:
        """Documents without a written explanation."""
        problems: list[str] = []
        total = 0
        for external_id, metadata in dataset.documents.order_by("id").values_list("external_id", "metadata"):
            explanation = metadata.get(EXPLANATION_FIELD) if isinstance(metadata, dict) else None
            if not isinstance(explanation, str) or not explanation.strip():
                total += 1
                if len(problems) < MAX_DATASET_PROBLEMS:
                    problems.append(f"document {external_id!r}: metadata.{EXPLANATION_FIELD} must be a text")
        return capped(problems, total)

    def build_items(self, study) -> list:
        """One item per document that has an explanation, in document order."""
        if study.dataset_id is None:
            raise ValidationError({"dataset": ["a token_marking study needs a dataset"]})
        items: list[Item] = []
        documents = study.dataset.documents.only("id", "external_id", "text", "words", "label", "metadata")
        for doc in documents.order_by("id").iterator(chunk_size=500):
            metadata = doc.metadata if isinstance(doc.metadata, dict) else {}
            explanation = metadata.get(EXPLANATION_FIELD)
            if not isinstance(explanation, str) or not explanation.strip():
                raise ValidationError(
                    {
                        "dataset": [
                            f"document {doc.external_id!r}: metadata.{EXPLANATION_FIELD} must be a text"
                        ]
                    }
                )
            gold = metadata.get(GOLD_FIELD)
            if gold is not None and not is_binary_map(gold, len(doc.words)):
                raise ValidationError(
                    {
                        "dataset": [
                            f"document {doc.external_id!r}: metadata.{GOLD_FIELD} must be "
                            f"{len(doc.words)} values of 0/1 (one per word)"
                        ]
                    }
                )
            items.append(
                Item(
                    study=study,
                    document=doc,
                    position=len(items),
                    payload={
                        **word_payload(doc.text, doc.words),
                        "label": doc.label,
                        "explanation": explanation.strip(),
                    },
                    secret={} if gold is None else {"gold": {"map": list(gold)}},
                    is_gold=gold is not None,
                    responses_needed=study.annotators_per_item,
                )
            )
        if study.config.get("random_controls", False):
            items += self._controls(study, [item for item in items if not item.is_gold], len(items))
        return items

    @staticmethod
    def _controls(study, own: list, start: int) -> list:
        """One control item per input of ``own``: its words with another input's explanation."""
        if len(own) < 2:
            raise ValidationError(
                {"config": {"random_controls": ["needs at least two inputs that are not gold items"]}}
            )
        partner = random_derangement(len(own), seed=CONTROL_SEED)
        controls: list[Item] = []
        for item, j in zip(own, partner, strict=True):
            other = own[int(j)]
            controls.append(
                Item(
                    study=study,
                    document=item.document,
                    position=start + len(controls),
                    payload={**item.payload, "explanation": other.payload["explanation"]},
                    secret={CONTROL_SECRET: {"explanation_of": other.document.external_id}},
                    is_gold=False,
                    responses_needed=study.annotators_per_item,
                )
            )
        return controls

    def validate_answer(self, item, answer: Any, timings: dict[str, Any]) -> dict[str, Any]:
        n_words = len(item.payload.get("words", ()))
        if not isinstance(answer, dict):
            raise ValidationError({"answer": {"non_field_errors": ["must be an object with a map"]}})
        word_map = answer.get("map")
        if not is_binary_map(word_map, n_words):
            raise ValidationError(
                {"answer": {"map": [f"must be a list of {n_words} values, each 0 or 1 (one per word)"]}}
            )
        if item.study.config.get("require_mark", True) and 1 not in word_map:
            raise ValidationError({"answer": {"map": ["Mark at least one word of the text."]}})
        return {"map": list(word_map)}

    def gold_answer(self, item, row: dict[str, Any]) -> Any:
        return {"map": word_map(row.get("words"), item.payload.get("words", []))}

    def describe_gold(self, item, gold: dict[str, Any]) -> str:
        return f"words {marked_words(item.payload.get('words', []), gold['map'])}"

    def grade_gold(self, item, answer: dict[str, Any]) -> bool | None:
        gold = item.secret.get("gold")
        if not gold:
            return None
        config = item.study.config
        overlap = map_overlap(answer["map"], gold["map"], config.get("overlap_measure", "f1"))
        return overlap >= config.get("gold_overlap", 0.5)

    labels_items = False

    def categories(self, study) -> list:
        """Per word: unmarked (0) or marked (1)."""
        return [0, 1]

    def agreement_value(self, answer: dict[str, Any]) -> Any:
        """``None``: a marking is a map over words, not one category per item (agreement is per word)."""
        return None

    def stop_answer(self, answer: dict[str, Any]) -> dict[str, Any]:
        """The marking as a map over the words (no label)."""
        given = answer.get("map")
        return {"map": given if isinstance(given, list) else None}

    def fixed_strategies(self, study, answer: dict[str, Any]) -> list[str]:
        return map_strategies(answer.get("map"))

    def export_columns(self, study) -> tuple[Column, ...]:
        return (
            ("explanation", "the written explanation the worker was shown"),
            ("map", "0/1 per word of the input: 1 where the worker marked it"),
            ("marked", "the marked words, in order"),
        )

    def export_answer(self, study, item: ExportItem, answer: dict[str, Any]) -> dict[str, Any]:
        word_map = answer.get("map")
        return {
            "explanation": item.payload.get("explanation"),
            "map": word_map,
            "marked": highlighted_words(item.words, word_map),
        }

    def export_tables(self, study) -> tuple[ExportTable, ...]:
        """Per word of each item: the share of workers who marked it, the expert oracle of eq. 4."""
        columns = (
            ("item", "the item's id"),
            ("document", "the document's id"),
            ("word_index", "the word's number in the input, from 0"),
            ("word", "the word"),
            ("annotators", "counted workers who answered the item"),
            ("share", "the share of them who marked the word (the expert oracle)"),
            ("attribution", "the model's attribution of the word, when a model run is compared (else empty)"),
        )
        return (
            ExportTable(
                "oracle",
                "Marked share per word",
                "per item and word: the share of workers who marked it",
                columns,
                _oracle_rows,
            ),
        )


def _oracle_rows(study, unverified: bool):
    columns, rows = marking_table(marking_results(study), "oracle")
    return columns, [dict(zip(columns, row, strict=True)) for row in rows]
