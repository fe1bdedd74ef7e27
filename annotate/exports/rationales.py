"""A highlighting study's human maps as a rationale data set: an ERASER folder or a Hugging Face
``datasets`` folder (Parquet and a dataset card carrying the study's datasheet), each as one zip.

One rationale record (:mod:`explain_engine.datasets.rationale_record`) per item with at least one
verified map: the document's text, canonical words and label, and per verified response the worker's
pseudonym (:attr:`annotate.models.Worker.anonymous_id`, no platform id), the answer's label and its map;
CAM and SAM (Sen et al. 2020 Defs. 2.4, 2.5) are derived by the writers. The kinds whose answers are maps
over a document's words name their answer fields (:attr:`annotate.tasks.base.TaskKind.rationale_fields`):
one map over the document's words (an answer without a label takes the document's), or two for a pair kind
(the premise's and the hypothesis's, a premise–hypothesis pair record). Items go to
``train``/``val``/``test`` by a hash of the document id (the same document always lands in the same split).
"""

from __future__ import annotations

import io
import tempfile
import zipfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from annotate.exports.datasheet import datasheet
from annotate.exports.tables import UnknownExport
from annotate.models import Item, Response, Study, Worker
from annotate.tasks import get_kind
from explain_engine.api import word_spans, write_eraser, write_hf_folder

RATIONALE_FORMATS = ("eraser", "hf")


def offers_rationales(study: Study) -> bool:
    """Whether the study's answers are maps over its documents' words."""
    return bool(get_kind(study.kind).rationale_fields)


def _answers(study: Study) -> dict[int, list[tuple[str, dict]]]:
    """item id → ``(worker pseudonym, answer)`` of its verified responses, in submission order."""
    pseudonyms: dict[tuple[str, str], str] = {}
    out: dict[int, list[tuple[str, dict]]] = defaultdict(list)
    rows = (
        Response.objects.filter(study=study)
        .counted()
        .order_by("item_id", "id")
        .values_list("item_id", "worker__provider", "worker__external_id", "answer")
    )
    for item_id, provider, external, answer in rows.iterator(1000):
        if not isinstance(answer, dict):
            continue
        key = (provider, external)
        if key not in pseudonyms:
            pseudonyms[key] = Worker(provider=provider, external_id=external).anonymous_id
        out[item_id].append((pseudonyms[key], answer))
    return out


def _annotation(worker: str, answer: dict, doc_label: str, fields: tuple[str, str | None], n: int, n_h: int):
    field, hypothesis_field = fields
    values = answer.get(field)
    if not isinstance(values, list) or len(values) != n:
        return None
    ann: dict[str, Any] = {
        "annotator": worker,
        "label": answer.get("label", doc_label) or None,
        "map": values,
    }
    if hypothesis_field is not None:
        h_values = answer.get(hypothesis_field)
        if not isinstance(h_values, list) or len(h_values) != n_h:
            return None
        ann["hypothesis_map"] = h_values
    return ann


def rationale_records(study: Study) -> list[dict]:
    """The study's verified maps as rationale records, one per item with at least one map (item order)."""
    if not offers_rationales(study):
        raise UnknownExport(f"a {study.kind} study has no maps over words to export as rationales")
    kind_fields = get_kind(study.kind).rationale_fields
    fields = (kind_fields[0], kind_fields[1] if len(kind_fields) > 1 else None)
    answers = _answers(study)
    items = (
        Item.objects.filter(study=study, document__isnull=False)
        .order_by("id")
        .values_list("id", "is_gold", "document__external_id", "document__text", "document__words",
                     "document__label", "document__metadata")
    )  # fmt: skip
    records = []
    for item_id, is_gold, doc, text, words, label, metadata in items.iterator(1000):
        rec: dict[str, Any] = {"id": doc, "text": text, "words": words, "label": label or None, "split": None,
                               "metadata": {"item": item_id, "gold": is_gold}}  # fmt: skip
        n_h = 0
        if fields[1] is not None:
            hypothesis = (metadata or {}).get("hypothesis", "")
            rec["hypothesis"] = hypothesis
            rec["hypothesis_words"] = [list(s) for s in word_spans(hypothesis)]
            n_h = len(rec["hypothesis_words"])
        given = [_annotation(w, a, label, fields, len(words), n_h) for w, a in answers.get(item_id, ())]
        rec["annotations"] = [a for a in given if a is not None]
        if rec["annotations"]:
            records.append(rec)
    return records


def _zip_folder(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(folder).as_posix())
    return buffer.getvalue()


def rationale_zip(study: Study, fmt: str) -> bytes:
    """The study's maps as an ERASER (``eraser``) or Hugging Face datasets (``hf``) folder, zipped; the
    datasheet goes in as ``datasheet.md`` (ERASER) or as the dataset card (``README.md``)."""
    if fmt not in RATIONALE_FORMATS:
        raise ValueError(f"unknown rationale format {fmt!r}; use one of {', '.join(RATIONALE_FORMATS)}")
    records = rationale_records(study)
    sheet = datasheet(study)
    with tempfile.TemporaryDirectory(prefix="hatlab-rationales-") as tmp:
        folder = Path(tmp) / "export"
        if fmt == "eraser":
            write_eraser(records, folder)
            (folder / "datasheet.md").write_text(sheet, encoding="utf-8")
        else:
            write_hf_folder(records, folder, sheet, pretty_name=study.name)
        return _zip_folder(folder)


def rationale_zip_name(study: Study, fmt: str) -> str:
    return f"study-{study.uid}-rationales-{fmt}.zip"
