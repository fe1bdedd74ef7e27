"""Access that matches the study: the open link only with open enrollment, otherwise the invite manager
(create, list with state, CSV, revoke), and a revoked invite refused at the entry page."""

from __future__ import annotations

import csv
import io
import re

import pytest
from django.test import Client
from django.urls import reverse

from annotate.crowd.providers.local.adapter import WITHDRAWN, invite_path, make_invite
from annotate.handout.workers import WORKERS_COOKIE
from annotate.models import EntryBinding, Invite, Response, Worker
from tests.annotate.conftest import make_study
from tests.annotate.crowd_helpers import MTURK_CONFIG, crowd_study
from tests.annotate.test_api import Annotator, body_for


@pytest.fixture
def page(researcher) -> Client:
    client = Client()
    client.force_login(researcher)
    return client


def states(study) -> dict[str, str]:
    return {row["invitee"]: row["state"] for row in csv.DictReader(io.StringIO(csv_of(study)))}


def csv_of(study) -> str:
    client = Client()
    client.force_login(study.owner)
    response = client.get(reverse("study-invites-csv", args=[study.uid]))
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    return response.content.decode()


def test_invite_manager_creates_lists_and_revokes(page, researcher, dataset):
    study = make_study(researcher, dataset)
    detail = reverse("study-detail", args=[study.uid])
    html = page.get(detail).content.decode()
    assert "invite-form" in html and 'id="open-link"' not in html  # invite-only: no plain link
    page.post(reverse("study-invites", args=[study.uid]), {"count": 3})
    invites = list(Invite.objects.filter(study=study).order_by("id"))
    assert len(invites) == 3 and all(i.created_by == researcher for i in invites)
    html = page.get(detail).content.decode()
    links = re.findall(r'<code class="wrap" id="invite-\d+">([^<]+)</code>', html)
    assert len(links) == 3 and html.count('data-state="unused"') == 3
    assert html.count('class="button small copy"') == 3

    used, revoked, _ = invites
    worker = Client()
    assert worker.post(invite_path(study, used.token), follow=True).status_code == 200
    page.post(reverse("study-invite-revoke", args=[study.uid, revoked.pk]))
    assert states(study) == {used.invitee: "used", revoked.invitee: "revoked", invites[2].invitee: "unused"}
    refused = Client().get(invite_path(study, revoked.token))
    assert refused.status_code == 403 and "withdrawn by the research team" in refused.content.decode()
    assert worker.get(invite_path(study, used.token)).status_code == 200  # the holder keeps working
    html = page.get(detail).content.decode()
    assert html.count('data-state="revoked"') == 1 and html.count('class="button small copy"') == 2


def test_revoking_twice_and_another_studys_invite(page, researcher, dataset, other_researcher):
    study = make_study(researcher, dataset)
    make_invite(study, "x1")
    invite = Invite.objects.get(study=study)
    url = reverse("study-invite-revoke", args=[study.uid, invite.pk])
    page.post(url)
    first = Invite.objects.get(pk=invite.pk).revoked_at
    assert "already revoked" in page.post(url, follow=True).content.decode()
    assert Invite.objects.get(pk=invite.pk).revoked_at == first
    other = make_study(other_researcher, dataset, name="theirs")
    assert page.post(reverse("study-invite-revoke", args=[other.uid, invite.pk])).status_code == 404
    mine_under_theirs = Client()
    mine_under_theirs.force_login(other_researcher)
    assert mine_under_theirs.post(url).status_code == 404


def test_csv_cells_are_never_formulas(researcher, dataset):
    study = make_study(researcher, dataset)
    make_invite(study, "=HYPERLINK(1)")
    rows = list(csv.reader(io.StringIO(csv_of(study))))
    assert rows[0] == ["invitee", "link", "state", "created", "revoked"]
    assert rows[1][0] == "'=HYPERLINK(1)" and rows[1][2] == "unused"


def test_open_enrollment_shows_the_link_and_no_invites(page, researcher, dataset):
    study = make_study(researcher, dataset, provider_config={"open_enrollment": True})
    html = page.get(reverse("study-detail", args=[study.uid])).content.decode()
    assert f"/w/{study.uid}/</code>" in html and "invite-form" not in html
    assert Client().get(reverse("work-entry", args=[study.uid])).status_code == 200


