"""A public human-rationale set imported as a dataset plus a finished study whose answers are its maps.

The engine reads the set (:func:`explain_engine.api.read_rationales`: ERASER, HateXplain, e-SNLI, Zaidan
et al. 2007, the 20 Newsgroups human attention, YELP-HAT) into rationale records; here they become a
dataset (one document per text, its label), a finished study of the kind that takes imported texts (the
one that takes pairs for premise–hypothesis pairs; ``TaskKind.rationale_import``), one item per text, one
synthetic worker per annotator the set names (provider ``rationales``, id ``<format>:<annotator>``) and one verified response per map. The dashboards, the
pointing game, the faithfulness-versus-plausibility scatter and the alignment's expert oracle read them as
the human maps they read of any study.

An upload is one file, or a zip of the set's folder (ERASER's docs/ and split files; the 20 Newsgroups
annotations with their ``20news-bydate-test`` texts; several YELP-HAT CSVs). Everything is checked before
anything is stored, in one transaction; every refusal is a :class:`CorpusImportError` naming the file's
line and field.
"""

from __future__ import annotations

import io
import tempfile
import uuid
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from django.db import transaction
from django.utils import timezone
from rest_framework.exceptions import ValidationError

from annotate.corpus.imports import (
    BATCH_SIZE,
    MAX_ID_LENGTH,
    MAX_LABEL_LENGTH,
    CorpusImportError,
    check_file_size,
    check_text,
    limits,
)
from annotate.models import Assignment, Dataset, Document, Item, Response, Study, Worker
from annotate.tasks import TASK_KINDS, get_kind
from explain_engine.api import RATIONALE_FORMATS, RationaleFormatError, read_rationales, word_spans

RATIONALE_PROVIDER = "rationales"
OTHER_LABEL = "other"
_SUFFIXES = {"hatexplain": (".json",), "esnli": (".csv",), "zaidan": (".jsonl", ".json"), "mohseni": (".jsonl",),
             "yelphat": (".csv",)}  # fmt: skip


@dataclass(frozen=True)
class RationaleImport:
    dataset: Dataset
    study: Study
    documents: int
    responses: int
    workers: int


def _unzip(data: bytes, into: Path) -> None:
    """Extract a zip upload, refusing members outside the folder and more bytes than the import cap."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise CorpusImportError(None, "file", "not a valid zip file") from None
    cap = limits().max_bytes
    if sum(m.file_size for m in archive.infolist()) > cap:
        raise CorpusImportError(None, "file", f"unpacks to more than {cap} bytes (HATLAB_IMPORT_MAX_BYTES)")
    for member in archive.infolist():
        name = PurePosixPath(member.filename)
        if name.is_absolute() or ".." in name.parts:
            raise CorpusImportError(None, "file", f"zip member {member.filename!r} lies outside the folder")
        if not member.is_dir():
            target = into.joinpath(*name.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(archive.read(member))


def _inputs(fmt: str, root: Path) -> tuple[list[Path], Path | None]:
    """The paths the engine's reader of ``fmt`` takes from an unpacked upload, and the texts folder."""
    files = sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith("."))
    if fmt == "eraser":
        folders = sorted(
            {p.parent.parent for p in files if p.parent.name == "docs"}, key=lambda p: len(p.parts)
        )
        if not folders:
            raise CorpusImportError(None, "file", "an ERASER set needs its docs/ folder and split files")
        return [folders[0]], None
    wanted = [p for p in files if p.suffix.lower() in _SUFFIXES[fmt] and p.parent.name != "docs"]
    if fmt == "hatexplain":
        wanted = [p for p in wanted if p.name != "post_id_divisions.json"]
    if fmt == "mohseni":
        wanted = [p for p in wanted if p.parent == root or p.parent.parent == root]
        texts = next((p for p in root.rglob("20news-bydate-test") if p.is_dir()), None)
        return wanted[:1], texts or root
    if not wanted:
        raise CorpusImportError(None, "file", f"no {' or '.join(_SUFFIXES[fmt])} file of the {fmt} format")
    return (wanted if fmt == "yelphat" else wanted[:1]), None


