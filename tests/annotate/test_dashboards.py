"""Dashboards: the study dashboard (labels, agreement with intervals and notes, human maps, annotators),
human vs machine (Sen et al. 2020 Tables 2–5) and one text's maps; their numbers are the engine's on the same
maps (checked on a real YELP-HAT slice too), access is for the owner and admins, results are cached
until the data changes, and a large study is computed by a job with progress."""

from __future__ import annotations

import csv
import io
import json
import random
import uuid

import numpy as np
import pytest
from django.utils import timezone

from annotate.dashboards import cache, charts, compute, gather, jobs, notes
from annotate.dashboards.study import study_dashboard
from annotate.kinds.highlight.yelphat import import_yelphat
from annotate.machine.heatmap import human_rows
from annotate.models import Assignment, Explanation, Item, Job, ModelRun, Prediction, Response, WorkerTrust
from annotate.models.dashboards import DashboardCache
from annotate.quality import grading
from explain_engine.api import (
    agreement_report,
    fleiss_kappa,
    json_safe,
    krippendorff_alpha,
    read_raw,
    roc_auc_per_text,
    shared_marks_alignment,
    similarity_report,
    tag_documents,
    tag_words,
)
from tests.annotate.conftest import make_dataset, make_study, make_worker
from tests.conftest import require_shared_data

pytestmark = [pytest.mark.django_db]

LABELS = ("positive", "negative", "cannot decide")


def answer(item, worker, slot, label, word_map, gold_passed=None, read_ms=1000, answer_ms=500):
    now = timezone.now()
    a = Assignment.objects.create(
        study=item.study,
        item=item,
        worker=worker,
        slot=slot,
        status="submitted",
        expires_at=now,
        submitted_at=now,
    )
    Item.objects.filter(pk=item.pk).update(responses_done=slot + 1)
    return Response.objects.create(
        assignment=a,
        study=item.study,
        item=item,
        worker=worker,
        submission_key=uuid.uuid4(),
        answer={"label": label, "map": word_map},
        read_ms=read_ms,
        answer_ms=answer_ms,
        gold_passed=gold_passed,
    )


def noisy(word_map, rng, flips=2):
    out = list(word_map)
    for i in rng.sample(range(len(out)), flips):
        out[i] = 1 - out[i]
    return out


@pytest.fixture
def answered(researcher):
    """A highlight study of 10 texts (2 gold), three workers on every text, known labels and maps.

    Workers 0 and 1 pass both golds, worker 2 misses both. Every worker answered every gold of the study,
    which is the minimum (the policy's 4 golds, capped at the study's 2: ``refresh_trust``), and trust is
    recomputed as the quality job does: workers 0 and 1 are trusted, worker 2 is excluded (0 of 2) and
    their answers count nowhere — so ``plan`` keeps every worker's answers, and ``counted_plan`` those
    of workers 0 and 1."""
    dataset = make_dataset(researcher, n=10, gold_every=5)
    study = make_study(researcher, dataset, annotators_per_item=3)
    workers = [make_worker(f"w{i}") for i in range(3)]
    rng = random.Random(7)
    plan = {}
    for item in Item.objects.filter(study=study).select_related("document").order_by("position"):
        truth_label = item.document.label
        base = item.secret.get("gold", {}).get("map") or [
            int(w.strip(".,!?").lower() in ("delicious", "bland", "friendly", "rude"))
            for w in item.payload["words"]
        ]
        labels = [truth_label, truth_label, "cannot decide" if item.position % 3 == 0 else truth_label]
        for slot, worker in enumerate(workers):
            word_map = base if slot == 0 else noisy(base, rng, flips=slot + 1)
            gold = (slot != 2) if item.is_gold else None
            answer(item, worker, slot, labels[slot], word_map, gold_passed=gold, read_ms=1000 * (slot + 1))
            plan.setdefault(item.pk, []).append((labels[slot], word_map))
    grading.refresh_trust(study)
    assert dict(WorkerTrust.objects.filter(study=study).values_list("worker__external_id", "status")) == {
        "w0": "trusted",
        "w1": "trusted",
        "w2": "excluded",
    }
    return study, workers, plan


def counted_plan(plan):
    """The answers that count: those of workers 0 and 1 (worker 2 is excluded by their gold trust)."""
    return {item: given[:2] for item, given in plan.items()}


def records_of(study, plan):
    """The engine's input built independently of the app: counted (non-gold) items in item order."""
    out = []
    for item in (
        Item.objects.filter(study=study, is_gold=False).select_related("document").order_by("position")
    ):
        doc = item.document
        out.append(
            {
                "id": str(item.pk),
                "text": doc.text,
                "words": doc.words,
                "label": {"positive": 1, "negative": 0}[doc.label],
                "annotations": [{"label": lab, "map": m} for lab, m in plan[item.pk]],
            }
        )
    return out


# ----------------------------------------------------------------------------------- study dashboard


