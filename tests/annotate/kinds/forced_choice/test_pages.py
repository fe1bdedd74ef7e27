"""The researcher side of the forced-choice evaluation: the new-study form (with its "check texts"
preview), the results page with Table 4 / Figure 3 / κ, the CSV tables, the JSON API, and who may
see them."""

from __future__ import annotations

import csv
import io

import pytest
from django.test import Client
from django.urls import reverse

from annotate.models import Study
from tests.annotate.conftest import PASSWORD, make_user
from tests.annotate.kinds.forced_choice.test_generation import METHODS, justify_rows, make_texts
from tests.annotate.kinds.forced_choice.test_scoring import HAND, NEG, POS, answer, study_with_items

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner(db):
    return make_user("rhea", "researcher")


def signed_in(user) -> Client:
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client


@pytest.fixture
def answered(owner):
    """The hand-worked justify study of the scoring tests, answered by three workers."""
    from annotate.models import Worker

    workers = [Worker.objects.create(external_id=f"w{i}") for i in range(3)]
    questions = [(t, m, "correct" if t == 0 else "misclassified", POS if t == 0 else NEG) for t, m in HAND]
    study, items = study_with_items(owner, "justify", questions, n_docs=2)
    for item, key in zip(items, HAND, strict=True):
        for worker, (choice, confident) in zip(workers, HAND[key], strict=True):
            answer(study, item, worker, choice, confident)
    return study


def test_results_page_shows_table4_kappa_and_charts(owner, answered):
    page = signed_in(owner).get(reverse("study-results", args=[answered.uid]))
    assert page.status_code == 200
    html = page.content.decode()
    assert "Table 4" in html and "Figure 3" in html
    assert "occ_1 (W)" in html and "lrp (W)" in html
    assert "0.50" in html and "-0.17" in html  # occ_1 and lrp over all texts
    assert "-0.158 / 0.067" in html  # Fleiss κ α / β
    assert 'data-hatlab-chart="means-chart"' in html and 'id="distribution-chart"' in html
    assert "hatlab/charts.js" in html
    assert "wilcoxon" in html
    ttest = signed_in(owner).get(reverse("study-results", args=[answered.uid]) + "?test=ttest&alpha=0.1")
    assert "paired t-test" in ttest.content.decode()


def test_csv_downloads(owner, answered):
    client = signed_in(owner)
    response = client.get(reverse("study-results-table", args=[answered.uid, "scores", "csv"]))
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert {(r["method"], r["split"]) for r in rows} == {
        (m, s) for m in ("occ_1 (W)", "lrp (W)") for s in ("all", "correct", "misclassified")
    }
    for table in ("distribution", "kappa", "answers"):
        assert (
            client.get(reverse("study-results-table", args=[answered.uid, table, "csv"])).status_code == 200
        )
    assert client.get(f"/studies/{answered.uid}/results/nope.csv").status_code == 404
    assert client.get(f"/studies/{answered.uid}/results/scores.jsonl").status_code == 404


def test_results_api(owner, answered):
    client = signed_in(owner)
    data = client.get(reverse("api-forced-choice-results", args=[answered.uid])).json()
    assert data["answers"] == 12 and data["task"] == "justify"
    assert data["kappa"]["with_confidence"]["value"] == pytest.approx(-3 / 19)
    assert {r["split"] for r in data["scores"]} == {"all", "correct", "misclassified"}
    assert "scored" not in data
    bad = client.get(reverse("api-forced-choice-results", args=[answered.uid]) + "?test=chi2")
    assert bad.status_code == 400 and "test" in bad.json()


def test_only_the_owner_or_an_admin_sees_results(owner, answered):
    url = reverse("study-results", args=[answered.uid])
    assert Client().get(url).status_code == 302  # sign in first
    assert signed_in(make_user("otto", "researcher")).get(url).status_code == 404
    assert signed_in(make_user("anna")).get(url).status_code == 403
    assert signed_in(make_user("ada", "admin")).get(url).status_code == 200
    api = reverse("api-forced-choice-results", args=[answered.uid])
    assert signed_in(make_user("olga", "researcher")).get(api).status_code == 404
    assert Client().get(api).status_code in (401, 403)


