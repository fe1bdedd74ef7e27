"""The sentence_rating kind: how much does one sentence explain an aspect's star rating? (Pappas & Popescu-Belis 2016, §3)

Each item shows the whole review with one sentence highlighted, one aspect with the review's star
rating for it, and the question "How much does the highlighted sentence explain the given aspect
rating?" with five answers (Figure 2): not at all / a little / moderately / rather well / very well,
stored as the level 1–5. Items are one per (aspect, document, sentence), ordered aspect by aspect
because the paper annotated each aspect separately "to avoid confusion".

The study config lists the aspects as ``{"name", "rating_field", "title"}``; a document's rating for
an aspect is ``Document.metadata[rating_field]`` (e.g. ``{"overall": 4}``). Sentences are the
document's stored ``[first_word, end_word)`` ranges. A document whose ``metadata["gold_ratings"]``
maps an aspect to one level (or ``null``) per sentence yields gold items for those sentences; a gold
answer passes when it is within ``gold_tolerance`` levels of the gold level.
"""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ValidationError

from annotate.kinds.sentence_rating.config import (
    KIND,
    LEVELS,
    PAPER_JUDGES,
    RATING_LABELS,
    SentenceRatingConfigSerializer,
)
from annotate.kinds.sentence_rating.forms import SentenceRatingStudyForm
from annotate.kinds.sentence_rating.results import SentenceRatingResults, rating_results, rating_table
from annotate.models import Item
from annotate.tasks import register
from annotate.tasks.base import MAX_DATASET_PROBLEMS, TaskKind, capped
from annotate.tasks.export_spec import Column, ExportItem, ExportTable
from annotate.tasks.gold_format import cell
from annotate.tasks.page_words import document_sentences, word_payload

QUESTION = "How much does the highlighted sentence explain the given aspect rating?"
GOLD_FIELD = "gold_ratings"


