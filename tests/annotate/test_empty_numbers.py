"""Every empty number says why (issue 27, point 4).

Three workers answer an NLI study with two gold pairs through the annotator API; each passes the first
gold and misses the second (the right label, other words). The policy asks for 4 golds: the rule applied
(judged after all 2 golds, so all three are excluded) is the rule the quality page shows; the results page
says that all their answers are left out, why, and links to the quality page; the second gold is flagged
since 3 of 3 trusted workers missed it. A forced-choice gold that contradicts the question's answer key
(a justify gold naming the true label where the key is the predicted class) is refused by the gold editor
and by the gold import, with a message.
"""

from __future__ import annotations

import json
import uuid

import pytest
from django.template.loader import get_template
from django.test import Client
from django.urls import reverse

from annotate.kinds.nli_pair.pairs import import_pairs
from annotate.models import Dataset, GoldReview, Item, Response, Study, WorkerTrust
from annotate.quality.gold_import import import_golds
from annotate.quality.gold_review import review_golds
from annotate.quality.policy import applied_rule
from annotate.studies.lifecycle import start_study
from annotate.tasks import TASK_KINDS, get_kind
from tests.annotate.kinds.forced_choice.test_scoring import NEG, POS, study_with_items
from tests.annotate.kinds.nli_pair.test_kind import LABELS, answered, page_token

pytestmark = pytest.mark.django_db

KIND = get_kind("nli_pair")
GOLD_A = {"label": "entailment", "premise_map": [0, 1, 0, 0, 0], "hypothesis_map": [0, 1, 0]}
GOLD_B = {"label": "contradiction", "premise_map": [0, 0, 1, 0], "hypothesis_map": [0, 1, 0]}
PAIRS = [
    {"id": "p1", "premise": "A man rides a bike", "hypothesis": "A person cycles", "label": "entailment"},
    {"id": "p2", "premise": "Two dogs sleep here", "hypothesis": "Dogs run fast", "label": "contradiction"},
    {"id": "g1", "premise": "A cat naps in sun", "hypothesis": "A cat rests", "label": "entailment", "gold": GOLD_A},
    {"id": "g2", "premise": "Birds sing at dawn", "hypothesis": "Birds are silent", "label": "contradiction",
     "gold": GOLD_B},
]  # fmt: skip


def nli_study(owner) -> Study:
    dataset = Dataset.objects.create(owner=owner, name=f"pairs-{uuid.uuid4().hex[:6]}")
    text = "".join(json.dumps(p) + "\n" for p in PAIRS).encode()
    import_pairs(dataset, text, "jsonl", LABELS)
    study = Study.objects.create(
        name="nli",
        owner=owner,
        dataset=dataset,
        kind="nli_pair",
        config=KIND.validate_config({}),
        annotators_per_item=3,
        provider_config={"open_enrollment": True},
    )
    start_study(study)
    return study


def answer_for(payload: dict) -> dict:
    """The gold's own answer on g1; on g2 the right label with other words; a plain answer elsewhere."""
    premise = [0] * len(payload["premise"]["words"])
    hypothesis = [0] * len(payload["hypothesis"]["words"])
    first = payload["premise"]["words"][0]
    if first == "A" and payload["premise"]["words"][1] == "cat":
        return dict(GOLD_A)
    if first == "Birds":
        premise[0], hypothesis[0] = 1, 1
        return {"label": "contradiction", "premise_map": premise, "hypothesis_map": hypothesis}
    premise[1] = hypothesis[1] = 1
    return {"label": "entailment", "premise_map": premise, "hypothesis_map": hypothesis}


@pytest.fixture
def missed(researcher) -> Study:
    study = nli_study(researcher)
    assert study.items.filter(is_gold=True).count() == 2
    for name in ("w1", "w2", "w3"):
        client = Client(enforce_csrf_checks=True)
        assert len(answered(client, page_token(client, study, name), answer_for)) == 4
    passed = dict(
        Response.objects.filter(study=study, item__is_gold=True)
        .values_list("item__document__external_id", "gold_passed")
        .distinct()
    )
    assert passed == {"g1": True, "g2": False}
    return study


@pytest.fixture
def browser(researcher) -> Client:
    client = Client()
    client.force_login(researcher)
    return client


def test_the_rule_shown_is_the_rule_applied(missed, browser):
    page = browser.get(reverse("quality-dashboard", args=[missed.uid])).content.decode()
    statuses = set(WorkerTrust.objects.filter(study=missed).values_list("status", flat=True))
    assert statuses == {"excluded"}  # 1 of 2 golds passed, judged after 2 golds
    assert "after 4 golds" not in page
    assert "judged after 2 golds" in page
    assert "The policy asks for 4, but this study has only 2 gold items in use" in page
    rule = applied_rule(missed)
    assert (rule.min_golds, rule.min_golds_asked, rule.golds_in_use) == (2, 4, 2)


