"""Serializers: they validate what comes in and shape what goes out."""

from __future__ import annotations

import json

from django.db import models, transaction
from django.urls import reverse
from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from annotate.corpus.imports import (
    FORMATS,
    MAX_LABEL_LENGTH,
    CorpusImportError,
    Imported,
    check_file_size,
    detect_format,
    import_texts,
)
from annotate.crowd.providers import PROVIDERS
from annotate.infra.strict_fields import StrictCharField
from annotate.models import Dataset, Study
from annotate.studies import service as study_service
from annotate.tasks import TASK_KINDS, default_kind
from annotate.tasks.api_parts import JSONObjectField

MAX_MS = 7 * 24 * 3600 * 1000
MAX_SIGNALS_BYTES = 16 * 1024


def _import_upload(dataset: Dataset, upload, fmt: str | None, labels: list[str] | None = None) -> Imported:
    """Import an uploaded file; a bad file becomes a 400 listing every problem (line and field each, the
    first 50 and how many more) under ``file``. A file over the size cap is refused before it is read."""
    try:
        check_file_size(upload.size)
        return import_texts(dataset, upload.read(), fmt or detect_format(upload.name), labels)
    except CorpusImportError as exc:
        raise ValidationError({"file": exc.sentences()}) from None


def _label_set() -> serializers.ListField:
    return serializers.ListField(
        child=StrictCharField(max_length=MAX_LABEL_LENGTH),
        required=False,
        write_only=True,
        help_text="The labels the documents may have; every document needs one of them. Default: the "
        "dataset's labels, or for a dataset without any the labels the file uses (answered in labels).",
    )


class DatasetSerializer(serializers.ModelSerializer):
    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        models.CharField: StrictCharField,
        models.TextField: StrictCharField,
    }
    owner = serializers.CharField(source="owner.username", read_only=True)
    document_count = serializers.IntegerField(source="n_documents", read_only=True, default=None)
    file = serializers.FileField(write_only=True, required=False, help_text="CSV or JSONL to import.")
    format = serializers.ChoiceField(choices=FORMATS, write_only=True, required=False, allow_blank=True)
    label_set = _label_set()

    class Meta:
        model = Dataset
        fields = [
            "id",
            "name",
            "description",
            "labels",
            "source",
            "owner",
            "document_count",
            "created",
            "file",
            "format",
            "label_set",
        ]
        read_only_fields = ["labels", "source", "created"]

    def validate_name(self, name: str) -> str:
        user = self.context["request"].user
        if Dataset.objects.filter(owner=user, name=name).exists():
            raise ValidationError("you already have a dataset with this name")
        return name

    def create(self, validated_data: dict) -> Dataset:
        upload = validated_data.pop("file", None)
        fmt = validated_data.pop("format", None)
        labels = validated_data.pop("label_set", None)
        with transaction.atomic():
            dataset = Dataset.objects.create(
                owner=self.context["request"].user, source=upload.name if upload else "", **validated_data
            )
            dataset.n_documents = _import_upload(dataset, upload, fmt, labels).documents if upload else 0
            dataset.refresh_from_db(fields=["labels"])
        return dataset


class DatasetImportSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="CSV or JSONL with the fields id, text, label (and metadata).")
    format = serializers.ChoiceField(choices=FORMATS, required=False, allow_blank=True)
    label_set = _label_set()

    def save_into(self, dataset: Dataset) -> Imported:
        data = self.validated_data
        return _import_upload(dataset, data["file"], data.get("format"), data.get("label_set"))


class ImportResultSerializer(serializers.Serializer):
    imported = serializers.IntegerField(help_text="documents this file added")
    documents = serializers.IntegerField(help_text="documents in the dataset now")
    labels = serializers.DictField(
        child=serializers.IntegerField(), help_text="the added documents per label"
    )


