"""The README's worked example through the web pages: import Zaidan et al. 2007's movie rationales on the
rationale import page (reached from the datasets page), train a tiny model from the machine pages, run an
explanation job with faithfulness, and read ERASER's plausibility (token F1, IOU F1, AUPRC) beside the
faithfulness on the human-vs-machine dashboard, each step reached by a link of the page before it.
Jobs run eagerly inside the request. Screenshots: ``tests/browser/output/rationale_worked_example/``."""

from __future__ import annotations

import json
import math

import pytest
from celery import current_app

from annotate.access import RESEARCHER_GROUP
from annotate.jobs import in_process
from annotate.models import Explanation, ModelRun, Study
from tests.annotate.conftest import make_user
from tests.browser.conftest import OUTPUT
from tests.browser.test_dashboards import signed_in
from tests.conftest import require_shared_data

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

REVIEWS_PER_CLASS = 6
SLOW_MS = 120_000


@pytest.fixture
def eager_jobs(settings, tmp_path):
    settings.HATLAB_JOBS_IN_THREAD = False
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.HATLAB_S3_BUCKET = ""
    settings.HATLAB_TORCH_THREADS = 1
    eager = current_app.conf.task_always_eager
    current_app.conf.task_always_eager = True
    try:
        yield
    finally:
        in_process.wait_idle()
        current_app.conf.task_always_eager = eager


def _subset(tmp_path):
    source = require_shared_data("movie-review-rationales-zaidan2007", "movie_rationales.jsonl")
    lines = source.read_text(encoding="utf-8").splitlines()
    sample = tmp_path / "movie_rationales.jsonl"  # the first positive and negative annotated reviews
    sample.write_text(
        "\n".join(lines[:REVIEWS_PER_CLASS] + lines[1000 : 1000 + REVIEWS_PER_CLASS]) + "\n", encoding="utf-8"
    )
    return sample, [json.loads(line) for line in sample.read_text().splitlines()]


def _table(page, table_id: str) -> tuple[list[str], list[list[str]]]:
    """The header cells and body rows of a dashboard table, as the page shows them."""
    table = page.locator(f'[data-table="{table_id}"] table, table#{table_id}').first
    header = [h.text_content() or "" for h in table.locator("thead th").all()]
    rows = [row.locator("td, th").all_inner_texts() for row in table.locator("tbody tr").all()]
    return header, rows


def test_zaidan_worked_example_in_the_browser(live_server, browser_context, eager_jobs, tmp_path):
    shots = OUTPUT / "rationale_worked_example"
    shots.mkdir(parents=True, exist_ok=True)
    sample, reviews = _subset(tmp_path)
    user = make_user("zoe", RESEARCHER_GROUP)
    page, errors = signed_in(browser_context, live_server, user)

    # 1. the datasets page leads to the rationale import
    page.goto(f"{live_server.url}/datasets/")
    page.screenshot(path=str(shots / "1_datasets.png"), full_page=True)
    page.locator("#import-rationales").click()
    page.select_option("select[name=format]", "zaidan")
    page.fill("input[name=name]", "movies")
    page.set_input_files("input[name=file]", str(sample))
    page.screenshot(path=str(shots / "2_import_form.png"), full_page=True)
    with page.expect_navigation():
        page.get_by_role("button", name="Import").click()
    study = Study.objects.get(dataset__name="movies", owner=user)
    assert page.url.endswith(f"/studies/{study.uid}/")
    page.screenshot(path=str(shots / "3_imported_study.png"), full_page=True)

    # 2. the imported study leads to training a model on its dataset
    page.get_by_role("link", name="Train a model on these texts").click()
    assert page.locator("select[name=dataset]").input_value() == str(study.dataset_id)
    page.select_option("select[name=architecture]", "cnn")
    page.fill("input[name=epochs]", "1")
    page.fill("input[name=embedding_dim]", "8")
    page.fill("textarea[name=extra]", '{"min_count": 1, "model": {"num_filters": 4}}')
    page.screenshot(path=str(shots / "4_train_form.png"), full_page=True)
    with page.expect_navigation(timeout=SLOW_MS):
        page.get_by_role("button", name="Start training").click()
    run = ModelRun.objects.get(owner=user)
    assert run.status == ModelRun.Status.DONE, run.message
    page.screenshot(path=str(shots / "5_trained.png"), full_page=True)

    # 3. an explanation job with faithfulness
    form = page.locator("form.explain-form")
    form.locator("input[name=methods][value=grad_dot_1s]").check()
    form.locator("input[name=methods][value=random]").check()
    form.locator("select[name=target]").select_option("gold")
    assert form.locator("input[name=faithfulness]").is_checked()
    with page.expect_navigation(timeout=SLOW_MS):
        form.get_by_role("button", name="Start explanation job").click()
    stored = Explanation.objects.filter(model_run=run)
    assert stored.count() == 2 * len(reviews) and not stored.filter(faithfulness__isnull=True).exists()
    page.screenshot(path=str(shots / "6_explained.png"), full_page=True)

    # 4. the run's page leads to the study's human-vs-machine dashboard
    page.get_by_role("link", name=f"Compare with the people's maps of {study.name}").click()
    assert page.url.endswith(f"/studies/{study.uid}/dashboard/machine/")
    for code in ("grad_dot_1s", "random"):
        page.locator(f"input[name=select][value='{run.pk}:{code}']").check()
    page.locator("input[name=target][value=gold]").check()
    with page.expect_navigation():
        page.get_by_role("button", name="Compare").click()
    page.wait_for_selector("#hatlab-dashboard[data-state='done'], [data-table='plausibility_faithfulness-table']",
                           timeout=SLOW_MS)  # fmt: skip
    page.wait_for_function("() => window.hatlabDashboard && window.hatlabDashboard.charts", timeout=SLOW_MS)
    header, rows = _table(page, "plausibility_faithfulness-table")
    page.screenshot(path=str(shots / "7_plausibility_faithfulness.png"), full_page=True)
    for heading in ("token F1", "IOU F1", "AUPRC", "comprehensiveness AOPC", "sufficiency AOPC"):
        assert any(h.startswith(heading) for h in header), (heading, header)
    assert len(rows) == 2
    for row in rows:
        cells = dict(zip(header, row, strict=False))
        for heading in ("token F1", "IOU F1", "AUPRC", "comprehensiveness AOPC"):
            value = float(cells[heading])
            assert math.isfinite(value) and -1 <= value <= 1, (heading, cells[heading])
    assert page.locator("figure[data-chart='share_alignment']").is_visible()
    notes = page.locator("[data-section=notes]").inner_text()
    assert "CAM needs two or more maps of a text" in notes  # one annotator: not "all 0 or all 1"
    assert "CAM is undefined" not in notes
    assert not errors, errors
