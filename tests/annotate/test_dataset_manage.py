"""A dataset is renamed and deleted from its page: the name is checked (required, unique among the
owner's), a dataset in use by a study or a model run is kept and the refusal names what uses it, a
deletion takes the documents with it, and another researcher can do neither."""

from __future__ import annotations

import pytest

from annotate.models import Dataset, Document, ModelRun, Study

pytestmark = pytest.mark.django_db


def _messages(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def test_rename_and_its_checks(client, researcher, dataset):
    Dataset.objects.create(owner=researcher, name="taken")
    client.force_login(researcher)
    url = f"/datasets/{dataset.pk}/rename/"
    response = client.post(url, {"name": "  reviews 2026  "}, follow=True)
    dataset.refresh_from_db()
    assert dataset.name == "reviews 2026"
    assert any("Renamed" in m for m in _messages(response))
    for bad, says in [("", "name: give the dataset a name."), ("taken", "name: you already have a dataset")]:
        response = client.post(url, {"name": bad}, follow=True)
        assert any(m.startswith(says) for m in _messages(response)), _messages(response)
        dataset.refresh_from_db()
        assert dataset.name == "reviews 2026"
    response = client.post(url, {"name": "x" * 201}, follow=True)
    assert any("at most 200 characters" in m for m in _messages(response))
    assert client.get(url).status_code == 405


def test_another_researcher_can_neither_rename_nor_delete(client, other_researcher, dataset):
    client.force_login(other_researcher)
    assert client.post(f"/datasets/{dataset.pk}/rename/", {"name": "mine now"}).status_code == 404
    assert client.post(f"/datasets/{dataset.pk}/delete/").status_code == 404
    dataset.refresh_from_db()
    assert dataset.name != "mine now"


def test_delete_is_refused_while_a_study_or_model_run_uses_it(client, researcher, dataset):
    Study.objects.create(name="pilot", owner=researcher, dataset=dataset, kind="highlight")
    ModelRun.objects.create(name="cnn", owner=researcher, dataset=dataset, architecture="cnn")
    client.force_login(researcher)
    page = client.get(f"/datasets/{dataset.pk}/").content.decode()
    assert "cannot be deleted while study pilot, model run cnn use it" in page
    response = client.post(f"/datasets/{dataset.pk}/delete/", follow=True)
    assert any("used by study pilot, model run cnn" in m for m in _messages(response))
    assert Dataset.objects.filter(pk=dataset.pk).exists()


def test_delete_takes_the_documents_with_it(client, researcher, dataset):
    n = Document.objects.filter(dataset=dataset).count()
    assert n > 0
    client.force_login(researcher)
    page = client.get(f"/datasets/{dataset.pk}/").content.decode()
    assert f"and its {n} document{'s' if n != 1 else ''}<" in page
    response = client.post(f"/datasets/{dataset.pk}/delete/", follow=True)
    assert response.redirect_chain[-1][0] == "/datasets/"
    assert not Dataset.objects.filter(pk=dataset.pk).exists()
    assert not Document.objects.filter(dataset_id=dataset.pk).exists()
