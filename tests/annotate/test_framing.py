"""Annotator pages may be framed by the crowd platforms; researcher pages may not."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotate.models import Study


def frame_ancestors(response) -> list[str]:
    """The sources of the ``frame-ancestors`` directives in the response's Content-Security-Policy."""
    directives = [d.split() for d in response["Content-Security-Policy"].split(";") if d.strip()]
    found = [d[1:] for d in directives if d[0] == "frame-ancestors"]
    assert len(found) == 1, response["Content-Security-Policy"]
    return found[0]


@pytest.mark.django_db
def test_annotator_entry_page_names_the_platforms_allowed_to_frame_it(client):
    owner = get_user_model().objects.create_user("owner")
    study = Study.objects.create(name="s", owner=owner, kind="highlight", status=Study.Status.RUNNING)
    response = client.get(reverse("work-entry", args=[study.uid]))
    assert "X-Frame-Options" not in response
    assert "script-src 'self'" in response["Content-Security-Policy"]
    sources = frame_ancestors(response)
    assert sources == ["'self'", *settings.HATLAB_FRAME_ANCESTORS]
    assert "https://www.mturk.com" in sources and "https://workersandbox.mturk.com" in sources


@pytest.mark.django_db
def test_other_pages_refuse_foreign_frames(client):
    response = client.get(reverse("login"))
    assert response["X-Frame-Options"] == "DENY"
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert frame_ancestors(response) == ["'none'"]
