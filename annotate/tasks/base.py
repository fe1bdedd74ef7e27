"""The task-kind contract: a study is data (a config validated by its kind's schema), not code.

Each kind owns the schema of its study config (a DRF serializer), how a study's items are built,
what of an item the annotator's browser may see, how an answer is validated and how a gold answer is
graded, which answer categories inter-annotator agreement is computed over, how many words an item
asks to read and which fixed answering strategies an answer agrees with (for the risk score of
:mod:`annotate.quality.risk`), which columns its answers fill in an export and which aggregated exports
it offers, which page script and template the annotator gets, its results page, and its demo
studies. The rest of the app
asks the kind through these hooks and never tests a kind's name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

from django.utils.module_loading import import_string
from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from annotate.tasks.export_spec import Column, ExportItem, ExportTable
from annotate.tasks.page_words import payload_words

#: At most this many documents are named when a dataset lacks what a kind needs.
MAX_DATASET_PROBLEMS = 10


def capped(problems: list[str], total: int) -> list[str]:
    """``problems`` (already at most :data:`MAX_DATASET_PROBLEMS`) and, when ``total`` is more, how many
    more documents have the same kind of problem."""
    more = total - len(problems)
    return problems + (
        [f"… and {more} more document{'s' if more != 1 else ''} like these."] if more > 0 else []
    )


#: The study config's key of the share of hand-outs that are gold items (:mod:`annotate.quality.gold_mixing`).
GOLD_RATE_KEY = "gold_rate"
#: The study config's key of the redundancy policy: fixed or adaptive (:mod:`annotate.quality.redundancy`).
REDUNDANCY_KEY = "redundancy"

#: An item's ``secret`` key that makes a gold item an attention check (an instructed-response item of the
#: study's protocol, :mod:`annotate.protocol.attention`): graded like a gold, kept out of gold trust.
ATTENTION_KEY = "attention"


class BaseConfigSerializer(serializers.Serializer):
    """Config options every kind understands."""

    max_items_per_worker = serializers.IntegerField(
        min_value=1,
        required=False,
        allow_null=True,
        default=None,
        help_text="The most items one worker may answer in this study (no limit when empty).",
    )


class TaskKind(ABC):
    """One kind of annotation task.

    The annotator page is ``template`` rendered by the entry page (:mod:`annotate.views.work`) with
    ``kind`` and ``task_json``; the shared frame loads ``page_script``, the kind's module of the
    frontend's page loop (built from ``frontend/src/kinds/``).
    """

    #: The registered name, stored in ``Study.kind``.
    name: ClassVar[str] = ""
    #: The kind in a study form's choice list.
    label: ClassVar[str] = ""
    #: Whether a study gets this kind when none is named (one kind says so).
    default: ClassVar[bool] = False
    #: Whether an answer's ``map`` is a human attention map over the document's words, shown beside the
    #: machine's on the heat-map page.
    attention_maps: ClassVar[bool] = False
    #: Whether an answer gives the item a label (one of :meth:`categories`, by :meth:`agreement_value`);
    #: a kind whose answers only mark words says no, and the dashboards show no label figures for it.
    labels_items: ClassVar[bool] = True
    #: The family of kinds that share a folder and pages; empty for a kind of its own.
    family: ClassVar[str] = ""
    #: The class attributes the registry keeps as the kind's metadata (``TASK_KINDS.where(family=...)``).
    registry_meta: ClassVar[tuple[str, ...]] = (
        "label",
        "default",
        "attention_maps",
        "family",
        "rationale_import",
    )
    #: The answer fields that hold 0/1 maps over words, for the human-rationale exports: the document's map,
    #: then (a pair kind) the hypothesis's; empty for a kind whose answers are no such maps.
    rationale_fields: ClassVar[tuple[str, ...]] = ()
    #: What the kind takes of an imported human-rationale set: ``"texts"`` or ``"pairs"`` (one kind each);
    #: empty for none (``TASK_KINDS.where(rationale_import="texts")``).
    rationale_import: ClassVar[str] = ""
    #: The question the annotator page is headed with.
    title: ClassVar[str] = ""
    #: The annotator page template (a kind's own one extends the shared frame).
    template: ClassVar[str] = "annotate/work/_task_base.html"
    #: The static path of the page script, e.g. ``hatlab/kinds/<name>.js``.
    page_script: ClassVar[str] = ""
    #: The researcher's results page of a study of this kind (a
    #: :class:`~annotate.tasks.results.ResultsPage` subclass, or its dotted path for a module that imports
    #: the kind); ``None``: none. Mounted for every kind at ``studies/<uid>/results/``.
    results: ClassVar[type | str | None] = None
    #: Whether a study of this kind must name a dataset when it is created.
    needs_dataset: ClassVar[bool] = False
    #: What every document of a study's dataset must hold for this kind, as ``(field, what it holds)``:
    #: named on the dataset import page, and checked when a study is created (:meth:`dataset_problems`).
    document_fields: ClassVar[tuple[tuple[str, str], ...]] = ()
    #: The researcher's form that creates a study of this kind (``study_data()`` is the study API's
    #: input); ``None`` when the kind's own pages (its ``urls.py``) create its studies.
    create_form: ClassVar[type | None] = None
    #: The URL name of the kind's own create page, for a kind without ``create_form`` (``?kind=`` names it).
    create_url_name: ClassVar[str] = ""
    #: The form that edits a draft of this kind (``initial_from(study)`` fills it), or its dotted path
    #: (for a form module that imports the kinds); ``create_form`` when ``None``.
    edit_form: ClassVar[type | str | None] = None
    config_serializer: ClassVar[type[serializers.Serializer]] = BaseConfigSerializer
    #: The stopping rules an adaptive study of this kind may use (:data:`explain_engine.api.STOPPING_RULES`),
    #: over what :meth:`stop_answer` reads of an answer.
    stopping_rules: ClassVar[tuple[str, ...]] = ("label_share", "label_posterior", "ci_width")
    #: The seconds one answer takes when no stored answer says (:mod:`annotate.studies.plan` measures the
    #: median from stored answers first): hatlab's default for the kind, not a measured figure.
    default_answer_s: ClassVar[float] = 60.0

    #: The columns of a gold import file that give the answer, with what each holds (shown on the import
    #: page). Rows find their item by ``item`` (its number on the golds page) or by :attr:`gold_key_columns`.
    gold_columns: ClassVar[tuple[tuple[str, str], ...]] = ()
    #: The columns that name an item in a gold import file, besides ``item``.
    gold_key_columns: ClassVar[tuple[tuple[str, str], ...]] = (("document", "the document's id"),)

    def gold_item_key(self, item) -> tuple[str, ...]:
        """``item`` by the values of :attr:`gold_key_columns` (its document's id by default)."""
        return (str(item.document.external_id) if item.document_id else "",)

    def gold_answer(self, item, row: dict[str, Any]) -> Any:
        """The answer a row of a gold import file gives for ``item`` (checked afterwards by
        :meth:`validate_answer`); ``ValueError`` with a sentence when a cell cannot be read."""
        raise ValueError("this kind has no gold answers")

    def describe_gold(self, item, gold: dict[str, Any]) -> str:
        """A gold answer in words, for the researcher's pages."""
        return ", ".join(f"{key} {value}" for key, value in gold.items())

    def results_page(self) -> type | None:
        """The kind's results page class, or ``None`` when it has none."""
        return import_string(self.results) if isinstance(self.results, str) else self.results

    def form_for_edit(self) -> type | None:
        """The form that edits a draft of this kind, or ``None`` when drafts of it cannot be edited."""
        form = self.edit_form or self.create_form
        return import_string(form) if isinstance(form, str) else form

    def validate_config(self, config: dict | None, user=None) -> dict[str, Any]:
        """The study config with defaults filled in; ``ValidationError`` naming the bad fields. With ``user``
        (a researcher's request), objects the config names by id must be ones ``user`` may see."""
        if config is not None and not isinstance(config, dict):
            raise ValidationError({"non_field_errors": ["the config must be an object"]})
        serializer = self.config_serializer(data=config or {}, context={"user": user})
        serializer.is_valid(raise_exception=True)
        return dict(serializer.validated_data)

    def public_config(self, study) -> dict[str, Any]:
        """What the annotator page may know about the study."""
        return {
            "instructions": study.instructions,
            "time_limit_s": study.time_limit_s,
            "max_items_per_worker": study.config.get("max_items_per_worker"),
        }

    def rationale_config(self, labels: list[str]) -> dict[str, Any]:
        """The config of a finished study holding an imported human-rationale set with these labels (a kind
        with :attr:`rationale_import` says how its checks let any published map in)."""
        raise NotImplementedError(f"a {self.name} study does not hold imported rationales")

    @abstractmethod
    def build_items(self, study) -> list:
        """The unsaved :class:`~annotate.models.Item` rows of ``study`` (saved by the caller)."""

    def public_payload(self, item) -> dict[str, Any]:
        """What the annotator's browser sees of ``item``; never anything from ``item.secret``."""
        return dict(item.payload)

    @abstractmethod
    def validate_answer(self, item, answer: Any, timings: dict[str, Any]) -> dict[str, Any]:
        """The cleaned answer; ``ValidationError`` with ``{"answer": {field: [...]}}`` or
        ``{"timings": {field: [...]}}`` otherwise. ``item.study`` is loaded."""

    def grade_gold(self, item, answer: dict[str, Any]) -> bool | None:
        """Whether ``answer`` passes the gold item ``item``; ``None`` for an item without gold."""
        return None

    def dataset_problems(self, config: dict[str, Any], dataset) -> list[str]:
        """The documents of ``dataset`` that lack what :attr:`document_fields` asks under ``config``, as
        sentences naming each document (at most :data:`MAX_DATASET_PROBLEMS`, then how many more); empty
        when every document holds it."""
        return []

    def check_gold(self, item, gold: dict[str, Any]) -> None:
        """Refuse a cleaned gold answer that contradicts what the item itself holds (its answer key):
        ``ValidationError`` with ``{"answer": {field: [...]}}``. Every gold is accepted by default."""
        return None

    def validate_gold(self, item, gold: Any, timings: dict[str, Any]) -> dict[str, Any]:
        """A gold answer for ``item``, validated as an answer (:meth:`validate_answer`) and checked
        against the item's answer key (:meth:`check_gold`); the gold editor and the gold import both
        save through this."""
        cleaned = self.validate_answer(item, gold, timings)
        self.check_gold(item, cleaned)
        return cleaned

    @abstractmethod
    def categories(self, study) -> list:
        """The answer categories agreement is computed over."""

    @abstractmethod
    def agreement_value(self, answer: dict[str, Any]) -> Any:
        """The category of ``answer`` (one of :meth:`categories`), or ``None`` when it has none."""

    def stop_answer(self, answer: dict[str, Any]) -> dict[str, Any]:
        """What a stopping rule reads of ``answer`` (:class:`explain_engine.api.CountedAnswer`'s ``label``,
        ``map``, ``value``): by default its :meth:`agreement_value` as the label."""
        return {"label": self.agreement_value(answer)}

    def worker_share(self, study, documents: Sequence[int | None]) -> int:
        """The most items one worker may be given among items showing ``documents`` (one entry per item:
        its document's id) under the kind's share rules, before ``max_items_per_worker``: every item, by
        default (a worker answers an item once)."""
        return len(documents)

    def share_rule(self, study) -> str:
        """The kind's share rule in words, when it gives a worker fewer than every item."""
        return ""

    def plan_warnings(self, study) -> list[str]:
        """Settings of ``study`` that its plan cannot meet, each a sentence naming the setting to change
        (shown on the study form and page before anything starts); none by default."""
        return []

    def reading_words(self, payload: dict[str, Any]) -> int:
        """How many words an annotator reads to answer an item with ``payload`` (0: none to time)."""
        return payload_words(payload)

    def export_columns(self, study) -> tuple[Column, ...]:
        """The columns an answer of this kind fills in a per-response export, each with what it holds."""
        return (("answer", "the answer as stored (JSON)"),)

    def export_answer(self, study, item: ExportItem, answer: dict[str, Any]) -> dict[str, Any]:
        """The values of :meth:`export_columns` for ``answer`` to ``item`` (read by researchers only:
        the item's secret may be shown)."""
        return {"answer": answer}

    def export_tables(self, study) -> tuple[ExportTable, ...]:
        """The aggregated exports a study of this kind offers; none by default. A kind with one answer
        category per item can offer :data:`annotate.quality.aggregation.LABEL_TABLE`: each item's label by
        majority vote with its confidence and Dawid & Skene's estimate, over :meth:`agreement_value`."""
        return ()

    def fixed_strategies(self, study, answer: dict[str, Any]) -> list[str]:
        """The fixed answering strategies ``answer`` agrees with, by name: answers a script gives without
        reading. By default the first and the last answer category (always the first label, always the
        top rating); kinds add their own (every word highlighted, none)."""
        categories = self.categories(study)
        value = self.agreement_value(answer) if isinstance(answer, dict) else None
        if value is None or not categories:
            return []
        found = []
        if value == categories[0]:
            found.append(f"always the first answer ({categories[0]})")
        if len(categories) > 1 and value == categories[-1]:
            found.append(f"always the last answer ({categories[-1]})")
        return found
