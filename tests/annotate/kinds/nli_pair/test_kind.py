"""The nli_pair kind (e-SNLI-style pair highlighting): config and rules, items, answer validation,
gold grading, importing pairs, CAM/SAM and agreement per text, the annotator API with two annotators
per pair (no gold reaches them), the results page, exports, the import page and the demo."""

from __future__ import annotations

import csv
import io
import json
import uuid

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.exceptions import ValidationError

from annotate.corpus.imports import CorpusImportError
from annotate.crowd.providers.local.adapter import invite_path, make_invite
from annotate.dashboards.study import study_dashboard
from annotate.kinds.nli_pair.demo import seed_demo
from annotate.kinds.nli_pair.pairs import import_pairs, read_pairs
from annotate.kinds.nli_pair.results import pair_results, side_figures
from annotate.models import Dataset, Item, Response, Study
from annotate.quality.gold_review import retire_gold
from annotate.studies.lifecycle import start_study
from annotate.tasks import get_kind
from tests.annotate.conftest import PASSWORD

KIND = get_kind("nli_pair")
LABELS = ["entailment", "neutral", "contradiction"]
PAIRS_JSONL = (
    '{"id": "p1", "premise": "A man rides a bike .", "hypothesis": "A person cycles .", "label": "entailment"}\n'
    '{"id": "p2", "premise": "Two dogs sleep .", "hypothesis": "Dogs run .", "label": "contradiction"}\n'
    '{"id": "p3", "premise": "A woman sings .", "hypothesis": "She is famous .", "label": "neutral",'
    ' "gold": {"label": "neutral", "premise_map": [0, 0, 0, 0], "hypothesis_map": [0, 0, 1, 0]}}\n'
)
TIMINGS = {"read_ms": 900, "answer_ms": 500, "label_at_ms": 900, "first_highlight_at_ms": 1100}


def make_pair_study(owner, *, judges: int = 2, start: bool = True, config: dict | None = None) -> Study:
    dataset = Dataset.objects.create(owner=owner, name=f"pairs-{uuid.uuid4().hex[:6]}")
    import_pairs(dataset, PAIRS_JSONL.encode(), "jsonl", LABELS)
    study = Study.objects.create(
        name="nli",
        owner=owner,
        dataset=dataset,
        kind="nli_pair",
        config=KIND.validate_config(config or {}),
        annotators_per_item=judges,
        provider_config={"open_enrollment": True},
    )
    if start:
        start_study(study)
    return study


def unsaved_item(config: dict | None = None, gold: dict | None = None) -> Item:
    item = Item(
        payload={
            "premise": {"words": list("abcd"), "breaks": []},
            "hypothesis": {"words": list("xyz"), "breaks": []},
        },
        secret={} if gold is None else {"gold": gold},
    )
    item.study = Study(kind="nli_pair", config=KIND.validate_config(config or {}))
    return item


# ---- config ---------------------------------------------------------------------------------------


def test_config_defaults_follow_e_snli():
    config = KIND.validate_config({})
    assert config["labels"] == LABELS and config["gold_overlap"] == 0.5
    assert config["rules"] == {
        "entailment": {"premise": "required", "hypothesis": "allowed"},
        "neutral": {"premise": "forbidden", "hypothesis": "required"},
        "contradiction": {"premise": "required", "hypothesis": "required"},
    }
    custom = KIND.validate_config({"labels": ["yes", "no"], "rules": {"yes": {"hypothesis": "required"}}})
    study = Study(kind="nli_pair", config=custom)
    assert KIND.public_config(study)["rules"] == {
        "yes": {"premise": "allowed", "hypothesis": "required"},
        "no": {"premise": "allowed", "hypothesis": "allowed"},
    }


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"labels": ["only"]}, "labels"),
        ({"labels": ["a", "a"]}, "distinct"),
        ({"rules": {"maybe": {"premise": "required"}}}, "'maybe' is not one of the labels"),
        ({"rules": {"neutral": {"context": "required"}}}, "are not texts"),
        ({"rules": {"neutral": {"premise": "forbidden", "hypothesis": "forbidden"}}}, "both texts"),
        ({"rules": {"neutral": {"premise": "sometimes"}}}, "sometimes"),
        ({"gold_overlap": 2}, "gold_overlap"),
    ],
)
def test_bad_config_says_what_is_wrong(config, message):
    with pytest.raises(ValidationError) as exc:
        KIND.validate_config(config)
    assert message in json.dumps(exc.value.detail)