def test_study_dashboard_equals_the_engine(answered, client, researcher):
    study, workers, plan = answered
    client.force_login(researcher)
    response = client.get(f"/api/dashboards/studies/{study.uid}/")
    assert response.status_code == 200
    data = response.json()
    assert data["status"] == "done"

    # worker 2 is excluded by their gold trust: the figures are the engine's on workers 0 and 1's answers,
    # two maps per text (max_maps=None: the paper's three maps per text would keep no text)
    records = records_of(study, counted_plan(plan))
    expected = json_safe(agreement_report(records, max_maps=None, n_boot=1000, seed=0))
    assert data["maps"]["human_human"] == expected["human_human"]
    assert data["maps"]["k"] == expected["k"]
    assert data["maps"]["texts"] == expected["texts"] == 8
    ratings = [[a["label"] for a in r["annotations"]] for r in records]
    assert data["agreement"]["fleiss_kappa"] == json_safe(fleiss_kappa(ratings, LABELS).to_dict())
    assert data["agreement"]["fleiss_kappa"] == expected["fleiss_kappa_labels"] | {"categories": 3}
    assert data["agreement"]["krippendorff_alpha"] == json_safe(
        krippendorff_alpha(ratings, "nominal", LABELS).to_dict()
    )

    # label distribution over the counted (non-gold) answers
    flat = [lab for r in ratings for lab in r]
    assert data["label_distribution"]["counts"] == [flat.count(c) for c in LABELS]
    # 30 answers, 6 of them to the 2 golds; of the 24 to the 8 other texts, worker 2's 8 are left out
    assert data["answers"] == {
        "total": 30,
        "counted": 16,
        "items": 8,
        "gold_answers": 6,
        "excluded_workers": 1,
        "excluded_answers": 8,
        "waiting_workers": 0,
        "waiting_answers": 0,
    }

    # a chart per figure, its numbers those of the tables
    by_id = {c["id"]: c for c in data["charts"]}
    assert set(by_id) == {"labels", "agreement", "human_human", "words_selected"}
    assert by_id["human_human"]["series"][0]["values"] == [r["value"] for r in expected["human_human"]]
    assert by_id["human_human"]["series"][0]["lower"] == [r["ci_low"] for r in expected["human_human"]]
    assert by_id["agreement"]["series"][0]["values"][0] == data["agreement"]["fleiss_kappa"]["value"]
    assert sum(by_id["labels"]["series"][0]["values"]) == pytest.approx(1.0)
    assert all(c["csv"].startswith(f"/api/dashboards/studies/{study.uid}/csv/") for c in data["charts"])
    assert data["study_progress"]["responses"] == 30


def test_annotator_table(answered, client, researcher):
    study, workers, plan = answered
    client.force_login(researcher)
    rows = {r["worker"]: r for r in client.get(f"/api/dashboards/studies/{study.uid}/").json()["annotators"]}
    w0, w1, w2 = (rows[w.pseudonym_for(study.owner_id)] for w in workers)
    assert (w0["answers"], w1["answers"], w2["answers"]) == (10, 10, 10)
    assert (w0["median_time_ms"], w2["median_time_ms"]) == (1500, 3500)
    # worker 2 says "cannot decide" on positions 0, 3, 6, 9 minus the golds (0, 5): items 3, 6, 9 disagree
    assert w2["majority_agreement"] == pytest.approx(
        {
            "value": 5 / 8,
            "n": 8,
            "ci_low": w2["majority_agreement"]["ci_low"],
            "ci_high": w2["majority_agreement"]["ci_high"],
        }
    )
    # worker 2 is excluded, so worker 0 is compared with worker 1 alone, who always gives the document's
    # label as worker 0 does: agreement on all 8 texts
    assert w0["majority_agreement"]["value"] == 1.0 and w0["majority_agreement"]["n"] == 8
    assert 0 < w2["majority_agreement"]["ci_low"] < 5 / 8 < w2["majority_agreement"]["ci_high"] < 1
    # gold accuracy from the graded golds: workers 0 and 1 pass both, worker 2 misses both
    assert w0["gold"]["passed"] == 2 and w0["gold"]["seen"] == 2 and w0["gold"]["accuracy"] == 1.0
    assert w2["gold"]["accuracy"] == 0.0 and w2["gold"]["ci_high"] > 0
    assert (w0["status"], w1["status"], w2["status"]) == ("trusted", "trusted", "excluded")

    # worker 2's golds re-graded as passed and trust refreshed: they count, and worker 0 is compared only
    # where the other two agree: not on the three texts of the tie (items 3, 6, 9)
    Response.objects.filter(study=study, worker=workers[2], item__is_gold=True).update(gold_passed=True)
    grading.refresh_trust(study)
    rows = {r["worker"]: r for r in client.get(f"/api/dashboards/studies/{study.uid}/").json()["annotators"]}
    w0, w2 = rows[workers[0].pseudonym_for(study.owner_id)], rows[workers[2].pseudonym_for(study.owner_id)]
    assert w0["majority_agreement"]["value"] == 1.0 and w0["majority_agreement"]["n"] == 5
    assert w2["majority_agreement"]["value"] == 5 / 8 and w2["status"] == "trusted"


def test_excluded_and_waiting_workers_leave_the_figures_but_stay_in_the_table(answered, client, researcher):
    """Worker 2 is excluded (0 of 2 golds); a fourth worker who has answered one of the two golds is
    pending: their 3 answers wait. Both stay in the annotator table, and the page says how many answers
    of how many workers are left out and why; once the fourth worker answers the other gold (and trust
    is refreshed) their answers count."""
    study, workers, plan = answered
    late = make_worker("w3")
    golds = list(Item.objects.filter(study=study, is_gold=True).order_by("position"))
    texts = list(Item.objects.filter(study=study, is_gold=False).order_by("position")[:3])
    for item in [golds[0], *texts]:
        n = len(item.payload["words"])
        answer(item, late, 3, "negative", [1] * n, gold_passed=True if item.is_gold else None)
    grading.refresh_trust(study)
    client.force_login(researcher)
    data = client.get(f"/api/dashboards/studies/{study.uid}/").json()
    assert data["answers"] == {
        "total": 34,
        "counted": 16,
        "items": 8,
        "gold_answers": 7,
        "excluded_workers": 1,
        "excluded_answers": 8,
        "waiting_workers": 1,
        "waiting_answers": 3,
    }
    assert "8 answers of 1 worker excluded by their gold trust or for risk are left out" in " ".join(
        data["notes"]
    )
    assert any(
        n.startswith("3 answers of 1 worker short of the minimum number of golds wait") for n in data["notes"]
    )
    assert sorted(r["status"] for r in data["annotators"]) == ["excluded", "pending", "trusted", "trusted"]
    records = records_of(study, counted_plan(plan))
    negative = sum(a["label"] == "negative" for r in records for a in r["annotations"])
    assert data["label_distribution"]["counts"][1] == negative  # none of the 3 waiting "negative" answers
    assert data["maps"]["human_human"] == json_safe(agreement_report(records, max_maps=None)["human_human"])
    # human vs machine and the drill-down leave the same maps out
    run = machine_run(researcher, study.dataset)
    select = {"select": f"{run.pk}:attention (training)"}
    similarity = client.get(f"/api/dashboards/studies/{study.uid}/similarity/", select).json()
    assert similarity["answers"] == {
        "counted": 16,
        "excluded_workers": 1,
        "excluded_answers": 8,
        "waiting_workers": 1,
        "waiting_answers": 3,
    }
    assert any(
        n.startswith("3 answers of 1 worker short of the minimum number of golds wait")
        for n in similarity["notes"]
    )
    text = f"/api/dashboards/studies/{study.uid}/texts/{texts[0].pk}/"
    assert [h["annotator"] for h in client.get(text, select).json()["human"]] == [
        w.pseudonym_for(study.owner_id) for w in workers[:2]
    ]
    assert heatmap_annotators(texts[0]) == [
        w.pseudonym_for(study.owner_id) for w in workers[:2]
    ]  # the model run's page

    answer(golds[1], late, 3, "negative", [1] * len(golds[1].payload["words"]), gold_passed=True)
    grading.refresh_trust(study)
    data = client.get(f"/api/dashboards/studies/{study.uid}/").json()
    assert (data["answers"]["counted"], data["answers"]["waiting_workers"]) == (19, 0)
    assert not any("short of the minimum number of golds" in n for n in data["notes"])
    assert [h["annotator"] for h in client.get(text, select).json()["human"]] == [
        w.pseudonym_for(study.owner_id) for w in (*workers[:2], late)
    ]
    assert heatmap_annotators(texts[0]) == [w.pseudonym_for(study.owner_id) for w in (*workers[:2], late)]


