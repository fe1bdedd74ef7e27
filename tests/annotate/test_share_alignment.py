"""An imported rationale set with several annotators per text (HateXplain's shape) is the expert oracle of
the human-vs-machine dashboard: its alignment figure shows mean C against the share of annotators with the
permutation null beside it, says plainly that the null is not the paper's C_R, and another researcher
cannot read it."""

from __future__ import annotations

import json

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from annotate.access import RESEARCHER_GROUP
from annotate.models import Explanation, ModelRun, Prediction, Study
from explain_engine.api import ALIGNMENT_NULL, shared_marks_alignment
from tests.annotate.conftest import make_user

pytestmark = pytest.mark.django_db

POSTS = 8


def _hatexplain_zip_files(rng: np.random.Generator) -> tuple[bytes, bytes, dict[str, list[list[int]]]]:
    """A HateXplain-shaped set: ``POSTS`` posts of 9–14 words, three annotators each, two of whom mark words."""
    data, marks = {}, {}
    for p in range(POSTS):
        n = int(rng.integers(9, 15))
        words = [f"w{p}x{i}" for i in range(n)]
        rationales = [(rng.random(n) < 0.35).astype(int).tolist() for _ in range(2)]
        rationales[0][0] = rationales[1][1] = 1  # never constant: at least one mark, and not all words
        rationales[0][-1] = rationales[1][-1] = 0
        annotators = [{"label": "offensive", "annotator_id": 10 * p + k, "target": ["x"]} for k in range(3)]
        data[f"p{p}"] = {
            "post_id": f"p{p}",
            "post_tokens": words,
            "annotators": annotators,
            "rationales": rationales,
        }
        marks[" ".join(words)] = rationales
    divisions = {"train": list(data), "val": [], "test": []}
    return json.dumps(data).encode(), json.dumps(divisions).encode(), marks


def _zip(files: dict[str, bytes]) -> bytes:
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, body in files.items():
            archive.writestr(name, body)
    return buffer.getvalue()


@pytest.fixture
def imported():
    owner = make_user("hana", RESEARCHER_GROUP)
    client = Client()
    client.force_login(owner)
    dataset_json, divisions, marks = _hatexplain_zip_files(np.random.default_rng(7))
    body = _zip({"hx/dataset.json": dataset_json, "hx/post_id_divisions.json": divisions})
    upload = SimpleUploadedFile("hatexplain.zip", body)
    page = client.post(
        reverse("dataset-rationale-import"), {"format": "hatexplain", "name": "hate", "file": upload}
    )
    assert page.status_code == 302
    study = Study.objects.get(dataset__name="hate")
    run = ModelRun.objects.create(
        name="cnn", owner=owner, dataset=study.dataset, architecture="cnn", status="done"
    )
    rng = np.random.default_rng(3)
    shares = {}
    for doc in study.dataset.documents.order_by("id"):
        share = np.mean(marks[doc.text], axis=0)
        shares[doc.pk] = share
        Prediction.objects.create(
            model_run=run, document=doc, label="offensive", probabilities={}, attention=[1.0] * len(share)
        )
        # the same shares, signed at random (the figure compares |scores|), and a map unrelated to people
        signs = rng.choice([-1.0, 1.0], size=share.shape[0])
        Explanation.objects.create(
            model_run=run,
            document=doc,
            method="grad_dot_1s",
            target="offensive",
            scores=(signs * share).tolist(),
        )
        Explanation.objects.create(
            model_run=run,
            document=doc,
            method="occ_1",
            target="offensive",
            scores=rng.normal(size=len(share)).tolist(),
        )
    return client, study, run, marks


def test_imported_maps_are_the_expert_oracle_of_the_alignment_figure(imported):
    client, study, run, marks = imported
    query = {"select": [f"{run.pk}:grad_dot_1s", f"{run.pk}:occ_1"], "target": "gold"}
    data = client.get(reverse("api-dashboard-similarity", args=[study.uid]), query).json()
    assert data["status"] == "done"
    chart = next(c for c in data["charts"] if c["id"] == "share_alignment")
    assert [s["name"] for s in chart["series"]] == ["C (the people's shares)", "C_null (shares permuted)"]
    follows, unrelated = (s["alignment"] for s in data["selections"])
    assert follows["mean_c"]["value"] > 5 and follows["delta_a"]["ci_low"] > 0.99  # the maps are the shares
    assert abs(unrelated["mean_c"]["value"]) < 1 and unrelated["mean_c"]["n"] == POSTS
    assert follows["null"] == ALIGNMENT_NULL
    # the engine's figure, from the imported maps as the people made them
    texts = [t for t in marks]
    docs = {d.text: d.pk for d in study.dataset.documents.all()}
    scores = dict(
        Explanation.objects.filter(model_run=run, method="occ_1").values_list("document_id", "scores")
    )
    order = sorted(texts, key=lambda t: docs[t])
    expected = shared_marks_alignment([marks[t] for t in order], [scores[docs[t]] for t in order], seed=0)
    assert unrelated["mean_c"] == pytest.approx(expected["mean_c"])
    assert unrelated["mean_c_null"] == pytest.approx(expected["mean_c_null"])
    table = next(t for t in data["tables"] if t["id"] == "share_alignment-table")
    assert "permutation null, not the paper's C_R" in table["title"]
    assert any("permutation null" in n and "not the paper's C_R" in n for n in data["notes"])
    # ERASER's plausibility against every annotator's map sits in the selections beside it
    assert set(data["selections"][0]["eraser"]) >= {"token_f1", "iou_f1", "auprc"}
    assert data["selections"][0]["eraser"]["maps"] == 2 * POSTS


def test_another_researcher_cannot_read_the_figure(imported):
    _, study, run, _ = imported
    intruder = Client()
    intruder.force_login(make_user("ivan", RESEARCHER_GROUP))
    query = {"select": [f"{run.pk}:grad_dot_1s"], "target": "gold"}
    answer = intruder.get(reverse("api-dashboard-similarity", args=[study.uid]), query)
    assert answer.status_code in (403, 404)
    assert "mean_c" not in answer.content.decode()


def test_the_pages_lead_from_the_import_to_the_comparison(imported):
    client, study, run, _ = imported
    page = client.get(reverse("study-detail", args=[study.uid])).content.decode()
    assert f'href="{reverse("model-run-create")}?dataset={study.dataset_id}"' in page
    assert reverse("study-dashboard-similarity", args=[study.uid]) in page
    assert 'id="access"' not in page and "invite links" not in page  # nobody is recruited for imported maps
    form = client.get(reverse("model-run-create"), {"dataset": study.dataset_id}).content.decode()
    assert f'<option value="{study.dataset_id}" selected>' in form
    run_page = client.get(reverse("model-run-detail", args=[run.pk])).content.decode()
    assert f"Compare with the people's maps of {study.name}" in run_page


def test_the_run_page_lists_only_the_viewers_own_studies(imported):
    _, study, run, _ = imported
    admin = make_user("ada", "admin")
    admin.is_staff = admin.is_superuser = True
    admin.save()
    viewer = Client()
    viewer.force_login(admin)
    page = viewer.get(reverse("model-run-detail", args=[run.pk]))
    assert page.status_code in (200, 403, 404)
    assert reverse("study-dashboard-similarity", args=[study.uid]) not in page.content.decode()
