"""Tiny data and settings shared by the machine-side tests (model runs, jobs, pages)."""

from __future__ import annotations

from django.contrib.auth.models import Group, User

from annotate.models import Dataset, Document

TEXTS = [
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


def researcher(username: str = "ada") -> User:
    user = User.objects.create_user(username, password="pw-researcher-1")
    group, _ = Group.objects.get_or_create(name="researcher")
    user.groups.add(group)
    return user


def tiny_dataset(owner: User, name: str = "tiny", texts=TEXTS) -> Dataset:
    dataset = Dataset.objects.create(name=name, owner=owner, labels=sorted({label for _, label in texts}))
    Document.objects.bulk_create(
        [Document.from_text(dataset, f"d{i}", text, label=label) for i, (text, label) in enumerate(texts)]
    )
    return dataset


def train_now(run, monkeypatch) -> None:
    """Run the training job of ``run`` in this process, as a worker would (no broker)."""
    from annotate.jobs import machine as jobs

    sent: list = []
    monkeypatch.setattr(jobs.train_model, "apply_async", lambda args, queue: sent.append(args))
    job = jobs.enqueue_training(run, run.owner)
    jobs.train_model.apply(args=[job.pk]).get()
    run.refresh_from_db()