class StudySerializer(serializers.ModelSerializer):
    """A study as the API shows it. Its fields describe the input in the schema; the input itself is
    checked and stored by the study rule (:mod:`annotate.studies.service`)."""

    dataset = serializers.PrimaryKeyRelatedField(
        queryset=Dataset.objects.all(), required=False, allow_null=True
    )
    kind = serializers.ChoiceField(choices=[], default=default_kind)
    provider = serializers.ChoiceField(choices=[], default="local")
    config = JSONObjectField(required=False, default=dict)
    provider_config = JSONObjectField(required=False, default=dict)
    protocol = JSONObjectField(required=False, default=dict)
    annotators_per_item = serializers.IntegerField(min_value=1, max_value=50, default=3)
    time_limit_s = serializers.IntegerField(min_value=30, max_value=7 * 24 * 3600, default=1800)
    owner = serializers.CharField(source="owner.username", read_only=True)
    entry_url = serializers.SerializerMethodField()

    class Meta:
        model = Study
        fields = [
            "uid",
            "name",
            "dataset",
            "kind",
            "config",
            "instructions",
            "annotators_per_item",
            "time_limit_s",
            "provider",
            "provider_config",
            "protocol",
            "status",
            "owner",
            "created",
            "entry_url",
        ]
        read_only_fields = ["uid", "status", "created"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["kind"].choices = sorted(TASK_KINDS)
        self.fields["provider"].choices = sorted(PROVIDERS)

    def get_entry_url(self, study: Study) -> str:
        return reverse("work-entry", args=[study.uid])

    def to_internal_value(self, data) -> dict:
        """The study rule's check for the request's user (:func:`annotate.studies.service.validate_study`)."""
        return study_service.validate_study(self.context["request"].user, data, instance=self.instance)

    def create(self, validated_data: dict) -> Study:
        return study_service.store_study(self.context["request"].user, validated_data)


class ProgressAnnotatorSerializer(serializers.Serializer):
    worker = serializers.CharField(help_text="Anonymised worker id.")
    provider = serializers.CharField()
    responses = serializers.IntegerField(help_text="Answers received, verified or not.")
    verified = serializers.IntegerField(help_text="Answers that count in results.")
    provisional = serializers.IntegerField(help_text="Answers waiting for the platform to confirm them.")
    set_aside = serializers.IntegerField(help_text="Answers the platform never confirmed.")
    golds = serializers.IntegerField(help_text="Verified answers to gold items.")
    golds_passed = serializers.IntegerField()
    last = serializers.DateTimeField(allow_null=True)


class ProgressSerializer(serializers.Serializer):
    status = serializers.CharField()
    items_done = serializers.IntegerField(help_text="Items with all their slots answered, verified or not.")
    items_verified = serializers.IntegerField(help_text="Items with as many verified answers as they need.")
    items_total = serializers.IntegerField()
    percent = serializers.FloatField()
    percent_verified = serializers.FloatField()
    responses = serializers.IntegerField(help_text="Answers received, verified or not.")
    verified = serializers.IntegerField(help_text="Answers that count in results.")
    provisional = serializers.IntegerField(help_text="Answers waiting for the platform to confirm them.")
    set_aside = serializers.IntegerField(help_text="Answers the platform never confirmed.")
    responses_needed = serializers.IntegerField(
        help_text="Answers the items need, golds counted at the workers per item: the plan's answers needed."
    )
    open_assignments = serializers.IntegerField()
    annotators = ProgressAnnotatorSerializer(many=True)


class PlanCostSerializer(serializers.Serializer):
    platform = serializers.CharField()
    title = serializers.CharField()
    places = serializers.IntegerField(help_text="One place per worker needed.")
    reward = serializers.CharField()
    rewards = serializers.CharField()
    fees = serializers.CharField()
    total = serializers.CharField()
    currency = serializers.CharField()
    reward_source = serializers.CharField(help_text="Where the reward per place comes from.")
    fee_rule = serializers.CharField()


class PlanSerializer(serializers.Serializer):
    answers = serializers.IntegerField(help_text="Answers needed: items × workers per item, golds included.")
    gold_answers = serializers.IntegerField()
    items = serializers.IntegerField(help_text="Ordinary (not gold) items.")
    golds = serializers.IntegerField()
    workers_per_item = serializers.IntegerField()
    items_per_worker = serializers.IntegerField(
        help_text="The most items one worker is given (share rule, cap)."
    )
    share_rule = serializers.CharField(help_text="The kind's share rule in words (empty: none).")
    workers = serializers.IntegerField(allow_null=True, help_text="Workers needed; null: no share has room.")
    answer_s = serializers.FloatField(help_text="Median seconds of an answer.")
    answer_source = serializers.CharField(
        help_text="Where the median comes from (measured, or the kind's default)."
    )
    worker_s = serializers.FloatField(help_text="Expected seconds of one worker's share.")
    total_s = serializers.FloatField(help_text="Expected seconds of all the work.")
    warnings = serializers.ListField(child=serializers.CharField())
    problem = serializers.CharField(
        help_text="Why the items cannot be built from the settings yet (empty: they can)."
    )
    costs = PlanCostSerializer(many=True)


class InviteRequestSerializer(serializers.Serializer):
    count = serializers.IntegerField(min_value=1, max_value=500, default=1)


class InviteResultSerializer(serializers.Serializer):
    links = serializers.ListField(child=serializers.CharField())


# ------------------------------------------------------------------ annotator API


class TimingsSerializer(serializers.Serializer):
    read_ms = serializers.IntegerField(min_value=0, max_value=MAX_MS, required=False, allow_null=True)
    answer_ms = serializers.IntegerField(min_value=0, max_value=MAX_MS, required=False, allow_null=True)
    label_at_ms = serializers.IntegerField(min_value=0, max_value=MAX_MS, required=False, allow_null=True)
    first_highlight_at_ms = serializers.IntegerField(
        min_value=0, max_value=MAX_MS, required=False, allow_null=True
    )


class SubmissionSerializer(serializers.Serializer):
    submission_key = serializers.UUIDField(help_text="A fresh UUID per answer; a retry reuses it.")
    answer = serializers.JSONField(help_text='The kind\'s answer, e.g. {"label": "positive", "map": [0, 1]}.')
    timings = TimingsSerializer(required=False, default=dict)
    signals = serializers.DictField(required=False, default=dict, help_text="Focus changes, pastes, etc.")
    next = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Also hand out the next item: the answer carries what POST next would (one round trip).",
    )

    def validate_signals(self, value: dict) -> dict:
        if len(json.dumps(value)) > MAX_SIGNALS_BYTES:
            raise ValidationError(f"larger than {MAX_SIGNALS_BYTES} bytes")
        return value