# ---- answers ----------------------------------------------------------------------------------------


def test_a_good_answer_is_cleaned():
    answer = {"label": "contradiction", "premise_map": [0, 1, 0, 0], "hypothesis_map": [1, 0, 0], "extra": 1}
    assert KIND.validate_answer(unsaved_item(), answer, TIMINGS) == {
        "label": "contradiction",
        "premise_map": [0, 1, 0, 0],
        "hypothesis_map": [1, 0, 0],
    }


@pytest.mark.parametrize(
    ("answer", "field", "message"),
    [
        ("entailment", "non_field_errors", "must be an object"),
        ({"label": "maybe", "premise_map": [1, 0, 0, 0], "hypothesis_map": [0, 0, 0]}, "label", "one of"),
        ({"label": "entailment", "premise_map": [1, 0, 0], "hypothesis_map": [0, 0, 0]}, "premise_map", "4 values"),
        ({"label": "entailment", "premise_map": [1, 0, 0, 0], "hypothesis_map": [0, 2, 0]}, "hypothesis_map", "0 or 1"),
        ({"label": "entailment", "premise_map": [0, 0, 0, 0], "hypothesis_map": [1, 0, 0]}, "premise_map", "at least one"),
        ({"label": "contradiction", "premise_map": [1, 0, 0, 0], "hypothesis_map": [0, 0, 0]}, "hypothesis_map", "at least one"),
        ({"label": "neutral", "premise_map": [1, 0, 0, 0], "hypothesis_map": [1, 0, 0]}, "premise_map", "allows no"),
        ({"label": "neutral", "premise_map": [0, 0, 0, 0], "hypothesis_map": [0, 0, 0]}, "hypothesis_map", "at least one"),
    ],
)  # fmt: skip
def test_bad_answers_name_the_field(answer, field, message):
    with pytest.raises(ValidationError) as exc:
        KIND.validate_answer(unsaved_item(), answer, TIMINGS)
    errors = exc.value.detail["answer"]
    assert field in errors and message in str(errors[field])


def test_read_first_is_checked_on_the_server():
    answer = {"label": "entailment", "premise_map": [1, 0, 0, 0], "hypothesis_map": [0, 0, 0]}
    for timings, field in [
        ({**TIMINGS, "first_highlight_at_ms": 800}, "first_highlight_at_ms"),
        ({"read_ms": 1, "answer_ms": 1}, "label_at_ms"),
        ({**TIMINGS, "first_highlight_at_ms": None}, "first_highlight_at_ms"),
    ]:
        with pytest.raises(ValidationError) as exc:
            KIND.validate_answer(unsaved_item(), answer, timings)
        assert field in exc.value.detail["timings"]
    open_rules = {"labels": ["a", "b"]}  # no rule: an answer without highlights needs no highlight time
    empty = {"label": "a", "premise_map": [0] * 4, "hypothesis_map": [0] * 3}
    assert KIND.validate_answer(unsaved_item(open_rules), empty, {"label_at_ms": 5})["label"] == "a"


def test_gold_grading_by_label_and_overlap_of_both_texts():
    gold = {"label": "contradiction", "premise_map": [1, 1, 0, 0], "hypothesis_map": [1, 0, 0]}
    item = unsaved_item(gold=gold)
    # 2 of 3 gold words and one more: F1 = 2*2/(3+3) = 0.67
    assert KIND.grade_gold(item, {**gold, "premise_map": [1, 0, 1, 0]}) is True
    assert KIND.grade_gold(item, {**gold, "premise_map": [0, 0, 1, 1], "hypothesis_map": [0, 1, 0]}) is False
    assert KIND.grade_gold(item, {**gold, "label": "neutral"}) is False
    strict = unsaved_item({"gold_overlap": 0.9}, gold=gold)
    assert KIND.grade_gold(strict, {**gold, "premise_map": [1, 0, 1, 0]}) is False
    assert KIND.grade_gold(unsaved_item(), gold) is None
    assert KIND.categories(item.study) == LABELS and KIND.agreement_value(gold) == "contradiction"


# ---- import -----------------------------------------------------------------------------------------