def heatmap_annotators(item) -> list[str]:
    """Whose maps the heat-map page of a model run shows beside the machine's for ``item``'s document."""
    return [r.name.removeprefix("annotator ") for r in human_rows(item.document) if r.kind == "human"]


def test_notes_for_misleading_values():
    skewed = notes.chance_corrected_notes(
        "Fleiss κ", {"value": 0.1, "n": 200, "ci_low": 0.02, "ci_high": 0.2}, [0.9, 0.1], ["no", "yes"], 0.85
    )
    assert any("may mislead" in n and "90 %" in n and "85 % of pairs" in n for n in skewed)
    few = notes.chance_corrected_notes(
        "κ", {"value": 0.3, "n": 12, "ci_low": -0.1, "ci_high": 0.6}, [0.5, 0.5], ["a", "b"], 0.6
    )
    assert any("only 12 items" in n for n in few) and any("includes 0" in n for n in few)
    assert not any("may mislead" in n for n in few)
    undefined = notes.chance_corrected_notes("κ", {"value": None, "n": 5}, [1.0, 0.0], ["a", "b"], 1.0)
    assert undefined == [
        "κ is undefined: every rating is in one category, so there is no disagreement to measure."
    ]
    assert notes.auc_notes("AUC", {"value": 0.7, "n": 40, "skipped": 3, "texts": 43})[0].startswith(
        "AUC: 3 of 43 texts"
    )
    assert notes.observed_agreement(np.array([[3, 0], [2, 1], [1, 0]])) == pytest.approx((1 + 1 / 3) / 2)
    assert notes.few_texts_note([40, 12, 0, 33]) == [
        "The figures rest on as few as 12 texts: their intervals are wide."
    ]
    assert notes.few_texts_note([40, 0]) == []
    left_out = {"excluded_workers": 2, "excluded_answers": 5, "waiting_workers": 0, "waiting_answers": 0}
    assert notes.left_out_notes(left_out, "the maps") == [
        "5 answers of 2 workers excluded by their gold trust or for risk are left out of the maps."
    ]
    assert notes.left_out_notes(left_out | {"excluded_workers": 0, "excluded_answers": 0}) == []
    lexical = notes.lexical_notes(
        [
            ("m against HAM1", {"value": 0.8}, 300),
            ("m against CAM", {"value": 0.7}, 40),
            ("m against SAM", {"value": None}, 0),
        ]
    )
    assert lexical == [
        "m against SAM is undefined: one of the two selections has no tagged word.",
        "Lexical similarity compares distributions over 36 tags of as few as 40 selected words (m against CAM): "
        "read it as a rough indication.",
    ]


def test_skewed_labels_get_a_note_on_the_page(researcher, client):
    dataset = make_dataset(researcher, n=12)
    study = make_study(researcher, dataset, annotators_per_item=2)
    a, b = make_worker("a"), make_worker("b")
    for item in Item.objects.filter(study=study).order_by("position"):
        n = len(item.payload["words"])
        answer(item, a, 0, "positive", [1] + [0] * (n - 1))
        answer(item, b, 1, "negative" if item.position == 0 else "positive", [1] + [0] * (n - 1))
    client.force_login(researcher)
    data = client.get(f"/api/dashboards/studies/{study.uid}/").json()
    kappa = data["agreement"]["fleiss_kappa"]
    assert kappa["value"] < 0.1 and data["agreement"]["observed_agreement"] == pytest.approx(11 / 12)
    assert any(n.startswith("Fleiss κ may mislead") and "92 %" in n for n in data["notes"])
    assert any("Fleiss κ of word selections may mislead" in n for n in data["notes"])


def test_an_empty_study_has_a_dashboard(researcher, client):
    study = make_study(researcher, make_dataset(researcher, n=3))
    client.force_login(researcher)
    data = client.get(f"/api/dashboards/studies/{study.uid}/").json()
    assert data["maps"] is None and data["annotators"] == []
    assert data["agreement"]["fleiss_kappa"]["value"] is None
    assert any("no item has two or more ratings" in n for n in data["notes"])
    assert client.get(f"/studies/{study.uid}/dashboard/").status_code == 200


def test_gathering_takes_a_few_queries(answered, django_assert_max_num_queries):
    study, _, _ = answered
    with django_assert_max_num_queries(6):
        study_dashboard(study, n_boot=10)