def star_rating(value: Any, rating_max: int) -> int | None:
    """``value`` as a whole star rating in 1..rating_max (a number such as 4 or 4.0), else ``None``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if value != int(value) or not 1 <= value <= rating_max:
        return None
    return int(value)


@register
class SentenceRatingKind(TaskKind):
    name = KIND
    label = "Rate how much a highlighted sentence explains an aspect rating"
    title = "Rate how much a sentence explains the rating"
    page_script = "hatlab/kinds/sentence_rating.js"
    results = SentenceRatingResults
    needs_dataset = True
    config_serializer = SentenceRatingConfigSerializer
    create_form = SentenceRatingStudyForm
    default_answer_s = 20.0
    gold_key_columns = (
        ("document", "the review's id"),
        ("aspect", "the aspect's name"),
        ("sentence", "the sentence's number in the review, from 1"),
    )
    gold_columns = (
        (
            "rating",
            f"how well the sentence explains the rating: 1 to {len(LEVELS)} or its words "
            f"({', '.join(RATING_LABELS)})",
        ),
    )

    def public_config(self, study) -> dict[str, Any]:
        config = study.config
        return {
            **super().public_config(study),
            "question": QUESTION,
            "labels": [
                {"value": level, "text": text} for level, text in zip(LEVELS, RATING_LABELS, strict=True)
            ],
            "rating_max": config.get("rating_max", 5),
        }

    def plan_warnings(self, study) -> list[str]:
        """A sentence's label counts once ``min_judges`` trusted workers rated it (Pappas & Popescu-Belis
        2016 §3): with fewer workers per item no label ever counts in the results."""
        judges = study.config.get("min_judges", PAPER_JUDGES)
        if judges <= study.annotators_per_item:
            return []
        return [
            f"Minimum judges is {judges} but each sentence gets {study.annotators_per_item} workers per "
            f"item: no sentence can reach {judges} judges, so no label would count in the results. Raise "
            f"workers per item to {judges} or lower minimum judges to {study.annotators_per_item}."
        ]

    document_fields = (
        (
            "metadata.<rating field>",
            "the review's star rating for each aspect, 1 to the study's top rating (metadata.overall for the "
            "default aspect; an aspect's rating field names the key)",
        ),
    )

    def dataset_problems(self, config: dict[str, Any], dataset) -> list[str]:
        """Documents without a star rating for one of the study's aspects."""
        aspects = config.get("aspects") or SentenceRatingConfigSerializer().fields["aspects"].get_default()
        rating_max = config.get("rating_max", 5)
        problems: list[str] = []
        total = 0
        for external_id, metadata in dataset.documents.order_by("id").values_list("external_id", "metadata"):
            metadata = metadata if isinstance(metadata, dict) else {}
            for aspect in aspects:
                if star_rating(metadata.get(aspect["rating_field"]), rating_max) is None:
                    total += 1
                    if len(problems) < MAX_DATASET_PROBLEMS:
                        problems.append(
                            f"document {external_id!r}: metadata.{aspect['rating_field']} must be a star rating "
                            f"from 1 to {rating_max} (aspect {aspect['name']!r})"
                        )
                    break
        return capped(problems, total)

    def build_items(self, study) -> list:
        """One item per (aspect, document, sentence), aspect by aspect, then in document order."""
        if study.dataset_id is None:
            raise ValidationError({"dataset": ["a sentence_rating study needs a dataset"]})
        config = study.config
        aspects = config.get("aspects") or SentenceRatingConfigSerializer().fields["aspects"].get_default()
        rating_max = config.get("rating_max", 5)
        documents = list(
            study.dataset.documents.only(
                "id", "external_id", "text", "words", "sentences", "metadata"
            ).order_by("id")
        )
        prepared = [(doc, word_payload(doc.text, doc.words), document_sentences(doc)) for doc in documents]
        items: list[Item] = []
        for aspect in aspects:
            for doc, words, sentences in prepared:
                metadata = doc.metadata if isinstance(doc.metadata, dict) else {}
                rating = star_rating(metadata.get(aspect["rating_field"]), rating_max)
                if rating is None:
                    raise ValidationError(
                        {
                            "dataset": [
                                f"document {doc.external_id!r}: metadata.{aspect['rating_field']} must be a "
                                f"star rating from 1 to {rating_max} (aspect {aspect['name']!r})"
                            ]
                        }
                    )
                golds = self._gold_levels(doc, aspect["name"], len(sentences))
                for index, (first, end) in enumerate(sentences):
                    gold = golds[index]
                    items.append(
                        Item(
                            study=study,
                            document=doc,
                            position=len(items),
                            payload={
                                **words,
                                "sentence": [first, end],
                                "sentence_index": index,
                                "aspect": aspect["name"],
                                "aspect_title": aspect["title"],
                                "aspect_description": aspect.get("description", ""),
                                "rating": rating,
                                "rating_max": rating_max,
                            },
                            secret={} if gold is None else {"gold": {"rating": gold}},
                            is_gold=gold is not None,
                            responses_needed=study.annotators_per_item,
                        )
                    )
        return items

    @staticmethod
    def _gold_levels(doc, aspect: str, n_sentences: int) -> list[int | None]:
        """Gold levels of ``aspect`` per sentence from ``metadata["gold_ratings"]`` (``None``: no gold)."""
        metadata = doc.metadata if isinstance(doc.metadata, dict) else {}
        golds = metadata.get(GOLD_FIELD)
        if not isinstance(golds, dict) or aspect not in golds:
            return [None] * n_sentences
        levels = golds[aspect]
        ok = isinstance(levels, list) and len(levels) == n_sentences
        ok = ok and all(v is None or (type(v) is int and v in LEVELS) for v in levels)
        if not ok:
            raise ValidationError(
                {
                    "dataset": [
                        f"document {doc.external_id!r}: metadata.{GOLD_FIELD}.{aspect} must list "
                        f"{n_sentences} values (one per sentence), each a level 1–5 or null"
                    ]
                }
            )
        return list(levels)

    def validate_answer(self, item, answer: Any, timings: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(answer, dict):
            raise ValidationError({"answer": {"non_field_errors": ["must be an object with a rating"]}})
        rating = answer.get("rating")
        if type(rating) is not int or rating not in LEVELS:
            raise ValidationError(
                {
                    "answer": {
                        "rating": [
                            f"must be a whole number from 1 to {len(LEVELS)} ({', '.join(RATING_LABELS)})"
                        ]
                    }
                }
            )
        return {"rating": rating}

    def gold_item_key(self, item) -> tuple[str, ...]:
        payload = item.payload
        document = str(item.document.external_id) if item.document_id else ""
        return (document, str(payload.get("aspect", "")), str(payload.get("sentence_index", 0) + 1))

    def gold_answer(self, item, row: dict[str, Any]) -> Any:
        value = cell(row, "rating")
        text = str(value).strip().lower()
        if text in RATING_LABELS:
            return {"rating": RATING_LABELS.index(text) + 1}
        if text.isdigit():
            return {"rating": int(text)}
        raise ValueError(
            f"rating must be 1 to {len(LEVELS)} or one of {', '.join(RATING_LABELS)}; not {value!r}"
        )

    def describe_gold(self, item, gold: dict[str, Any]) -> str:
        rating = gold["rating"]
        return f"{rating} ({RATING_LABELS[rating - 1]})"

    def grade_gold(self, item, answer: dict[str, Any]) -> bool | None:
        """Passed when the answer is within ``gold_tolerance`` levels of the gold level (Pappas & Popescu-Belis 2016's gold
        test questions)."""
        gold = item.secret.get("gold")
        if not gold:
            return None
        return abs(int(answer["rating"]) - int(gold["rating"])) <= item.study.config.get("gold_tolerance", 0)

    def categories(self, study) -> list:
        return list(LEVELS)

    def agreement_value(self, answer: dict[str, Any]) -> Any:
        rating = answer.get("rating")
        return rating if rating in LEVELS else None

    def stop_answer(self, answer: dict[str, Any]) -> dict[str, Any]:
        """The rating, as a category and as a number (its confidence interval)."""
        rating = self.agreement_value(answer)
        return {"label": rating, "value": None if rating is None else float(rating)}

    def export_columns(self, study) -> tuple[Column, ...]:
        return (
            ("aspect", "the aspect rated (its name in the study's settings)"),
            ("sentence", "the highlighted sentence's number in the review, from 1"),
            ("sentence_text", "the highlighted sentence's words"),
            ("star_rating", "the review's star rating for the aspect, as shown to the worker"),
            ("rating", f"how well the sentence explains that rating, 1 to {len(LEVELS)}"),
            ("rating_text", f"the same in the page's words ({', '.join(RATING_LABELS)})"),
        )

    def export_answer(self, study, item: ExportItem, answer: dict[str, Any]) -> dict[str, Any]:
        payload = item.payload
        first, end = (payload.get("sentence") or [0, 0])[:2]
        rating = answer.get("rating")
        return {
            "aspect": payload.get("aspect"),
            "sentence": payload.get("sentence_index", 0) + 1,
            "sentence_text": " ".join(item.words[first:end]),
            "star_rating": payload.get("rating"),
            "rating": rating,
            "rating_text": RATING_LABELS[rating - 1] if rating in LEVELS else None,
        }

    def export_tables(self, study) -> tuple[ExportTable, ...]:
        """Per (aspect, sentence): the majority rating, its trust-weighted confidence and the counts per
        level (Pappas & Popescu-Belis 2016, §3)."""
        columns = (
            ("item", "the item's id"),
            ("document", "the review's id"),
            ("aspect", "the aspect rated"),
            ("sentence", "the sentence's index in the review, from 0 (the responses export counts from 1)"),
            ("text", "the sentence"),
            ("responses", "counted ratings (trusted workers, non-gold items)"),
            ("majority", "the most frequent rating"),
            ("majority_text", "the same in the page's words"),
            ("confidence", "the trust-weighted share of the majority rating"),
            ("mean", "the trust-weighted mean rating"),
            *((f"n_{level}", f"ratings of {level} ({text})") for level, text in zip(LEVELS, RATING_LABELS, strict=True)),
            ("enough_judges", "whether the sentence has the study's least number of judges"),
        )  # fmt: skip
        return (
            ExportTable(
                "ratings",
                "Ratings per sentence",
                "per aspect and sentence: majority rating, its confidence, mean and counts",
                columns,
                _rating_rows,
            ),
        )


def _rating_rows(study, unverified: bool):
    columns, rows = rating_table(rating_results(study), "labels")
    return columns, [dict(zip(columns, row, strict=True)) for row in rows]
