"""In the browser: an admin invites a researcher from the Accounts page, the researcher follows the one-time
link, sets a password and signs in; the admin deactivates them and their next page load goes to sign-in.
A researcher opens the task's preview from the study page and comes back. Screenshots at a phone's width
(375 px) and a laptop's are kept under tests/browser/output/."""

from __future__ import annotations

import re

import pytest

from annotate.access import ADMIN_GROUP, RESEARCHER_GROUP
from tests.annotate.conftest import PASSWORD, make_dataset, make_study, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NEW_PASSWORD = "violet-harbour-1957"
WIDTHS = {"phone": {"width": 375, "height": 780}, "laptop": {"width": 1280, "height": 800}}


def sign_in(page, url: str, username: str, password: str = PASSWORD) -> None:
    page.goto(url + "/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    with page.expect_navigation():
        page.locator("form [type=submit]").last.click()


def shots(page, output_dir, name: str) -> None:
    """Screenshots of the page at each width of :data:`WIDTHS`, then back at the laptop's."""
    for width, size in WIDTHS.items():
        page.set_viewport_size(size)
        page.screenshot(path=str(output_dir / f"{name}_{width}.png"), full_page=True)


def test_an_admin_invites_a_researcher_who_signs_in_until_deactivated(live_server, chromium, output_dir):
    make_user("ada", ADMIN_GROUP)
    admin_context = chromium.new_context(viewport=WIDTHS["laptop"], locale="en-US")
    admin = admin_context.new_page()
    sign_in(admin, live_server.url, "ada")
    admin.get_by_role("link", name="Accounts").click()
    admin.fill("#invite-email", "nora@example.org")
    with admin.expect_navigation():
        admin.get_by_role("button", name="Invite").click()
    link = admin.input_value("#set-password-link")
    assert re.match(rf"{re.escape(live_server.url)}/accounts/set-password/[^/]+/[^/]+/$", link)
    assert "e-mailed to nora@example.org" in admin.inner_text("#mail-state")
    shots(admin, output_dir, "invited")

    researcher_context = chromium.new_context(viewport=WIDTHS["phone"], locale="en-US")
    nora = researcher_context.new_page()
    nora.goto(link)
    nora.fill("input[name=new_password1]", NEW_PASSWORD)
    nora.fill("input[name=new_password2]", NEW_PASSWORD)
    nora.screenshot(path=str(output_dir / "set_password_phone.png"), full_page=True)
    with nora.expect_navigation():
        nora.get_by_role("button", name="Set the password").click()
    assert nora.url.endswith("/login/") and "Your password is set" in nora.inner_text(".messages")
    sign_in(nora, live_server.url, "nora@example.org", NEW_PASSWORD)
    nora.goto(live_server.url + "/studies/")
    assert "nora@example.org" in nora.inner_text(".who") and "/login/" not in nora.url
    nora.goto(link)
    assert "This link does not work" in nora.inner_text("h1")
    nora.screenshot(path=str(output_dir / "used_link_phone.png"), full_page=True)

    admin.goto(live_server.url + "/accounts/")
    row = admin.locator('tr[data-account="nora@example.org"]')
    assert "active" in row.inner_text()
    shots(admin, output_dir, "accounts")
    with admin.expect_navigation():
        row.get_by_role("button", name="Deactivate").click()
    assert "nora@example.org is deactivated" in admin.inner_text(".messages")
    shots(admin, output_dir, "deactivated")
    nora.goto(live_server.url + "/studies/")
    assert "/login/" in nora.url
    admin_context.close()
    researcher_context.close()


def test_a_researcher_previews_the_task_from_the_study_page_and_comes_back(live_server, chromium, output_dir):
    owner = make_user("rosa", RESEARCHER_GROUP)
    study = make_study(owner, make_dataset(owner, n=4), name="Reviews")
    context = chromium.new_context(viewport=WIDTHS["laptop"], locale="en-US")
    page = context.new_page()
    sign_in(page, live_server.url, "rosa")
    page.goto(f"{live_server.url}/studies/{study.uid}/")
    with page.expect_navigation():
        page.locator("#study-preview-link").click()
    page.wait_for_selector("#hatlab-app[data-state='preview']")
    assert "Preview — answers are not stored." in page.inner_text("#preview-banner")
    shots(page, output_dir, "preview")
    with page.expect_navigation():
        page.locator("#preview-back").click()
    assert page.url == f"{live_server.url}/studies/{study.uid}/"
    context.close()
