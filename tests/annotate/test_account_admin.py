"""The admin's accounts page: inviting a researcher with a one-time set-password link (mailed too), resetting
a password, switching accounts off and on (their sessions end), the annotator accounts and invited workers
with their studies, revoking an invite through the study page's code; and the attacks: every route refused
to researchers, annotators and unsigned workers, every POST CSRF-checked, links that work once and expire,
an admin who cannot lock the site out."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import default_token_generator
from django.core import mail
from django.test import Client
from django.urls import reverse

from annotate.access import ADMIN_GROUP, RESEARCHER_GROUP
from annotate.accounts.activation import ActivationError, deactivate
from annotate.accounts.links import set_password_path
from annotate.accounts.roster import PER_PAGE
from annotate.crowd.providers.local.adapter import invite_path, make_invite
from annotate.models import Assignment, Invite
from tests.annotate.conftest import PASSWORD, make_user

pytestmark = pytest.mark.django_db
User = get_user_model()
NEW_PASSWORD = "violet-harbour-1957"


def signed_in(user, csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    client.force_login(user)
    return client


def link_in(html: str) -> str:
    return re.search(r'id="set-password-link" value="http://testserver([^"]+)"', html)[1]


def set_password(link: str, password: str = NEW_PASSWORD) -> Client:
    """Follow ``link`` in a fresh browser and set ``password``; the browser after the form."""
    browser = Client(enforce_csrf_checks=True)
    form = browser.get(link, follow=True)
    assert form.status_code == 200 and 'id="set-password-form"' in form.content.decode(), form.content
    token = browser.cookies["csrftoken"].value
    done = browser.post(
        form.redirect_chain[-1][0],
        {"new_password1": password, "new_password2": password, "csrfmiddlewaretoken": token},
    )
    assert done.status_code == 302 and done["Location"] == reverse("login"), done.content.decode()[:2000]
    return browser


def test_an_admin_invites_a_researcher_who_sets_a_password_once_and_signs_in(admin_user):
    page = signed_in(admin_user).post("/accounts/invite/", {"email": "Rosa@Example.org", "username": ""})
    assert page.status_code == 200 and "no-store" in page["Cache-Control"]
    link = link_in(page.content.decode())
    rosa = User.objects.get(username="rosa@example.org")
    assert rosa.email == "rosa@example.org" and not rosa.has_usable_password()
    assert set(rosa.groups.values_list("name", flat=True)) == {RESEARCHER_GROUP}
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["rosa@example.org"]
    assert f"http://testserver{link}" in mail.outbox[0].body
    assert not Client().login(username="rosa@example.org", password=NEW_PASSWORD)
    set_password(link)
    assert Client().login(username="rosa@example.org", password=NEW_PASSWORD)
    again = Client().get(link, follow=True).content.decode()
    assert 'id="invalid-link"' in again and "Ask an admin" in again and 'id="set-password-form"' not in again


def test_an_invite_without_e_mail_sends_nothing_and_shows_the_link(admin_user):
    page = signed_in(admin_user).post("/accounts/invite/", {"username": "rudi", "email": ""})
    html = page.content.decode()
    assert link_in(html) and "no e-mail address" in html and mail.outbox == []


@pytest.mark.parametrize(
    ("form", "field", "words"),
    [
        ({"username": "", "email": ""}, "username", "username: give an account name or an e-mail address"),
        ({"username": "", "email": "not-an-address"}, "email", "email: enter a valid e-mail address"),
        ({"username": "bad name!", "email": ""}, "username", "username: letters, digits"),
        ({"username": "RITA", "email": ""}, "username", "an account named RITA already exists"),
        ({"username": "", "email": "rita@example.org"}, "email", "an account with rita@example.org already"),
    ],
)
def test_an_invite_is_refused_with_a_message_naming_the_field(admin_user, researcher, form, field, words):
    researcher.email = "rita@example.org"
    researcher.save()
    before = User.objects.count()
    page = signed_in(admin_user).post("/accounts/invite/", form)
    html = page.content.decode()
    assert page.status_code == 400 and words in html and f'id="invite-{field}-error"' in html
    assert User.objects.count() == before and mail.outbox == []


def test_a_link_expires_after_the_reset_timeout(admin_user, monkeypatch, settings):
    link = link_in(signed_in(admin_user).post("/accounts/invite/", {"username": "rex"}).content.decode())
    later = datetime.now() + timedelta(seconds=settings.PASSWORD_RESET_TIMEOUT + 60)
    monkeypatch.setattr(default_token_generator, "_now", lambda: later)
    assert 'id="invalid-link"' in Client().get(link, follow=True).content.decode()


def test_a_forged_or_other_accounts_token_does_not_set_a_password(admin_user, researcher, other_researcher):
    """A token made for one account does not open another's; a made-up one opens nothing."""
    own = set_password_path(other_researcher)
    uid = re.search(r"set-password/([^/]+)/", set_password_path(researcher))[1]
    swapped = re.sub(r"set-password/[^/]+/", f"set-password/{uid}/", own)
    for link in (swapped, f"/accounts/set-password/{uid}/abc-0123456789abcdef/"):
        assert 'id="invalid-link"' in Client().get(link, follow=True).content.decode()
    assert Client().login(username="rita", password=PASSWORD)