def test_each_anonymous_browser_of_an_open_study_gets_its_own_unguessable_identity(researcher, dataset):
    """Open enrollment without an account: each browser's identity is 96 random bits kept in its session
    (the same browser keeps it; another gets its own), so no one can take another visitor's place by
    guessing it."""
    study = make_study(researcher, dataset, provider_config={"open_enrollment": True})
    entry = reverse("work-entry", args=[study.uid])
    first, second = Client(), Client()
    for client in (first, second, first):
        client.get(entry)
    ids = sorted(Worker.objects.filter(external_id__startswith="anon:").values_list("external_id", flat=True))
    assert len(ids) == 2
    assert all(re.fullmatch(r"anon:[0-9a-f]{24}", worker_id) for worker_id in ids), ids


def test_platform_studies_send_researchers_to_the_crowd_page(page, researcher):
    study = crowd_study(researcher, "mturk", dict(MTURK_CONFIG))
    html = page.get(reverse("study-detail", args=[study.uid])).content.decode()
    assert "invite-form" not in html and 'id="open-link"' not in html
    assert reverse("crowd-page", args=[study.uid]) in html
    refused = page.post(reverse("study-invites", args=[study.uid]), {"count": 2}, follow=True)
    assert "not invite links" in refused.content.decode() and not Invite.objects.exists()


def test_the_api_stores_its_invites_too(page, researcher, dataset):
    study = make_study(researcher, dataset)
    reply = page.post(f"/api/studies/{study.uid}/invites/", {"count": 2}, content_type="application/json")
    assert reply.status_code == 201
    assert Invite.objects.filter(study=study).count() == 2


# --- a link preview, and revocation ----------------------------------------------------------------


def test_a_link_preview_does_not_take_the_invite(researcher, dataset):
    """The attack: a chat client fetches the link (a cookie-less GET) before the invitee opens it."""
    study = make_study(researcher, dataset)
    link = invite_path(study, make_invite(study, "erin"))
    for _ in range(3):  # each preview fetch comes without cookies
        preview = Client().get(link)
        assert preview.status_code == 200 and b"data-invite-start" in preview.content
        assert b"hatlab-task" not in preview.content and WORKERS_COOKIE not in preview.cookies
    assert not EntryBinding.objects.exists() and not Worker.objects.exists()
    invitee = Client(enforce_csrf_checks=True)
    started = invitee.post(link)
    assert started.status_code == 303 and started["Location"] == reverse("work-entry", args=[study.uid])
    assert b"hatlab-task" in invitee.get(started["Location"]).content  # the invitee's page, on its seat
    assert b"hatlab-task" in invitee.get(link).content  # and the link again in the same browser
    assert Client().get(link).status_code == 403  # a later preview is refused and binds nothing new
    assert EntryBinding.objects.count() == 1


def test_revoking_an_invite_ends_its_browsers_access_at_once(page, researcher, dataset):
    """The attack: the browser that opened the invite keeps calling the annotator API after revocation."""
    study = make_study(researcher, dataset)
    holder = Annotator(study, "frank")
    first = holder.next().json()
    assert "assignment" in first
    invite = Invite.objects.get(study=study, invitee="frank")
    page.post(reverse("study-invite-revoke", args=[study.uid, invite.pk]))
    refused = holder.next()
    assert refused.status_code == 403 and refused.json()["errors"]["worker"] == [WITHDRAWN]
    stored = holder.submit(first["assignment"], body_for(first["item"]["payload"]))
    assert stored.status_code == 403 and stored.json()["errors"]["worker"] == [WITHDRAWN]
    assert not Response.objects.exists()
    entry = holder.client.get(reverse("work-entry", args=[study.uid]))  # the page from its cookie
    assert entry.status_code == 403 and b"hatlab-task" not in entry.content
    # another study's seat in the same browser is untouched
    other = make_study(researcher, dataset, name="other")
    other_link = invite_path(other, make_invite(other, "frank"))
    assert holder.client.post(other_link, follow=True).status_code == 200
