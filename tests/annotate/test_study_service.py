"""The study rule (:mod:`annotate.studies.service`) on its own, with the acting user passed in: a refusal
names its field (and is what the API answers), another researcher's dataset is refused, only a draft is
edited and only by its owner, a clone is a new draft of whoever clones it."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied
from django.test import Client
from rest_framework.exceptions import ValidationError

from annotate.models import Item, Study
from annotate.studies import service
from annotate.studies.drafts import prepare_items
from annotate.studies.lifecycle import StudyStateError
from annotate.tasks.base import GOLD_RATE_KEY
from tests.annotate.conftest import make_dataset, make_study

pytestmark = pytest.mark.django_db


def settings_for(dataset, /, **fields) -> dict:
    return {"name": "reviews study", "dataset": dataset.pk, "kind": "highlight", **fields}


def refusal(user, data, instance=None) -> dict[str, list[str]]:
    with pytest.raises(service.StudyInvalid) as caught:
        service.validate_study(user, data, instance=instance)
    return caught.value.fields


# ------------------------------------------------------------------ create and validate


def test_a_study_is_created_as_a_draft_of_its_user_with_the_kinds_defaults(researcher, dataset):
    study = service.create_study(researcher, settings_for(dataset, config={"labels": ["pos", "neg"]}))
    assert study.owner == researcher and study.status == Study.Status.DRAFT
    assert study.dataset == dataset and study.kind == "highlight"
    assert study.config["labels"] == ["pos", "neg"] and "mode" in study.config  # the schema's defaults
    assert (study.annotators_per_item, study.time_limit_s, study.provider) == (3, 1800, "local")


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"name": ""}, "name"),
        ({"annotators_per_item": 0}, "annotators_per_item"),
        ({"time_limit_s": "soon"}, "time_limit_s"),
        ({"kind": "no-such-kind"}, "kind"),
        ({"provider": "no-such-platform"}, "provider"),
        ({"provider_config": [1, 2]}, "provider_config"),
        ({"config": {"labels": ["pos", "pos"]}}, "config.labels"),
        ({"config": {GOLD_RATE_KEY: 2}}, f"config.{GOLD_RATE_KEY}"),
        ({"dataset": None}, "dataset"),  # a highlight study needs one
        ({"dataset": 10**9}, "dataset"),
    ],
)
def test_a_refusal_names_its_field_and_stores_nothing(researcher, dataset, fields, field):
    errors = refusal(researcher, settings_for(dataset, **fields))
    assert field in errors and all(errors[field])
    with pytest.raises(service.StudyInvalid):
        service.create_study(researcher, settings_for(dataset, **fields))
    assert not Study.objects.exists()


def test_field_errors_come_together_before_the_rules_across_fields(researcher, dataset):
    errors = refusal(
        researcher, settings_for(dataset, name="", annotators_per_item=99, config={GOLD_RATE_KEY: 2})
    )
    assert set(errors) == {"name", "annotators_per_item"}


def test_the_refusal_is_a_validation_error_with_what_the_api_answers(researcher, dataset):
    data = settings_for(dataset, annotators_per_item=0, config={"labels": ["pos", "pos"]})
    with pytest.raises(ValidationError) as caught:
        service.create_study(researcher, data)
    client = Client()
    client.force_login(researcher)
    answered = client.post("/api/studies/", data, content_type="application/json")
    assert answered.status_code == 400
    assert answered.json() == {"annotators_per_item": caught.value.detail["annotators_per_item"]}
    data["annotators_per_item"] = 2
    with pytest.raises(ValidationError) as caught:
        service.create_study(researcher, data)
    answered = client.post("/api/studies/", data, content_type="application/json")
    assert answered.json() == caught.value.detail == {"config": {"labels": ["labels must be distinct"]}}


def test_another_researchers_dataset_is_refused_as_if_it_did_not_exist(
    researcher, other_researcher, admin_user
):
    theirs = make_dataset(other_researcher, name="theirs")
    errors, missing = (
        refusal(researcher, settings_for(theirs)),
        refusal(researcher, settings_for(theirs, dataset=10**9)),
    )
    assert list(errors) == list(missing) == ["dataset"]
    assert errors["dataset"] == [m.replace(str(10**9), str(theirs.pk)) for m in missing["dataset"]]
    assert service.create_study(other_researcher, settings_for(theirs)).dataset == theirs
    assert service.create_study(admin_user, settings_for(theirs)).owner == admin_user  # an admin may use any


# ------------------------------------------------------------------ update and clone


def test_a_draft_is_updated_keeping_its_dataset_and_its_providers_own_settings(researcher, dataset):
    study = make_study(
        researcher, dataset, start=False, provider_config={"token": "kept", "open_enrollment": True}
    )
    service.update_draft(researcher, study, {"name": "renamed", "annotators_per_item": 5})
    study.refresh_from_db()
    assert (study.name, study.annotators_per_item, study.dataset) == ("renamed", 5, dataset)
    assert study.provider_config == {"token": "kept"}  # open_enrollment follows the form, which left it off


def test_an_update_rebuilds_the_drafts_items(researcher, dataset):
    study = make_study(researcher, dataset, start=False)
    made = prepare_items(study)
    rebuilt = service.update_draft(
        researcher, study, {"name": "again", "config": {"labels": ["good", "bad"]}}
    )
    assert rebuilt.items == made == Item.objects.filter(study=study).count()


def test_a_refused_update_changes_nothing(researcher, dataset):
    study = make_study(researcher, dataset, start=False, name="before")
    with pytest.raises(service.StudyInvalid) as caught:
        service.update_draft(researcher, study, {"name": "after", "time_limit_s": 1})
    assert list(caught.value.fields) == ["time_limit_s"]
    study.refresh_from_db()
    assert study.name == "before"


def test_only_a_draft_is_updated(researcher, dataset):
    running = make_study(researcher, dataset, name="running")
    with pytest.raises(StudyStateError, match="only a draft can be edited"):
        service.update_draft(researcher, running, {"name": "renamed"})
    running.refresh_from_db()
    assert running.name == "running"


def test_only_the_owner_or_an_admin_updates_a_draft(researcher, other_researcher, admin_user, dataset):
    study = make_study(researcher, dataset, start=False)
    with pytest.raises(PermissionDenied):
        service.update_draft(other_researcher, study, {"name": "taken"})
    service.update_draft(admin_user, study, {"name": "fixed by the admin"})
    study.refresh_from_db()
    assert study.name == "fixed by the admin"


def test_a_clone_is_a_new_draft_with_the_settings_owned_by_whoever_clones(researcher, admin_user, dataset):
    original = make_study(
        researcher, dataset, name="source", annotators_per_item=4, config={"labels": ["a", "b"]}
    )
    for user in (researcher, admin_user):
        clone = service.clone_study(user, original)
        assert clone.pk != original.pk and clone.owner == user and clone.status == Study.Status.DRAFT
        assert clone.name == service.CLONE_PREFIX + "source"
        assert (clone.dataset, clone.kind, clone.config, clone.annotators_per_item) == (
            original.dataset,
            original.kind,
            original.config,
            4,
        )
        assert not clone.items.exists()  # no golds to carry: its items are built when needed


def test_another_researcher_cannot_clone_a_study(researcher, other_researcher, dataset):
    original = make_study(researcher, dataset)
    with pytest.raises(PermissionDenied):
        service.clone_study(other_researcher, original)
    assert Study.objects.count() == 1
