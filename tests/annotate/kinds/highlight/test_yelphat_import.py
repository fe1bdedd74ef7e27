"""The raw YELP-HAT MTurk files imported as a dataset and a finished highlight study (Sen et al. 2020).

Checked against the real files in ``../shared/data/yelp-hat/raw`` (counts from its PROVENANCE.md).
"""

from __future__ import annotations

import csv
from collections import Counter

import pytest
from django.core.management import CommandError, call_command
from django.db.models import F

from annotate.corpus.imports import CorpusImportError
from annotate.exports.tables import item_rows
from annotate.kinds.highlight.yelphat import import_yelphat
from annotate.models import Assignment, Document, Item, Response, Study, Worker
from tests.conftest import require_shared_data

pytestmark = pytest.mark.django_db

FILES = {
    "ham_part1(50words).csv": (300, 900, 12.78),
    "ham_part2(50words).csv": (610, 1590, 10.74),
    "ham_part6(100words).csv": (439, 1314, 16.21),
    "ham_part7.csv": (625, 2096, 7.64),
    "ham_part8(200words).csv": (181, 543, 24.72),
}


def raw(name: str):
    return require_shared_data("yelp-hat", "raw", name)


def test_all_raw_files(researcher):
    paths = [raw(name) for name in FILES]
    result = import_yelphat(paths, researcher)
    study = result.study
    assert (result.documents, result.responses) == (2155, 6443)
    assert study.status == Study.Status.FINISHED and study.kind == "highlight"
    assert study.config["mode"] == "read_first"

    # reviews and maps per file, and the mean number of highlighted words per map
    for name, (reviews, maps, mean_highlighted) in FILES.items():
        docs = Document.objects.filter(dataset=result.dataset, metadata__source__file=name)
        assert docs.count() == reviews, name
        responses = Response.objects.filter(study=study, item__document__metadata__source__file=name)
        assert responses.count() == maps, name
        answers = list(responses.values_list("answer", flat=True))
        assert sum(sum(a["map"]) for a in answers) / maps == pytest.approx(mean_highlighted, abs=0.01)

    # every map has one entry per canonical word (= the review's whitespace words)
    for text, words, answer in (
        Response.objects.filter(study=study)
        .values_list("item__document__text", "item__document__words", "answer")
        .iterator()
    ):
        assert len(answer["map"]) == len(words) == len(text.split())
        assert set(answer["map"]) <= {0, 1}

    # worker labels: yes / no / idk / empty
    labels = Counter(
        a["label"] for a in Response.objects.filter(study=study).values_list("answer", flat=True)
    )
    assert labels == {"positive": 3264, "negative": 2884, "cannot decide": 265, None: 30}

    # items: as many responses as maps, all done; maps per review as in the provenance table
    part7 = Item.objects.filter(study=study, document__metadata__source__file="ham_part7.csv")
    assert Counter(part7.values_list("responses_needed", flat=True)) == {4: 351, 3: 144, 2: 130}
    assert not Item.objects.filter(study=study).exclude(responses_done=F("responses_needed")).exists()

    # synthetic workers: one per file and answer slot, never two answers to one review
    assert result.workers == Worker.objects.filter(provider="yelphat").count() == 3 + 3 + 3 + 4 + 3
    assert Worker.objects.filter(provider="yelphat", external_id="ham_part7.csv:3").exists()
    assert Assignment.objects.filter(study=study, status=Assignment.Status.SUBMITTED).count() == 6443
    pairs = Response.objects.filter(study=study).values_list("item_id", "worker_id")
    assert len(set(pairs)) == 6443


def test_document_labels_follow_the_yelp_stars(researcher):
    path = raw("ham_part1(50words).csv")
    result = import_yelphat([path], researcher, dataset_name="yelp50")
    with open(path, encoding="utf-8", newline="") as fh:
        stars = {row["Input.text"]: row["Input.label"] for row in csv.DictReader(fh)}
    docs = Document.objects.filter(dataset=result.dataset)
    assert docs.count() == 300
    for doc in docs:
        assert doc.label == {"0": "negative", "1": "positive"}[stars[doc.text]]
        assert doc.metadata["yelp_label"] == int(stars[doc.text])
        assert len(doc.words) == 50
    # CAM ⊆ each map ⊆ SAM for every review, 3 maps each
    for row in item_rows(result.study):
        assert row["responses"] == 3
        assert all(c <= s for c, s in zip(row["cam"], row["sam"], strict=True))
    assert result.dataset.labels == ["negative", "positive"]


def test_import_is_all_or_nothing_and_names_clash(researcher, tmp_path):
    path = raw("ham_part8(200words).csv")
    import_yelphat([path], researcher, dataset_name="y200")
    with pytest.raises(CorpusImportError, match="already has a dataset"):
        import_yelphat([path], researcher, dataset_name="y200")
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "Input.label,Input.text,Answer.Q1Answer,Answer.html_output\n2,hello,yes,<span>hello</span>\n"
    )
    with pytest.raises(ValueError, match="Input.label"):
        import_yelphat([path, bad], researcher, dataset_name="mixed")
    assert Study.objects.count() == 1 and Document.objects.count() == 181


def test_import_yelphat_command(researcher):
    path = raw("ham_part8(200words).csv")
    call_command("import_yelphat", str(path), "--owner", researcher.username, "--dataset", "y200")
    assert Response.objects.count() == 543
    with pytest.raises(CommandError, match="no user"):
        call_command("import_yelphat", str(path), "--owner", "ghost")
