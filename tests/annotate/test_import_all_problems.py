"""Imports that say everything at once (issue 27, point 7): a file with several problems lists them all in
one upload (line and field each, the first 50 and how many more) on the page, in the API and in the
command; a document with an empty label among labelled ones, or with a label outside the dataset's set, is
refused; the metadata a kind needs is named on the import page and checked when a study is created."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from annotate.corpus.imports import MAX_PROBLEMS, CorpusImportError, import_texts
from annotate.models import Dataset, Document, Study
from annotate.studies.service import StudyInvalid, create_study

pytestmark = pytest.mark.django_db

#: Four problems: an empty text (line 3), a repeated id (line 4), a label outside the file's set is not
#: one here, but an empty label among labelled rows is (line 5), and a row with too many cells (line 6).
FOUR = (
    b"id,text,label\n"
    b"a,A fine day,positive\n"
    b"b,,negative\n"
    b"a,Again the same id,negative\n"
    b"c,No label at all,\n"
    b"d,Too,many,cells,here\n"
    b"e,The last good one,positive\n"
)
FOUR_SAID = [
    "line 3, field 'text': must be a non-empty string",
    "line 4, field 'id': 'a' repeats line 2",
    "line 5, field 'label': empty; every document of this dataset needs one of: negative, positive",
    "line 6: 5 cells where the header names 3",
]


@pytest.fixture
def browser(researcher) -> Client:
    client = Client()
    client.force_login(researcher)
    return client


def upload(content: bytes, name: str = "texts.csv") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="text/plain")


def test_every_problem_of_a_file_is_reported_at_once(researcher):
    dataset = Dataset.objects.create(owner=researcher, name="four")
    with pytest.raises(CorpusImportError) as caught:
        import_texts(dataset, FOUR, "csv")
    assert caught.value.sentences() == FOUR_SAID
    assert [(p.line, p.field) for p in caught.value.problems] == [
        (3, "text"),
        (4, "id"),
        (5, "label"),
        (6, None),
    ]
    assert not Document.objects.filter(dataset=dataset).exists()


def test_the_import_page_lists_every_problem(browser):
    page = browser.post(reverse("dataset-list"), {"name": "four", "file": upload(FOUR)})
    assert page.status_code == 400
    text = page.content.decode()
    assert "Nothing was imported: 4 problems." in text
    for said in FOUR_SAID:
        assert said.replace("'", "&#x27;") in text
    assert not Dataset.objects.filter(name="four").exists()


def test_the_api_lists_every_problem(browser):
    response = browser.post("/api/datasets/", {"name": "four", "file": upload(FOUR)})
    assert response.status_code == 400
    assert response.json()["file"] == FOUR_SAID


def test_problems_are_capped_and_counted(researcher):
    rows = "".join(f"r{i},,positive\n" for i in range(MAX_PROBLEMS + 10))
    dataset = Dataset.objects.create(owner=researcher, name="many")
    with pytest.raises(CorpusImportError) as caught:
        import_texts(dataset, f"id,text,label\n{rows}".encode(), "csv")
    said = caught.value.sentences()
    assert len(said) == MAX_PROBLEMS + 1
    assert said[0] == "line 2, field 'text': must be a non-empty string"
    assert said[-1] == "… and 10 more problems not listed."


def test_a_label_outside_the_given_set_is_refused(researcher):
    dataset = Dataset.objects.create(owner=researcher, name="typo")
    data = b"id,text,label\na,Good,positive\nb,Bad,negative\nc,Meh,postive\n"
    with pytest.raises(CorpusImportError) as caught:
        import_texts(dataset, data, "csv", "positive, negative")
    assert caught.value.sentences() == [
        "line 4, field 'label': 'postive' is not one of the dataset's labels: positive, negative"
    ]
    fixed = data.replace(b"postive", b"positive")
    done = import_texts(dataset, fixed, "csv", "positive, negative")
    assert (done.documents, done.labels) == (3, {"negative": 1, "positive": 2})
    assert done.sentence("typo") == "Imported 3 documents into typo, labelled negative (1), positive (2)."


def test_a_new_label_is_refused_by_a_labelled_dataset_unless_the_set_names_it(researcher):
    dataset = Dataset.objects.create(owner=researcher, name="grow")
    import_texts(dataset, b"id,text,label\na,Good,positive\nb,Bad,negative\n", "csv")
    dataset.refresh_from_db()
    with pytest.raises(
        CorpusImportError, match="'neutral' is not one of the dataset's labels: negative, positive"
    ):
        import_texts(dataset, b"id,text,label\nc,So so,neutral\n", "csv")
    done = import_texts(
        dataset, b"id,text,label\nc,So so,neutral\n", "csv", ["negative", "neutral", "positive"]
    )
    assert done.sentence("grow") == "Imported 1 document into grow, labelled neutral (1)."


def test_a_dataset_without_any_label_is_fine(researcher):
    dataset = Dataset.objects.create(owner=researcher, name="plain")
    done = import_texts(dataset, b"id,text,label\na,One text,\nb,Another,\n", "csv")
    assert done.sentence("plain") == "Imported 2 documents into plain, without labels."


def test_the_page_takes_the_label_set_and_says_what_it_imported(browser):
    data = b"id,text,label\na,Good,positive\n"
    page = browser.post(
        reverse("dataset-list"),
        {"name": "one", "file": upload(data), "labels": "positive, negative"},
        follow=True,
    )
    assert "Imported 1 document into one, labelled positive (1)." in page.content.decode()
    refused = browser.post(
        reverse("dataset-list"),
        {"name": "two", "file": upload(b"id,text,label\na,Hm,maybe\n"), "labels": "yes, no"},
    )
    assert "&#x27;maybe&#x27; is not one of the dataset&#x27;s labels: yes, no" in refused.content.decode()


def test_the_import_page_names_the_metadata_each_kind_needs(browser):
    text = browser.get(reverse("dataset-list")).content.decode()
    assert "<code>metadata.explanation</code>" in text
    assert "metadata.overall" in text
    assert 'data-kind="token_marking"' in text and 'data-kind="sentence_rating"' in text


@pytest.mark.parametrize(
    "kind, said",
    [
        ("token_marking", "document 'a': metadata.explanation must be a text"),
        (
            "sentence_rating",
            "document 'a': metadata.overall must be a star rating from 1 to 5 (aspect 'overall')",
        ),
    ],
)
def test_a_study_on_a_dataset_without_the_kinds_metadata_is_refused_when_created(
    researcher, browser, kind, said
):
    dataset = Dataset.objects.create(owner=researcher, name=f"bare-{kind}")
    rows = "".join(f"{c},Some words here. And more.,positive\n" for c in "abcdefghijklm")
    import_texts(dataset, f"id,text,label\n{rows}".encode(), "csv")
    with pytest.raises(StudyInvalid) as caught:
        create_study(researcher, {"name": "early", "dataset": dataset.pk, "kind": kind})
    problems = caught.value.fields["dataset"]
    assert problems[0] == said and len(problems) == 11
    assert problems[-1] == "… and 3 more documents like these."
    assert not Study.objects.filter(name="early").exists()
    api = browser.post(
        "/api/studies/",
        {"name": "early", "dataset": dataset.pk, "kind": kind},
        content_type="application/json",
    )
    assert api.status_code == 400 and api.json()["dataset"][0] == said


def test_a_study_on_a_dataset_with_the_metadata_is_created(researcher):
    dataset = Dataset.objects.create(owner=researcher, name="explained")
    data = b'{"id": "a", "text": "A good film", "label": "positive", "metadata": {"explanation": "good"}}\n'
    import_texts(dataset, data, "jsonl")
    study = create_study(researcher, {"name": "fine", "dataset": dataset.pk, "kind": "token_marking"})
    assert study.status == Study.Status.DRAFT


def test_the_pair_import_lists_every_problem_too(researcher):
    from annotate.kinds.nli_pair.pairs import read_pairs

    data = b"id,premise,hypothesis,label\n1,A b,C d,entailment\n2,,E f,neutral\n1,G h,I j,maybe\n"
    with pytest.raises(CorpusImportError) as caught:
        read_pairs(data, "csv", ["entailment", "neutral", "contradiction"])
    assert [(p.line, p.field) for p in caught.value.problems] == [(3, "premise"), (4, "label")]
