"""The pages work under the Content-Security-Policy: a researcher signs in and walks through their pages, an
admin opens the Django admin, an annotator starts an invite and gets an item, and no page reports a CSP
violation or a console error. The watcher itself is shown to catch a violation (an inline script)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from annotate.access import RESEARCHER_GROUP
from annotate.crowd.providers.local.adapter import invite_path, make_invite
from tests.browser.conftest import start_invite
from tests.browser.test_highlight_task import TEXT_A, TEXT_B, make_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "a-long-browser-password"
WATCH = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__violations.push(`${e.violatedDirective} ${e.blockedURI}`);
});
"""


class Watcher:
    """Console errors, page errors and CSP violations of every page ``page`` shows."""

    def __init__(self, page):
        self.page = page
        self.problems: list[str] = []
        page.add_init_script(WATCH)
        page.on("console", self._console)
        page.on("pageerror", lambda e: self.problems.append(f"pageerror: {e}"))
        page.on(
            "response", lambda r: self.problems.append(f"{r.status}: {r.url}") if r.status >= 400 else None
        )

    def _console(self, message) -> None:
        where = (message.location or {}).get("url", "")
        if message.type == "error" and not where.endswith("/favicon.ico"):  # the admin names no icon
            self.problems.append(f"console: {message.text} at {where}")

    def visit(self, url: str) -> None:
        response = self.page.goto(url)
        assert response is not None and response.status < 400, (url, response and response.status)
        assert "script-src 'self'" in (response.header_value("content-security-policy") or "")
        self.collect()

    def collect(self) -> None:
        self.page.wait_for_load_state("load")
        self.problems.extend(f"csp: {v}" for v in self.page.evaluate("window.__violations || []"))
        self.page.evaluate("window.__violations = []")


def sign_in(watcher: Watcher, base: str, username: str) -> None:
    watcher.visit(f"{base}/login/")
    watcher.page.fill("input[name=username]", username)
    watcher.page.fill("input[name=password]", PASSWORD)
    with watcher.page.expect_navigation():
        watcher.page.click("form button[type=submit], form input[type=submit]")
    watcher.collect()


def test_the_watcher_catches_a_violation(live_server, browser_context):
    watcher = Watcher(browser_context.new_page())
    watcher.visit(f"{live_server.url}/login/")
    watcher.page.evaluate(
        "() => { const s = document.createElement('script'); s.textContent = 'window.ran = 1';"
        " document.head.appendChild(s); }"
    )
    watcher.page.wait_for_timeout(200)
    watcher.collect()
    assert watcher.page.evaluate("window.ran") is None  # the inline script did not run
    assert any("script-src" in p for p in watcher.problems), watcher.problems


def test_researcher_admin_and_annotator_pages_work_under_the_policy(live_server, browser_context):
    study = make_study(TEXT_A, TEXT_B)
    User = get_user_model()
    researcher = User.objects.create_user("rosa", password=PASSWORD)
    researcher.groups.add(Group.objects.get_or_create(name=RESEARCHER_GROUP)[0])
    study.owner = researcher
    study.save(update_fields=["owner"])
    User.objects.create_superuser("root", password=PASSWORD)
    base = live_server.url

    watcher = Watcher(browser_context.new_page())
    sign_in(watcher, base, "rosa")
    for path in (
        "/",
        "/datasets/",
        "/studies/",
        f"/studies/{study.uid}/",
        f"/studies/{study.uid}/results/",
        f"/studies/{study.uid}/quality/",
        f"/studies/{study.uid}/dashboard/",
        "/models/",
        "/models/new/",
        "/settings/lexicon/",
        "/api/docs/",
    ):
        watcher.visit(base + path)
    assert watcher.problems == []

    admin = Watcher(browser_context.browser.new_context().new_page())
    admin.visit(f"{base}/admin/login/")
    admin.page.fill("input[name=username]", "root")
    admin.page.fill("input[name=password]", PASSWORD)
    with admin.page.expect_navigation():
        admin.page.click("input[type=submit]")
    admin.collect()
    for path in ("/admin/", "/admin/annotate/study/", "/admin/annotate/changelog/"):
        admin.visit(base + path)
    assert admin.problems == []

    annotator = Watcher(browser_context.browser.new_context().new_page())
    start_invite(annotator.page, base + invite_path(study, make_invite(study, "csp-1")))
    annotator.page.locator("#hatlab-app[data-state='item']").wait_for()
    annotator.collect()
    assert annotator.problems == []