def test_read_pairs_from_csv_and_jsonl():
    data = "premise,hypothesis,label,source\nA cat naps .,An animal rests .,entailment,x\n\nDogs bark .,Cats meow .,\n"
    records = read_pairs(data.encode(), "csv", LABELS)
    assert [(r.line, r.id, r.text, r.label) for r in records] == [
        (2, "pair-2", "A cat naps .", "entailment"),
        (4, "pair-4", "Dogs bark .", ""),
    ]
    assert records[0].metadata == {"hypothesis": "An animal rests .", "source": "x"}
    jsonl = read_pairs(PAIRS_JSONL.encode(), "jsonl", LABELS)
    assert [r.id for r in jsonl] == ["p1", "p2", "p3"] and "gold" in jsonl[2].metadata
    gold_csv = 'premise,hypothesis,gold\nA b,C d,"{""label"": ""neutral""}"\n'
    assert read_pairs(gold_csv.encode(), "csv", LABELS)[0].metadata["gold"] == {"label": "neutral"}


@pytest.mark.parametrize(
    ("data", "fmt", "line", "field", "message"),
    [
        (b"premise,label\nA b,entailment\n", "csv", 1, "hypothesis", "no 'hypothesis' column"),
        (b"premise,hypothesis\nA b,C d\n  ,E f\n", "csv", 3, "premise", "the premise is empty"),
        (
            b"premise,hypothesis,label\nA b,C d,maybe\n",
            "csv",
            2,
            "label",
            "'maybe' is not a label of this study",
        ),
        (b"id,premise,hypothesis\n1,A b,C d\n1,E f,G h\n", "csv", 3, "id", "already used on line 2"),
        (b"premise,hypothesis,gold\nA b,C d,{oops\n", "csv", 2, "gold", "not valid JSON"),
        (b'{"premise": "A b", "hypothesis": "C d"}\n{"premise": "A b"\n', "jsonl", 2, None, "not valid JSON"),
        (b'{"premise": "A b"}\n', "jsonl", 1, "hypothesis", "every pair needs a hypothesis"),
        (b'{"premise": "A b", "hypothesis": 3}\n', "jsonl", 1, "hypothesis", "is empty"),
        (b'["A b", "C d"]\n', "jsonl", 1, None, "JSON object"),
        (b'{"premise": "A b", "hypothesis": "C d", "gold": [1]}\n', "jsonl", 1, "gold", "must be an object"),
        (b"premise,hypothesis\nA \xff,C d\n", "csv", 2, None, "UTF-8"),
        (b"", "csv", 1, None, "empty"),
        (b"\n\n", "jsonl", None, None, "holds no pairs"),
    ],
)
def test_import_errors_say_which_line_and_field(data, fmt, line, field, message):
    with pytest.raises(CorpusImportError) as exc:
        read_pairs(data, fmt, LABELS)
    assert (exc.value.line, exc.value.field) == (line, field)
    assert message in exc.value.message


@pytest.mark.django_db
def test_items_carry_both_texts_and_only_the_secret_holds_gold(researcher):
    study = make_pair_study(researcher)
    items = list(study.items.order_by("position"))
    assert [i.is_gold for i in items] == [False, False, True]
    assert items[0].payload == {
        "premise": {"words": ["A", "man", "rides", "a", "bike", "."], "breaks": []},
        "hypothesis": {"words": ["A", "person", "cycles", "."], "breaks": []},
    }
    assert items[0].secret == {"label": "entailment"}
    assert KIND.public_payload(items[2]) == items[2].payload and "gold" not in json.dumps(items[2].payload)
    assert items[2].secret["gold"]["hypothesis_map"] == [0, 0, 1, 0]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ({}, "pair 'x': metadata.hypothesis must be a text"),
        ({"hypothesis": "B c", "gold": {"label": "maybe"}}, "whose label is one of"),
        (
            {"hypothesis": "B c", "gold": {"label": "neutral", "premise_map": [0], "hypothesis_map": [1]}},
            "2 values",
        ),
        (
            {"hypothesis": "B c", "gold": {"label": "neutral", "premise_map": [1], "hypothesis_map": [1, 0]}},
            "allows no",
        ),
    ],
)
def test_bad_pairs_name_the_pair(researcher, metadata, message):
    dataset = Dataset.objects.create(owner=researcher, name="bad")
    dataset.documents.create(external_id="x", text="A", words=[[0, 1]], metadata=metadata)
    study = Study(owner=researcher, dataset=dataset, kind="nli_pair", config=KIND.validate_config({}))
    with pytest.raises(ValidationError) as exc:
        KIND.build_items(study)
    assert message in str(exc.value.detail)


# ---- CAM / SAM and agreement per text ---------------------------------------------------------------


