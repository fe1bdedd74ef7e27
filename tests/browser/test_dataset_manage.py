"""A researcher renames a dataset on its page and is told, on the same page, why a dataset in use cannot
be deleted; an unused one is deleted from its page. Screenshots: ``tests/browser/output/<test>/``."""

from __future__ import annotations

import pytest

from annotate.models import Dataset, Document, Study
from tests.browser.test_manage_studies import researcher, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_rename_and_delete_from_the_dataset_page(live_server, browser_context, output_dir):
    owner = researcher()
    used = Dataset.objects.create(name="reviews", owner=owner)
    Document.from_text(used, "d1", "Good food .", label="positive").save()
    Study.objects.create(name="pilot", owner=owner, dataset=used, kind="highlight")
    spare = Dataset.objects.create(name="spare", owner=owner)
    Document.from_text(spare, "d1", "Bad food .", label="negative").save()
    page = browser_context.new_page()
    sign_in(page, live_server.url)
    page.goto(f"{live_server.url}/datasets/{used.pk}/")
    page.locator("summary", has_text="Rename or delete").click()
    page.fill("#dataset-name", "reviews 2026")
    page.get_by_role("button", name="Rename").click()
    page.wait_for_selector("h1:text-is('reviews 2026')")
    page.locator("summary", has_text="Rename or delete").click()
    assert "It cannot be deleted while study pilot uses it." in page.inner_text(".dataset-manage")
    page.screenshot(path=str(output_dir / "renamed_in_use.png"), full_page=True)
    page.goto(f"{live_server.url}/datasets/{spare.pk}/")
    page.locator("summary", has_text="Rename or delete").click()
    page.get_by_role("button", name="Delete spare and its 1 document").click()
    page.wait_for_url(f"{live_server.url}/datasets/")
    assert "Deleted spare and its documents." in page.content()
    page.screenshot(path=str(output_dir / "deleted.png"), full_page=True)
    assert not Dataset.objects.filter(pk=spare.pk).exists()
