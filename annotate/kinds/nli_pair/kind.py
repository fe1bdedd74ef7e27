"""The nli_pair kind: label a premise–hypothesis pair, then highlight the words that justify the label
(e-SNLI's annotation, Camburu et al. 2018, which Prasad et al. 2021 compare model attributions with).

The annotator sees both texts, picks a label (entailment / neutral / contradiction by default) and
then highlights words of either text; as in the highlight kind's read-first protocol (Sen et al.
2020 §3) no word may be highlighted before the label is chosen, and the server rejects timings that
show otherwise. Each text keeps its own canonical words, so the answer is
``{"label": str, "premise_map": [0/1 per premise word], "hypothesis_map": [0/1 per hypothesis word]}``
and the browser sees ``{"premise": {"words", "breaks"}, "hypothesis": {"words", "breaks"}}``. Which
text a label's highlights must or may lie in is the study's ``rules`` (:mod:`.config`, e-SNLI's
guideline by default), checked on the server.

A pair is stored as a Document: the premise is its text, the hypothesis ``metadata["hypothesis"]``
(:mod:`.pairs` imports them). ``metadata["gold"] = {"label", "premise_map", "hypothesis_map"}``
makes a gold item.
"""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ValidationError

from annotate.kinds.nli_pair.config import (
    DEFAULT_LABELS,
    FORBIDDEN,
    GOLD_FIELD,
    HYPOTHESIS_FIELD,
    KIND,
    REQUIRED,
    SIDES,
    NliPairConfigSerializer,
    map_field,
    rule_for,
)
from annotate.kinds.nli_pair.forms import PairEditForm
from annotate.kinds.nli_pair.results import NliPairResults, export_rows
from annotate.models import Item
from annotate.tasks import register
from annotate.tasks.base import TaskKind
from annotate.tasks.export_spec import Column, ExportItem, ExportTable, highlighted_words
from annotate.tasks.gold_format import cell, marked_words, word_map
from annotate.tasks.page_words import is_binary_map, map_overlap, map_strategies, word_payload
from explain_engine.api import word_spans


def pair_payload(premise: str, hypothesis: str, premise_words: list[list[int]] | None = None) -> dict:
    """The browser's view of a pair: each text's canonical words and line breaks."""
    words = premise_words if premise_words is not None else [list(s) for s in word_spans(premise)]
    return {
        "premise": word_payload(premise, words),
        "hypothesis": word_payload(hypothesis, [list(s) for s in word_spans(hypothesis)]),
    }


def side_lengths(payload: dict) -> dict[str, int]:
    """Number of words of each text in an item's payload."""
    return {side: len(payload.get(side, {}).get("words", ())) for side in SIDES}


def check_maps(
    config: dict, label: str, maps: dict[str, Any], lengths: dict[str, int]
) -> dict[str, list[str]]:
    """Errors of the two maps of an answer labelled ``label`` (empty when they are fine): each map has
    one 0/1 per word of its text, and the label's rule holds for each text."""
    errors: dict[str, list[str]] = {}
    rule = rule_for(config, label)
    for side in SIDES:
        field, word_map = map_field(side), maps.get(map_field(side))
        if not is_binary_map(word_map, lengths[side]):
            errors[field] = [f"must be a list of {lengths[side]} values, each 0 or 1 (one per {side} word)"]
        elif rule[side] == REQUIRED and 1 not in word_map:
            errors[field] = [f'For "{label}", highlight at least one word in the {side}.']
        elif rule[side] == FORBIDDEN and 1 in word_map:
            errors[field] = [f'"{label}" allows no highlighted word in the {side}: clear them there.']
    return errors


