"""Model runs: what a researcher may ask to train, and what a dataset hands the engine.

A ``ModelRun`` stores the architecture and the training parameters (the fields of
:class:`explain_engine.api.TrainConfig`, e.g. ``{"epochs": 3, "model": {"hidden_size": 50}}``);
the engine's defaults, the hyper-parameters of the papers (Sen et al. 2020 §5.1), fill in whatever is
left out. A transformer run names its pre-trained checkpoint in ``params.model.checkpoint``; it is offered
only where the engine's optional extra ``transformers`` is installed. A researcher may name only what they may
read: one of their own finished transformer runs (``run:<id>``; an admin any run), a model of the folder the
admin configured (``HATLAB_MODEL_DIR``: a name in it, or its path), or a hub name where the deployment allows
downloads (``HATLAB_HUB_DOWNLOADS``). Everything else gets one message, whether a folder of that name exists on
the server or not. The worker reads the same: a run's own weights, the model folder's real path, or the hub's
download (never a server folder that happens to carry the hub name).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import IntegrityError, transaction

from annotate.access import is_admin
from annotate.infra import storage
from annotate.machine.errors import MachineInputError
from annotate.models import Dataset, Document, ModelRun
from explain_engine import api as engine
from explain_engine.api import MissingExtra

if TYPE_CHECKING:
    from explain_engine.api import TrainConfig


@cache
def train_fields() -> tuple[str, ...]:
    """TrainConfig fields a run may set; the architecture is its own column, device and bar belong to the
    worker. (The engine's training module brings torch: read when a run is checked, not at import.)"""
    return tuple(
        f.name
        for f in dataclasses.fields(engine.TrainConfig)
        if f.name not in {"architecture", "device", "progress_bar"}
    )


_POSITIVE_INTS = ("epochs", "batch_size", "patience", "min_count", "max_vocab", "max_len")
_NON_NEGATIVE_FLOATS = ("weight_decay", "grad_clip")
# Fields that may be null: the paper's value (epochs, batch_size, lr), or "never / no limit".
NULLABLE_FIELDS = (
    "epochs",
    "batch_size",
    "lr",
    "patience",
    "grad_clip",
    "max_vocab",
    "max_len",
    "train_where",
    "weight_decay",
)
# Null differs from the default here: no early stopping, no gradient clipping.
_NULL_MEANS_NEVER = ("patience", "grad_clip")
# Upper bounds of the sizes a run may ask for: the model is built once in the request to check its
# arguments, and trained by a worker; the papers' values sit far below (Sen et al. 2020 App. A: 100-300;
# Lertvittayakumjorn & Toni 2019 §4.2: 50 filters, 150 units).
TRAIN_BOUNDS = {
    "epochs": 500,
    "batch_size": 1024,
    "patience": 500,
    "min_count": 10_000,
    "max_vocab": 1_000_000,
    "max_len": 10_000,
}
MODEL_BOUNDS = {
    "embedding_dim": 1024,
    "hidden_size": 512,
    "attention_size": 512,
    "num_filters": 512,
    "fc_size": 2048,
    "kernel_size": 16,
}
MAX_FILTER_WIDTH = 16
MAX_FILTER_SIZES = 8


def architecture_choices() -> list[str]:
    """The engine's registered architectures whose optional extra is installed, sorted."""
    return engine.available_architectures()


def gpu_queue_enabled() -> bool:
    """Whether jobs go to the ``gpu`` queue by default (``settings.HATLAB_GPU_QUEUE`` or the env var)."""
    value = getattr(settings, "HATLAB_GPU_QUEUE", None)
    if value is None:
        value = os.environ.get("HATLAB_GPU_QUEUE", "")
    if isinstance(value, str):
        return value.strip().lower() in {"1", "true", "yes", "on"}
    return bool(value)


def queue_for(gpu: bool | None = None) -> str:
    """``gpu`` when the job asks for it or GPU routing is enabled, else ``cpu``."""
    return "gpu" if gpu or gpu_queue_enabled() else "cpu"


def _check_number(key: str, value: Any, *, integer: bool, minimum: float, strict: bool) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MachineInputError(f"params.{key}", "must be a number")
    if integer and not float(value).is_integer():
        raise MachineInputError(f"params.{key}", "must be a whole number")
    if not math.isfinite(float(value)) or value < minimum or (strict and value == minimum):
        bound = f"greater than {minimum:g}" if strict else f"at least {minimum:g}"
        raise MachineInputError(f"params.{key}", f"must be {bound}")


def _check_bound(field: str, value: int, top: int) -> None:
    if value > top:
        raise MachineInputError(field, f"must be a whole number from 1 to {top}")


def _check_model_sizes(model: dict) -> None:
    """The size arguments of ``params.model`` within :data:`MODEL_BOUNDS` (before any model is built)."""
    for key, top in MODEL_BOUNDS.items():
        value = model.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not float(value).is_integer():
            raise MachineInputError(f"params.model.{key}", f"must be a whole number from 1 to {top}")
        if not 1 <= value <= top:
            raise MachineInputError(f"params.model.{key}", f"must be a whole number from 1 to {top}")
    sizes = model.get("filter_sizes")
    if sizes is not None and (
        not isinstance(sizes, list | tuple)
        or not 1 <= len(sizes) <= MAX_FILTER_SIZES
        or any(isinstance(w, bool) or not isinstance(w, int) or not 1 <= w <= MAX_FILTER_WIDTH for w in sizes)
    ):
        raise MachineInputError(
            "params.model.filter_sizes",
            f"must be 1 to {MAX_FILTER_SIZES} whole numbers, each from 1 to {MAX_FILTER_WIDTH}",
        )


RUN_PREFIX = "run:"


def _checkpoint_run(value: str, user) -> ModelRun | None:
    """The finished transformer run ``run:<id>`` names, when ``user`` may read it (theirs; an admin's: any)."""
    number = value.removeprefix(RUN_PREFIX).strip()
    if not number.isdigit() or len(number) > 18:
        return None
    runs = ModelRun.objects.filter(
        pk=int(number), status=ModelRun.Status.DONE, architecture__in=engine.FROM_CHECKPOINT
    ).exclude(artifact="")
    if user is None or not is_admin(user):
        runs = runs.filter(owner_id=getattr(user, "pk", None))
    return runs.first()


def model_roots() -> list[str]:
    """The folders a researcher's checkpoint may come from: the admin's model folder, if configured."""
    folder = getattr(settings, "HATLAB_MODEL_DIR", "") or ""
    return [folder] if folder else []


def check_user_checkpoint(checkpoint: object, user) -> str:
    """The checkpoint as stored, when ``user`` may read it (see the module docstring); else a ValueError with
    the one refusal message."""
    if isinstance(checkpoint, str) and checkpoint.strip().startswith(RUN_PREFIX):
        run = _checkpoint_run(checkpoint.strip(), user)
        if run is None:
            raise ValueError(engine.CHECKPOINT_REFUSED)
        return f"{RUN_PREFIX}{run.pk}"
    return engine.check_checkpoint(checkpoint, roots=model_roots(), hub=bool(settings.HATLAB_HUB_DOWNLOADS))


def checkpoint_folder(checkpoint: str, owner) -> str:
    """The folder the worker reads ``checkpoint`` from, checked again as ``owner`` (settings or runs may have
    changed since the run was queued): a run's weights, a model folder's real path, or a hub download."""
    value = check_user_checkpoint(checkpoint, owner)
    if value.startswith(RUN_PREFIX):
        run = _checkpoint_run(value, owner)
        assert run is not None  # checked just above
        return str(storage.local_artifact(run.artifact) / engine.PRETRAINED_FOLDER)
    if Path(value).is_absolute():
        return value
    return engine.hub_snapshot(value)


def _check_pretrained(architecture: str, model: dict, user) -> None:
    """A family built from a checkpoint: the checkpoint named (not loaded here), no other argument."""
    try:
        engine.require_extra(architecture)
    except MissingExtra as exc:
        raise MachineInputError("architecture", str(exc)) from None
    others = sorted(set(model) - {"checkpoint"})
    if others:
        raise MachineInputError(
            f"params.model.{others[0]}", f"is not an argument of {architecture}; give only checkpoint"
        )
    try:
        model["checkpoint"] = check_user_checkpoint(model.get("checkpoint"), user)
    except ValueError as exc:
        raise MachineInputError("params.model.checkpoint", str(exc)) from None


def clean_params(architecture: str, params: Any, user=None) -> dict:
    """Validate a run's architecture and training parameters; return the parameters as stored.

    Raises :class:`MachineInputError` naming the field (``architecture``, ``params`` or
    ``params.<key>``). Model constructor arguments (``params.model``) are checked by building
    the model once on a two-word vocabulary, except a transformer's checkpoint, which is only
    checked to be one ``user`` may read (loading it is the worker's job).
    """
    if architecture not in engine.ARCHITECTURES:
        raise MachineInputError(
            "architecture",
            f"unknown architecture {architecture!r}; choose one of {', '.join(architecture_choices())}",
        )
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise MachineInputError("params", "must be an object of training parameters")
    unknown = sorted(set(params) - set(train_fields()))
    if unknown:
        raise MachineInputError(
            f"params.{unknown[0]}", f"unknown training parameter; known: {', '.join(train_fields())}"
        )
    cleaned = dict(params)
    for key, value in params.items():
        if value is None:
            if key not in NULLABLE_FIELDS:
                raise MachineInputError(f"params.{key}", "may not be null")
            del cleaned[key]
            if key in _NULL_MEANS_NEVER:
                cleaned[key] = None
    for key in _POSITIVE_INTS:
        if cleaned.get(key) is not None:
            _check_number(key, cleaned[key], integer=True, minimum=1, strict=False)
            cleaned[key] = int(cleaned[key])
            _check_bound(f"params.{key}", cleaned[key], TRAIN_BOUNDS[key])
    if "seed" in cleaned:
        _check_number("seed", cleaned["seed"], integer=True, minimum=0, strict=False)
        cleaned["seed"] = int(cleaned["seed"])
    if "lr" in cleaned:
        _check_number("lr", cleaned["lr"], integer=False, minimum=0, strict=True)
    for key in _NON_NEGATIVE_FLOATS:
        if cleaned.get(key) is not None:
            _check_number(key, cleaned[key], integer=False, minimum=0, strict=False)
    if "train_fraction" in cleaned:
        _check_number("train_fraction", cleaned["train_fraction"], integer=False, minimum=0, strict=True)
        if cleaned["train_fraction"] > 1:
            raise MachineInputError("params.train_fraction", "must be at most 1")
    if "fractions" in cleaned:
        fr = cleaned["fractions"]
        if (
            not isinstance(fr, list | tuple)
            or len(fr) != 3
            or any(isinstance(f, bool) or not isinstance(f, int | float) or f < 0 for f in fr)
            or not math.isclose(sum(fr), 1.0, abs_tol=1e-6)
        ):
            raise MachineInputError("params.fractions", "must be three non-negative numbers summing to 1")
        cleaned["fractions"] = [float(f) for f in fr]
    for key in ("balance", "use_given_splits"):
        if key in cleaned and not isinstance(cleaned[key], bool):
            raise MachineInputError(f"params.{key}", "must be true or false")
    if "train_where" in cleaned and not (
        isinstance(cleaned["train_where"], dict)
        and all(isinstance(v, list) for v in cleaned["train_where"].values())
    ):
        raise MachineInputError("params.train_where", "must map a field to a list of allowed values")
    model = cleaned.get("model", {})
    if not isinstance(model, dict):
        raise MachineInputError("params.model", "must be an object of model constructor arguments")
    if architecture in engine.FROM_CHECKPOINT:
        model = dict(model)
        _check_pretrained(architecture, model, user)
        cleaned["model"] = model
        return cleaned
    _check_model_sizes(model)
    try:
        engine.build_model(architecture, 2, 2, **model)
    except (TypeError, ValueError) as exc:
        raise MachineInputError("params.model", str(exc)) from None
    return cleaned


def train_config(model_run: ModelRun) -> TrainConfig:
    """The engine's training configuration for ``model_run`` (no console progress bar)."""
    params = dict(model_run.params)
    model = params.get("model")
    if model_run.architecture in engine.FROM_CHECKPOINT and isinstance(model, dict) and "checkpoint" in model:
        try:
            checkpoint = checkpoint_folder(model["checkpoint"], model_run.owner)
        except ValueError as exc:
            raise MachineInputError("params.model.checkpoint", str(exc)) from None
        params["model"] = {**model, "checkpoint": checkpoint}
    if "fractions" in params:
        params["fractions"] = tuple(params["fractions"])
    return engine.TrainConfig(architecture=model_run.architecture, progress_bar=False, **params)


def trainable_documents(dataset: Dataset):
    """The dataset's documents with a gold label and at least one word."""
    return dataset.documents.exclude(label="").exclude(words=[]).order_by("id")


def dataset_records(dataset: Dataset) -> list[dict]:
    """Engine training records (``id``, ``text``, ``label``, ``metadata``; ``split`` when the document's
    metadata names one) for the labelled documents of ``dataset``."""
    records = []
    for doc in trainable_documents(dataset).only("external_id", "text", "label", "metadata"):
        rec = {"id": doc.external_id, "text": doc.text, "label": doc.label, "metadata": doc.metadata}
        if isinstance(doc.metadata, dict) and doc.metadata.get("split"):
            rec["split"] = doc.metadata["split"]
        records.append(rec)
    return records


def check_trainable(dataset: Dataset) -> None:
    """A dataset needs labelled documents of at least two labels to train a classifier."""
    labels = set(trainable_documents(dataset).values_list("label", flat=True).distinct())
    if len(labels) < 2:
        raise MachineInputError(
            "dataset",
            f"needs labelled documents of at least two labels to train a classifier (has {len(labels)})",
        )


class IdempotencyConflict(MachineInputError):
    """An idempotency key already used by this owner for a different request."""


def request_digest(request: dict) -> str:
    """SHA-256 of ``request`` as canonical JSON (sorted keys): two bodies that ask the same have one digest."""
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def create_model_run(
    owner, dataset: Dataset, architecture: str, params: dict | None = None, name: str = ""
) -> ModelRun:
    """A queued ``ModelRun`` after validating the architecture, the parameters and the dataset."""
    return create_model_run_once(owner, dataset, architecture, params, name)[0]


def create_model_run_once(
    owner,
    dataset: Dataset,
    architecture: str,
    params: dict | None = None,
    name: str = "",
    *,
    idempotency_key: str = "",
    digest: str = "",
) -> tuple[ModelRun, bool]:
    """:func:`create_model_run`, and whether the run was created now. With ``idempotency_key``, the owner's
    run made under that key is returned instead when there is one and its request had the same ``digest``
    (:func:`request_digest`); a different request under a used key raises :class:`IdempotencyConflict`.
    Two requests racing under one key make one run (a unique constraint on owner and key)."""
    cleaned = clean_params(architecture, params, owner)
    check_trainable(dataset)
    name = (name or "").strip() or f"{architecture} on {dataset.name}"
    if len(name) > ModelRun._meta.get_field("name").max_length:
        raise MachineInputError("name", "is too long")
    if idempotency_key and (earlier := _keyed_run(owner, idempotency_key, digest)) is not None:
        return earlier, False
    try:
        with transaction.atomic():
            run = ModelRun.objects.create(
                name=name,
                owner=owner,
                dataset=dataset,
                architecture=architecture,
                params=cleaned,
                idempotency_key=idempotency_key,
                request_digest=digest if idempotency_key else "",
            )
    except IntegrityError:
        if not idempotency_key or (earlier := _keyed_run(owner, idempotency_key, digest)) is None:
            raise
        return earlier, False
    return run, True


def _keyed_run(owner, key: str, digest: str) -> ModelRun | None:
    earlier = ModelRun.objects.filter(owner=owner, idempotency_key=key).first()
    if earlier is not None and earlier.request_digest != digest:
        raise IdempotencyConflict(
            "idempotency_key",
            f"{key!r} was already used for a different request (model run {earlier.pk}); "
            "use a new key for a new request",
        )
    return earlier


def documents_with_words(dataset: Dataset):
    """Every document of ``dataset`` that has words (predictions and explanations cover these)."""
    return Document.objects.filter(dataset=dataset).exclude(words=[]).order_by("id")
