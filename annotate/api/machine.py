"""The machine side of the JSON API: model runs (train, explain), their predictions and
explanations, and the jobs that compute them. Researchers see their own; admins see all.

Routes (under ``api/``, see :mod:`annotate.api.urls`)::

    model-runs/                     GET list, POST create and queue training (idempotent under a key)
    model-runs/<id>/                GET one (status, progress, metrics: what the progress bar polls)
    model-runs/<id>/train/          POST queue training again (a failed run; a finished run is a no-op)
    model-runs/<id>/explain/        POST queue an explanation job
    model-runs/<id>/methods/        GET the explanation methods that apply to the run
    predictions/?model_run=&document=
    explanations/?model_run=&document=&method=&target=
    jobs/<id>/                      GET one job (status, progress, result)
"""

from __future__ import annotations

from django.db.models import Q
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.response import Response

from annotate.access import IsOwnerOrAdmin, IsResearcher, is_admin, visible_to
from annotate.infra.strict_fields import StrictBooleanField, StrictCharField
from annotate.jobs.dispatch import QUEUE_DOWN_NOTE
from annotate.jobs.sweeper import sweep_soon
from annotate.machine import (
    MachineInputError,
    architecture_choices,
    clean_explanation_params,
)
from annotate.machine.explaining import available_methods
from annotate.machine.jobs import enqueue_explanations, enqueue_training, training_key
from annotate.machine.runs import IdempotencyConflict, create_model_run_once, request_digest
from annotate.models import Dataset, Explanation, Job, ModelRun, Prediction
from annotate.tasks.api_parts import JSONObjectField, MethodNamesField


def input_error(exc: MachineInputError) -> ValidationError:
    """A 400 naming the field; ``params.epochs`` becomes ``{"params": {"epochs": [...]}}``."""
    head, _, rest = exc.field.partition(".")
    return ValidationError({head: {rest: [exc.message]}} if rest else {head: [exc.message]})


class JobSerializer(serializers.ModelSerializer):
    class Meta:
        model = Job
        fields = [
            "id",
            "kind",
            "key",
            "params",
            "status",
            "progress",
            "message",
            "result",
            "created",
            "updated",
            "sent",
            "heartbeat",
            "worker",
            "attempts",
            "events",
        ]
        read_only_fields = fields


