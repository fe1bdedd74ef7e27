"""Managing a study from the pages: pause takes the answers to items already handed out and hands out no
new one; finish asks first and says what it does; a draft's every setting can be edited, a draft deleted,
any study cloned into a new draft; every kind has a create form whose errors are in words; forced-choice
studies are checked before they are made."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from annotate.models import Assignment, Dataset, Document, Item, Study
from annotate.quality.gold_review import set_gold
from annotate.studies.drafts import prepare_items
from annotate.studies.lifecycle import start_study
from annotate.tasks import TASK_KINDS
from tests.annotate.conftest import make_dataset, make_study, make_user
from tests.annotate.kinds.forced_choice.test_generation import justify_rows
from tests.annotate.kinds.sentence_rating.test_kind import TEXT_A, TEXT_B
from tests.annotate.test_api import Annotator, body_for

pytestmark = pytest.mark.django_db


def page_text(response) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", response.content.decode()).split())


@pytest.fixture
def browser(researcher) -> Client:
    client = Client()
    client.force_login(researcher)
    return client


# ------------------------------------------------------------------ pause and finish


def test_a_paused_study_takes_the_answer_in_hand_and_hands_out_nothing_new(researcher, dataset):
    study = make_study(researcher, dataset, annotators_per_item=1, name="paused")
    holder, newcomer = Annotator(study, "holder"), Annotator(study, "newcomer")
    held = holder.next().json()
    Study.objects.filter(pk=study.pk).update(status=Study.Status.PAUSED)
    again = holder.next()  # a reload of the page gets the same item back
    assert again.status_code == 200 and again.json()["assignment"] == held["assignment"]
    entry = holder.client.get(reverse("work-entry", args=[study.uid]))
    assert 'id="hatlab-task"' in entry.content.decode()  # the task page, not "paused"
    refused = newcomer.next()
    assert refused.status_code == 409
    assert refused.json()["errors"]["study"] == [
        "the study is paused: no new items are handed out until it is resumed"
    ]
    assert (
        "This study is paused"
        in newcomer.client.get(reverse("work-entry", args=[study.uid])).content.decode()
    )
    stored = holder.submit(held["assignment"], body_for(held["item"]["payload"]))
    assert stored.status_code == 201
    assert holder.next().status_code == 409  # nothing more in hand: nothing more to do
    assert Assignment.objects.filter(study=study, status=Assignment.Status.ASSIGNED).count() == 0


def test_a_finished_study_refuses_the_answer_in_hand(researcher, dataset):
    study = make_study(researcher, dataset, annotators_per_item=1, name="finished")
    holder = Annotator(study, "holder")
    held = holder.next().json()
    Study.objects.filter(pk=study.pk).update(status=Study.Status.FINISHED)
    late = holder.submit(held["assignment"], body_for(held["item"]["payload"]))
    assert late.status_code == 409 and "finished" in late.json()["errors"]["study"][0]


def test_finish_says_what_it_does_and_waits_for_the_confirmation(browser, researcher, dataset):
    study = make_study(researcher, dataset, annotators_per_item=2, name="to finish")
    Annotator(study, "a").next()
    Annotator(study, "b").next()
    detail = browser.get(reverse("study-detail", args=[study.uid])).content.decode()
    assert reverse("study-finish", args=[study.uid]) in detail
    unconfirmed = browser.post(reverse("study-action", args=[study.uid, "finish"]))
    assert unconfirmed.status_code == 302 and unconfirmed["Location"] == reverse(
        "study-finish", args=[study.uid]
    )
    study.refresh_from_db()
    assert study.status == Study.Status.RUNNING
    confirm = page_text(browser.get(reverse("study-finish", args=[study.uid])))
    assert "2 item(s) that workers hold now will not be accepted" in confirm
    assert "cannot be undone" in confirm and "clone the study" in confirm
    browser.post(reverse("study-action", args=[study.uid, "finish"]), {"confirmed": "1"})
    study.refresh_from_db()
    assert study.status == Study.Status.FINISHED


# ------------------------------------------------------------------ drafts: edit, delete, clone


def highlight_form(dataset, **changes) -> dict:
    return {
        "kind": "highlight", "name": "edited", "dataset": dataset.pk, "mode": "free",
        "labels": "positive, negative", "annotators_per_item": 4, "instructions": "New words.",
        "time_limit_min": 12, "max_items_per_worker": 3, "gold_rate": "0.2", "provider": "local",
        **changes,
    }  # fmt: skip


def test_every_setting_of_a_draft_can_be_edited(browser, researcher, dataset):
    other = make_dataset(researcher, n=3, name="other texts")
    study = make_study(researcher, dataset, start=False, name="draft")
    Study.objects.filter(pk=study.pk).update(
        provider_config={"open_enrollment": True, "mturk": {"reward": "0.5"}}
    )
    url = reverse("study-edit", args=[study.uid])
    form = browser.get(url).content.decode()
    assert 'value="draft"' in form and "positive, negative, cannot decide" in form  # today's values
    saved = browser.post(url, highlight_form(other))
    assert saved.status_code == 302, page_text(saved)
    study.refresh_from_db()
    assert (study.name, study.dataset_id, study.annotators_per_item, study.time_limit_s) == (
        "edited",
        other.pk,
        4,
        720,
    )
    assert study.instructions == "New words."
    assert study.config["mode"] == "free" and study.config["labels"] == ["positive", "negative"]
    assert study.config["max_items_per_worker"] == 3 and study.config["gold_rate"] == 0.2
    # open enrollment was unticked; the provider's own settings stay
    assert study.provider_config == {"mturk": {"reward": "0.5"}}


def test_an_edit_in_words_and_only_of_a_draft(browser, researcher, dataset):
    study = make_study(researcher, dataset, start=False, name="draft")
    url = reverse("study-edit", args=[study.uid])
    too_short = page_text(browser.post(url, highlight_form(dataset, time_limit_min=0)))
    assert "Ensure this value is greater than or equal to 1." in too_short
    one_label = page_text(browser.post(url, highlight_form(dataset, labels="positive")))
    assert "labels: Ensure this field has at least 2 elements." not in one_label  # said on the field itself
    assert "Ensure this field has at least 2 elements." in one_label
    study.refresh_from_db()
    assert study.name == "draft"  # nothing saved
    start_study(study)
    refused = browser.post(url, highlight_form(dataset), follow=True)
    assert "Only a draft can be changed; this study is running" in page_text(refused)
    study.refresh_from_db()
    assert study.name == "draft"


def test_editing_a_prepared_draft_keeps_the_golds_that_still_fit(browser, researcher, dataset):
    study = make_study(researcher, dataset, start=False, name="golden")
    assert prepare_items(study) == 6
    first, second = Item.objects.filter(study=study).order_by("position")[:2]
    words = len(first.payload["words"])
    set_gold(first, {"label": "positive", "map": [1] + [0] * (words - 1)})
    set_gold(second, {"label": "cannot decide", "map": [0] * len(second.payload["words"])})
    done = browser.post(
        reverse("study-edit", args=[study.uid]),
        highlight_form(dataset, labels="positive, negative", gold_rate=""),
        follow=True,
    )
    assert "1 gold answer(s) no longer fit the new settings" in page_text(done)
    items = Item.objects.filter(study=study).order_by("position")
    assert items.count() == 6 and all(i.responses_needed == 4 for i in items)
    golds = [i for i in items if i.is_gold]
    assert [(g.document_id, g.secret["gold"]["label"]) for g in golds] == [(first.document_id, "positive")]
    start_study(study)  # the prepared items are the study's: none is built twice
    assert Item.objects.filter(study=study).count() == 6


def test_a_draft_is_deleted_after_a_confirmation_and_a_running_study_is_not(browser, researcher, dataset):
    draft = make_study(researcher, dataset, start=False, name="scrap me")
    prepare_items(draft)
    confirm = page_text(browser.get(reverse("study-delete", args=[draft.uid])))
    assert "cannot be undone" in confirm and "6 prepared item(s)" in confirm and "reviews stays" in confirm
    assert browser.post(reverse("study-delete", args=[draft.uid]))["Location"] == reverse("study-list")
    assert (
        not Study.objects.filter(pk=draft.pk).exists() and not Item.objects.filter(study_id=draft.pk).exists()
    )
    assert Dataset.objects.filter(pk=dataset.pk).exists()
    running = make_study(researcher, dataset, name="keep me")
    browser.post(reverse("study-delete", args=[running.uid]))
    assert Study.objects.filter(pk=running.pk).exists()


def test_any_study_clones_into_a_draft_with_its_settings_and_golds(
    browser, researcher, dataset, other_researcher
):
    study = make_study(
        researcher, dataset, annotators_per_item=2, name="original", config={"mode": "free"}, time_limit_s=900,
        provider_config={"open_enrollment": True},
    )  # fmt: skip
    item = Item.objects.filter(study=study).order_by("position")[2]
    set_gold(item, {"label": "negative", "map": [0, 1] + [0] * (len(item.payload["words"]) - 2)})
    Study.objects.filter(pk=study.pk).update(status=Study.Status.FINISHED)
    response = browser.post(reverse("study-clone", args=[study.uid]))
    clone = Study.objects.exclude(pk=study.pk).get()
    assert response["Location"] == reverse("study-detail", args=[clone.uid])
    assert (clone.name, clone.status, clone.owner) == ("Copy of original", Study.Status.DRAFT, researcher)
    assert (clone.kind, clone.dataset_id, clone.config, clone.time_limit_s) == (
        "highlight", dataset.pk, study.config, 900,
    )  # fmt: skip
    assert clone.provider_config == {"open_enrollment": True} and clone.annotators_per_item == 2
    golds = list(Item.objects.filter(study=clone, is_gold=True))
    assert [(g.document_id, g.secret["gold"]["label"]) for g in golds] == [(item.document_id, "negative")]
    other = Client()
    other.force_login(other_researcher)
    assert other.post(reverse("study-clone", args=[study.uid])).status_code == 404


# ------------------------------------------------------------------ every kind from the pages


def test_the_study_list_offers_every_kind():
    client = Client()
    client.force_login(make_user("lena", "researcher"))
    page = client.get(reverse("study-list")).content.decode()
    offered = set(re.findall(r'data-kind="([a-z_]+)"', page))
    assert offered == set(TASK_KINDS)


def rating_dataset(owner) -> Dataset:
    dataset = Dataset.objects.create(owner=owner, name="audiobooks")
    Document.from_text(dataset, "a", TEXT_A, metadata={"overall": 4, "voice": 5}).save()
    Document.from_text(dataset, "b", TEXT_B, metadata={"overall": 2, "voice": 1}).save()
    return dataset


def test_a_sentence_rating_study_from_its_form(browser, researcher):
    dataset = rating_dataset(researcher)
    url = reverse("study-create") + "?kind=sentence_rating"
    assert "One aspect per line" in browser.get(url).content.decode()
    form = {
        "kind": "sentence_rating", "name": "ratings", "dataset": dataset.pk,
        "aspects": "overall\nperformance | voice | The narrator's voice", "rating_max": 5, "gold_tolerance": 1,
        "min_judges": 3, "annotators_per_item": 3, "time_limit_min": 10, "provider": "local",
    }  # fmt: skip
    bad = page_text(browser.post(url, {**form, "aspects": "good name\nx | y | z | w"}))
    assert "Line 2 should be a name, then optionally a rating field and a title" in bad
    worse = page_text(browser.post(url, {**form, "aspects": "has space"}))
    assert "item 1, name: a name is 1 to 40 letters, digits" in worse
    assert not Study.objects.exists()
    assert browser.post(url, form).status_code == 302
    study = Study.objects.get()
    assert study.kind == "sentence_rating" and study.config["gold_tolerance"] == 1
    assert study.config["aspects"][1] == {
        "name": "performance", "rating_field": "voice", "title": "The narrator's voice", "description": "",
    }  # fmt: skip
    assert start_study(study) == 2 * 5  # two aspects × five sentences


def test_a_token_marking_study_from_its_form(browser, researcher):
    dataset = Dataset.objects.create(owner=researcher, name="nli")
    Document.from_text(dataset, "p1", "A man plays a guitar .", label="entailment",
                       metadata={"explanation": "Playing a guitar is music."}).save()  # fmt: skip
    url = reverse("study-create") + "?kind=token_marking"
    form = {
        "kind": "token_marking", "name": "marks", "dataset": dataset.pk, "require_mark": "on",
        "gold_overlap": "1.5", "overlap_measure": "jaccard", "annotators_per_item": 2, "time_limit_min": 10,
        "provider": "local",
    }  # fmt: skip
    bad = page_text(browser.post(url, form))
    assert "Ensure this value is less than or equal to 1." in bad and not Study.objects.exists()
    assert browser.post(url, {**form, "gold_overlap": "0.6"}).status_code == 302
    study = Study.objects.get()
    assert study.config["overlap_measure"] == "jaccard" and study.config["gold_overlap"] == 0.6
    assert study.config["require_mark"] is True and start_study(study) == 1


def test_an_unknown_kind_on_the_create_page_is_a_400_in_words(browser):
    response = browser.get(reverse("study-create") + "?kind=nope")
    assert (
        response.status_code == 400 and b"kind: no study of this kind can be created here" in response.content
    )


def test_a_forced_choice_study_whose_texts_do_not_qualify_is_not_created(researcher):
    dataset, docs, run, _ = justify_rows(researcher)
    client = Client()
    client.force_login(researcher)
    form = {
        "kind": "justify", "name": "too big", "model_run": run.pk, "methods": ["occ_1"], "m": 3,
        "n_texts": 20, "tau_h": 0.9, "split": "all", "seed": 0, "annotators_per_item": 3,
        "time_limit_min": 20, "provider": "local",
    }  # fmt: skip
    refused = client.post(reverse("forced-choice-new"), form)
    assert refused.status_code == 200
    assert "only 3 correctly predicted and 3 misclassified" in refused.content.decode()
    assert not Study.objects.exists()
    assert client.post(reverse("forced-choice-new"), {**form, "n_texts": 4}).status_code == 302
    study = Study.objects.get()
    edit = client.post(reverse("study-edit", args=[study.uid]), {**form, "name": "renamed", "n_texts": 20})
    assert "only 3 correctly predicted" in edit.content.decode()
    study.refresh_from_db()
    assert study.name == "too big"
    assert (
        client.post(
            reverse("study-edit", args=[study.uid]), {**form, "name": "renamed", "n_texts": 6}
        ).status_code
        == 302
    )
    study.refresh_from_db()
    assert study.name == "renamed" and study.config["n_texts"] == 6