def test_cam_and_sam_per_text_by_hand():
    records = [
        {"id": "a", "words": ["w"] * 4, "annotations": [{"map": [1, 1, 0, 0]}, {"map": [1, 0, 1, 0]}]},
        {"id": "none", "words": ["w"] * 5, "annotations": []},
        {"id": "b", "words": ["w"] * 2, "annotations": [{"map": [0, 1]}]},
        {
            "id": "c",
            "words": ["w"] * 3,
            "annotations": [{"map": [1, 1, 0]}, {"map": [1, 1, 0]}, {"map": [0, 1, 1]}],
        },
    ]
    figures = side_figures(records, n_boot=50)
    assert figures["cam"] == {"a": [1, 0, 0, 0], "c": [0, 1, 0]}
    assert figures["sam"] == {"a": [1, 1, 1, 0], "c": [1, 1, 1]}
    assert figures["k"]["CAM"]["value"] == pytest.approx(1.0) and figures["k"]["CAM"]["texts"] == 2
    assert figures["k"]["SAM"]["value"] == pytest.approx(3.0)
    # Word units of texts a and c: Fleiss κ from the engine's counts table
    assert figures["word_kappa"]["n"] == 7
    assert {(row["truth"], row["score"]) for row in figures["human_human"]} >= {
        ("HAM1", "HAM2"),
        ("HAM2", "HAM1"),
    }


def answered(client: Client, token: dict, answer_for) -> list[dict]:
    """Answer every item the annotator API hands ``client``; returns the payloads seen."""
    headers = {"HTTP_X_CSRFTOKEN": token["csrf_token"]}
    seen = []
    while True:
        raw = client.post(token["next_url"], "{}", content_type="application/json", **headers)
        text = raw.content.decode()
        assert "gold" not in text and "secret" not in text and "premise_map" not in text
        body = raw.json()
        if body.get("done"):
            return seen
        payload = body["item"]["payload"]
        assert set(payload) == {"premise", "hypothesis"}
        seen.append(payload)
        submit = token["submit_url_template"].replace("ASSIGNMENT", body["assignment"])
        data = {"submission_key": str(uuid.uuid4()), "answer": answer_for(payload), "timings": TIMINGS}
        saved = client.post(submit, json.dumps(data), content_type="application/json", **headers)
        assert saved.status_code == 201, saved.content
        assert "gold" not in saved.content.decode()


def page_token(client: Client, study: Study, name: str) -> dict:
    html = client.post(invite_path(study, make_invite(study, name)), follow=True).content.decode()
    assert "hatlab/kinds/nli_pair.js" in html and "secret" not in html and "premise_map" not in html
    return json.loads(
        html.split('<script id="hatlab-task" type="application/json">')[1].split("</script>")[0]
    )


def contradiction(payload: dict) -> dict:
    premise = [0] * len(payload["premise"]["words"])
    hypothesis = [0] * len(payload["hypothesis"]["words"])
    premise[1] = hypothesis[-2] = 1
    return {"label": "contradiction", "premise_map": premise, "hypothesis_map": hypothesis}


@pytest.fixture
def answered_study(researcher) -> Study:
    """Two annotators answer every pair through the annotator API; the first says contradiction and
    marks word 1 of the premise and the last-but-one of the hypothesis, the second the same and more."""
    study = make_pair_study(researcher, judges=2)

    def generous(payload: dict) -> dict:
        answer = contradiction(payload)
        answer["premise_map"][0] = 1
        return answer

    for name, answer_for in (("ann-1", contradiction), ("ann-2", generous)):
        client = Client(enforce_csrf_checks=True)
        token = page_token(client, study, name)
        assert len(answered(client, token, answer_for)) == 3
    return study


@pytest.mark.django_db
def test_two_annotators_per_pair_through_the_api(answered_study):
    study = answered_study
    assert Response.objects.filter(study=study).count() == 6
    assert set(study.items.values_list("responses_done", flat=True)) == {2}
    # The gold pair is neutral: both annotators fail it.
    assert list(Response.objects.filter(item__is_gold=True).values_list("gold_passed", flat=True)) == [
        False,
        False,
    ]
    # A third annotator finds nothing left.
    client = Client(enforce_csrf_checks=True)
    assert answered(client, page_token(client, study, "ann-3"), contradiction) == []


