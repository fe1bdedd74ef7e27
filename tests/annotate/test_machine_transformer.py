"""A transformer model run from the web page: the form offers the family and its checkpoint field, the job
fine-tunes a tiny checkpoint folder built here, stores its predictions and reloads it for explanations;
without the optional extra the family is not offered and asking for it says what to install."""

from __future__ import annotations

import sys

import pytest

from annotate.access import RESEARCHER_GROUP
from annotate.machine import MachineInputError, clean_params, jobs, load_trained
from annotate.machine.explaining import clean_explanation_params, run_explanations
from annotate.machine.runs import architecture_choices
from annotate.models import Explanation, ModelRun, Prediction
from explain_engine.api import CHECKPOINT_REFUSED
from tests.annotate.conftest import make_user, tiny_dataset, train_now
from tests.engine.tiny_transformer import build_tiny_checkpoint

pytestmark = [pytest.mark.django_db]

TEXTS = [
    ("good food and a good place", "pos"),
    ("awful bad service", "neg"),
    ("really good place", "pos"),
    ("bad bad food", "neg"),
    ("good friendly staff", "pos"),
    ("bad awful wait", "neg"),
    ("nice and good", "pos"),
    ("slow and bad", "neg"),
] * 2


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.HATLAB_S3_BUCKET = ""
    settings.HATLAB_MODEL_DIR = str(tmp_path)  # the admin's model folder, where the tiny checkpoint is built
    settings.HATLAB_HUB_DOWNLOADS = True


@pytest.fixture
def ada(client):
    user = make_user("ada", RESEARCHER_GROUP)
    client.force_login(user)
    return user


@pytest.fixture
def dataset(ada):
    return tiny_dataset(ada, texts=[(f"{text} {n}", label) for n, (text, label) in enumerate(TEXTS)])


@pytest.fixture
def checkpoint(tmp_path):
    return build_tiny_checkpoint(tmp_path / "tiny-bert", [text for text, _ in TEXTS], vocab_size=80, layers=1)


@pytest.fixture
def sent(monkeypatch):
    out: list = []
    monkeypatch.setattr(jobs.train_model, "apply_async", lambda args, queue, **_: out.append(args))
    return out


def test_the_page_trains_a_transformer_from_a_checkpoint_folder(
    client, dataset, checkpoint, sent, monkeypatch
):
    page = client.get("/models/new/").content.decode()
    assert '<option value="transformer">' in page and 'name="checkpoint"' in page
    answer = client.post(
        "/models/new/",
        {
            "dataset": dataset.pk,
            "architecture": "transformer",
            "checkpoint": str(checkpoint),
            "epochs": 2,
            "batch_size": 4,
            "lr": 0.003,
            "extra": '{"fractions": [0.5, 0.25, 0.25], "balance": false}',
        },
    )
    run = ModelRun.objects.get()
    assert answer.status_code == 302, answer.context["form"].errors if answer.context else answer
    assert run.params["model"] == {"checkpoint": str(checkpoint)}
    train_now(run, monkeypatch)
    assert run.status == ModelRun.Status.DONE, run.message
    # (that fine-tuning learns is shown in tests/engine/test_transformer.py; here: the page's path)
    assert run.metrics["architecture"] == "transformer" and run.metrics["epochs_run"] == 2
    assert run.metrics["n_train"] == 8 and run.metrics["n_test"] == 4
    assert Prediction.objects.filter(model_run=run).count() == len(TEXTS)
    assert all(p.attention is None for p in Prediction.objects.filter(model_run=run))
    bundle = load_trained(run, device="cpu")
    assert bundle.model.architecture == "transformer" and bundle.model.config == {
        "checkpoint": str(checkpoint)
    }
    params = clean_explanation_params(run, {"methods": ["omit_1"], "target": "predicted", "m": 1})
    assert run_explanations(run.pk, params)
    explanation = Explanation.objects.filter(model_run=run).first()
    assert len(explanation.scores) == len(explanation.document.words)
    assert client.get(f"/models/{run.pk}/").status_code == 200


@pytest.mark.parametrize(
    ("checkpoint", "message"),
    [
        ("", "is required for a transformer"),
        ("/no/such/model-folder", CHECKPOINT_REFUSED),
        ("not a name!", CHECKPOINT_REFUSED),
    ],
)
def test_a_bad_checkpoint_is_shown_on_its_field(client, dataset, sent, checkpoint, message):
    answer = client.post(
        "/models/new/", {"dataset": dataset.pk, "architecture": "transformer", "checkpoint": checkpoint}
    )
    assert answer.status_code == 200
    errors = answer.context["form"].errors
    assert "checkpoint" in errors and message in " ".join(errors["checkpoint"])
    assert not ModelRun.objects.exists() and not sent


def test_clean_params_checks_the_checkpoint_without_loading_it(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    for params, field in [
        ({}, "params.model.checkpoint"),
        ({"model": {"checkpoint": str(empty)}}, "params.model.checkpoint"),
        ({"model": {"checkpoint": "org/model", "hidden_size": 8}}, "params.model.hidden_size"),
    ]:
        with pytest.raises(MachineInputError) as caught:
            clean_params("transformer", params)
        assert caught.value.field == field
    # a hub name is accepted as it stands where the server may download: the worker fetches it
    assert clean_params("transformer", {"model": {"checkpoint": " org/model "}}) == {
        "model": {"checkpoint": "org/model"}
    }


def test_without_the_extra_the_family_is_not_offered(client, dataset, monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)
    assert "transformer" not in architecture_choices() and "cnn" in architecture_choices()
    with pytest.raises(MachineInputError) as caught:
        clean_params("transformer", {"model": {"checkpoint": "org/model"}})
    assert caught.value.field == "architecture"
    assert (
        caught.value.message
        == "the transformer family needs the optional extra: pip install 'hatlab[transformers]'"
    )
    page = client.get("/models/new/").content.decode()
    assert 'value="transformer"' not in page and 'name="checkpoint"' not in page