def test_a_reset_stops_the_old_password_and_the_sessions_at_once(admin_user, researcher):
    session = signed_in(researcher)
    assert session.get("/studies/").status_code == 200
    page = signed_in(admin_user).post(f"/accounts/{researcher.pk}/reset/")
    assert "The old password no longer works" in page.content.decode()
    assert not Client().login(username="rita", password=PASSWORD)
    gone = session.get("/studies/")
    assert gone.status_code == 302 and gone["Location"].startswith(reverse("login"))
    set_password(link_in(page.content.decode()))
    assert Client().login(username="rita", password=NEW_PASSWORD)


def test_a_deactivated_researcher_is_signed_out_and_cannot_sign_in_until_reactivated(admin_user, researcher):
    session = signed_in(researcher)
    assert session.get("/studies/").status_code == 200
    admin = signed_in(admin_user)
    done = admin.post(f"/accounts/{researcher.pk}/deactivate/", {"show": "researchers"}, follow=True)
    assert "rita is deactivated" in done.content.decode()
    refused = session.get("/studies/")
    assert refused.status_code == 302 and refused["Location"].startswith(reverse("login"))
    assert not Client().login(username="rita", password=PASSWORD)
    admin.post(f"/accounts/{researcher.pk}/reactivate/")
    assert Client().login(username="rita", password=PASSWORD)


def test_an_admin_cannot_deactivate_themselves_nor_the_last_admin(admin_user, researcher):
    page = signed_in(admin_user).post(f"/accounts/{admin_user.pk}/deactivate/", follow=True)
    assert "cannot deactivate your own account" in page.content.decode()
    admin_user.refresh_from_db()
    assert admin_user.is_active
    with pytest.raises(ActivationError, match="last active admin"):
        deactivate(researcher, admin_user)
    second = make_user("alma", ADMIN_GROUP)
    assert deactivate(admin_user, second) is True
    with pytest.raises(ActivationError, match="last active admin"):
        deactivate(second, admin_user)


def test_annotator_accounts_list_their_studies_and_invites_are_revoked_as_on_the_study_page(
    admin_user, study, annotator_user
):
    study.provider_config = {"open_enrollment": True}
    study.save(update_fields=["provider_config"])
    annotator = signed_in(annotator_user)
    annotator.get(f"/w/{study.uid}/")
    held = annotator.post(reverse("api-work-next", args=[study.uid]), content_type="application/json")
    assert held.status_code == 200, held.content
    admin = signed_in(admin_user)
    listed = admin.get("/accounts/?show=annotators").content.decode()
    row = re.search(r'<tr data-account="anna">.*?</tr>', listed, re.S)[0]
    assert study.name in row and f"/studies/{study.uid}/" in row
    assert 'data-account="rita"' not in listed
    holder = Client()
    path = invite_path(study, make_invite(study, "<b>bold</b>"))
    assert holder.post(path, follow=True).status_code == 200
    invites = admin.get("/accounts/?show=invites").content.decode()
    assert "&lt;b&gt;bold&lt;/b&gt;" in invites and "<b>bold</b>" not in invites
    invite = Invite.objects.get(invitee="<b>bold</b>")
    admin.post(f"/accounts/invites/{invite.pk}/revoke/")
    invite.refresh_from_db()
    assert invite.revoked_at is not None
    assert holder.get(path).status_code == 403
    assert Assignment.objects.filter(worker__user=annotator_user).exists()