def _error(exc: Exception, root: Path) -> CorpusImportError:
    """A reader's error as the import's: the line and field, and the file named inside the upload."""
    if isinstance(exc, RationaleFormatError):
        where, _, line = exc.where.rpartition(":")
        number = int(line) if line.isdigit() else None
        place = (where if number else exc.where).replace(f"{root}/", "")
        return CorpusImportError(number, exc.field, f"{place}: {exc.message}")
    return CorpusImportError(None, None, str(exc).replace(f"{root}/", ""))


def read_upload(fmt: str, data: bytes, filename: str) -> list[dict]:
    """The rationale records of an uploaded file (or zip of the set's folder) of the format ``fmt``."""
    if fmt not in RATIONALE_FORMATS:
        raise CorpusImportError(None, "format", f"must be one of {', '.join(RATIONALE_FORMATS)}")
    check_file_size(len(data))
    with tempfile.TemporaryDirectory(prefix="hatlab-import-") as tmp:
        root = Path(tmp)
        if filename.lower().endswith(".zip"):
            _unzip(data, root)
        else:
            (root / (PurePosixPath(filename).name or "upload")).write_bytes(data)
        paths, texts = _inputs(fmt, root)
        try:
            records = read_rationales(fmt, paths, texts)
        except (ValueError, FileNotFoundError) as exc:
            raise _error(exc, root) from None
    if not records:
        raise CorpusImportError(None, None, "the file holds no texts")
    return records


def _check(records: Sequence[dict]) -> list[str]:
    """Ids, texts and labels within the caps, ids unique; returns the labels, sorted."""
    seen: set[str] = set()
    labels: set[str] = set()
    for n, rec in enumerate(records, 1):
        if len(rec["id"]) > MAX_ID_LENGTH:
            raise CorpusImportError(n, "id", f"longer than {MAX_ID_LENGTH} characters")
        if rec["id"] in seen:
            raise CorpusImportError(n, "id", f"{rec['id']!r} repeats")
        seen.add(rec["id"])
        check_text(n, "text", rec["text"])
        if [list(s) for s in word_spans(rec["text"])] != [list(s) for s in rec["words"]]:
            raise CorpusImportError(n, "words", f"text {rec['id']!r}: word offsets disagree with its text")
        for label in [rec.get("label"), *(a.get("label") for a in rec["annotations"])]:
            if label not in (None, ""):
                if len(str(label)) > MAX_LABEL_LENGTH:
                    raise CorpusImportError(n, "label", f"longer than {MAX_LABEL_LENGTH} characters")
                labels.add(str(label))
    return sorted(labels) if len(labels) >= 2 else sorted(labels | {OTHER_LABEL})


def _document(dataset: Dataset, rec: dict, fmt: str) -> Document:
    metadata: dict[str, Any] = {
        "imported_from": fmt,
        "split": rec.get("split"),
        "source": rec.get("metadata") or {},
    }
    if "hypothesis" in rec:
        metadata["hypothesis"] = rec["hypothesis"]
    return Document.from_text(
        dataset, rec["id"], rec["text"], label=rec.get("label") or "", metadata=metadata
    )


def _study(owner, dataset: Dataset, name: str, fmt: str, labels: list[str], pairs: bool) -> Study:
    kind = get_kind(TASK_KINDS.where(rationale_import="pairs" if pairs else "texts")[0])
    try:
        valid = kind.validate_config(kind.rationale_config(labels))
    except ValidationError as exc:
        raise CorpusImportError(
            None, "label", f"the set's labels do not fit a {kind.name} study: {exc.detail}"
        ) from None
    return Study.objects.create(
        owner=owner, name=name, dataset=dataset, kind=kind.name, config=valid, status=Study.Status.FINISHED,
        instructions=f"Imported human rationales ({fmt}).", annotators_per_item=1, provider_config={"imported_from": fmt},
    )  # fmt: skip


