"""Roles: researchers see their own studies, admins everything, annotators only their own work."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib import admin
from django.test import Client
from django.urls import reverse

from annotate.access import is_admin, is_researcher
from tests.annotate.conftest import make_dataset, make_study, make_user

pytestmark = pytest.mark.django_db


def client_for(user) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


@pytest.fixture
def two_studies(researcher, other_researcher):
    mine = make_study(researcher, make_dataset(researcher, n=2, name="mine"), name="mine")
    theirs = make_study(other_researcher, make_dataset(other_researcher, n=2, name="theirs"), name="theirs")
    return mine, theirs


def test_role_checks(researcher, admin_user, annotator_user):
    superuser = make_user("root", is_superuser=True, is_staff=True)
    assert is_researcher(researcher) and not is_admin(researcher)
    assert is_admin(admin_user) and is_researcher(admin_user)
    assert is_admin(superuser)
    assert not is_researcher(annotator_user) and not is_admin(annotator_user)


def test_anonymous_visitors_are_sent_to_sign_in(two_studies):
    mine, _ = two_studies
    for url in (reverse("study-list"), reverse("dataset-list"), reverse("study-detail", args=[mine.uid])):
        response = client_for(None).get(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    assert client_for(None).get("/api/studies/").status_code == 403


def test_annotators_cannot_open_researcher_pages_or_api(two_studies, annotator_user):
    mine, _ = two_studies
    client = client_for(annotator_user)
    assert client.get(reverse("study-list")).status_code == 403
    assert client.get(reverse("study-detail", args=[mine.uid])).status_code == 403
    assert client.get("/api/studies/").status_code == 403
    assert client.get(f"/api/studies/{mine.uid}/progress/").status_code == 403
    home = client.get(reverse("home")).content.decode()
    assert reverse("study-list") not in home


def test_researchers_see_only_their_own(two_studies, researcher):
    mine, theirs = two_studies
    client = client_for(researcher)
    listing = client.get(reverse("study-list")).content.decode()
    assert "mine" in listing and "theirs" not in listing
    assert client.get(reverse("study-detail", args=[mine.uid])).status_code == 200
    assert client.get(reverse("study-detail", args=[theirs.uid])).status_code == 404
    assert client.post(reverse("study-action", args=[theirs.uid, "pause"])).status_code == 404
    assert client.get(f"/api/studies/{theirs.uid}/").status_code == 404
    assert [s["name"] for s in client.get("/api/studies/").json()["results"]] == ["mine"]
    assert client.get(reverse("dataset-detail", args=[theirs.dataset_id])).status_code == 404


def test_admins_see_everything(two_studies, admin_user):
    mine, theirs = two_studies
    client = client_for(admin_user)
    assert {s["name"] for s in client.get("/api/studies/").json()["results"]} == {"mine", "theirs"}
    assert client.get(reverse("study-detail", args=[theirs.uid])).status_code == 200
    page = client.get(reverse("home")).content.decode()
    assert reverse("admin:index") in page


def test_django_admin_lists_every_model(two_studies):
    superuser = make_user("root", is_superuser=True, is_staff=True)
    client = client_for(superuser)
    for model in apps.get_app_config("annotate").get_models():
        assert admin.site.is_registered(model), model
        url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        assert client.get(url).status_code == 200, model