def test_the_quality_api_gives_the_applied_rule(missed, admin_user):
    client = Client()
    client.force_login(admin_user)
    applied = client.get(reverse("api-crowd-quality", args=[missed.uid])).json()["applied"]
    assert (applied["min_golds"], applied["min_golds_asked"], applied["golds_in_use"]) == (2, 4, 2)
    assert applied["gold_flag_min_trusted"] == 3


def test_a_study_with_one_gold_says_one_miss_excludes(missed):
    missed.items.filter(document__external_id="g1").update(retired=True)
    sentence = applied_rule(missed).trust_sentence()
    assert "only 1 gold item in use" in sentence and "one missed gold excludes them" in sentence


def test_results_say_how_many_answers_are_left_out_and_why(missed, browser):
    page = browser.get(reverse("study-results", args=[missed.uid])).content.decode()
    assert 'id="left-out" data-left-out="6"' in page
    assert "0 of 6 answers count in these figures" in page
    assert "6 answers by 3 workers left out: these workers passed fewer than 70% of the gold items" in page
    assert reverse("quality-dashboard", args=[missed.uid]) in page


def test_every_kinds_results_template_shows_what_is_left_out(researcher, browser):
    """Each kind's results template includes the shared notice (a kind without it would show bare zeros)."""
    seen = set()
    for name in TASK_KINDS:
        page_class = get_kind(name).results_page()
        if page_class is None or page_class.template in seen:
            continue
        seen.add(page_class.template)
        with open(_template_path(page_class.template)) as handle:
            assert '{% include "annotate/results/left_out.html" %}' in handle.read(), page_class.template
    assert len(seen) >= 5


def _template_path(name: str) -> str:
    return get_template(name).origin.name


def test_a_gold_most_trusted_workers_miss_is_flagged(missed, browser):
    reviews = {r.item.document.external_id: r for r in review_golds(missed)}
    assert (reviews["g2"].trusted_seen, reviews["g2"].trusted_missed, reviews["g2"].flagged) == (3, 3, True)
    assert reviews["g1"].flagged is False
    assert applied_rule(missed).flag_min_trusted == 3  # the policy's 5, capped at the 3 workers
    page = browser.get(reverse("quality-dashboard", args=[missed.uid])).content.decode()
    assert "1 flagged" in page and "the policy asks for 5; 3 workers have answered so far" in page


def test_a_gold_seen_by_fewer_trusted_workers_than_answered_is_not_flagged(missed):
    """The cap is the workers who answered: with 3 workers and only 2 of them trusted on the other gold,
    a gold 2 of 2 trusted missed is not flagged."""
    g1 = missed.items.get(document__external_id="g1")
    first = Response.objects.filter(item=g1).order_by("id").first()
    Response.objects.filter(pk=first.pk).update(gold_passed=False)
    reviews = {r.item.document.external_id: r for r in review_golds(missed)}
    assert (reviews["g2"].trusted_seen, reviews["g2"].flagged) == (2, False)
    assert not GoldReview.objects.filter(item__study=missed, flagged=True).exists()


@pytest.fixture
def justify(researcher):
    study, items = study_with_items(researcher, "justify", [(0, "occ_1", "misclassified", NEG)], n_docs=1)
    item = items[0]
    item.secret = {**item.secret, "predicted": NEG, "true_label": POS}
    item.save(update_fields=["secret"])
    return study, Item.objects.select_related("study").get(pk=item.pk)


def test_a_justify_gold_naming_the_true_label_is_refused_by_the_editor(justify, browser):
    study, item = justify
    url = reverse("study-gold-save", args=[study.uid, item.pk])
    body = {"answer": {"choice": POS, "confident": True}, "timings": {}, "submission_key": "x"}
    refused = browser.post(url, json.dumps(body), content_type="application/json")
    assert refused.status_code == 400
    said = refused.json()["errors"]["answer"][0]
    assert "answer key, “negative” (the class the model predicted)" in said
    assert "“positive” is the text's true label" in said
    item.refresh_from_db()
    assert not item.is_gold
    body["answer"]["choice"] = NEG
    assert browser.post(url, json.dumps(body), content_type="application/json").status_code == 200
    item.refresh_from_db()
    assert item.is_gold and item.secret["gold"]["choice"] == NEG


def test_a_contradicting_gold_is_refused_by_the_import(justify):
    study, item = justify
    result = import_golds(study, f"item,choice,confident\n{item.position + 1},{POS},yes\n", "csv")
    assert result.saved == 0 and len(result.errors) == 1
    assert result.errors[0].startswith("Line 2: The choice must be this question's answer key, “negative”")
    assert import_golds(study, f"item,choice,confident\n{item.position + 1},{NEG},no\n", "csv").saved == 1


def test_the_policy_form_says_the_rule_as_applied(missed, browser):
    page = browser.get(reverse("quality-dashboard", args=[missed.uid])).content.decode()
    assert "in a study with fewer golds in use, after all of them" in page
    assert "at most as many as have answered in the study" in page