class ModelRunSerializer(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.username", read_only=True)
    training_job = serializers.SerializerMethodField()
    queue_note = serializers.SerializerMethodField(
        help_text="Set while the training job waits for an unreachable job queue."
    )

    class Meta:
        model = ModelRun
        fields = [
            "id",
            "name",
            "owner",
            "dataset",
            "architecture",
            "params",
            "status",
            "progress",
            "message",
            "metrics",
            "artifact",
            "created",
            "finished",
            "training_job",
            "queue_note",
        ]
        read_only_fields = fields

    def get_training_job(self, run: ModelRun) -> int | None:
        return Job.objects.filter(key=training_key(run)).values_list("pk", flat=True).first()

    def get_queue_note(self, run: ModelRun) -> str:
        waiting = Job.objects.filter(
            key=training_key(run), status=Job.Status.QUEUED, sent__isnull=True, message=QUEUE_DOWN_NOTE
        )
        return QUEUE_DOWN_NOTE if waiting.exists() else ""


IDEMPOTENCY_KEY_MAX = 200
IDEMPOTENCY_HEADER = OpenApiParameter(
    "Idempotency-Key",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description="A key the client chooses for this request (at most 200 characters): sent again with the same "
    "body (a retry after a timeout), it returns the run the first request made (201, with "
    "Idempotent-Replayed: true) instead of a second run; with another body it is refused (409).",
)


class IdempotencyKeyConflict(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "idempotency_conflict"


def idempotency_key(request, data: dict) -> str:
    """The request's key: the ``Idempotency-Key`` header or the body's ``idempotency_key`` ("" for none);
    both given and different is a 400 naming the field."""
    header = request.headers.get("Idempotency-Key")
    body = data.get("idempotency_key")
    if header is not None and (not header.strip() or len(header) > IDEMPOTENCY_KEY_MAX):
        raise ValidationError(
            {"idempotency_key": [f"the Idempotency-Key header must be 1 to {IDEMPOTENCY_KEY_MAX} characters"]}
        )
    if header is not None and body is not None and header != body:
        raise ValidationError({"idempotency_key": ["differs from the Idempotency-Key header"]})
    return header if header is not None else (body or "")


class ModelRunCreateSerializer(serializers.Serializer):
    name = StrictCharField(max_length=200, required=False, allow_blank=True, default="")
    dataset = serializers.PrimaryKeyRelatedField(queryset=Dataset.objects.all())
    architecture = serializers.ChoiceField(choices=[])
    params = JSONObjectField(required=False, default=dict, help_text="TrainConfig fields, e.g. epochs.")
    gpu = StrictBooleanField(required=False, default=False, help_text="Send the job to the gpu queue.")
    idempotency_key = serializers.CharField(
        required=False,
        min_length=1,
        max_length=IDEMPOTENCY_KEY_MAX,
        help_text="The same as the Idempotency-Key header (either may be sent; both must then agree): a "
        "retry under the key returns the run the first request made; another body under it is a 409.",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["architecture"].choices = architecture_choices()
        request = self.context.get("request")
        if request is not None:
            self.fields["dataset"].queryset = visible_to(Dataset.objects.all(), request.user)


class ExplainRequestSerializer(serializers.Serializer):
    methods = MethodNamesField(help_text='Method names, or "all" for every method that applies.')
    documents = serializers.ListField(child=serializers.IntegerField(), required=False, allow_null=True)
    target = StrictCharField(required=False, default="predicted", help_text="predicted, gold or a label")
    m = serializers.IntegerField(required=False, default=3)
    ngram_sizes = serializers.ListField(child=serializers.IntegerField(), required=False, allow_null=True)
    method_params = JSONObjectField(required=False, default=dict)
    batch_size = serializers.IntegerField(required=False, default=16)
    faithfulness = StrictBooleanField(
        required=False,
        default=True,
        help_text="Measure each map's comprehensiveness, sufficiency and Kendall's τ against leave-one-out.",
    )
    gpu = StrictBooleanField(required=False, default=False)


class PredictionSerializer(serializers.ModelSerializer):
    class Meta:
        model = Prediction
        fields = ["id", "model_run", "document", "label", "probabilities", "attention"]
        read_only_fields = fields


class ExplanationSerializer(serializers.ModelSerializer):
    class Meta:
        model = Explanation
        fields = [
            "id",
            "model_run",
            "document",
            "method",
            "target",
            "scores",
            "evidence",
            "counter_evidence",
            "counter_scores",
            "diagnostics",
            "faithfulness",
            "created",
        ]
        read_only_fields = fields


class ModelRunViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet
):
    """Model runs: create one to train a classifier on a dataset in a background job."""

    permission_classes = [IsResearcher, IsOwnerOrAdmin]
    serializer_class = ModelRunSerializer

    def get_queryset(self):
        return visible_to(ModelRun.objects.select_related("owner"), self.request.user).order_by("-created")

    def retrieve(self, request, *args, **kwargs):
        sweep_soon()  # the progress bar polls here: jobs that missed the broker are sent from here too
        return super().retrieve(request, *args, **kwargs)

    @extend_schema(
        request=ModelRunCreateSerializer,
        parameters=[IDEMPOTENCY_HEADER],
        responses={
            201: ModelRunSerializer,
            409: OpenApiResponse(description="The idempotency key was used for another request."),
        },
    )
    def create(self, request, *args, **kwargs):
        incoming = ModelRunCreateSerializer(data=request.data, context={"request": request})
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        key = idempotency_key(request, data)
        asked = {
            "name": data["name"],
            "dataset": data["dataset"].pk,
            "architecture": data["architecture"],
            "params": data["params"],
            "gpu": data["gpu"],
        }
        try:
            run, created = create_model_run_once(
                request.user,
                data["dataset"],
                data["architecture"],
                data["params"],
                data["name"],
                idempotency_key=key,
                digest=request_digest(asked) if key else "",
            )
        except IdempotencyConflict as exc:
            raise IdempotencyKeyConflict(exc.as_dict()) from None
        except MachineInputError as exc:
            raise input_error(exc) from None
        enqueue_training(run, request.user, gpu=data["gpu"])  # sent now, or kept until the queue is back
        response = Response(ModelRunSerializer(run).data, status=status.HTTP_201_CREATED)
        if not created:
            response["Idempotent-Replayed"] = "true"
        return response

    @extend_schema(request=None, responses={202: JobSerializer})
    @action(detail=True, methods=["post"])
    def train(self, request, pk=None):
        """Queue training again: a failed run is retried; a queued, running or finished one is left alone."""
        run = self.get_object()
        job = enqueue_training(run, request.user, gpu=bool(request.data.get("gpu", False)))
        job.refresh_from_db()
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=ExplainRequestSerializer, responses={202: JobSerializer})
    @action(detail=True, methods=["post"])
    def explain(self, request, pk=None):
        """Queue an explanation job; the same request twice is the same job."""
        run = self.get_object()
        incoming = ExplainRequestSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = dict(incoming.validated_data)
        gpu = data.pop("gpu")
        try:
            params = clean_explanation_params(run, data)
        except MachineInputError as exc:
            raise input_error(exc) from None
        job = enqueue_explanations(run, params, request.user, gpu=gpu)
        job.refresh_from_db()
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(responses={200: {"type": "array", "items": {"type": "string"}}}, filters=False)
    @action(detail=True, methods=["get"])
    def methods(self, request, pk=None):
        """The explanation methods that apply to the run's architecture."""
        return Response(available_methods(self.get_object()))


def _int_param(request, name: str) -> int | None:
    raw = request.query_params.get(name)
    if raw in (None, ""):
        return None
    try:
        return int(raw)
    except ValueError:
        raise ValidationError({name: ["must be a whole number"]}) from None


def _visible_runs(user):
    return visible_to(ModelRun.objects.all(), user)


class _RunResultViewSet(viewsets.ReadOnlyModelViewSet):
    permission_classes = [IsResearcher]

    def filtered(self, queryset):
        queryset = queryset.filter(model_run__in=_visible_runs(self.request.user))
        for name in ("model_run", "document"):
            value = _int_param(self.request, name)
            if value is not None:
                queryset = queryset.filter(**{f"{name}_id": value})
        return queryset


@extend_schema(
    parameters=[
        OpenApiParameter("model_run", int, description="Only this model run's predictions."),
        OpenApiParameter("document", int, description="Only this document's predictions."),
    ]
)
class PredictionViewSet(_RunResultViewSet):
    """A trained run's prediction per document: label, probabilities, attention over canonical words."""

    serializer_class = PredictionSerializer

    def get_queryset(self):
        return self.filtered(Prediction.objects.all()).order_by("model_run_id", "document_id")


@extend_schema(
    parameters=[
        OpenApiParameter("model_run", int),
        OpenApiParameter("document", int),
        OpenApiParameter("method", str),
        OpenApiParameter("target", str),
    ]
)
class ExplanationViewSet(_RunResultViewSet):
    """Relevance over canonical words by one method for one target, with evidence spans."""

    serializer_class = ExplanationSerializer

    def get_queryset(self):
        queryset = self.filtered(Explanation.objects.all())
        for name in ("method", "target"):
            value = self.request.query_params.get(name)
            if value:
                queryset = queryset.filter(**{name: value})
        return queryset.order_by("model_run_id", "document_id", "method", "target")


class JobViewSet(viewsets.ReadOnlyModelViewSet):
    """Background jobs: their status, progress and result, and what happened to them (``events``: sent,
    started, worker lost and re-queued). Researchers see the jobs they started and those of their own
    model runs. Reading jobs also sends those that missed the broker (:mod:`annotate.jobs.sweeper`)."""

    permission_classes = [IsResearcher]
    serializer_class = JobSerializer

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        sweep_soon()

    def get_queryset(self):
        user = self.request.user
        jobs = Job.objects.all().order_by("-created")
        if getattr(self, "swagger_fake_view", False):  # the OpenAPI generator has no signed-in user
            return jobs.none()
        if is_admin(user):
            return jobs
        own_runs = list(ModelRun.objects.filter(owner=user).values_list("pk", flat=True))
        return jobs.filter(Q(created_by=user) | Q(params__model_run__in=own_runs))