def test_csv_downloads(answered, client, researcher):
    study, workers, plan = answered
    client.force_login(researcher)
    data = client.get(f"/api/dashboards/studies/{study.uid}/").json()
    chart = next(c for c in data["charts"] if c["id"] == "human_human")
    response = client.get(chart["csv"])
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0] == ["label", "mean ROC AUC", "mean ROC AUC lower", "mean ROC AUC upper"]
    values = chart["series"][0]
    assert [float(r[1]) for r in rows[1:]] == values["values"]
    assert [float(r[3]) for r in rows[1:]] == values["upper"]
    # the table beside the chart (found by its title, not its id) downloads its own columns and rows,
    # not the chart's, under a file name of its own
    table = next(t for t in data["tables"] if t["title"].startswith("Human–human behavioral similarity"))
    response = client.get(table["csv"])
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0] == ["truth", "score", "value", "ci_low", "ci_high", "n", "skipped"] == table["columns"]
    assert response.content.decode() == charts.to_csv(table["columns"], table["rows"])
    assert response["Content-Disposition"] != client.get(chart["csv"])["Content-Disposition"]
    table = next(t for t in data["tables"] if t["id"] == "annotators-table")
    rows = list(csv.reader(io.StringIO(client.get(table["csv"]).content.decode())))
    assert rows[0] == table["columns"] and len(rows) == 4
    assert {r[0] for r in rows[1:]} == {w.pseudonym_for(study.owner_id) for w in workers}
    assert client.get(f"/api/dashboards/studies/{study.uid}/csv/nothing.csv").status_code == 404
    assert charts.to_csv(["a"], [["=cmd()"], [-1.0], [0.25]]) == "a\r\n'=cmd()\r\n-1\r\n0.25\r\n"


def assert_figures_have_own_ids_and_csv(client, data: dict) -> list[str]:
    """Every chart and table of a dashboard's API answer has an id no other figure has, and its CSV
    link answers its own numbers: a chart's rows (label, values, bounds), a table's columns and rows.
    Returns the ids."""
    figures = [*data["charts"], *data["tables"]]
    ids = [f["id"] for f in figures]
    assert len(ids) == len(set(ids)), ids
    assert len({f["csv"] for f in figures}) == len(figures)
    for c in data["charts"]:
        assert client.get(c["csv"]).content.decode() == charts.to_csv(*charts.chart_rows(c)), c["id"]
    for t in data["tables"]:
        assert client.get(t["csv"]).content.decode() == charts.to_csv(t["columns"], t["rows"]), t["id"]
    return ids


def test_every_figure_of_both_dashboards_has_its_own_id_and_csv(answered, client, researcher, lexicon):
    study, _, _ = answered
    run = machine_run(researcher, study.dataset)
    client.force_login(researcher)
    data = client.get(f"/api/dashboards/studies/{study.uid}/").json()
    figures = ["labels", "agreement", "human_human", "words_selected"]
    assert assert_figures_have_own_ids_and_csv(client, data) == [
        *figures,
        *[f"{f}-table" for f in figures],
        "annotators-table",
    ]
    query = {"select": [f"{run.pk}:attention (training)", f"{run.pk}:grad_l2_1s"], "target": "gold"}
    data = client.get(f"/api/dashboards/studies/{study.uid}/similarity/", query).json()
    figures = ["behavioral", "lexical", "cssr", "pos", "share_alignment"]
    assert assert_figures_have_own_ids_and_csv(client, data) == [
        *figures,
        *[f"{f}-table" for f in figures],
        "human_human-table",
        "texts-table",
    ]


def test_a_repeated_figure_id_is_an_error(answered, monkeypatch):
    labels, series = ["a", "b"], [{"name": "n", "values": [1, 2]}]
    one = charts.chart("agreement", "Agreement", labels, series)
    tables = [charts.table("agreement-table", "Agreement", ["x"], [])]
    assert charts.figures([one], tables) == ([one], tables)
    with pytest.raises(ValueError, match="'agreement' is used twice: 'Agreement' and 'Again'"):
        charts.figures([one, charts.chart("agreement", "Again", labels, series)], [])
    with pytest.raises(ValueError, match="table 'agreement': a table's id ends in '-table'"):
        charts.table("agreement", "Agreement", ["x"], [])
    with pytest.raises(ValueError, match="chart 'agreement-table': ids ending in '-table' are for tables"):
        charts.chart("agreement-table", "Agreement", labels, series)
    with pytest.raises(ValueError, match="chart 'pf-table': ids ending in '-table' are for tables"):
        charts.scatter("pf-table", "PF", [], "x", "y")
    # the study dashboard checks its figures when it assembles them
    monkeypatch.setattr("annotate.dashboards.study._presentation", lambda r: ([one, one], []))
    with pytest.raises(ValueError, match="'agreement' is used twice"):
        study_dashboard(answered[0], n_boot=10)


# ---------------------------------------------------------------------------------------- access


def test_dashboards_are_for_the_owner_and_admins(
    answered, client, researcher, other_researcher, admin_user, annotator_user
):
    study, _, _ = answered
    item = Item.objects.filter(study=study, is_gold=False).first()
    pages = [
        f"/studies/{study.uid}/dashboard/",
        f"/studies/{study.uid}/dashboard/machine/",
        f"/studies/{study.uid}/dashboard/texts/{item.pk}/",
    ]
    apis = [
        f"/api/dashboards/studies/{study.uid}/",
        f"/api/dashboards/studies/{study.uid}/csv/agreement.csv",
        f"/api/dashboards/studies/{study.uid}/machine-options/",
        f"/api/dashboards/studies/{study.uid}/texts/{item.pk}/",
    ]
    for url in pages:
        assert client.get(url).status_code == 302  # to the sign-in page
    for url in apis:
        assert client.get(url).status_code == 403
    for user in (annotator_user, other_researcher):
        client.force_login(user)
        for url in pages + apis:
            assert client.get(url).status_code == 403, (user, url)
    for user in (researcher, admin_user):
        client.force_login(user)
        for url in pages + apis:
            assert client.get(url).status_code == 200, (user, url)
    assert client.get(f"/api/dashboards/studies/{uuid.uuid4()}/").status_code == 404
    assert client.get(f"/studies/{uuid.uuid4()}/dashboard/").status_code == 404


