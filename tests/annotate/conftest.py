"""Fixtures and factories of the web app's tests: users by role, a synthetic dataset, running highlight
studies, and the tiny dataset and model settings of the machine-side tests."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from django.core.cache import cache

from annotate.access import ADMIN_GROUP, RESEARCHER_GROUP
from annotate.corpus.demo_reviews import generate_reviews
from annotate.corpus.imports import TextRecord, store_records
from annotate.infra import throttle
from annotate.machine import jobs as machine_jobs
from annotate.models import Dataset, Document, ModelRun, Study, Worker
from annotate.studies.lifecycle import start_study
from annotate.tasks import get_kind

PASSWORD = "a-long-test-password"

TINY_TEXTS = [
    ("good great food", "pos"),
    ("awful bad service", "neg"),
    ("really good place .", "pos"),
    ("bad bad food", "neg"),
    ("great friendly staff", "pos"),
    ("terrible awful wait", "neg"),
    ("nice and good", "pos"),
    ("not good , bad", "neg"),
]
# One epoch of a very small BiLSTM with attention: seconds on one CPU thread.
TINY_PARAMS = {
    "epochs": 1,
    "batch_size": 4,
    "min_count": 1,
    "model": {"embedding_dim": 8, "hidden_size": 8, "attention_size": 8},
}


@pytest.fixture(autouse=True)
def _fresh_throttles():
    """Each test starts with empty throttle counters (they live in the cache, which outlives a test)."""
    cache.clear()
    throttle.forget_leases()  # what this process leased from those counters


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    """Tests make many accounts; the production hasher is slow on purpose."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def make_user(username: str, group: str | None = None, **fields) -> User:
    user = User.objects.create_user(username=username, password=PASSWORD, **fields)
    if group:
        user.groups.add(Group.objects.get_or_create(name=group)[0])
    return user


@pytest.fixture
def researcher(db) -> User:
    return make_user("rita", RESEARCHER_GROUP)


@pytest.fixture
def other_researcher(db) -> User:
    return make_user("otto", RESEARCHER_GROUP)


@pytest.fixture
def admin_user(db) -> User:
    return make_user("ada", ADMIN_GROUP)


@pytest.fixture
def annotator_user(db) -> User:
    return make_user("anna")


def make_dataset(owner: User, n: int = 6, name: str = "reviews", gold_every: int = 0) -> Dataset:
    dataset = Dataset.objects.create(owner=owner, name=name)
    records = [
        TextRecord(
            i + 1,
            r["id"],
            r["text"],
            r["label"],
            {"gold": {"label": r["label"], "map": r["map"]}} if gold_every and i % gold_every == 0 else {},
        )
        for i, r in enumerate(generate_reviews(n, seed=3))
    ]
    store_records(dataset, records)
    return dataset


def make_study(
    owner: User, dataset: Dataset, *, start: bool = True, config: dict | None = None, **fields
) -> Study:
    kind = get_kind("highlight")
    study = Study.objects.create(
        name=fields.pop("name", "study"),
        owner=owner,
        dataset=dataset,
        kind="highlight",
        config=kind.validate_config(config or {}),
        instructions=fields.pop("instructions", "Read, choose, highlight."),
        **fields,
    )
    if start:
        start_study(study)
    return study


def make_worker(name: str, provider: str = "local") -> Worker:
    return Worker.objects.create(provider=provider, external_id=name)


@pytest.fixture
def dataset(researcher) -> Dataset:
    return make_dataset(researcher)


@pytest.fixture
def study(researcher, dataset) -> Study:
    return make_study(researcher, dataset, annotators_per_item=2)


def good_answer(item, label: str = "positive") -> tuple[dict, dict]:
    """A valid read-first answer (one highlighted word) and its timings for ``item``."""
    n = len(item.payload["words"])
    word_map = [0] * n
    word_map[0] = 1
    return {"label": label, "map": word_map}, {
        "read_ms": 900,
        "answer_ms": 400,
        "label_at_ms": 900,
        "first_highlight_at_ms": 1000,
    }


def tiny_dataset(owner: User, name: str = "tiny", texts=TINY_TEXTS) -> Dataset:
    """Eight short labelled texts (``pos`` / ``neg``): enough to train :data:`TINY_PARAMS` in seconds."""
    dataset = Dataset.objects.create(name=name, owner=owner, labels=sorted({label for _, label in texts}))
    Document.objects.bulk_create(
        [Document.from_text(dataset, f"d{i}", text, label=label) for i, (text, label) in enumerate(texts)]
    )
    return dataset


def train_now(run: ModelRun, monkeypatch) -> None:
    """Run the training job of ``run`` in this process, as a worker would (no broker)."""
    sent: list = []
    monkeypatch.setattr(machine_jobs.train_model, "apply_async", lambda args, queue, **_: sent.append(args))
    job = machine_jobs.enqueue_training(run, run.owner)
    machine_jobs.train_model.apply(args=[job.pk]).get()
    run.refresh_from_db()
