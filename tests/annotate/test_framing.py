"""Annotator pages may be framed by the crowd platforms; researcher pages may not."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotate.models import Study


@pytest.mark.django_db
def test_annotator_entry_page_names_the_platforms_allowed_to_frame_it(client):
    owner = get_user_model().objects.create_user("owner")
    study = Study.objects.create(name="s", owner=owner, kind="highlight", status=Study.Status.RUNNING)
    response = client.get(reverse("work-entry", args=[study.uid]))
    assert "X-Frame-Options" not in response
    policy = response["Content-Security-Policy"]
    assert policy.startswith("frame-ancestors 'self' ")
    assert "https://www.mturk.com" in policy and "https://workersandbox.mturk.com" in policy


@pytest.mark.django_db
def test_other_pages_refuse_foreign_frames(client):
    response = client.get(reverse("login"))
    assert response["X-Frame-Options"] == "DENY"
    assert "Content-Security-Policy" not in response