def test_a_highlight_study_gets_its_own_results_not_the_forced_choice_ones(owner):
    dataset, _ = make_texts(owner, 2)
    study = Study.objects.create(name="h", owner=owner, dataset=dataset, kind="highlight", config={})
    client = signed_in(owner)
    page = client.get(reverse("study-results", args=[study.uid]))
    assert page.status_code == 200 and "Table 4" not in page.content.decode()
    assert client.get(reverse("study-results-table", args=[study.uid, "scores", "csv"])).status_code == 404
    assert client.get(reverse("api-forced-choice-results", args=[study.uid])).status_code == 404


def test_a_bad_test_or_alpha_is_a_400_naming_the_field(owner, answered):
    client = signed_in(owner)
    url = reverse("study-results", args=[answered.uid])
    for query, field in (
        ("?test=chi2", "test"),
        ("?alpha=2", "alpha"),
        ("?alpha=nan", "alpha"),
        ("?alpha=x", "alpha"),
    ):
        response = client.get(url + query)
        assert response.status_code == 400 and response.content.decode().startswith(field), query
    table = reverse("study-results-table", args=[answered.uid, "scores", "csv"])
    assert client.get(table + "?alpha=0").status_code == 400


def test_preview_api_counts_or_says_how_many_qualify(owner):
    dataset, docs, run, _ = justify_rows(owner)
    client = signed_in(owner)
    url = reverse("api-forced-choice-preview")
    ok = client.post(
        url, {"kind": "justify", "config": {"model_run": run.pk, "methods": METHODS, "n_texts": 4, "split": "all"}},
        content_type="application/json",
    )  # fmt: skip
    assert ok.status_code == 200, ok.content
    assert ok.json() == {"kind": "justify", "questions": 8, "texts": 4, "per_split": {"correct": 2, "misclassified": 2},
                         "methods": ["grad_l2_1s (W)", "occ_1 (W)"]}  # fmt: skip
    few = client.post(
        url, {"kind": "justify", "config": {"model_run": run.pk, "methods": METHODS, "n_texts": 10, "split": "all"}},
        content_type="application/json",
    )  # fmt: skip
    assert few.status_code == 400
    assert "only 3 correctly predicted and 3 misclassified" in few.json()["config"]["n_texts"][0]
    theirs = signed_in(make_user("otto", "researcher")).post(
        url,
        {"kind": "justify", "config": {"model_run": run.pk, "methods": METHODS}},
        content_type="application/json",
    )
    assert theirs.status_code == 400 and "config" in theirs.json()


def test_new_study_form_checks_texts_and_creates_a_draft(owner):
    dataset, docs, run, _ = justify_rows(owner)
    client = signed_in(owner)
    url = reverse("forced-choice-new")
    page = client.get(url)
    assert page.status_code == 200
    labels = dict(page.context["form"].fields["methods"].choices)
    assert (
        labels["grad_l2_1s"] == "Simple gradient of s, L2 norm" and labels["occ_1"] == "Occlusion of 1-grams"
    )
    html = page.content.decode()
    assert 'value="limsse_ms_p"' in html and "LIMSSE, magnitude-sensitive on p</label>" in html
    assert ">limsse_ms_p<" not in html and " limsse_ms_p</label>" not in html
    form = {
        "kind": "justify", "name": "Justify LIME vs occlusion", "model_run": run.pk, "methods": ["occ_1"],
        "ngram_methods": ["occ_1"], "ngram_sizes": "2, 3", "m": 3, "n_texts": 4, "tau_h": 0.9, "split": "all",
        "seed": 0, "one_method_per_text_per_worker": "on", "annotators_per_item": 3, "time_limit_min": 20,
        "provider": "local",
    }  # fmt: skip
    check = client.post(url, {**form, "check": "1"})
    assert check.status_code == 200
    assert "4 texts" in check.content.decode() and "8 questions" in check.content.decode()
    too_many = client.post(url, {**form, "n_texts": 20, "check": "1"})
    assert "only 3 correctly predicted and 3 misclassified" in too_many.content.decode()
    created = client.post(url, form)
    assert created.status_code == 302
    study = Study.objects.get(name="Justify LIME vs occlusion")
    assert study.kind == "justify" and study.status == Study.Status.DRAFT and study.dataset_id == dataset.pk
    assert study.annotators_per_item == 3 and study.time_limit_s == 1200
    assert [m["label"] for m in study.config["methods"]] == ["occ_1 (W)", "occ_1 (N)"]
    assert study.config["methods"][1]["ngram_sizes"] == [2, 3]
    assert study.instructions  # the task's own when left empty
    reveal = client.post(url, {**form, "kind": "reveal_model", "name": "r"})
    assert reveal.status_code == 200 and "Task 1 needs a second" in reveal.content.decode()


