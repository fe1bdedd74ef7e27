"""Model-run pages: list, new-run form, detail with its progress bar, and the heat-map page."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from annotate.access import RESEARCHER_GROUP
from annotate.machine import create_model_run, jobs
from annotate.machine.explaining import clean_explanation_params, run_explanations
from annotate.models import Assignment, Explanation, Item, Job, ModelRun, Prediction, Response, Study, Worker
from tests.annotate.conftest import TINY_PARAMS, make_user, tiny_dataset, train_now

pytestmark = [pytest.mark.django_db]

HOSTILE = [
    ("good <script>alert(1)</script> food", "pos"),
    ("awful bad service", "neg"),
    ("really good place", "pos"),
    ("bad bad food", "neg"),
    ("great friendly staff", "pos"),
    ("terrible awful wait", "neg"),
    ("nice and good", "pos"),
    ("not good , bad", "neg"),
]


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.HATLAB_S3_BUCKET = ""


@pytest.fixture
def sent(monkeypatch):
    out: list[tuple] = []
    for task in (jobs.train_model, jobs.explain_model):
        monkeypatch.setattr(
            task, "apply_async", lambda args, queue, _t=task, **_: out.append((_t.name, args, queue))
        )
    return out


@pytest.fixture
def ada(client):
    user = make_user("ada", RESEARCHER_GROUP)
    client.force_login(user)
    return user


@pytest.fixture
def dataset(ada):
    return tiny_dataset(ada, texts=HOSTILE)


@pytest.fixture
def trained(ada, dataset, monkeypatch):
    run = create_model_run(ada, dataset, "bilstm_attention", TINY_PARAMS)
    train_now(run, monkeypatch)
    return run


def test_pages_need_the_researcher_role(client, dataset, ada):
    run = create_model_run(ada, dataset, "cnn", {})
    client.logout()
    assert client.get("/models/").status_code == 302
    client.force_login(User.objects.create_user("bob"))
    for url in ("/models/", "/models/new/", f"/models/{run.pk}/"):
        assert client.get(url).status_code == 403


def test_the_form_starts_training(client, dataset, sent, django_capture_on_commit_callbacks):
    page = client.get("/models/new/")
    assert page.status_code == 200
    assert '<option value="bilstm_attention" selected>' in page.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(
            "/models/new/",
            {
                "dataset": dataset.pk,
                "architecture": "bigru_attention",
                "epochs": 2,
                "hidden_size": 16,
                "extra": '{"patience": 1}',
            },  # fmt: skip
        )
    run = ModelRun.objects.get()
    assert answer.status_code == 302 and answer["Location"] == f"/models/{run.pk}/"
    assert run.params == {"epochs": 2, "patience": 1, "model": {"hidden_size": 16}}
    assert sent == [("annotate.machine.train_model", [Job.objects.get().pk], "cpu")]


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"architecture": "cnn", "hidden_size": 8}, "hidden_size", "hidden_size"),
        ({"architecture": "cnn", "epochs": 0}, "epochs", "greater than or equal to 1"),
        ({"architecture": "cnn", "extra": "{nope"}, "extra", "not valid JSON"),
        ({"architecture": "cnn", "extra": '{"warmup": 3}'}, "extra", "warmup"),
        ({"architecture": "svm"}, "architecture", "Select a valid choice"),
    ],
)
def test_form_errors_stay_on_their_field(client, dataset, sent, data, field, message):
    answer = client.post("/models/new/", {"dataset": dataset.pk, **data})
    assert answer.status_code == 200
    errors = answer.context["form"].errors
    assert field in errors and message in " ".join(errors[field])
    assert not ModelRun.objects.exists() and not sent


def test_detail_polls_the_api_and_lists_predictions(client, trained):
    html = client.get(f"/models/{trained.pk}/").content.decode()
    assert f'data-progress-url="/api/model-runs/{trained.pk}/"' in html
    assert 'data-status="done"' in html
    assert "hatlab/progress.js" in html
    assert html.count(f"/models/{trained.pk}/documents/") == 8
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script>alert(1)</script>" not in html
    assert 'name="methods"' in html and 'value="attention"' in html
    assert 'id="id_faithfulness" checked' in html  # measured unless unticked


def test_the_explain_form_queues_a_job_or_shows_errors(
    client, trained, sent, django_capture_on_commit_callbacks
):
    bad = client.post(f"/models/{trained.pk}/explain/", {"target": "predicted", "m": 3, "unit": "word"})
    assert bad.status_code == 400
    assert "methods" in bad.context["explain_form"].errors
    with django_capture_on_commit_callbacks(execute=True):
        good = client.post(
            f"/models/{trained.pk}/explain/",
            {
                "methods": ["attention", "omit_1"],
                "target": "gold",
                "m": 2,
                "unit": "ngram",
                "ngram_sizes": "2",
                "documents": 3,
                "faithfulness": "on",
            },  # fmt: skip
        )
    assert good.status_code == 302
    job = Job.objects.get(kind=jobs.EXPLAIN_KIND)
    assert job.params["request"]["methods"] == ["attention", "omit_1"]
    assert job.params["request"]["ngram_sizes"] == [2] and len(job.params["request"]["documents"]) == 3
    assert job.params["request"]["faithfulness"] is True
    assert sent[-1] == ("annotate.machine.explain_model", [job.pk], "cpu")
    html = client.get(f"/models/{trained.pk}/").content.decode()
    assert f'data-progress-url="/api/jobs/{job.pk}/"' in html
    # the jobs list and the form's checkboxes name the methods; the codes stay in the values only
    jobs_row = html.split('id="jobs-heading"')[1].split("</tr>", 2)[1]
    assert ">Attention weights</span>, <span" in jobs_row and ">Omission of 1-grams</span>" in jobs_row
    assert "omit_1" not in jobs_row
    assert 'value="omit_1"' in html and "Omission of 1-grams</label>" in html.replace("\n", "")


def _respond(study, item, n, word_map):
    worker = Worker.objects.create(external_id=f"crowd-{n}")
    assignment = Assignment.objects.create(
        study=study, item=item, worker=worker, slot=n, expires_at=timezone.now()
    )
    Response.objects.create(
        assignment=assignment, study=study, item=item, worker=worker,
        submission_key=f"00000000-0000-0000-0000-0000000000{n:02d}", answer={"label": "pos", "map": word_map},
    )  # fmt: skip


def test_heat_map_shows_relevance_beside_human_maps(client, trained, dataset, ada):
    doc = dataset.documents.order_by("id").first()  # good <script>alert(1)</script> food
    params = clean_explanation_params(trained, {"methods": ["omit_1"], "documents": [doc.pk], "m": 1})
    run_explanations(trained.pk, params)
    study = Study.objects.create(name="hl", owner=ada, dataset=dataset, kind="highlight")
    item = Item.objects.create(study=study, document=doc)
    _respond(study, item, 1, [1, 0, 1])
    _respond(study, item, 2, [1, 0, 0])

    url = f"/models/{trained.pk}/documents/{doc.pk}/"
    page = client.get(url)
    html = page.content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    # Default: the training attention map, one shaded span per word.
    machine = re.search(r'data-map="machine">(.*?)</p>', html, re.S).group(1)
    assert len(re.findall(r'class="w heat-(?:0|[pn]\d+)"', machine)) == 3
    assert 'value="attention (training)"' in html and 'value="omit_1"' in html
    # Human maps: two annotators, CAM (AND) and SAM (OR).
    human = page.context["human"]
    assert [h["row"].kind for h in human] == ["human", "human", "consensus", "consensus"]
    assert [c["css"] for c in human[2]["cells"]] == ["heat-p10", "heat-0", "heat-0"]
    assert [c["css"] for c in human[3]["cells"]] == ["heat-p10", "heat-0", "heat-p10"]
    assert "crowd-1" not in html

    chosen = client.get(url, {"method": "omit_1", "target": page.context["chosen"][1]})
    assert chosen.context["chosen"][0] == "omit_1"
    cells = chosen.context["machine"]
    scores = [c["score"] for c in cells]
    strongest = max(range(3), key=lambda i: abs(scores[i]))
    assert cells[strongest]["css"] in ("heat-p10", "heat-n10")
    assert "Evidence" in chosen.content.decode()


def test_heat_map_of_another_researchers_run_is_not_found(client, trained, dataset):
    doc = dataset.documents.first()
    client.force_login(make_user("eve", RESEARCHER_GROUP))
    assert client.get(f"/models/{trained.pk}/documents/{doc.pk}/").status_code == 404


def test_heat_map_shows_the_attention_once(client, trained, dataset):
    """A stored ``attention`` explanation is the training attention again: one choice, by its name."""
    doc = dataset.documents.order_by("id").first()
    params = clean_explanation_params(trained, {"methods": ["omit_1"], "documents": [doc.pk], "m": 1})
    run_explanations(trained.pk, params)
    weights = Prediction.objects.get(model_run=trained, document=doc).attention
    Explanation.objects.create(
        model_run=trained, document=doc, method="attention", target="pos", scores=weights
    )
    html = client.get(f"/models/{trained.pk}/documents/{doc.pk}/").content.decode()
    assert re.findall(r'<option value="([^"]+)"', html)[:2] == ["attention (training)", "omit_1"]
    assert ">Attention weights</option>" in html and ">Omission of 1-grams</option>" in html
    assert 'value="attention"' not in html
    chosen = client.get(f"/models/{trained.pk}/documents/{doc.pk}/", {"method": "omit_1", "target": "pos"})
    heading = re.search(r'<h2 id="machine-heading">(.*?)</h2>', chosen.content.decode(), re.S).group(1)
    assert heading.startswith("Machine: Omission of 1-grams")
    assert (
        "Omission of 1-grams: mean change of s(k, ·) (Poerner et al. 2018 §3.5)." in chosen.content.decode()
    )
