"""Every operation of the OpenAPI schema fuzzed with Schemathesis (seeded, a bounded number of examples each),
signed in as a researcher who owns an object of every kind, so that requests reach the views: no answer may be
a 5xx, and every answer must be one the schema documents (status code, content type, body), and a request the
schema calls valid must be accepted, and one it calls invalid refused."""

from __future__ import annotations

import base64
import json
import os
import tempfile
from pathlib import Path

import pytest

if os.environ.get("CI", "").lower() != "true":  # the dev extra installs it; CI must have it
    pytest.importorskip("schemathesis", reason="schemathesis (the dev extra) is not installed")
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections, transaction
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.configuration import set_hypothesis_home_dir
from schemathesis import GenerationMode
from schemathesis.checks import load_all_checks, not_a_server_error
from schemathesis.specs.openapi import checks as openapi_checks

from annotate.api.schema import schema_patterns
from annotate.models import Explanation, Job, ModelRun, Prediction
from tests.annotate.conftest import PASSWORD, make_dataset, make_study

pytestmark = [pytest.mark.django_db, pytest.mark.fuzz]
# Hypothesis keeps a cache of the constants it finds in the code: under the temporary folder, not in the checkout
set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "hatlab-hypothesis")

load_all_checks()
CHECKS = [
    not_a_server_error,
    openapi_checks.status_code_conformance,
    openapi_checks.content_type_conformance,
    openapi_checks.response_schema_conformance,
    openapi_checks.positive_data_acceptance,
    openapi_checks.negative_data_rejection,
]
EXAMPLES = int(os.environ.get("HATLAB_FUZZ_EXAMPLES", "20"))
# Operations whose well-formed requests may still be a 400, because what decides is data the schema cannot
# describe; their other checks (no 5xx, documented status, content type and body) still run.
DATA_DECIDES = {
    "POST /api/crowd/studies/{uid}/{action}/": "whether the study's provider has a crowd platform",
    "POST /api/datasets/": "a name the researcher has not used yet; a readable CSV or JSONL file",
    "POST /api/datasets/{id}/import/": "the uploaded file's rows (CSV or JSONL with id, text and label)",
    "POST /api/forced-choice/preview/": "the config's keys, as the forced-choice kind reads them",
    "POST /api/model-runs/": "the training parameters' names and ranges (TrainConfig)",
    "POST /api/model-runs/{id}/explain/": "method names that apply to the run's architecture",
    "POST /api/studies/": "the config's keys, as the study's task kind reads them; a dataset for kinds needing one",
    "POST /api/studies/{uid}/invites/": "whether the study's provider is the local one",
}


def openapi_document() -> dict:
    """The schema /api/schema/ serves, generated in process (the view itself is for signed-in researchers)."""
    generated = SchemaGenerator(patterns=schema_patterns()).get_schema(request=None, public=True)
    return json.loads(OpenApiJsonRenderer().render(generated))


def _aim(document: dict, values: dict[str, dict[str, object]], fields: dict[str, object]) -> dict:
    """Parameters pinned to the researcher's objects (``values``: path prefix → parameter → value) and so are
    the request bodies' ``fields`` (name → value), so that fuzzed requests reach the views instead of a 404."""
    for path, operations in document["paths"].items():
        for prefix, params in values.items():
            if not path.startswith(prefix):
                continue
            for operation in operations.values():
                for parameter in operation.get("parameters", []):
                    if parameter["name"] in params:
                        value = params[parameter["name"]]
                        pinned = {"enum": [value]}
                        if parameter["schema"].get("type") == "array":
                            pinned = {"items": {"type": "string", "enum": [value]}, "minItems": 1}
                        parameter["schema"] = parameter["schema"] | pinned
            break
    for name, component in document["components"]["schemas"].items():
        for field, value in fields.items():
            if name.endswith("Request") and field in component.get("properties", {}):
                component["properties"][field] = {"type": "integer", "enum": [value]}
    return document


@pytest.fixture
def fuzz_schema(researcher, monkeypatch):
    monkeypatch.setattr("celery.app.task.Task.apply_async", lambda self, *a, **k: None)
    dataset = make_dataset(researcher, n=4, name="fuzzed")
    study = make_study(researcher, dataset, annotators_per_item=2, name="fuzzed")
    item = study.items.order_by("position").first()
    run = ModelRun.objects.create(
        name="fuzzed", owner=researcher, dataset=dataset, architecture="bilstm_attention",
        status=ModelRun.Status.DONE,
    )  # fmt: skip
    prediction = Prediction.objects.create(model_run=run, document=item.document, label="positive")
    explanation = Explanation.objects.create(
        model_run=run, document=item.document, method="occlusion", target="positive", scores=[0.1]
    )
    job = Job.objects.create(kind="train", key="fuzzed", created_by=researcher)
    uid = str(study.uid)
    document = _aim(
        openapi_document(),
        {
            "/api/datasets/": {"id": dataset.pk},
            "/api/studies/": {"uid": uid},
            "/api/model-runs/": {"id": run.pk},
            "/api/predictions/": {"id": prediction.pk},
            "/api/explanations/": {"id": explanation.pk},
            "/api/jobs/": {"id": job.pk},
            "/api/dashboards/": {"uid": uid, "item": item.pk, "select": f"{run.pk}:occlusion"},
            "/api/crowd/": {"uid": uid},
            "/api/work/": {"study_uid": uid},
            "/api/forced-choice/": {"uid": uid},
        },
        {"dataset": dataset.pk},
    )
    # NUL is generated like any other character: the schema says (a pattern on every request string) that
    # the API refuses it, so a positive request never holds one and a negative one may
    schema = schemathesis.openapi.from_dict(document)
    schema.app = get_wsgi_application()
    # as Django's test client does: the requests share the test's connection and transaction
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    yield schema
    for signal in (request_started, request_finished):
        signal.connect(close_old_connections)


BASIC = "Basic " + base64.b64encode(f"rita:{PASSWORD}".encode()).decode()
FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)


def fuzz(operation, mode: GenerationMode) -> str | None:
    """What went wrong with ``operation`` fuzzed in ``mode`` (the first failing example), or ``None``."""

    checks = CHECKS
    if operation.label in DATA_DECIDES:
        checks = [c for c in CHECKS if c is not openapi_checks.positive_data_acceptance]

    @FUZZ
    @given(case=operation.as_strategy(generation_mode=mode))
    def run(case):
        case.call_and_validate(headers={"Authorization": BASIC}, checks=checks)

    # each operation's rows are undone after it: a dataset that POST /api/datasets/ made is the
    # researcher's own, and a later operation's "wrong" dataset id that hit it would rightly be accepted
    try:
        with transaction.atomic():
            try:
                run()
            finally:
                transaction.set_rollback(True)
    except (Exception, BaseExceptionGroup) as exc:  # a failed check, reported with the request that made it
        return f"{mode.value} {operation.label}: {exc}"
    return None


def test_api_answers_as_its_schema_says(fuzz_schema):
    failures = []
    for result in fuzz_schema.get_all_operations():
        operation = result.ok()
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            failures.append(fuzz(operation, mode))
    failures = [f for f in failures if f]
    assert not failures, f"{len(failures)} failing:\n" + "\n\n".join(failures)