# ------------------------------------------------------------------------------------------- cache


def test_results_are_cached_until_the_data_changes(answered, client, researcher, monkeypatch):
    study, workers, plan = answered
    client.force_login(researcher)
    calls = []
    original = compute._computer

    def counting(name):
        compute = original(name)
        return lambda *args: calls.append(name) or compute(*args)

    monkeypatch.setattr(compute, "_computer", counting)
    first = client.get(f"/api/dashboards/studies/{study.uid}/").json()
    again = client.get(f"/api/dashboards/studies/{study.uid}/").json()
    assert calls == ["study"] and first["fingerprint"] == again["fingerprint"]
    assert DashboardCache.objects.filter(study=study, name="study").count() == 1

    # a new answer changes the fingerprint: recomputed, and the figures follow the data. Its worker has
    # answered one of the two golds (trust refreshed: pending), so the answer waits
    extra = make_worker("late")
    item = Item.objects.filter(study=study, is_gold=False).order_by("position").first()
    golds = list(Item.objects.filter(study=study, is_gold=True).order_by("position"))
    answer(golds[0], extra, 3, "positive", [0] * len(golds[0].payload["words"]), gold_passed=True)
    grading.refresh_trust(study)
    answer(item, extra, 3, "negative", [1] * len(item.payload["words"]))
    later = client.get(f"/api/dashboards/studies/{study.uid}/").json()
    assert calls == ["study", "study"] and later["fingerprint"] != first["fingerprint"]
    assert later["answers"]["counted"] == first["answers"]["counted"]
    assert later["answers"]["waiting_answers"] == first["answers"]["waiting_answers"] + 1
    # the other gold answered: recomputed, still waiting until trust is refreshed
    answer(golds[1], extra, 3, "positive", [0] * len(golds[1].payload["words"]), gold_passed=True)
    assert client.get(f"/api/dashboards/studies/{study.uid}/").json()["answers"]["waiting_answers"] == 1
    assert calls == ["study"] * 3
    # a trust refresh alone (the worker's row goes from pending to trusted, no answer changes) makes the
    # cached dashboard stale: the answer that waited now counts
    fp = cache.fingerprint(study, "study", {})
    assert grading.refresh_trust(study) == [grading.TrustChange(extra.pk, "pending", "trusted")]
    assert cache.fingerprint(study, "study", {}) != fp
    trusted = client.get(f"/api/dashboards/studies/{study.uid}/").json()
    assert calls == ["study"] * 4
    assert trusted["answers"]["counted"] == first["answers"]["counted"] + 1
    assert trusted["answers"]["waiting_answers"] == 0
    # a re-graded gold changes it too
    Response.objects.filter(study=study, gold_passed=False).update(gold_passed=True)
    client.get(f"/api/dashboards/studies/{study.uid}/")
    assert calls == ["study"] * 5
    assert DashboardCache.objects.filter(study=study, name="study").count() == 1


def test_a_large_study_is_computed_by_a_job_with_progress(
    answered, client, researcher, settings, monkeypatch, django_capture_on_commit_callbacks
):
    study, _, _ = answered
    settings.HATLAB_DASHBOARD_INLINE_RESPONSES = 5
    sent = []
    monkeypatch.setattr(
        jobs.compute_dashboard, "apply_async", lambda args, queue, **_: sent.append((args, queue))
    )
    client.force_login(researcher)
    url = f"/api/dashboards/studies/{study.uid}/"
    with django_capture_on_commit_callbacks(execute=True):
        pending = client.get(url)
    assert pending.status_code == 202
    body = pending.json()
    assert body["status"] == "queued" and body["progress"] == 0.0
    job = Job.objects.get(pk=body["job"])
    assert job.kind == "dashboard" and sent == [([job.pk], "cpu")]
    # asking again while it waits finds the same job
    with django_capture_on_commit_callbacks(execute=True):
        assert client.get(url).json()["job"] == job.pk
    assert len(sent) == 1

    progress = []
    from annotate.machine import progress as progress_module

    class Recording(progress_module.RowProgress):
        def __call__(self, fraction, message=""):
            progress.append(round(fraction, 3))
            super().__call__(fraction, message)

    monkeypatch.setattr(jobs, "RowProgress", Recording)
    jobs.compute_dashboard.apply(args=[job.pk]).get()
    job.refresh_from_db()
    assert job.status == "done" and job.progress == 1.0
    assert progress == sorted(progress) and progress[0] < 0.5 and progress[-1] == 1.0
    done = client.get(url)
    assert done.status_code == 200 and done.json()["status"] == "done"
    assert done.json()["fingerprint"] == job.result["fingerprint"]
    # running the job again is a no-op
    assert jobs.compute_dashboard.apply(args=[job.pk]).get() == job.result


def test_a_failed_job_is_reported_and_queued_again(
    answered, client, researcher, settings, monkeypatch, django_capture_on_commit_callbacks
):
    study, _, _ = answered
    settings.HATLAB_DASHBOARD_INLINE_RESPONSES = 5
    sent = []
    monkeypatch.setattr(jobs.compute_dashboard, "apply_async", lambda args, queue, **_: sent.append(args))
    monkeypatch.setattr(jobs, "compute_and_store", lambda *a, **k: 1 / 0)
    client.force_login(researcher)
    url = f"/api/dashboards/studies/{study.uid}/"
    with django_capture_on_commit_callbacks(execute=True):
        job_id = client.get(url).json()["job"]
    jobs.compute_dashboard.apply(args=[job_id]).get()
    assert Job.objects.get(pk=job_id).status == "failed"
    with django_capture_on_commit_callbacks(execute=True):
        body = client.get(url).json()
    assert body["status"] == "queued" and body["job"] == job_id and len(sent) == 2


# ------------------------------------------------------------------------------- human vs machine


