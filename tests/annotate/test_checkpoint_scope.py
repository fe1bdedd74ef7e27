"""The checkpoint field reads only what the researcher may read: their own transformer runs, the admin's model
folder, and hub names where the server may download. The attacks: researcher B names researcher A's fine-tuned
model by its media path, by ``run:<id>``, through a link in the model folder, or as a hub-shaped relative path;
and probes the server's folders by comparing error texts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotate.access import RESEARCHER_GROUP
from annotate.machine import MachineInputError, clean_params
from annotate.machine.runs import checkpoint_folder, create_model_run, train_config
from annotate.models import ModelRun
from explain_engine.api import CHECKPOINT_REFUSED, PRETRAINED_FOLDER, check_checkpoint
from tests.annotate.conftest import make_user, tiny_dataset

pytestmark = [pytest.mark.django_db]
pytest.importorskip("transformers")


@pytest.fixture(autouse=True)
def folders(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.HATLAB_S3_BUCKET = ""
    settings.HATLAB_MODEL_DIR = str(tmp_path / "models")
    settings.HATLAB_HUB_DOWNLOADS = False
    (tmp_path / "models" / "bert-tiny").mkdir(parents=True)
    (tmp_path / "models" / "bert-tiny" / "config.json").write_text("{}")
    return tmp_path


@pytest.fixture
def alice(db):
    return make_user("alice", RESEARCHER_GROUP)


@pytest.fixture
def bob(db):
    return make_user("bob", RESEARCHER_GROUP)


def finished_run(owner, media: Path) -> ModelRun:
    """A finished transformer run of ``owner`` with its fine-tuned weights under MEDIA_ROOT."""
    run = ModelRun.objects.create(
        name="fine-tuned", owner=owner, dataset=tiny_dataset(owner), architecture="transformer",
        status=ModelRun.Status.DONE, params={"model": {"checkpoint": "bert-tiny"}},
    )  # fmt: skip
    key = f"models/run-{run.pk}"
    weights = media / key / PRETRAINED_FOLDER
    weights.mkdir(parents=True)
    (weights / "config.json").write_text(json.dumps({"model_type": "bert"}))
    ModelRun.objects.filter(pk=run.pk).update(artifact=key)
    run.refresh_from_db()
    return run


def refused(value: str, user) -> str:
    with pytest.raises(MachineInputError) as caught:
        clean_params("transformer", {"model": {"checkpoint": value}}, user)
    assert caught.value.field == "params.model.checkpoint"
    return caught.value.message


def test_another_researchers_model_cannot_be_named_by_its_media_path(alice, bob, folders):
    run = finished_run(alice, folders / "media")
    weights = folders / "media" / run.artifact / PRETRAINED_FOLDER
    assert refused(str(weights), bob) == CHECKPOINT_REFUSED
    assert refused(f"run:{run.pk}", bob) == CHECKPOINT_REFUSED
    # and not by a relative path either, whatever the worker's working folder
    assert refused(f"media/{run.artifact}/{PRETRAINED_FOLDER}", bob) == CHECKPOINT_REFUSED
    assert refused(str(weights), alice) == CHECKPOINT_REFUSED  # even the owner: by run:<id>, not by path


def test_a_researcher_trains_from_their_own_run(alice, folders):
    run = finished_run(alice, folders / "media")
    assert clean_params("transformer", {"model": {"checkpoint": f" run:{run.pk} "}}, alice) == {
        "model": {"checkpoint": f"run:{run.pk}"}
    }
    assert checkpoint_folder(f"run:{run.pk}", alice) == str(
        folders / "media" / run.artifact / PRETRAINED_FOLDER
    )
    unfinished = ModelRun.objects.create(
        name="x", owner=alice, dataset=run.dataset, architecture="transformer", artifact=run.artifact
    )
    assert refused(f"run:{unfinished.pk}", alice) == CHECKPOINT_REFUSED


def test_one_message_for_every_refusal(bob, folders):
    """No text tells a server folder that exists from one that does not."""
    outside = folders / "elsewhere"
    (outside / "model").mkdir(parents=True)
    (outside / "model" / "config.json").write_text("{}")
    probes = [
        str(outside / "model"),  # a model folder that exists, outside the model folder
        str(outside / "missing"),  # one that does not
        "/etc",  # a folder without a model
        "/no/such/folder",
        "../elsewhere/model",  # out of the model folder by a relative path
        "bert-tiny/../../elsewhere/model",
        "org/model",  # a hub name on a server that may not download
        "run:999999",
        "run:abc",
    ]
    assert {refused(p, bob) for p in probes} == {CHECKPOINT_REFUSED}


def test_the_admins_model_folder_is_open_to_every_researcher(bob, folders):
    assert clean_params("transformer", {"model": {"checkpoint": "bert-tiny"}}, bob) == {
        "model": {"checkpoint": str((folders / "models" / "bert-tiny").resolve())}
    }
    inside = str(folders / "models" / "bert-tiny")
    assert check_checkpoint(inside, roots=[folders / "models"], hub=False) == str(Path(inside).resolve())


def test_a_link_in_the_model_folder_does_not_lead_out_of_it(alice, bob, folders):
    run = finished_run(alice, folders / "media")
    (folders / "models" / "stolen").symlink_to(folders / "media" / run.artifact / PRETRAINED_FOLDER)
    assert refused("stolen", bob) == CHECKPOINT_REFUSED


def test_hub_names_only_where_the_server_may_download(bob, settings, monkeypatch, folders):
    settings.HATLAB_HUB_DOWNLOADS = True
    assert clean_params("transformer", {"model": {"checkpoint": "org/model"}}, bob) == {
        "model": {"checkpoint": "org/model"}
    }
    # the worker reads a hub name through the hub's download, never as a folder of the server of that name
    fetched: list[str] = []

    def snapshot_download(repo_id, local_files_only):
        fetched.append(repo_id)
        return str(folders / "hub-cache" / repo_id)

    monkeypatch.setattr("huggingface_hub.snapshot_download", snapshot_download)
    (folders / "media" / "models").mkdir(parents=True)
    monkeypatch.chdir(folders)  # "media/models" exists relative to the worker's folder
    assert checkpoint_folder("media/models", bob) == str(folders / "hub-cache" / "media/models")
    assert fetched == ["media/models"]


def test_the_worker_checks_again_before_reading(alice, bob, settings, folders):
    """A run queued with a checkpoint that is no longer allowed (the model folder moved, the run changed
    hands) fails instead of reading it."""
    dataset = tiny_dataset(bob, name="b")
    run = create_model_run(bob, dataset, "transformer", {"model": {"checkpoint": "bert-tiny"}})
    assert train_config(run).model["checkpoint"] == str((folders / "models" / "bert-tiny").resolve())
    settings.HATLAB_MODEL_DIR = str(folders / "other")
    with pytest.raises(MachineInputError) as caught:
        train_config(run)
    assert caught.value.message == CHECKPOINT_REFUSED
    theirs = finished_run(alice, folders / "media")
    ModelRun.objects.filter(pk=run.pk).update(params={"model": {"checkpoint": f"run:{theirs.pk}"}})
    run.refresh_from_db()
    with pytest.raises(MachineInputError):
        train_config(run)
