"""Objects named by id are checked for ownership: a researcher cannot build a study (or a preview) on
another researcher's model run, and learns no more than from an id that does not exist."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from annotate.models import Prediction, Study
from tests.annotate.conftest import make_dataset
from tests.annotate.kinds.forced_choice.test_generation import METHODS, make_run
from tests.annotate.kinds.sentence_rating.test_kind import make_rating_study

pytestmark = pytest.mark.django_db


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def their_run(researcher):
    """A finished model run of rita's, the researcher ``other_researcher`` (otto) will try to use."""
    return make_run(researcher, make_dataset(researcher, n=4, name="rita's"))


def create(client: Client, kind: str, config: dict):
    return client.post(
        "/api/studies/", {"name": "mine", "kind": kind, "config": config}, content_type="application/json"
    )


@pytest.mark.parametrize(
    ("kind", "field"),
    [("justify", "model_run"), ("investigate", "model_run"), ("reveal_model", "better_run")],
)
def test_a_study_cannot_name_another_researchers_run(kind, field, their_run, other_researcher):
    own = make_run(other_researcher, make_dataset(other_researcher, n=4, name="otto's"))
    config = {"methods": METHODS, field: their_run.pk}
    if kind == "reveal_model":
        config["worse_run"] = own.pk
    refused = create(signed_in(other_researcher), kind, config)
    assert refused.status_code == 400
    assert refused.json()["config"][field] == ["no such model run"]
    assert not Study.objects.filter(owner=other_researcher).exists()
    # the same answer as for a run that does not exist: nothing tells that rita's exists
    config[field] = their_run.pk + 1000
    assert create(signed_in(other_researcher), kind, config).json()["config"][field] == ["no such model run"]


def test_the_worse_run_is_checked_too(their_run, other_researcher):
    own = make_run(other_researcher, make_dataset(other_researcher, n=4, name="otto's"))
    config = {"methods": METHODS, "better_run": own.pk, "worse_run": their_run.pk}
    refused = create(signed_in(other_researcher), "reveal_model", config)
    assert refused.status_code == 400 and refused.json()["config"]["worse_run"] == ["no such model run"]


def test_the_owner_and_an_admin_may_name_the_run(their_run, researcher, admin_user):
    for user in (researcher, admin_user):
        created = create(signed_in(user), "justify", {"methods": METHODS, "model_run": their_run.pk})
        assert created.status_code == 201, created.content
        assert Study.objects.get(uid=created.json()["uid"]).config["model_run"] == their_run.pk


def test_a_preview_cannot_name_another_researchers_run(their_run, other_researcher):
    refused = signed_in(other_researcher).post(
        reverse("api-forced-choice-preview"),
        {"kind": "justify", "config": {"model_run": their_run.pk, "methods": METHODS}},
        content_type="application/json",
    )
    assert refused.status_code == 400 and refused.json()["config"]["model_run"] == ["no such model run"]


def test_results_pages_only_compare_with_runs_the_viewer_may_see(researcher, other_researcher):
    study = make_rating_study(researcher)
    document = study.dataset.documents.first()
    foreign = make_run(other_researcher, study.dataset, name="otto's run on rita's data")
    Prediction.objects.create(model_run=foreign, document=document, label="positive", attention=[0.5])
    url = reverse("study-results", args=[study.uid])
    client = signed_in(researcher)
    refused = client.get(url, {"run": foreign.pk})
    assert refused.status_code == 400 and "otto" not in refused.content.decode()
    page = client.get(url)
    assert page.status_code == 200 and "otto&#x27;s run" not in page.content.decode()
