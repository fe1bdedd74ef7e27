"""Model-run parameters are bounded: a size past its bound is a 400 naming the parameter and its range,
given before any model is built (an ``fc_size`` of a million once took 480 MB inside the request)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from annotate.machine import runs
from annotate.models import ModelRun
from tests.annotate.conftest import tiny_dataset

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(researcher) -> APIClient:
    client = APIClient()
    client.force_authenticate(researcher)
    return client


@pytest.fixture
def no_build(monkeypatch):
    """Fail the test if a model is built: the bounds must refuse first."""

    def refuse(*args, **kwargs):
        raise AssertionError("a model was built for parameters past their bounds")

    monkeypatch.setattr(runs.engine, "build_model", refuse)


@pytest.mark.parametrize(
    ("architecture", "params", "field", "message"),
    [
        ("cnn", {"model": {"fc_size": 1_000_000}}, "model.fc_size", "must be a whole number from 1 to 2048"),
        ("cnn", {"model": {"num_filters": 513}}, "model.num_filters", "from 1 to 512"),
        ("cnn", {"model": {"filter_sizes": [2, 3, 400]}}, "model.filter_sizes", "each from 1 to 16"),
        (
            "cnn",
            {"model": {"filter_sizes": list(range(1, 10))}},
            "model.filter_sizes",
            "1 to 8 whole numbers",
        ),
        ("bilstm_attention", {"model": {"hidden_size": 10_000}}, "model.hidden_size", "from 1 to 512"),
        ("bilstm_attention", {"model": {"attention_size": 0}}, "model.attention_size", "from 1 to 512"),
        ("bilstm_attention", {"model": {"embedding_dim": 2.5}}, "model.embedding_dim", "from 1 to 1024"),
        ("qrnn", {"model": {"kernel_size": 100}}, "model.kernel_size", "from 1 to 16"),
        ("cnn", {"epochs": 10**9}, "epochs", "from 1 to 500"),
        ("cnn", {"batch_size": 100_000}, "batch_size", "from 1 to 1024"),
        ("cnn", {"max_len": 10**7}, "max_len", "from 1 to 10000"),
        ("cnn", {"max_vocab": 10**8}, "max_vocab", "from 1 to 1000000"),
    ],
)
def test_sizes_past_their_bounds_are_refused(api, researcher, no_build, architecture, params, field, message):
    dataset = tiny_dataset(researcher)
    answer = api.post(
        "/api/model-runs/",
        {"dataset": dataset.pk, "architecture": architecture, "params": params},
        format="json",
    )
    assert answer.status_code == 400
    assert message in answer.json()["params"][field][0]
    assert not ModelRun.objects.exists()


def test_sizes_at_their_bounds_are_accepted(api, researcher):
    dataset = tiny_dataset(researcher)
    model = {"fc_size": 2048, "num_filters": 512, "filter_sizes": [1, 16], "embedding_dim": 1024}
    answer = api.post(
        "/api/model-runs/",
        {"dataset": dataset.pk, "architecture": "cnn", "params": {"epochs": 500, "model": model}},
        format="json",
    )
    assert answer.status_code == 201, answer.content
    assert ModelRun.objects.get().params["model"] == model


def test_the_form_puts_the_bound_on_its_field(researcher, no_build):
    dataset = tiny_dataset(researcher)
    client = Client()
    client.force_login(researcher)
    page = client.post(
        reverse("model-run-create"),
        {"dataset": dataset.pk, "architecture": "bilstm_attention", "hidden_size": 100_000},
    )
    assert page.status_code == 200
    assert page.context["form"].errors["hidden_size"] == ["must be a whole number from 1 to 512"]