def import_rationales(
    records: Sequence[dict], owner, name: str, fmt: str, source: str = ""
) -> RationaleImport:
    """Store rationale records as a dataset and a finished study (see the module's docstring); all or
    nothing. A dataset of that name the owner already has is an error."""
    labels = _check(records)
    pairs = any("hypothesis" in rec for rec in records)
    with transaction.atomic():
        if Dataset.objects.filter(owner=owner, name=name).exists():
            raise CorpusImportError(None, "name", f"you already have a dataset called {name!r}")
        dataset = Dataset.objects.create(owner=owner, name=name, source=source or fmt, labels=labels,
                                         description=f"Human rationales imported from the {fmt} format.")  # fmt: skip
        documents = [_document(dataset, rec, fmt) for rec in records]
        Document.objects.bulk_create(documents, batch_size=BATCH_SIZE)
        study = _study(owner, dataset, f"{name} (imported maps)", fmt, labels, pairs)
        by_doc = {doc.pk: rec for doc, rec in zip(documents, records, strict=True)}
        try:
            items = get_kind(study.kind).build_items(study)
        except ValidationError as exc:
            raise CorpusImportError(
                None, "text", f"the texts do not fit a {study.kind} study: {exc.detail}"
            ) from None
        for item in items:
            item.responses_needed = item.responses_done = len(by_doc[item.document_id]["annotations"])
        Item.objects.bulk_create(items, batch_size=BATCH_SIZE)
        workers = _workers(fmt, records)
        answers = _responses(study, items, by_doc, fmt, workers)
    return RationaleImport(dataset, study, len(documents), answers, len(workers))


def _annotators(rec: dict) -> list[str]:
    """The annotators of a text, a repeated one numbered (``name#2``) so each map has its own worker."""
    out: list[str] = []
    for ann in rec["annotations"]:
        base = str(ann["annotator"])
        name, k = base, 1
        while name in out:
            k += 1
            name = f"{base}#{k}"
        out.append(name)
    return out


def _worker_id(fmt: str, annotator: str) -> str:
    return f"{fmt}:{annotator}"[:200]


def _workers(fmt: str, records: Sequence[dict]) -> dict[str, int]:
    ids = {_worker_id(fmt, a) for rec in records for a in _annotators(rec)}
    Worker.objects.bulk_create(
        [Worker(provider=RATIONALE_PROVIDER, external_id=i) for i in sorted(ids)],
        ignore_conflicts=True,
        batch_size=BATCH_SIZE,
    )
    found = Worker.objects.filter(provider=RATIONALE_PROVIDER, external_id__in=ids).values_list(
        "external_id", "pk"
    )
    return dict(found)


def _responses(study: Study, items: list[Item], by_doc: dict, fmt: str, workers: dict[str, int]) -> int:
    """A submitted assignment and a verified response per map (in the answer fields of the study's kind);
    returns how many."""
    fields = get_kind(study.kind).rationale_fields
    now = timezone.now()
    assignments, answers = [], []
    for item in items:
        rec = by_doc[item.document_id]
        for slot, (ann, annotator) in enumerate(zip(rec["annotations"], _annotators(rec), strict=True)):
            assignments.append(Assignment(study=study, item=item, worker_id=workers[_worker_id(fmt, annotator)],
                                          slot=slot, status=Assignment.Status.SUBMITTED, expires_at=now,
                                          submitted_at=now))  # fmt: skip
            maps = [ann["map"], ann.get("hypothesis_map")]
            answers.append(
                {"label": ann.get("label") or rec.get("label"), **dict(zip(fields, maps, strict=False))}
            )
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
                verification=Response.Verification.VERIFIED,
            )  # fmt: skip
            for a, answer in zip(assignments, answers, strict=True)
        ],
        batch_size=BATCH_SIZE,
    )
    return len(answers)
