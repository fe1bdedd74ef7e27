"""One trust rule for every path that reports a study's answers (Pappas & Popescu-Belis 2016 §3: answers
of judges under 70 % of the golds are out). In one sentence-rating study two qualified workers, one still
short of the minimum number of golds (pending: their answers wait) and one under the threshold (excluded)
rate the same sentences; the results page, its ratings export, the aggregated export, the responses
export (by its trust status column) and the study dashboard count the same answers, and all of them let
the pending worker in once trust says they qualify.
"""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.urls import reverse

from annotate.models import Item, QualityPolicy, Study, Worker, WorkerTrust
from annotate.quality import grading
from explain_engine.api import RATING_LEVELS, fleiss_kappa, json_safe
from tests.annotate.kinds.sentence_rating.test_kind import KIND, give, make_rating_study

pytestmark = pytest.mark.django_db

#: Ratings of the five sentences (document a: 0, 1, 2; document b: 0, 1) by each worker.
RATINGS = {
    "q1": (5, 1, 1, 3, 2),
    "q2": (5, 2, 1, 4, 2),
    "pending": (2, 2, 2, 2, 1),
    "failing": (1, 5, 5, 1, 5),
}
#: Gold answers of each worker to the four golds (gold level 5, 4, 1, 2; tolerance 0).
GOLD_ANSWERS = {
    "q1": (5, 4, 1, 2),  # 4 of 4: trusted, trust 1.0
    "q2": (5, 4, 1, 3),  # 3 of 4: trusted, trust 0.75
    "pending": (5, 4),  # 2 of 2, short of the minimum of 3 golds: pending
    "failing": (5, 1, 5, 5),  # 1 of 4 = 0.25 < 0.70: excluded
}
GOLD_LEVELS = (5, 4, 1, 2)


def answered_with_golds(item: Item, worker: Worker, rating: int) -> None:
    """Store an answer graded as the submission path grades it (the task kind's ``grade_gold``)."""
    response = give(item, worker, rating)
    response.gold_passed = KIND.grade_gold(item, response.answer)
    response.save(update_fields=["gold_passed"])


@pytest.fixture
def study(researcher):
    """Five sentences and four golds, minimum 3 golds; trust recomputed as the quality job does."""
    study = make_rating_study(researcher, aspects=[{"name": "overall"}], judges=4)
    QualityPolicy.objects.update_or_create(study=study, defaults={"min_golds": 3})
    study = Study.objects.get(pk=study.pk)  # no policy cached on the instance
    sentences = list(study.items.filter(is_gold=False).order_by("position"))
    assert len(sentences) == 5
    golds = [
        Item.objects.create(
            study=study,
            document=s.document,
            position=100 + k,
            payload=s.payload,
            secret={"gold": {"rating": level}},
            is_gold=True,
            responses_needed=4,
        )
        for k, (s, level) in enumerate(zip(sentences, GOLD_LEVELS, strict=False))
    ]
    for name, ratings in RATINGS.items():
        worker = Worker.objects.create(external_id=name)
        for gold, rating in zip(golds, GOLD_ANSWERS[name], strict=False):
            answered_with_golds(gold, worker, rating)
        for sentence, rating in zip(sentences, ratings, strict=True):
            answered_with_golds(sentence, worker, rating)
    grading.refresh_trust(study)
    status = dict(WorkerTrust.objects.filter(study=study).values_list("worker__external_id", "status"))
    assert status == {"q1": "trusted", "q2": "trusted", "pending": "pending", "failing": "excluded"}
    return study


def expected_counts(names: tuple[str, ...]) -> dict[int, list[int]]:
    """Per sentence (position order), how many of ``names``' answers give each level, worked by hand."""
    return {
        k: [sum(RATINGS[n][k] == level for n in names) for level in RATING_LEVELS]
        for k in range(len(RATINGS["q1"]))
    }


def read_csv(client, url: str) -> list[dict]:
    response = client.get(url)
    assert response.status_code == 200, url
    return list(
        csv.DictReader(
            io.StringIO(b"".join(response).decode() if response.streaming else response.content.decode())
        )
    )