def test_every_accounts_route_is_refused_to_non_admins_and_changes_nothing(
    admin_user, researcher, other_researcher, annotator_user, study
):
    invite = Invite.objects.get(pk=Invite.objects.create(study=study, invitee="x", token="t").pk)
    gets = ["/accounts/", "/accounts/?show=annotators", "/accounts/?show=invites"]
    posts = [
        ("/accounts/invite/", {"username": "mallory"}),
        (f"/accounts/{other_researcher.pk}/reset/", {}),
        (f"/accounts/{other_researcher.pk}/deactivate/", {}),
        (f"/accounts/{other_researcher.pk}/reactivate/", {}),
        (f"/accounts/invites/{invite.pk}/revoke/", {}),
    ]
    worker = Client()
    worker.post(invite_path(study, make_invite(study, "w1")), follow=True)
    for client, want in ((signed_in(researcher), 403), (signed_in(annotator_user), 403), (worker, 302)):
        for url in gets:
            assert client.get(url).status_code == want, url
        for url, data in posts:
            response = client.post(url, data)
            assert response.status_code == want, url
            assert want == 403 or response["Location"].startswith(reverse("login"))
    other_researcher.refresh_from_db()
    invite.refresh_from_db()
    assert other_researcher.is_active and other_researcher.check_password(PASSWORD)
    assert not User.objects.filter(username="mallory").exists() and invite.revoked_at is None
    assert "/accounts/" not in signed_in(researcher).get("/studies/").content.decode()
    assert 'href="/accounts/"' in signed_in(admin_user).get("/studies/").content.decode()


def test_every_accounts_post_needs_the_csrf_token(admin_user, other_researcher):
    admin = signed_in(admin_user, csrf=True)
    for url in ("/accounts/invite/", f"/accounts/{other_researcher.pk}/deactivate/",
                f"/accounts/{other_researcher.pk}/reset/"):  # fmt: skip
        assert admin.post(url, {"username": "eve"}).status_code == 403
    other_researcher.refresh_from_db()
    assert other_researcher.is_active and other_researcher.has_usable_password()
    assert not User.objects.filter(username="eve").exists()


def test_the_lists_are_paged_at_a_fixed_cost(admin_user, django_assert_max_num_queries):
    admin = signed_in(admin_user)
    for i in range(3):
        make_user(f"res{i:02d}", RESEARCHER_GROUP)
    with django_assert_max_num_queries(12) as few:
        admin.get("/accounts/")
    for i in range(3, PER_PAGE + 5):
        make_user(f"res{i:02d}", RESEARCHER_GROUP)
    with django_assert_max_num_queries(len(few.captured_queries)):
        first = admin.get("/accounts/").content.decode()
    assert "Page 1 of 2" in first and first.count("<tr data-account=") == PER_PAGE
    second = admin.get("/accounts/?show=researchers&page=2").content.decode()
    assert second.count("<tr data-account=") == 1 + PER_PAGE + 5 - PER_PAGE  # ada and res00..res29
    assert admin.get("/accounts/?show=nonsense&page=-3").status_code == 200


def test_an_admin_of_the_group_cannot_take_over_a_superuser(admin_user):
    """Resetting a superuser's password would show the group's admin the superuser's set-password link."""
    root = User.objects.create_superuser("root", "root@example.org", PASSWORD)
    admin = signed_in(admin_user)
    refused = admin.post(f"/accounts/{root.pk}/reset/", follow=True).content.decode()
    assert "only a superuser can manage" in refused and 'id="set-password-link"' not in refused
    refused = admin.post(f"/accounts/{root.pk}/deactivate/", follow=True).content.decode()
    assert "only a superuser can manage" in refused
    root.refresh_from_db()
    assert root.is_active and root.check_password(PASSWORD) and not mail.outbox
    by_root = signed_in(root).post(f"/accounts/{admin_user.pk}/reset/")
    assert by_root.status_code == 200 and link_in(by_root.content.decode())
