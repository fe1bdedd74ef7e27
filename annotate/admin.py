"""Django admin for every model of the app: the main ones with lists and filters, any other with
Django's defaults."""

from __future__ import annotations

from django.apps import apps
from django.contrib import admin

from annotate.models import (
    Assignment,
    ChangeLog,
    Dataset,
    Document,
    Explanation,
    Item,
    Job,
    ModelRun,
    Prediction,
    Response,
    Study,
    Worker,
)


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ["name", "owner", "source", "created"]
    list_filter = ["owner"]
    search_fields = ["name", "description", "source"]


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ["external_id", "dataset", "label"]
    list_filter = ["dataset"]
    search_fields = ["external_id", "text"]
    list_select_related = ["dataset"]


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "status", "provider", "annotators_per_item", "owner", "created"]
    list_filter = ["kind", "status", "provider"]
    search_fields = ["name", "uid"]
    readonly_fields = ["uid", "created"]


@admin.register(Item)
class ItemAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "study",
        "position",
        "is_gold",
        "retired",
        "responses_done",
        "slots_taken",
        "responses_needed",
    ]
    list_filter = ["is_gold", "retired", "study"]
    list_select_related = ["study"]
    raw_id_fields = ["document"]


@admin.register(Worker)
class WorkerAdmin(admin.ModelAdmin):
    list_display = ["anonymous_id", "provider", "external_id", "user", "status", "created"]
    list_filter = ["provider", "status"]
    search_fields = ["external_id"]
    raw_id_fields = ["user"]


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ["uid", "study", "item", "worker", "slot", "status", "assigned_at", "expires_at"]
    list_filter = ["status", "study"]
    search_fields = ["uid", "provider_assignment_id"]
    raw_id_fields = ["item", "worker"]
    list_select_related = ["study", "worker"]


@admin.register(Response)
class ResponseAdmin(admin.ModelAdmin):
    list_display = ["id", "study", "item", "worker", "gold_passed", "read_ms", "answer_ms", "created"]
    list_filter = ["study", "gold_passed"]
    raw_id_fields = ["assignment", "item", "worker"]
    list_select_related = ["study", "worker"]


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ["kind", "key", "status", "progress", "created", "updated"]
    list_filter = ["kind", "status"]
    search_fields = ["key"]


@admin.register(ModelRun)
class ModelRunAdmin(admin.ModelAdmin):
    list_display = ["name", "architecture", "dataset", "status", "progress", "created"]
    list_filter = ["architecture", "status"]


@admin.register(Prediction)
class PredictionAdmin(admin.ModelAdmin):
    list_display = ["model_run", "document", "label"]
    raw_id_fields = ["document"]


@admin.register(Explanation)
class ExplanationAdmin(admin.ModelAdmin):
    list_display = ["model_run", "document", "method", "target", "created"]
    list_filter = ["method"]
    raw_id_fields = ["document"]


@admin.register(ChangeLog)
class ChangeLogAdmin(admin.ModelAdmin):
    """Who changed what, read-only: a log that could be edited would prove nothing."""

    list_display = ["at", "action", "target", "actor", "owner"]
    list_filter = ["action"]
    search_fields = ["target"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


for _model in apps.get_app_config("annotate").get_models():
    if not admin.site.is_registered(_model):
        admin.site.register(_model)