@register
class NliPairKind(TaskKind):
    name = KIND
    label = "Label an NLI pair and highlight the words of either text that justify it"
    title = "Does the premise support the hypothesis? Highlight why"
    rationale_fields = ("premise_map", "hypothesis_map")
    stopping_rules = ("label_share", "label_posterior", "map_agreement", "ci_width")
    rationale_import = "pairs"
    template = "nli_pair/task.html"
    page_script = "hatlab/kinds/nli_pair.js"
    results = NliPairResults
    create_url_name = "nli-pair-import"
    edit_form = PairEditForm
    default_answer_s = 30.0
    gold_columns = (
        ("label", "the gold label, one of the study's labels"),
        ("premise_words", "the numbers of the premise's highlighted words, from 1 (e.g. 2 3)"),
        ("hypothesis_words", "the numbers of the hypothesis's highlighted words, from 1"),
    )

    def gold_answer(self, item, row: dict[str, Any]) -> Any:
        payload = item.payload
        return {
            "label": cell(row, "label"),
            **{
                map_field(side): word_map(
                    row.get(f"{side}_words"), payload.get(side, {}).get("words", []), f"{side}_words"
                )
                for side in SIDES
            },
        }

    def describe_gold(self, item, gold: dict[str, Any]) -> str:
        words = {side: item.payload.get(side, {}).get("words", []) for side in SIDES}
        return (
            f"label “{gold['label']}”; premise {marked_words(words['premise'], gold['premise_map'])}; "
            f"hypothesis {marked_words(words['hypothesis'], gold['hypothesis_map'])}"
        )

    needs_dataset = True
    config_serializer = NliPairConfigSerializer

    def public_config(self, study) -> dict[str, Any]:
        labels = study.config.get("labels", list(DEFAULT_LABELS))
        return {
            **super().public_config(study),
            "labels": labels,
            "rules": {label: rule_for(study.config, label) for label in labels},
        }

    def rationale_config(self, labels: list[str]) -> dict[str, Any]:
        """No rule on where highlights lie: a published set's maps are kept as its annotators gave them."""
        return {"labels": labels, "rules": {}}

    def build_items(self, study) -> list:
        """One item per pair of the study's dataset, in document order; a pair whose
        ``metadata["gold"]`` is a valid answer becomes a gold item graded against it."""
        if study.dataset_id is None:
            raise ValidationError({"dataset": ["an nli_pair study needs a dataset of pairs"]})
        config = self.validate_config(study.config)
        items = []
        documents = study.dataset.documents.only("id", "external_id", "text", "words", "label", "metadata")
        for position, doc in enumerate(documents.order_by("id").iterator(chunk_size=500)):
            metadata = doc.metadata if isinstance(doc.metadata, dict) else {}
            hypothesis = metadata.get(HYPOTHESIS_FIELD)
            if not isinstance(hypothesis, str) or not word_spans(hypothesis):
                raise ValidationError(
                    {"dataset": [f"pair {doc.external_id!r}: metadata.{HYPOTHESIS_FIELD} must be a text"]}
                )
            payload = pair_payload(doc.text, hypothesis, doc.words)
            secret: dict[str, Any] = {"label": doc.label}
            gold = metadata.get(GOLD_FIELD)
            if gold is not None:
                problem = self._gold_problem(config, gold, side_lengths(payload))
                if problem:
                    raise ValidationError({"dataset": [f"pair {doc.external_id!r}: metadata.gold {problem}"]})
                secret["gold"] = {
                    "label": gold["label"],
                    **{map_field(s): list(gold[map_field(s)]) for s in SIDES},
                }
            items.append(
                Item(
                    study=study,
                    document=doc,
                    position=position,
                    payload=payload,
                    secret=secret,
                    is_gold=gold is not None,
                    responses_needed=study.annotators_per_item,
                )
            )
        return items

    @staticmethod
    def _gold_problem(config: dict, gold: Any, lengths: dict[str, int]) -> str:
        if not isinstance(gold, dict) or gold.get("label") not in config["labels"]:
            return f"must be an object whose label is one of {config['labels']}"
        errors = check_maps(config, gold["label"], gold, lengths)
        return "; ".join(f"{field} {'; '.join(problems)}" for field, problems in errors.items())

    def validate_answer(self, item, answer: Any, timings: dict[str, Any]) -> dict[str, Any]:
        config = item.study.config
        labels = config.get("labels", list(DEFAULT_LABELS))
        if not isinstance(answer, dict):
            raise ValidationError(
                {
                    "answer": {
                        "non_field_errors": ["must be an object with label, premise_map and hypothesis_map"]
                    }
                }
            )
        label = answer.get("label")
        if not isinstance(label, str) or label not in labels:
            raise ValidationError({"answer": {"label": [f"must be one of {', '.join(labels)}"]}})
        errors = check_maps(config, label, answer, side_lengths(item.payload))
        if errors:
            raise ValidationError({"answer": errors})
        maps = {map_field(side): list(answer[map_field(side)]) for side in SIDES}
        self._check_read_first(any(1 in m for m in maps.values()), timings)
        return {"label": label, **maps}

    @staticmethod
    def _check_read_first(highlighted: bool, timings: dict[str, Any]) -> None:
        """Read-first (Sen et al. 2020 §3): the label is chosen before the first highlight."""
        label_at, first_highlight = timings.get("label_at_ms"), timings.get("first_highlight_at_ms")
        if label_at is None:
            raise ValidationError({"timings": {"label_at_ms": ["needed: the time the label was chosen"]}})
        if first_highlight is None and highlighted:
            raise ValidationError(
                {"timings": {"first_highlight_at_ms": ["needed when words are highlighted"]}}
            )
        if first_highlight is not None and first_highlight < label_at:
            raise ValidationError(
                {"timings": {"first_highlight_at_ms": ["highlighting started before the label was chosen"]}}
            )

    def grade_gold(self, item, answer: dict[str, Any]) -> bool | None:
        """Passed when the label is the gold label and the highlighted words of both texts together
        overlap the gold ones by at least ``gold_overlap`` (as the highlight kind grades its golds)."""
        gold = item.secret.get("gold")
        if not gold:
            return None
        config = item.study.config
        if answer.get("label") != gold["label"]:
            return False
        given = [v for side in SIDES for v in answer[map_field(side)]]
        wanted = [v for side in SIDES for v in gold[map_field(side)]]
        return map_overlap(given, wanted, config.get("overlap_measure", "f1")) >= config.get(
            "gold_overlap", 0.5
        )

    def categories(self, study) -> list:
        return list(study.config.get("labels", DEFAULT_LABELS))

    def agreement_value(self, answer: dict[str, Any]) -> Any:
        return answer.get("label")

    def stop_answer(self, answer: dict[str, Any]) -> dict[str, Any]:
        """The label, and the premise's and the hypothesis's maps as one map over both texts' words."""
        maps = [answer.get(map_field(side)) for side in SIDES]
        whole = [v for m in maps if isinstance(m, list) for v in m]
        return {
            "label": answer.get("label"),
            "map": whole if all(isinstance(m, list) for m in maps) else None,
        }

    def fixed_strategies(self, study, answer: dict[str, Any]) -> list[str]:
        maps = [answer.get(map_field(side)) for side in SIDES]
        both = [v for m in maps if isinstance(m, list) for v in m]
        return [*super().fixed_strategies(study, answer), *map_strategies(both)]

    def export_columns(self, study) -> tuple[Column, ...]:
        return (
            ("label", "the label the worker chose"),
            ("hypothesis_words", "the hypothesis's words, in order (hypothesis_map indexes them; words holds the premise's)"),
            *((map_field(side), f"0/1 per word of the {side}: 1 where the worker highlighted it") for side in SIDES),
            *((f"{side}_highlighted", f"the highlighted words of the {side}, in order") for side in SIDES),
        )  # fmt: skip

    def export_answer(self, study, item: ExportItem, answer: dict[str, Any]) -> dict[str, Any]:
        hypothesis = item.payload.get("hypothesis", {}).get("words", [])
        row: dict[str, Any] = {"label": answer.get("label"), "hypothesis_words": hypothesis}
        for side in SIDES:
            row[map_field(side)] = answer.get(map_field(side))
        for side in SIDES:
            words = item.payload.get(side, {}).get("words", [])
            row[f"{side}_highlighted"] = highlighted_words(words, answer.get(map_field(side)))
        return row

    def export_tables(self, study) -> tuple[ExportTable, ...]:
        """Per pair: the labels, their majority, and each text's CAM and SAM (Sen et al. 2020, §3.2)."""
        columns = (
            ("item", "the item's id"),
            ("pair", "the pair's id"),
            ("gold_label", "the pair's label, as imported"),
            *((f"{side}_words", f"the {side}'s words, in order") for side in SIDES),
            ("answers", "counted answers"),
            ("labels", "their labels"),
            ("majority", "the most frequent label"),
            *(
                (f"{side}_{m}", f"the {side}'s words {which} answer highlighted ({name})")
                for side in SIDES
                for m, which, name in (("cam", "every", "CAM, AND"), ("sam", "any", "SAM, OR"))
            ),
        )
        return (
            ExportTable(
                "pairs",
                "Pairs with CAM and SAM",
                "per pair: labels, majority, CAM and SAM of each text",
                columns,
                _pair_rows,
            ),
        )


def _pair_rows(study, unverified: bool):
    return export_rows(study, "pairs")
