"""YELP-HAT's raw Mechanical Turk answers (Sen et al. 2020 §3) imported as a finished highlight study.

The CSVs are read by the engine's loader; here they become a dataset, a study, items, synthetic
workers and their responses, so the dashboards and heat maps treat them as answers collected here.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from annotate.corpus.imports import BATCH_SIZE, CorpusImportError
from annotate.kinds.highlight.config import KIND
from annotate.models import Assignment, Dataset, Document, Item, Response, Study, Worker
from annotate.tasks import get_kind
from annotate.tasks.page_words import word_payload
from explain_engine.api import read_raw

YELP_LABELS = {0: "negative", 1: "positive"}
YELPHAT_PROVIDER = "yelphat"


@dataclass(frozen=True)
class YelpHatImport:
    dataset: Dataset
    study: Study
    documents: int
    responses: int
    workers: int


def import_yelphat(
    paths: Sequence[str | Path], owner, dataset_name: str = "yelp-hat", study_name: str | None = None
) -> YelpHatImport:
    """Import raw YELP-HAT MTurk CSVs (Sen et al. 2020) as a dataset plus a finished highlight study.

    One document per review (label ``positive`` / ``negative`` from the Yelp stars), one item per
    review needing as many responses as it has maps, and one response per worker answer with its
    label (``yes`` / ``no`` / ``idk`` → positive / negative / cannot decide; empty → ``None``) and
    its 0/1 map. The CSVs carry no worker ids, so the k-th answer to each review of a file is given
    to a synthetic worker ``yelphat`` / ``"<file>:<k>"``. All or nothing: one transaction.
    """
    records = read_raw([Path(p) for p in paths])
    now = timezone.now()
    files = sorted({rec["source"]["file"] for rec in records})
    with transaction.atomic():
        dataset = _create_dataset(owner, dataset_name, files)
        documents = _documents(dataset, records)
        Document.objects.bulk_create(documents, batch_size=BATCH_SIZE)
        study = _create_study(owner, dataset, study_name or f"{dataset_name} (imported)", files)
        items = _create_items(study, documents, records)
        workers = _create_workers(records)
        answers = _create_responses(study, items, records, workers, now)
    return YelpHatImport(dataset, study, len(documents), answers, len(workers))


def _create_dataset(owner, name: str, files: list[str]) -> Dataset:
    """The dataset of the reviews; an error when ``owner`` already has one named ``name``."""
    if Dataset.objects.filter(owner=owner, name=name).exists():
        raise CorpusImportError(None, "dataset", f"{owner} already has a dataset named {name!r}")
    return Dataset.objects.create(
        name=name,
        owner=owner,
        labels=sorted(YELP_LABELS.values()),
        source=", ".join(files),
        description="YELP-HAT raw Mechanical Turk answers (Sen et al., ACL 2020).",
    )


def _documents(dataset: Dataset, records: list[dict]) -> list[Document]:
    """One unsaved document per review; an error when its word offsets differ from the loader's (the maps
    are over the loader's words)."""
    documents = []
    for rec in records:
        doc = Document.from_text(
            dataset,
            rec["id"],
            rec["text"],
            label=YELP_LABELS[rec["label"]],
            metadata={"yelp_label": rec["label"], "source": rec["source"]},
        )
        if doc.words != rec["words"]:
            raise CorpusImportError(None, "words", f"review {rec['id']}: word offsets disagree")
        documents.append(doc)
    return documents


def _create_study(owner, dataset: Dataset, name: str, files: list[str]) -> Study:
    """The finished read-first highlight study the answers belong to."""
    kind = get_kind(KIND)
    return Study.objects.create(
        name=name,
        owner=owner,
        dataset=dataset,
        kind=kind.name,
        config=kind.validate_config({"mode": "read_first"}),
        instructions="Read the review, choose its sentiment, then click every word that shows it.",
        annotators_per_item=3,
        status=Study.Status.FINISHED,
        provider_config={"imported_from": files},
    )


def _create_items(study: Study, documents: list[Document], records: list[dict]) -> list[Item]:
    """One item per review, needing and done as many responses as it has maps."""
    items = [
        Item(
            study=study,
            document=doc,
            position=i,
            payload=word_payload(doc.text, doc.words),
            secret={"label": doc.label},
            responses_needed=len(rec["annotations"]),
            responses_done=len(rec["annotations"]),
        )
        for i, (doc, rec) in enumerate(zip(documents, records, strict=True))
    ]
    Item.objects.bulk_create(items, batch_size=BATCH_SIZE)
    return items


def _create_workers(records: list[dict]) -> dict[str, int]:
    """The synthetic workers ``"<file>:<k>"`` (those already there are reused): external id → pk."""
    ids = {f"{rec['source']['file']}:{k}" for rec in records for k in range(len(rec["annotations"]))}
    Worker.objects.bulk_create(
        [Worker(provider=YELPHAT_PROVIDER, external_id=i) for i in sorted(ids)],
        ignore_conflicts=True,
        batch_size=BATCH_SIZE,
    )
    return dict(
        Worker.objects.filter(provider=YELPHAT_PROVIDER, external_id__in=ids).values_list("external_id", "pk")
    )


def _create_responses(
    study: Study, items: list[Item], records: list[dict], workers: dict[str, int], now: datetime
) -> int:
    """A submitted assignment (submitted ``now``) and a verified response per map; returns how many."""
    assignments, answers = [], []
    for item, rec in zip(items, records, strict=True):
        for k, annotation in enumerate(rec["annotations"]):
            assignments.append(
                Assignment(
                    study=study,
                    item=item,
                    worker_id=workers[f"{rec['source']['file']}:{k}"],
                    slot=k,
                    status=Assignment.Status.SUBMITTED,
                    expires_at=now,
                    submitted_at=now,
                )
            )
            answers.append({"label": annotation["label"], "map": annotation["map"]})
    Assignment.objects.bulk_create(assignments, batch_size=BATCH_SIZE)
    Response.objects.bulk_create(
        [
            Response(
                assignment=a,
                study=study,
                item=a.item,
                worker_id=a.worker_id,
                submission_key=uuid.uuid4(),
                answer=answer,
                # a published data set's answers: no platform is left to confirm them
                verification=Response.Verification.VERIFIED,
            )
            for a, answer in zip(assignments, answers, strict=True)
        ],
        batch_size=BATCH_SIZE,
    )
    return len(answers)