@pytest.fixture
def counted_study(answered_study) -> Study:
    """The answered study after its gold pair is retired. While it is in use, both annotators failed
    it (0 of 1, every gold of the study) and so none of their answers count."""
    assert pair_results(answered_study, n_boot=0)["answers"] == 0
    retire_gold(answered_study.items.get(is_gold=True))
    return answered_study


@pytest.mark.django_db
def test_results_per_text(counted_study):
    results = pair_results(counted_study, n_boot=50)
    assert (results["items"], results["answered"], results["answers"], results["workers"]) == (2, 2, 4, 2)
    first = results["pairs"][0]
    assert first["labels"] == ["contradiction", "contradiction"] and first["majority"] == "contradiction"
    assert first["premise_cam"] == ["man"] and first["premise_sam"] == ["A", "man"]
    assert first["hypothesis_cam"] == first["hypothesis_sam"] == ["cycles"]
    assert results["label_kappa"]["n"] == 2
    assert results["sides"]["premise"]["k"]["SAM"]["value"] == pytest.approx(2.0)
    assert results["sides"]["hypothesis"]["word_kappa"]["value"] == pytest.approx(1.0)


@pytest.mark.django_db
def test_results_page_and_exports(counted_study, researcher, other_researcher):
    study = counted_study
    client = Client()
    client.login(username=researcher.username, password=PASSWORD)
    html = client.get(reverse("study-results", args=[study.uid])).content.decode()
    assert "Results: NLI pairs" in html and "premise" in html and "hypothesis" in html and "Fleiss κ" in html
    detail = client.get(reverse("study-detail", args=[study.uid])).content.decode()
    assert reverse("study-results", args=[study.uid]) in detail
    raw = client.get(reverse("study-results-table", args=[study.uid, "responses", "csv"])).content.decode()
    rows = list(csv.DictReader(io.StringIO(raw)))
    assert len(rows) == 6 and rows[0]["premise_map"] == "0 1 0 0 0 0"
    assert json.loads(rows[0]["premise_highlighted"]) == ["man"]
    assert json.loads(rows[0]["hypothesis_highlighted"]) == ["cycles"]
    lines = client.get(
        reverse("study-results-table", args=[study.uid, "responses", "jsonl"])
    ).content.decode()
    first = json.loads(lines.splitlines()[0])
    assert first["hypothesis_map"] == [0, 0, 1, 0] and first["label"] == "contradiction"
    pairs = client.get(reverse("study-results-table", args=[study.uid, "pairs", "jsonl"])).content.decode()
    assert [json.loads(line)["premise_cam"] for line in pairs.splitlines()] == [["man"], ["dogs"]]
    # The pages every study has work for a pair study too.
    generic = {
        what: b"".join(client.get(reverse("study-export", args=[study.uid, what, "jsonl"])).streaming_content)
        for what in ("responses", "pairs")
    }
    assert [json.loads(line)["premise_highlighted"] for line in generic["responses"].splitlines()][0] == [
        "man"
    ]
    assert len(generic["responses"].splitlines()) == 6 and generic["pairs"].decode() == pairs
    assert client.get(reverse("study-export", args=[study.uid, "items", "jsonl"])).status_code == 404
    assert client.get(reverse("study-dashboard", args=[study.uid])).status_code == 200
    dashboard = study_dashboard(study, n_boot=20)
    assert dashboard["agreement"]["fleiss_kappa"]["n"] == 2
    other = Client()
    other.login(username=other_researcher.username, password=PASSWORD)
    assert other.get(reverse("study-results", args=[study.uid])).status_code == 404
    assert client.get(f"/studies/{study.uid}/results/labels.csv").status_code == 404


@pytest.mark.django_db
def test_import_page_creates_dataset_and_study_or_nothing(researcher):
    client = Client()
    client.login(username=researcher.username, password=PASSWORD)
    url = reverse("nli-pair-import")
    form = {"name": "snli bits", "labels": ", ".join(LABELS), "annotators_per_item": 2, "time_limit_min": 20}
    form["provider"] = "local"
    bad = io.BytesIO(b"premise,hypothesis,label\nA b,C d,entailment\nE f,,neutral\n")
    bad.name = "pairs.csv"
    page = client.post(url, {**form, "file": bad}).content.decode()
    assert "line 3, field &#x27;hypothesis&#x27;: the hypothesis is empty" in page
    assert not Dataset.objects.filter(name="snli bits").exists()
    good = io.BytesIO(PAIRS_JSONL.encode())
    good.name = "pairs.jsonl"
    response = client.post(url, {**form, "file": good})
    study = Study.objects.get(name="snli bits")
    assert response.status_code == 302 and study.kind == "nli_pair" and study.dataset.documents.count() == 3
    assert study.config["labels"] == LABELS and study.status == Study.Status.DRAFT