class WorkItemSerializer(serializers.Serializer):
    kind = serializers.CharField()
    payload = serializers.DictField(
        help_text="What the page shows, as the study's task kind defines it (e.g. {words, breaks})."
    )


class WorkProgressSerializer(serializers.Serializer):
    done = serializers.IntegerField()
    total = serializers.IntegerField()


class NextSerializer(serializers.Serializer):
    assignment = serializers.UUIDField(required=False)
    expires_at = serializers.DateTimeField(required=False)
    page_token = serializers.CharField(
        required=False,
        help_text="signed, bound to this assignment and the moment it was served: send it back "
        "in the answer's signals.page_token",
    )
    item = WorkItemSerializer(required=False)
    progress = WorkProgressSerializer()
    config = serializers.DictField(required=False, help_text="mode, labels, time_limit_s, instructions")
    done = serializers.BooleanField(required=False)
    completion = serializers.DictField(required=False)


class SubmittedSerializer(serializers.Serializer):
    response = serializers.IntegerField()
    next = NextSerializer(
        required=False,
        allow_null=True,
        help_text="With next=true: the next item, as POST next answers it; null when next would answer an "
        "error (ask next for it).",
    )


class SkipSerializer(serializers.Serializer):
    reason = serializers.CharField(help_text="One of the study's skip reasons (the task page lists them).")


class SkippedSerializer(serializers.Serializer):
    skipped = serializers.IntegerField(help_text="The skip's record.")
    next = NextSerializer(allow_null=True, help_text="What POST next answers now; null when it has an error.")


class PreviousRequestSerializer(serializers.Serializer):
    before = serializers.UUIDField(
        required=False, allow_null=True, help_text="The answer to go back from; null: the newest."
    )


class PreviousSerializer(serializers.Serializer):
    assignment = serializers.UUIDField()
    page_token = serializers.CharField()
    item = WorkItemSerializer()
    answer = serializers.JSONField(help_text="The answer as it is stored now.")
    config = serializers.DictField()
    edit = serializers.BooleanField(help_text="Always true: send the changed answer to the edit route.")


class EditedSerializer(serializers.Serializer):
    edit = serializers.IntegerField(allow_null=True, help_text="The change's record.")


class TrainingAttemptSerializer(serializers.Serializer):
    attempt = serializers.IntegerField(help_text="The attempt at the training, from 1.")
    tries = serializers.IntegerField(help_text="The attempts allowed.")


class TrainingNextSerializer(NextSerializer):
    training = TrainingAttemptSerializer(required=False)


class TrainingFeedbackSerializer(serializers.Serializer):
    passed = serializers.BooleanField(allow_null=True)
    expected = serializers.CharField(help_text="The expected answer in words.")
    expected_answer = serializers.JSONField(help_text="The expected answer as the kind's answer object.")
    explanation = serializers.CharField(allow_blank=True)


class TrainingAnsweredSerializer(serializers.Serializer):
    response = serializers.IntegerField(help_text="The training answer's record (never counted as data).")
    training = TrainingFeedbackSerializer()


class ErrorsSerializer(serializers.Serializer):
    errors = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text='Field name → messages, e.g. {"answer.map": ["must be a list of 50 values"]}.',
    )