def machine_run(
    owner, dataset, name="bilstm", seed=0, methods=("grad_l2_1s",), targets=("positive", "negative")
):
    """A finished run with training attention and explanations stored for every document."""
    run = ModelRun.objects.create(
        name=name, owner=owner, dataset=dataset, architecture="bilstm_attention", status="done"
    )
    rng = np.random.default_rng(seed)
    for doc in dataset.documents.order_by("id"):
        n = len(doc.words)
        predicted = "positive" if rng.random() < 0.5 else "negative"
        Prediction.objects.create(
            model_run=run,
            document=doc,
            label=predicted,
            probabilities={},
            attention=rng.random(n).round(4).tolist(),
        )
        for method in methods:
            for target in targets:
                Explanation.objects.create(
                    model_run=run,
                    document=doc,
                    method=method,
                    target=target,
                    scores=rng.normal(size=n).round(4).tolist(),
                )
    return run


@pytest.fixture
def lexicon(settings):
    settings.HATLAB_LEXICON_DIR = str(require_shared_data("opinion-lexicon-hu-liu"))
    return settings.HATLAB_LEXICON_DIR


def test_similarity_equals_the_engine(answered, client, researcher, lexicon):
    study, workers, plan = answered
    run = machine_run(researcher, study.dataset)
    client.force_login(researcher)
    options = client.get(f"/api/dashboards/studies/{study.uid}/machine-options/").json()["runs"]
    assert [m["key"] for m in options[0]["methods"]] == [
        f"{run.pk}:attention (training)",
        f"{run.pk}:grad_l2_1s",
    ]
    url = f"/api/dashboards/studies/{study.uid}/similarity/"
    query = {"select": [f"{run.pk}:attention (training)", f"{run.pk}:grad_l2_1s"], "target": "gold"}
    data = client.get(url, query).json()
    assert data["status"] == "done" and len(data["reports"]) == 2

    # the human maps that count: workers 0 and 1's (worker 2 is excluded by their gold trust)
    records = records_of(study, counted_plan(plan))
    for r in records:
        r["pos"] = tag_words(r["text"], r["words"])
    docs = {str(i.pk): i.document_id for i in Item.objects.filter(study=study)}
    labels = {
        str(i.pk): i.document.label for i in Item.objects.filter(study=study).select_related("document")
    }
    attention = {
        r["id"]: Prediction.objects.get(model_run=run, document_id=docs[r["id"]]).attention for r in records
    }
    gold_grad = {
        r["id"]: Explanation.objects.get(
            model_run=run, document_id=docs[r["id"]], target=labels[r["id"]]
        ).scores
        for r in records
    }
    for report, predictions in zip(data["reports"], (attention, gold_grad), strict=True):
        assert report == json_safe(
            similarity_report(records, predictions, lexicon, n_boot=1000, seed=0, progress=False)
        )
    assert data["selections"][1]["targets"] == ["negative", "positive"]
    # the API keeps the method code in "label" and adds the readable "name" beside it
    assert [s["label"] for s in data["selections"]] == [
        "bilstm · attention (training)",
        "bilstm · grad_l2_1s",
    ]
    assert [s["name"] for s in data["selections"]] == [
        "bilstm · Attention weights",
        "bilstm · Simple gradient of s, L2 norm",
    ]

    charts_by_id = {c["id"]: c for c in data["charts"]}
    assert set(charts_by_id) == {"behavioral", "lexical", "cssr", "pos", "share_alignment"}
    # the alignment with the people's shares is the engine's, on the same maps
    for sel, predictions in zip(data["selections"], (attention, gold_grad), strict=True):
        marks = [[a["map"] for a in r["annotations"]] for r in records]
        expected = shared_marks_alignment(marks, [predictions[r["id"]] for r in records], seed=0)
        assert sel["alignment"] == json_safe(expected)
    assert charts_by_id["share_alignment"]["series"][0]["values"] == [
        s["alignment"]["mean_c"]["value"] for s in data["selections"]
    ]
    behavioral = charts_by_id["behavioral"]
    assert behavioral["labels"] == ["HAM1", "HAM2", "CAM", "SAM"]  # two counted maps per text
    assert behavioral["series"][0]["values"] == [
        r["behavioral"]["value"] for r in data["reports"][0]["references"]
    ]
    assert behavioral["series"][1]["upper"] == [
        r["behavioral"]["ci_high"] for r in data["reports"][1]["references"]
    ]
    pos = charts_by_id["pos"]
    assert [s["name"] for s in pos["series"]] == [
        "humans (CAM)",
        "bilstm · Attention weights",
        "bilstm · Simple gradient of s, L2 norm",
        "corpus",
    ]
    assert sum(pos["series"][-1]["values"]) == pytest.approx(1.0, abs=0.05)
    texts = next(t for t in data["tables"] if t["id"] == "texts-table")
    first = texts["rows"][0][0]
    assert first["href"].startswith(f"/studies/{study.uid}/dashboard/texts/") and "select=" in first["href"]
    # the texts table's AUC against SAM is the engine's per-text AUC
    rec = records[0]
    sam = np.any([a["map"] for a in rec["annotations"]], axis=0).astype(int)
    assert texts["rows"][0][4] == pytest.approx(roc_auc_per_text([sam], [attention[rec["id"]]])[0])

    csv_text = client.get(charts_by_id["behavioral"]["csv"]).content.decode()
    assert csv_text.splitlines()[1].startswith("HAM1,")
    assert len(list(csv.reader(io.StringIO(csv_text)))) == 5  # a header and the four references


def test_similarity_without_lexicon_says_how_to_get_cssr(answered, client, researcher, settings, tmp_path):
    settings.HATLAB_LEXICON_DIR = ""
    settings.MEDIA_ROOT = tmp_path  # no uploaded lexicon
    study, _, _ = answered
    run = machine_run(researcher, study.dataset)
    client.force_login(researcher)
    data = client.get(
        f"/api/dashboards/studies/{study.uid}/similarity/", {"select": f"{run.pk}:attention (training)"}
    ).json()
    assert "cssr" not in {c["id"] for c in data["charts"]}
    assert any("lexicon settings page" in n for n in data["notes"])