@pytest.mark.django_db
def test_demo_seeds_a_running_pair_study(researcher):
    (study,) = seed_demo(researcher, 5)
    assert study.kind == "nli_pair" and study.status == Study.Status.RUNNING
    assert study.items.count() == 8 and study.items.filter(is_gold=True).count() == 1
    assert seed_demo(researcher, 5) == [study]


@pytest.mark.django_db
def test_results_before_and_with_few_answers(researcher):
    study = make_pair_study(researcher, judges=2)
    empty = pair_results(study, n_boot=20)
    assert (empty["answers"], empty["answered"]) == (0, 0) and empty["pairs"][0]["premise_cam"] is None
    client = Client()
    client.login(username=researcher.username, password=PASSWORD)
    assert client.get(reverse("study-results", args=[study.uid])).status_code == 200
    # One answer to the first pair only: it is counted, but one map makes no CAM or SAM.
    one = Client(enforce_csrf_checks=True)
    token = page_token(one, study, "ann-1")
    headers = {"HTTP_X_CSRFTOKEN": token["csrf_token"]}
    first = one.post(token["next_url"], "{}", content_type="application/json", **headers).json()
    assert first["item"]["payload"]["premise"]["words"][0] == "A"
    one.post(
        token["submit_url_template"].replace("ASSIGNMENT", first["assignment"]),
        json.dumps(
            {
                "submission_key": str(uuid.uuid4()),
                "answer": contradiction(first["item"]["payload"]),
                "timings": TIMINGS,
            }
        ),
        content_type="application/json",
        **headers,
    )
    # The annotator has answered no gold pair yet: pending, so the answer waits (Pappas &
    # Popescu-Belis 2016 §3 keep only judges who passed the golds).
    assert [p["answers"] for p in pair_results(study, n_boot=20)["pairs"]] == [0, 0]
    # Without a gold pair in use nobody can be judged, and every answer counts.
    retire_gold(study.items.get(is_gold=True))
    results = pair_results(study, n_boot=20)
    assert [p["answers"] for p in results["pairs"]] == [1, 0]
    assert results["pairs"][0]["premise_sam"] is None and results["sides"]["premise"]["word_kappa"] is None
    assert client.get(reverse("study-results", args=[study.uid])).status_code == 200


@pytest.mark.django_db
def test_import_page_carries_an_adaptive_policy(researcher):
    """The policy on the import form: a maximum below the minimum is said on its field and makes neither
    dataset nor study; map agreement (an NLI pair rule) is stored and comes back on the edit form."""
    client = Client()
    client.login(username=researcher.username, password=PASSWORD)
    url = reverse("nli-pair-import")
    assert "Adaptive: stopping rule" in client.get(url).content.decode()
    form = {
        "name": "adaptive pairs", "labels": ", ".join(LABELS), "annotators_per_item": 2, "time_limit_min": 20,
        "provider": "local", "redundancy": "adaptive", "redundancy_min": 3, "redundancy_max": 2,
        "redundancy_rule": "map_agreement", "redundancy_threshold": 0.6,
    }  # fmt: skip

    def pairs() -> io.BytesIO:
        upload = io.BytesIO(PAIRS_JSONL.encode())
        upload.name = "pairs.jsonl"
        return upload

    refused = client.post(url, {**form, "file": pairs()})
    assert "must be at least min (3)" in str(refused.context["form"].errors["redundancy_max"])
    assert not Dataset.objects.filter(name="adaptive pairs").exists() and not Study.objects.exists()
    assert client.post(url, {**form, "redundancy_max": 4, "file": pairs()}).status_code == 302
    study = Study.objects.get(name="adaptive pairs")
    assert study.config["redundancy"] == {
        "mode": "adaptive", "min": 3, "max": 4, "rule": "map_agreement", "threshold": 0.6,
    }  # fmt: skip
    assert study.annotators_per_item == 4
    initial = client.get(reverse("study-edit", args=[study.uid])).context["form"].initial
    assert (initial["redundancy"], initial["redundancy_min"], initial["redundancy_rule"]) == (
        "adaptive", 3, "map_agreement",
    )  # fmt: skip
