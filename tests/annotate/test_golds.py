"""Golds from the pages: the gold editor (the kind's task page in gold mode) marks, changes and removes a
gold answer and grades the answers already given; a file of golds is imported all or nothing, each bad
row said in a sentence with its line; a draft's items are prepared for golds and the start keeps them."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from annotate.models import Item, Response
from annotate.quality.gold_import import import_golds
from annotate.quality.gold_mixing import GOLD_CAPACITY
from annotate.quality.gold_review import set_gold
from annotate.studies.drafts import prepare_items
from annotate.studies.lifecycle import StudyStateError, start_study
from annotate.tasks import get_kind
from tests.annotate.conftest import make_dataset, make_study
from tests.annotate.kinds.sentence_rating.test_kind import make_rating_study
from tests.annotate.test_api import Annotator, body_for, task_json
from tests.annotate.test_study_management import page_text

pytestmark = pytest.mark.django_db


@pytest.fixture
def browser(researcher) -> Client:
    client = Client()
    client.force_login(researcher)
    return client


def save(client: Client, study, item, answer):
    return client.post(
        reverse("study-gold-save", args=[study.uid, item.pk]),
        json.dumps({"answer": answer, "timings": {}, "submission_key": "x"}),
        content_type="application/json",
    )


def test_the_gold_editor_is_the_kinds_task_page_in_gold_mode(browser, researcher, dataset):
    study = make_study(researcher, dataset, annotators_per_item=2, name="golds")
    item = Item.objects.filter(study=study).order_by("position").first()
    page = browser.get(reverse("study-gold-editor", args=[study.uid, item.pk])).content.decode()
    task = task_json(page)
    assert task["mode"] == "gold" and task["kind"] == "highlight"
    assert task["next_url"] == reverse("study-gold-item", args=[study.uid, item.pk])
    assert "hatlab/kinds/highlight.js" in page and "Gold editor, item 1." in page
    shown = browser.post(task["next_url"], content_type="application/json").json()
    assert shown["item"]["payload"] == item.payload and shown["assignment"] == str(item.pk)


def test_a_gold_answer_from_the_editor_grades_the_answers_already_given(browser, researcher, dataset):
    study = make_study(researcher, dataset, annotators_per_item=1, name="golds")
    worker = Annotator(study, "w")
    held = worker.next().json()
    assert worker.submit(held["assignment"], body_for(held["item"]["payload"], "positive")).status_code == 201
    item = Item.objects.get(assignments__uid=held["assignment"])
    n = len(item.payload["words"])
    wrong = save(browser, study, item, {"label": "great", "map": [0] * n})
    assert wrong.status_code == 400
    message = wrong.json()["errors"]["answer"][0]
    assert message == "The label must be one of positive, negative, cannot decide."
    short = save(browser, study, item, {"label": "positive", "map": [1]})
    assert short.json()["errors"]["answer"][0].startswith(f"The map must be a list of {n} values")
    assert not Item.objects.get(pk=item.pk).is_gold
    gold_map = [0] * n
    gold_map[-1] = 1  # the worker's answer highlighted the last word too
    saved = save(browser, study, item, {"label": "positive", "map": gold_map})
    assert saved.status_code == 200 and saved.json()["next"]["done"] is True
    assert "is a gold item with the answer label “positive”" in saved.json()["next"]["completion"]["message"]
    item.refresh_from_db()
    assert item.is_gold and item.secret["gold"] == {"label": "positive", "map": gold_map}
    assert Response.objects.get(item=item).gold_passed is True
    save(browser, study, item, {"label": "negative", "map": gold_map})  # fixed the same way
    assert Response.objects.get(item=item).gold_passed is False
    listed = page_text(browser.get(reverse("study-golds", args=[study.uid])))
    assert "label “negative”" in listed and "Change the answer" in listed
    browser.post(reverse("study-gold-remove", args=[study.uid, item.pk]))
    item.refresh_from_db()
    assert not item.is_gold and "gold" not in item.secret
    assert Response.objects.get(item=item).gold_passed is None


def test_golds_belong_to_the_studys_owner(researcher, other_researcher, dataset):
    study = make_study(researcher, dataset, name="mine")
    item = Item.objects.filter(study=study).first()
    other = Client()
    other.force_login(other_researcher)
    assert other.get(reverse("study-golds", args=[study.uid])).status_code == 404
    assert save(other, study, item, {"label": "positive", "map": [1]}).status_code == 404
    assert not Item.objects.get(pk=item.pk).is_gold


def csv_file(text: str, name: str = "golds.csv") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode(), content_type="text/csv")


def test_a_file_of_golds_is_imported_all_or_nothing(browser, researcher, dataset):
    study = make_study(researcher, dataset, name="import")
    items = list(Item.objects.filter(study=study).select_related("document").order_by("position"))
    first, third = items[0], items[2]
    url = reverse("study-golds-import", args=[study.uid])
    page = page_text(browser.get(reverse("study-golds", args=[study.uid])))
    assert "label : the gold label" in page and "words : the numbers of the words" in page
    bad = browser.post(url, {"file": csv_file(
        f"document,item,label,words\n{first.document.external_id},,positive,1 2\nnope,,positive,1\n"
        f",3,meh,1\n,99,positive,1\n,2,positive,0 1\n"
    )})  # fmt: skip
    assert bad.status_code == 400
    said = page_text(bad)
    assert "Nothing was imported." in said
    assert "Line 3: no item of this study has document nope." in said
    assert "Line 4: The label must be one of positive, negative, cannot decide." in said
    assert "Line 5: there is no item 99 in this study (items are numbered 1 to 6)." in said
    assert "Line 6: words must list word numbers from 1 to" in said and "0 is not one" in said
    assert not Item.objects.filter(study=study, is_gold=True).exists()
    good = browser.post(url, {"file": csv_file(
        f"document,item,label,words\n{first.document.external_id},,positive,1 2\n,3,negative,2\n"
    )})  # fmt: skip
    assert good.status_code == 302
    first.refresh_from_db()
    third.refresh_from_db()
    assert first.secret["gold"]["label"] == "positive" and first.secret["gold"]["map"][:3] == [1, 1, 0]
    assert third.secret["gold"]["label"] == "negative" and third.secret["gold"]["map"][:3] == [0, 1, 0]
    lines = f'{{"item": 3, "label": "positive", "words": [1]}}\n{{"document": "{first.document.external_id}", "label": "cannot decide"}}\n'
    assert import_golds(study, lines, "jsonl").errors == []
    third.refresh_from_db()
    first.refresh_from_db()
    assert third.secret["gold"]["label"] == "positive" and first.secret["gold"]["map"] == [0] * len(
        first.payload["words"]
    )


def test_sentence_rating_golds_by_review_aspect_and_sentence(researcher):
    study = make_rating_study(researcher)
    result = import_golds(
        study, "document,aspect,sentence,rating\na,performance,1,very well\nb,overall,2,2\n", "csv"
    )
    assert result.errors == [] and result.saved == 2
    golds = {(g.document.external_id, g.payload["aspect"], g.payload["sentence_index"]): g.secret["gold"]
             for g in Item.objects.filter(study=study, is_gold=True).select_related("document")}  # fmt: skip
    assert golds == {("a", "performance", 0): {"rating": 5}, ("b", "overall", 1): {"rating": 2}}
    refused = import_golds(study, "document,aspect,sentence,rating\na,overall,9,3\na,overall,1,lots\n", "csv")
    assert refused.errors == [
        "Line 2: no item of this study has document a, aspect overall, sentence 9.",
        "Line 3: rating must be 1 to 5 or one of not at all, a little, moderately, rather well, very well; not 'lots'.",
    ]


def test_a_drafts_prepared_items_carry_their_golds_into_the_run(browser, researcher):
    dataset = make_dataset(researcher, n=4, name="small")
    study = make_study(researcher, dataset, start=False, name="draft golds")
    golds_page = page_text(browser.get(reverse("study-golds", args=[study.uid])))
    assert "Prepare items" in golds_page
    browser.post(reverse("study-golds-prepare", args=[study.uid]))
    item = Item.objects.filter(study=study).order_by("position").last()
    set_gold(item, {"label": "negative", "map": [1] + [0] * (len(item.payload["words"]) - 1)})
    study.config = {**study.config, "gold_rate": 0.25}
    study.save(update_fields=["config"])
    start_study(study)
    assert Item.objects.filter(study=study).count() == 4
    item.refresh_from_db()
    assert item.is_gold and item.responses_needed == GOLD_CAPACITY  # mixed in at the rate: open to everyone
    with pytest.raises(StudyStateError, match="only a draft can be prepared; this study is running"):
        prepare_items(study)


def test_forced_choice_golds_grade_the_choice():
    kind = get_kind("justify")
    item = Item(secret={"gold": {"choice": "positive", "confident": True}})
    assert kind.grade_gold(item, {"choice": "positive", "confident": False}) is True
    assert kind.grade_gold(item, {"choice": "negative", "confident": True}) is False
    assert kind.grade_gold(Item(secret={}), {"choice": "positive", "confident": True}) is None