def by_path(study, client) -> dict[str, dict]:
    """Per path: the level counts of each sentence (position order) and the total of answers it counts."""
    positions = dict(study.items.filter(is_gold=False).values_list("id", "position"))
    order = {item: k for k, item in enumerate(sorted(positions, key=positions.get))}

    def tally(labels: list) -> list[int]:
        return [sum(label == level for label in labels) for level in RATING_LEVELS]

    results = read_csv(client, reverse("study-results-table", args=[study.uid, "labels", "csv"]))
    exported = read_csv(client, reverse("study-export", args=[study.uid, "ratings", "csv"]))
    aggregated = read_csv(client, reverse("quality-aggregate", args=[study.uid, "csv"]))
    responses = read_csv(client, reverse("study-export", args=[study.uid, "responses", "csv"]))
    trusted: dict[int, list] = {k: [] for k in order.values()}
    for r in responses:  # the answers of trusted workers, by the export's own trust_status column
        if r["gold"] == "False" and r["trust_status"] == "trusted":
            trusted[order[int(r["item"])]].append(int(r["rating"]))
    paths = {
        "results page": {
            order[int(r["item"])]: [int(r[f"n_{level}"]) for level in RATING_LEVELS] for r in results
        },
        "ratings export": {
            order[int(r["item"])]: [int(r[f"n_{level}"]) for level in RATING_LEVELS] for r in exported
        },
        "aggregated export": {order[int(r["item"])]: tally(json.loads(r["labels"])) for r in aggregated},
        "responses export": {k: tally(labels) for k, labels in trusted.items()},
    }
    for name, rows in (("ratings export", exported), ("aggregated export", aggregated)):
        assert all(int(r["responses"]) == sum(paths[name][order[int(r["item"])]]) for r in rows), name
    return paths


def test_every_path_counts_the_same_answers_and_the_pending_ones_once_they_qualify(study, researcher, client):
    client.force_login(researcher)
    qualified = expected_counts(("q1", "q2"))
    for name, counts in by_path(study, client).items():
        assert counts == qualified, name
    results = client.get(reverse("study-results", args=[study.uid]))
    assert results.status_code == 200
    dashboard = client.get(f"/api/dashboards/studies/{study.uid}/").json()
    assert dashboard["answers"] == {
        "total": 4 * 5 + 4 + 4 + 2 + 4,  # every answer, golds included
        "counted": 10,  # q1 and q2 on five sentences
        "items": 5,
        "gold_answers": 14,
        "excluded_workers": 1,
        "excluded_answers": 5,
        "waiting_workers": 1,
        "waiting_answers": 5,
    }
    # levels 1 to 5 over q1 and q2's answers: 5 1 1 3 2 and 5 2 1 4 2
    assert dashboard["label_distribution"]["counts"] == [3, 3, 1, 1, 2]
    assert dashboard["label_distribution"]["counts"] == [
        sum(c[i] for c in qualified.values()) for i in range(5)
    ]
    ratings = [[RATINGS[n][k] for n in ("q1", "q2")] for k in range(5)]
    assert dashboard["agreement"]["fleiss_kappa"] == json_safe(
        fleiss_kappa(ratings, list(RATING_LEVELS)).to_dict()
    )
    # the confidence of the results page and of the exports: the same trust-weighted vote
    confidence = {
        name: [float(r["confidence"]) for r in read_csv(client, url)]
        for name, url in (
            ("results page", reverse("study-results-table", args=[study.uid, "labels", "csv"])),
            ("ratings export", reverse("study-export", args=[study.uid, "ratings", "csv"])),
            ("aggregated export", reverse("quality-aggregate", args=[study.uid, "csv"])),
        )
    }
    assert confidence["results page"] == pytest.approx(confidence["ratings export"], abs=1e-4)
    assert confidence["results page"] == pytest.approx(confidence["aggregated export"], abs=1e-4)

    # the pending worker answers a third gold right: trusted at 3 of 3, and every path counts their answers
    pending = Worker.objects.get(external_id="pending")
    third = Item.objects.get(study=study, is_gold=True, position=102)
    answered_with_golds(third, pending, GOLD_LEVELS[2])
    grading.refresh_trust(study)
    assert WorkerTrust.objects.get(study=study, worker=pending).status == "trusted"
    with_pending = expected_counts(("q1", "q2", "pending"))
    for name, counts in by_path(study, client).items():
        assert counts == with_pending, name
    dashboard = client.get(f"/api/dashboards/studies/{study.uid}/").json()
    assert (dashboard["answers"]["counted"], dashboard["answers"]["waiting_workers"]) == (15, 0)
    assert dashboard["label_distribution"]["counts"] == [4, 7, 1, 1, 2]  # and the pending 2 2 2 2 1
    assert dashboard["label_distribution"]["counts"] == [
        sum(c[i] for c in with_pending.values()) for i in range(5)
    ]