def test_similarity_requests_are_validated(answered, client, researcher, other_researcher):
    study, _, _ = answered
    mine = machine_run(researcher, study.dataset)
    theirs = machine_run(other_researcher, study.dataset, name="theirs")
    elsewhere = machine_run(researcher, make_dataset(researcher, n=2, name="other"), name="elsewhere")
    client.force_login(researcher)
    url = f"/api/dashboards/studies/{study.uid}/similarity/"
    cases = [
        ({}, "select", "choose at least one"),
        ({"select": "grad"}, "select", "is not <model run id>:<method>"),
        ({"select": "x:grad"}, "select", "whole number"),
        ({"select": f"{theirs.pk}:grad_l2_1s"}, "select", "not a finished run of yours"),
        ({"select": f"{elsewhere.pk}:grad_l2_1s"}, "select", "not a finished run of yours"),
        ({"select": f"{mine.pk}:lime"}, "select", "no stored maps for method 'lime'"),
        ({"select": f"{mine.pk}:grad_l2_1s", "target": "mine"}, "target", "must be one of"),
        ({"select": [f"{mine.pk}:m{i}" for i in range(7)]}, "select", "at most 6"),
    ]
    for params, field, message in cases:
        response = client.get(url, params)
        assert response.status_code == 400, params
        assert message in " ".join(response.json()[field]), (params, response.json())
    page = client.get(f"/studies/{study.uid}/dashboard/machine/", {"select": f"{mine.pk}:lime"})
    assert page.status_code == 400 and "no stored maps for method" in page.content.decode()
    assert "theirs" not in client.get(f"/studies/{study.uid}/dashboard/machine/").content.decode()


def test_text_drill_down(answered, client, researcher):
    study, workers, plan = answered
    run = machine_run(researcher, study.dataset)
    item = Item.objects.filter(study=study, is_gold=False).select_related("document").order_by("position")[1]
    client.force_login(researcher)
    url = f"/api/dashboards/studies/{study.uid}/texts/{item.pk}/"
    data = client.get(url, {"select": [f"{run.pk}:attention (training)", f"{run.pk}:grad_l2_1s"]}).json()
    maps = [m for _, m in counted_plan(plan)[item.pk]]  # worker 2's map is left out: excluded
    assert [h["map"] for h in data["human"]] == maps
    assert [h["name"] for h in data["human"]] == ["HAM1", "HAM2"]
    assert [h["annotator"] for h in data["human"]] == [w.pseudonym_for(study.owner_id) for w in workers[:2]]
    assert data["cam"] == np.all(maps, axis=0).astype(int).tolist()
    assert data["sam"] == np.any(maps, axis=0).astype(int).tolist()
    assert data["words"] == item.payload["words"]
    prediction = Prediction.objects.get(model_run=run, document=item.document)
    attention, grad = data["machine"]
    assert attention["scores"] == prediction.attention and attention["target"] == prediction.label
    assert max(attention["levels"]) == 10 and min(attention["levels"]) >= 0
    assert attention["auc"]["SAM"] == pytest.approx(
        roc_auc_per_text([data["sam"]], [prediction.attention])[0]
    )
    # an explanation is taken for the predicted class, or with target=gold for the gold label
    assert grad["target"] == prediction.label
    gold = client.get(url, {"select": f"{run.pk}:grad_l2_1s", "target": "gold"}).json()["machine"][0]
    assert gold["target"] == item.document.label
    # a target outside the schema's enum, the empty one included, is refused rather than read as the default
    for bad in ("", "both"):
        refused = client.get(url, {"select": f"{run.pk}:grad_l2_1s", "target": bad})
        assert refused.status_code == 400 and refused.json()["target"] == [
            "must be one of ['predicted', 'gold']"
        ]
    assert (
        gold["scores"]
        == Explanation.objects.get(model_run=run, document=item.document, target=item.document.label).scores
    )
    assert data["previous"] is not None and data["next"] is not None
    gold_item = Item.objects.filter(study=study, is_gold=True).first()
    assert client.get(f"/api/dashboards/studies/{study.uid}/texts/999999/").status_code == 404
    other = make_study(researcher, make_dataset(researcher, n=2, name="two"))
    foreign = Item.objects.filter(study=other).first()
    assert client.get(f"/api/dashboards/studies/{study.uid}/texts/{foreign.pk}/").status_code == 404
    assert client.get(f"/api/dashboards/studies/{study.uid}/texts/{gold_item.pk}/").status_code == 200


def test_pages_escape_text_and_point_at_the_api(researcher, client):
    dataset = make_dataset(researcher, n=2)
    doc = dataset.documents.first()
    doc.external_id = "<b>bold</b>"
    doc.save()
    study = make_study(researcher, dataset, name="<i>study</i>")
    item = Item.objects.get(study=study, document=doc)
    client.force_login(researcher)
    html = client.get(f"/studies/{study.uid}/dashboard/texts/{item.pk}/").content.decode()
    assert "<b>bold</b>" not in html and "&lt;b&gt;bold&lt;/b&gt;" in html
    assert f'data-api="/api/dashboards/studies/{study.uid}/texts/{item.pk}/?target=predicted"' in html
    html = client.get(f"/studies/{study.uid}/dashboard/").content.decode()
    assert "<i>study</i>" not in html and "&lt;i&gt;study&lt;/i&gt;" in html
    assert f'data-api="/api/dashboards/studies/{study.uid}/"' in html and "hatlab/dashboard.js" in html


# --------------------------------------------------------------------------------- real YELP-HAT


