"""Every empty number says why, in the browser (issue 27, point 4): three workers each miss one of an NLI
study's two golds; the researcher's results page says that all their answers are left out and why, its
link leads to the quality page, which shows the rule as applied (judged after 2 golds, though the policy
asks for 4) and the gold flagged for review. No request of either page is a 404 (the favicon included).
Screenshots under tests/browser/output/."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client

from annotate.access import RESEARCHER_GROUP
from tests.annotate.kinds.nli_pair.test_kind import answered, page_token
from tests.annotate.test_empty_numbers import answer_for, nli_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "a-long-test-password"


def researcher():
    user, _ = get_user_model().objects.get_or_create(username="rhea")
    user.set_password(PASSWORD)
    user.save()
    user.groups.add(Group.objects.get_or_create(name=RESEARCHER_GROUP)[0])
    return user


def test_results_say_why_they_are_empty_and_the_quality_page_shows_the_applied_rule(
    live_server, browser_context, output_dir
):
    owner = researcher()
    study = nli_study(owner)
    for name in ("w1", "w2", "w3"):
        client = Client(enforce_csrf_checks=True)
        answered(client, page_token(client, study, name), answer_for)
    page = browser_context.new_page()
    missing: list[str] = []
    page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)
    page.goto(live_server.url + "/login/")
    page.fill("input[name=username]", "rhea")
    page.fill("input[name=password]", PASSWORD)
    page.locator("form [type=submit]").last.click()
    page.goto(live_server.url + f"/studies/{study.uid}/results/")
    notice = page.locator("#left-out")
    notice.wait_for()
    text = notice.inner_text()
    assert "0 of 6 answers count in these figures." in text
    assert "6 answers by 3 workers left out: these workers passed fewer than 70% of the gold items" in text
    assert "[, ]" not in page.locator("main").inner_text()  # no interval brackets around nothing
    page.screenshot(path=str(output_dir / "results.png"), full_page=True)
    notice.get_by_role("link", name="quality page").click()
    page.wait_for_url(f"**/studies/{study.uid}/quality/")
    rule = page.locator("#trust-rule").inner_text()
    assert "judged after 2 golds" in rule and "The policy asks for 4" in rule
    assert page.locator("#golds tr.flagged").count() == 1
    assert page.locator("#golds-heading").inner_text().endswith("1 flagged")
    page.screenshot(path=str(output_dir / "quality.png"), full_page=True)
    assert missing == []