def test_starting_a_study_with_too_few_texts_says_how_many_qualified(owner):
    dataset, docs, run, _ = justify_rows(owner)
    client = signed_in(owner)
    config = {"model_run": run.pk, "methods": METHODS, "n_texts": 10, "split": "all"}
    created = client.post("/api/studies/", {"name": "too big", "dataset": dataset.pk, "kind": "justify",
                                            "config": config}, content_type="application/json")  # fmt: skip
    assert created.status_code == 201, created.content
    study = Study.objects.get(uid=created.json()["uid"])
    page = client.post(reverse("study-action", args=[study.uid, "start"]), follow=True)
    assert "only 3 correctly predicted and 3 misclassified texts qualify" in page.content.decode()
    study.refresh_from_db()
    assert study.status == Study.Status.DRAFT and not study.items.exists()


def test_the_new_study_form_carries_an_adaptive_policy_and_names_its_fields_when_refused(owner):
    """The redundancy policy on the forced-choice form: a rule the kind lacks and a minimum above the
    maximum are said on their own fields; a good policy is stored, sets the places per question to its
    maximum, and comes back on the draft's edit form."""
    _, _, run, _ = justify_rows(owner)
    client = signed_in(owner)
    url = reverse("forced-choice-new")
    assert "Adaptive: stopping rule" in client.get(url).content.decode()
    form = {
        "kind": "justify", "name": "adaptive justify", "model_run": run.pk, "methods": ["occ_1"], "m": 3,
        "n_texts": 4, "tau_h": 0.9, "split": "all", "seed": 0, "annotators_per_item": 3, "time_limit_min": 20,
        "provider": "local", "redundancy": "adaptive", "redundancy_min": 2, "redundancy_max": 5,
        "redundancy_rule": "map_agreement", "redundancy_threshold": 0.8,
    }  # fmt: skip
    wrong_rule = client.post(url, form)
    assert wrong_rule.status_code == 200 and not Study.objects.exists()
    errors = wrong_rule.context["form"].errors
    assert "is not a rule of this kind; use one of label_share, label_posterior, ci_width" in str(
        errors["redundancy_rule"]
    )
    upside_down = client.post(url, {**form, "redundancy_rule": "label_share", "redundancy_min": 6})
    assert "must be at least min (6)" in str(upside_down.context["form"].errors["redundancy_max"])
    missing = client.post(url, {**form, "redundancy_rule": "label_share", "redundancy_threshold": ""})
    assert "required for an adaptive policy" in str(missing.context["form"].errors["redundancy_threshold"])
    assert not Study.objects.exists()
    assert client.post(url, {**form, "redundancy_rule": "label_share"}).status_code == 302
    study = Study.objects.get()
    assert study.config["redundancy"] == {
        "mode": "adaptive", "min": 2, "max": 5, "rule": "label_share", "threshold": 0.8,
    }  # fmt: skip
    assert study.annotators_per_item == 5
    edit = client.get(reverse("study-edit", args=[study.uid]))
    initial = edit.context["form"].initial
    assert initial["redundancy"] == "adaptive" and initial["redundancy_rule"] == "label_share"
    assert (initial["redundancy_min"], initial["redundancy_max"], initial["redundancy_threshold"]) == (
        2,
        5,
        0.8,
    )
    fixed = client.post(url, {**form, "name": "fixed justify", "redundancy": "fixed"})
    assert fixed.status_code == 302
    assert "redundancy" not in Study.objects.get(name="fixed justify").config