def first_reviews(tmp_path, n=30):
    """The answer rows of the first ``n`` reviews of ham_part1(50words).csv, as a CSV outside the repo."""
    source = require_shared_data("yelp-hat", "raw", "ham_part1(50words).csv")
    with open(source, encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        rows, seen = [], []
        for row in reader:
            if row["Input.text"] not in seen:
                if len(seen) == n:
                    continue
                seen.append(row["Input.text"])
            rows.append(row)
        fields = reader.fieldnames
    path = tmp_path / "ham_part1(50words).csv"
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_yelphat_slice_equals_the_engine(tmp_path, researcher, client, lexicon):
    path = first_reviews(tmp_path)
    imported = import_yelphat([path], researcher, dataset_name="yelp50-slice")
    study = imported.study
    assert imported.documents == 30
    client.force_login(researcher)
    data = client.get(f"/api/dashboards/studies/{study.uid}/").json()
    records = read_raw(path)
    expected = json_safe(agreement_report(records, n_boot=1000, seed=0))
    assert data["maps"]["human_human"] == expected["human_human"]
    assert data["maps"]["k"] == expected["k"]
    assert data["maps"]["maps"] == expected["maps"] == 90
    kappa = expected["fleiss_kappa_labels"]
    assert data["agreement"]["fleiss_kappa"] | {"categories": kappa["categories"]} == kappa
    # the human–human similarity is in the range Sen et al. 2020 reports for Yelp-50 (about 0.73–0.75)
    assert all(0.6 < r["value"] < 0.85 for r in data["maps"]["human_human"])

    # human vs machine on the same maps: a machine map per review, stored as a model run's attention
    run = ModelRun.objects.create(
        name="probe",
        owner=researcher,
        dataset=imported.dataset,
        architecture="bilstm_attention",
        status="done",
    )
    rng = np.random.default_rng(1)
    by_text = {}
    for doc in imported.dataset.documents.all():
        scores = rng.random(len(doc.words)).round(5).tolist()
        Prediction.objects.create(model_run=run, document=doc, label=doc.label, attention=scores)
        by_text[doc.text] = scores
    got = client.get(
        f"/api/dashboards/studies/{study.uid}/similarity/", {"select": f"{run.pk}:attention (training)"}
    ).json()
    predictions = {r["id"]: by_text[r["text"]] for r in records}
    for r, tags in zip(
        records, tag_documents([r["text"] for r in records], [r["words"] for r in records]), strict=True
    ):
        r["pos"] = tags
    report = json_safe(similarity_report(records, predictions, lexicon, n_boot=1000, seed=0, progress=False))
    assert got["reports"][0]["references"] == report["references"]
    assert got["reports"][0]["tag_distribution"] == report["tag_distribution"]
    assert json.loads(json.dumps(got["human_human"])) == expected["human_human"]


def test_pos_tags_are_cached_per_document(answered, monkeypatch):
    study, _, _ = answered
    data = gather.study_data(study, with_text=True)
    records, _ = gather.map_records(data)
    tagged = []
    real = cache.tag_documents
    monkeypatch.setattr(
        cache, "tag_documents", lambda texts, spans: tagged.extend(texts) or real(texts, spans)
    )
    cache.ensure_pos_tags(study, records)
    assert len(tagged) == len(records) and all(len(r["pos"]) == len(r["words"]) for r in records)
    again = [dict(r) for r in records]
    cache.ensure_pos_tags(study, again)
    assert len(tagged) == len(records)
    assert [r["pos"] for r in again] == [r["pos"] for r in records]


def test_machine_maps_pick_the_class_and_skip_bad_rows(researcher):
    dataset = make_dataset(researcher, n=3)
    docs = list(dataset.documents.order_by("id"))
    run = ModelRun.objects.create(
        name="r", owner=researcher, dataset=dataset, architecture="cnn", status="done"
    )
    n = [len(d.words) for d in docs]
    Prediction.objects.create(model_run=run, document=docs[0], label="negative", attention=None)
    Explanation.objects.create(
        model_run=run, document=docs[0], method="m", target="negative", scores=[1.0] * n[0]
    )
    Explanation.objects.create(
        model_run=run, document=docs[0], method="m", target="positive", scores=[2.0] * n[0]
    )
    Explanation.objects.create(
        model_run=run, document=docs[1], method="m", target="positive", scores=[3.0] * (n[1] - 1)
    )
    Explanation.objects.create(
        model_run=run, document=docs[2], method="m", target="positive", scores=[4.0] * n[2]
    )
    sizes = {d.pk: len(d.words) for d in docs}
    labels = {d.pk: d.label for d in docs}
    maps, used, bad = gather.machine_maps(gather.Selection(run.pk, "m"), sizes, labels, "predicted")
    assert maps == {docs[0].pk: [1.0] * n[0], docs[2].pk: [4.0] * n[2]} and bad == 1
    assert used == {docs[0].pk: "negative", docs[2].pk: "positive"}
    maps, used, _ = gather.machine_maps(gather.Selection(run.pk, "m"), sizes, labels, "gold")
    assert used[docs[0].pk] == docs[0].label
    maps, used, bad = gather.machine_maps(gather.Selection(run.pk, gather.ATTENTION), sizes, labels)
    assert maps == {} and bad == 0


def test_the_attention_method_and_the_training_attention_are_one_row(answered, client, researcher):
    """The registry's ``attention`` method recomputes the training attention: the choices list it once,
    as the training attention, unless it covers more texts; a selection of either stays valid."""
    study, _, _ = answered
    both = machine_run(researcher, study.dataset, methods=("attention", "grad_l2_1s"))
    partial = machine_run(researcher, study.dataset, name="partial", methods=("attention",))
    Prediction.objects.filter(
        model_run=partial, document=study.dataset.documents.order_by("id").first()
    ).update(attention=None)
    listed = {
        run["run"]: [m["method"] for m in run["methods"]] for run in gather.machine_options([both, partial])
    }
    assert listed[both.pk] == [gather.ATTENTION, "grad_l2_1s"]
    assert listed[partial.pk] == [gather.ATTENTION, "attention"]  # the method covers one text more
    client.force_login(researcher)
    page = client.get(f"/studies/{study.uid}/dashboard/machine/").content.decode()
    assert page.count(f'value="{both.pk}:') == 2 and "Attention weights" in page
    assert f'value="{both.pk}:attention"' not in page and "grad_l2_1s</span>" not in page
    for method in ("attention", gather.ATTENTION):
        response = client.get(
            f"/api/dashboards/studies/{study.uid}/similarity/", {"select": f"{both.pk}:{method}"}
        )
        assert response.status_code == 200, (method, response.content[:300])
