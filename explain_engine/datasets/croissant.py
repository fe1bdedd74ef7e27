"""Croissant metadata (MLCommons, Akhtar et al. 2024) for the Hugging Face ``datasets`` folder of human rationales.

``croissant.json`` beside the folder's ``README.md`` describes its Parquet files (one ``FileObject`` per split,
with its SHA-256) and one record set, ``rationales``, whose fields are the files' columns: texts and labels,
the words and their character offsets, the annotators' maps (``annotations``, repeated, with sub-fields) and
CAM/SAM. It is written, and read back in the tests, with ``mlcroissant``, the format's reference library
(the optional extra ``parquet``), so the file is whatever that library calls valid.
"""

from __future__ import annotations

import datetime
import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

from explain_engine.extras import optional

RECORD_SET = "rationales"
# column → (data type, repeated): the columns of hf_folder's schema
_COLUMNS = {
    "id": ("TEXT", False),
    "text": ("TEXT", False),
    "words": ("TEXT", True),
    "label": ("TEXT", False),
    "cam": ("INTEGER", True),
    "sam": ("INTEGER", True),
    "metadata": ("TEXT", False),
}
_PAIR_COLUMNS = {
    "hypothesis": ("TEXT", False),
    "hypothesis_words": ("TEXT", True),
    "hypothesis_cam": ("INTEGER", True),
    "hypothesis_sam": ("INTEGER", True),
}
_ANNOTATION = {"annotator": ("TEXT", False), "label": ("TEXT", False), "map": ("INTEGER", True)}


def _mlcroissant() -> ModuleType:
    return optional("mlcroissant", extra="parquet", family="Croissant metadata of the Hugging Face export")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def metadata(
    folder: str | Path,
    splits: Iterable[str],
    *,
    pair: bool,
    name: str,
    description: str,
    licence: str | None = None,
) -> dict[str, Any]:
    """The Croissant JSON-LD of a folder :func:`~explain_engine.datasets.hf_folder.write_hf_folder` wrote."""
    mlc = _mlcroissant()
    root = Path(folder)
    files = []
    for split in splits:
        relative = f"data/{split}-00000-of-00001.parquet"
        files.append(
            mlc.FileObject(
                id=split,
                name=split,
                content_url=relative,
                encoding_formats=["application/x-parquet"],
                sha256=_sha256(root / relative),
            )
        )
    columns = {**_COLUMNS, **(_PAIR_COLUMNS if pair else {})}
    annotation = {**_ANNOTATION, **({"hypothesis_map": ("INTEGER", True)} if pair else {})}
    record_sets = []  # one record set per split, so that a reader picks a split as the datasets library does
    for split in [f.id for f in files]:
        prefix = f"{RECORD_SET}_{split}"
        fields = [_field(mlc, prefix, split, column, *how) for column, how in columns.items()]
        subs = [
            _field(mlc, f"{prefix}/annotations", split, "annotations", *how, path=sub)
            for sub, how in annotation.items()
        ]
        fields.append(
            mlc.Field(
                id=f"{prefix}/annotations",
                name="annotations",
                description="each annotator's pseudonym, label and 0/1 map over the words",
                data_types=[mlc.DataType.TEXT],
                is_array=True,
                array_shape="-1",
                source=mlc.Source(file_object=split, extract=mlc.Extract(column="annotations")),
                sub_fields=subs,
            )
        )
        record_sets.append(mlc.RecordSet(id=prefix, name=prefix, fields=fields))
    document = mlc.Metadata(
        name=name,
        description=description,
        license=licence,
        version="1.0.0",
        date_published=datetime.date.today().isoformat(),
        distribution=files,
        record_sets=record_sets,
    )
    return document.to_json()


def _field(
    mlc: ModuleType, prefix: str, split: str, column: str, kind: str, repeated: bool, path: str | None = None
) -> Any:
    name = path or column
    transforms = [mlc.Transform(json_path=path)] if path else []
    extra = {"is_array": True, "array_shape": "-1"} if repeated else {}
    return mlc.Field(
        id=f"{prefix}/{name}",
        name=name,
        data_types=[getattr(mlc.DataType, kind)],
        source=mlc.Source(file_object=split, extract=mlc.Extract(column=column), transforms=transforms),
        **extra,
    )


def write(
    folder: str | Path,
    splits: Iterable[str],
    *,
    pair: bool,
    name: str,
    description: str,
    licence: str | None = None,
) -> Path:
    """Write ``croissant.json`` into ``folder``; returns its path."""
    out = Path(folder) / "croissant.json"
    document = metadata(folder, splits, pair=pair, name=name, description=description, licence=licence)
    out.write_text(json.dumps(document, indent=2, default=str) + "\n", encoding="utf-8")
    return out
