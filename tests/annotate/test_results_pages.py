"""The results-page contract: every registered kind's results class is mounted at ``study-results`` and
its tables at ``study-results-table``, for the study's owner only; a table has one URL."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.test import Client, RequestFactory
from django.urls import reverse

from annotate.tasks import TASK_KINDS, get_kind
from annotate.tasks.results import ResultsPage
from tests.annotate.conftest import make_dataset, make_study
from tests.annotate.kinds.forced_choice.test_scoring import study_with_items
from tests.annotate.kinds.nli_pair.test_kind import make_pair_study
from tests.annotate.kinds.sentence_rating.test_kind import make_rating_study
from tests.annotate.kinds.token_marking.test_kind import make_marking_study

pytestmark = pytest.mark.django_db


def _forced_choice(kind: str):
    return lambda owner: study_with_items(owner, kind, [(0, "occ_1", "correct", "positive")], 1)[0]


#: A study of each registered kind (a new kind adds its own here).
STUDY_OF = {
    "highlight": lambda owner: make_study(owner, make_dataset(owner, n=2, name="contract")),
    "sentence_rating": make_rating_study,
    "token_marking": make_marking_study,
    "nli_pair": make_pair_study,
    "reveal_model": _forced_choice("reveal_model"),
    "justify": _forced_choice("justify"),
    "investigate": _forced_choice("investigate"),
}


def test_every_kind_declares_a_results_page():
    assert set(STUDY_OF) == set(TASK_KINDS), "add a study of the new kind to STUDY_OF"
    for name in TASK_KINDS:
        page = get_kind(name).results_page()
        assert page is not None and issubclass(page, ResultsPage), name
        assert page.template and page.tables and set(page.formats) <= {"csv", "jsonl"}, name


@pytest.mark.parametrize("name", sorted(STUDY_OF))
def test_results_page_and_tables_of_every_kind(name, researcher, other_researcher):
    study = STUDY_OF[name](researcher)
    assert study.kind == name
    owner, other = Client(), Client()
    owner.force_login(researcher)
    other.force_login(other_researcher)
    url = reverse("study-results", args=[study.uid])
    page = owner.get(url)
    assert page.status_code == 200, page.content[:300]
    assert other.get(url).status_code == 404
    request = RequestFactory().get(url)
    request.user = researcher
    results = get_kind(name).results_page()(request, study)
    html = page.content.decode()
    for table in results.tables:
        columns = list(results.rows(table)[0])
        for fmt in results.formats:
            link = reverse("study-results-table", args=[study.uid, table, fmt])
            assert link in html, f"{name}: the page does not link {link}"
            response = owner.get(link)
            assert response.status_code == 200, (table, fmt, response.content[:300])
            assert f"study-{study.uid}-{table}.{fmt}" in response["Content-Disposition"]
            body = response.content.decode()
            if fmt == "csv":
                assert next(csv.reader(io.StringIO(body))) == columns, (name, table)
            else:
                assert all(list(json.loads(line)) == columns for line in body.splitlines()), (name, table)
            assert other.get(link).status_code == 404
    assert (
        owner.get(reverse("study-results-table", args=[study.uid, "no_such_table", "csv"])).status_code == 404
    )
    unoffered = [fmt for fmt in ("csv", "jsonl") if fmt not in results.formats]
    for fmt in unoffered:
        first = next(iter(results.tables))
        assert owner.get(reverse("study-results-table", args=[study.uid, first, fmt])).status_code == 404
