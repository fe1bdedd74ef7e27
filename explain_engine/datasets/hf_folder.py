"""Human rationales as a Hugging Face ``datasets`` folder: Parquet files and a dataset card.

``data/<split>-00000-of-00001.parquet`` holds one row per text: ``id``, ``text``, ``words`` (the
canonical words), ``offsets`` (their ``[start, end)`` characters), ``label``, ``annotations`` (a list of
``{annotator, label, map}``; a pair adds ``hypothesis_map``), ``cam`` and ``sam`` (Sen et al. 2020 Defs.
2.4, 2.5) and ``metadata`` (JSON text); a natural-language-inference pair adds ``hypothesis``,
``hypothesis_words``, ``hypothesis_offsets``, ``hypothesis_cam`` and ``hypothesis_sam``. ``README.md`` is
the dataset card: YAML front matter naming the splits' files (``configs``), so that
``datasets.load_dataset(folder)`` finds them, and then the datasheet given. ``croissant.json`` describes
the same files as Croissant metadata (:mod:`explain_engine.datasets.croissant`).

Parquet is written with ``pyarrow`` and the Croissant file with ``mlcroissant`` (the optional extra
``parquet``); the ``datasets`` library itself is only needed to read the folder back.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

from explain_engine.datasets import croissant
from explain_engine.datasets.rationale_record import SPLITS, check_record, consensus, stable_split
from explain_engine.extras import optional
from explain_engine.text import words_of


def _pyarrow() -> ModuleType:
    return optional("pyarrow", extra="parquet", family="Hugging Face datasets export")


def _schema(pa: ModuleType, pair: bool) -> Any:
    bits = pa.list_(pa.int8())
    ann = [("annotator", pa.string()), ("label", pa.string()), ("map", bits)]
    fields = [("id", pa.string()), ("text", pa.string()), ("words", pa.list_(pa.string())),
              ("offsets", pa.list_(pa.list_(pa.int32()))), ("label", pa.string())]  # fmt: skip
    if pair:
        ann.append(("hypothesis_map", bits))
        fields += [("hypothesis", pa.string()), ("hypothesis_words", pa.list_(pa.string())),
                   ("hypothesis_offsets", pa.list_(pa.list_(pa.int32())))]  # fmt: skip
    fields += [("annotations", pa.list_(pa.struct(ann))), ("cam", bits), ("sam", bits)]
    if pair:
        fields += [("hypothesis_cam", bits), ("hypothesis_sam", bits)]
    fields.append(("metadata", pa.string()))
    return pa.schema(fields)


def _row(rec: dict, pair: bool) -> dict:
    maps = [a["map"] for a in rec["annotations"]]
    cam, sam = consensus(maps)
    row = {"id": rec["id"], "text": rec["text"], "words": words_of(rec["text"], rec["words"]),
           "offsets": [list(s) for s in rec["words"]],
           "label": None if rec.get("label") is None else str(rec["label"])}  # fmt: skip
    anns = [{"annotator": str(a["annotator"]), "label": None if a.get("label") is None else str(a["label"]),
             "map": list(a["map"])} for a in rec["annotations"]]  # fmt: skip
    if pair:
        row.update(hypothesis=rec["hypothesis"], hypothesis_words=words_of(rec["hypothesis"], rec["hypothesis_words"]),
                   hypothesis_offsets=[list(s) for s in rec["hypothesis_words"]])  # fmt: skip
        for a, src in zip(anns, rec["annotations"], strict=True):
            a["hypothesis_map"] = list(src["hypothesis_map"])
        h_cam, h_sam = consensus([a["hypothesis_map"] for a in rec["annotations"]])
        row.update(hypothesis_cam=h_cam, hypothesis_sam=h_sam)
    row.update(annotations=anns, cam=cam, sam=sam, metadata=json.dumps(rec.get("metadata") or {}))
    return row


def card(splits: Iterable[str], datasheet: str, pretty_name: str = "Human rationales") -> str:
    """The dataset card: YAML front matter with the splits' Parquet files, then ``datasheet``."""
    files = "".join(f"  - split: {s}\n    path: data/{s}-*.parquet\n" for s in splits)
    front = (
        f"---\npretty_name: {json.dumps(pretty_name)}\ntask_categories:\n- text-classification\n"
        f"language:\n- en\nconfigs:\n- config_name: default\n  data_files:\n{files}---\n\n"
    )
    return front + datasheet.strip() + "\n"


def write_hf_folder(
    records: Iterable[dict], folder: str | Path, datasheet: str, pretty_name: str = "Human rationales"
) -> dict[str, int]:
    """Write rationale records as a ``datasets`` folder (see the module's docstring); returns the rows
    per split (empty splits are not written). A record without a ``split`` goes where
    :func:`~explain_engine.datasets.rationale_record.stable_split` puts it."""
    pa = _pyarrow()
    import pyarrow.parquet as pq

    by_split: dict[str, list[dict]] = {s: [] for s in SPLITS}
    pair = None
    for rec in records:
        check_record(rec, f"record {rec['id']!r}")
        is_pair = "hypothesis" in rec
        if pair is None:
            pair = is_pair
        elif pair != is_pair:
            raise ValueError(f"record {rec['id']!r}: single texts and premise-hypothesis pairs do not mix")
        by_split[rec.get("split") or stable_split(rec["id"])].append(_row(rec, is_pair))
    out = Path(folder)
    (out / "data").mkdir(parents=True, exist_ok=True)
    schema = _schema(pa, bool(pair))
    written = {s: len(rows) for s, rows in by_split.items() if rows}
    for split in written:
        table = pa.Table.from_pylist(by_split[split], schema=schema)
        pq.write_table(table, out / "data" / f"{split}-00000-of-00001.parquet")
    (out / "README.md").write_text(card(written, datasheet, pretty_name), encoding="utf-8")
    description = (
        f"{pretty_name}: texts with human rationale maps, one row per text; README.md is the datasheet."
    )
    croissant.write(out, written, pair=bool(pair), name=pretty_name, description=description)
    return written


def read_hf_folder(folder: str | Path) -> list[dict]:
    """The rationale records of a folder :func:`write_hf_folder` wrote, read with ``pyarrow``."""
    _pyarrow()
    import pyarrow.parquet as pq

    records = []
    for path in sorted((Path(folder) / "data").glob("*.parquet")):
        split = path.name.split("-", 1)[0]
        for row in pq.read_table(path).to_pylist():
            records.append(from_row(row, split))
    return records


def from_row(row: dict, split: str | None = None) -> dict:
    """A rationale record from one row of the folder (as ``pyarrow`` or ``datasets`` gives it)."""
    rec = {"id": row["id"], "text": row["text"], "words": [list(s) for s in row["offsets"]],
           "label": row["label"], "split": split,
           "annotations": [{k: v for k, v in a.items() if v is not None or k == "label"}
                           for a in row["annotations"]],
           "metadata": json.loads(row["metadata"] or "{}")}  # fmt: skip
    if row.get("hypothesis") is not None:
        rec.update(
            hypothesis=row["hypothesis"], hypothesis_words=[list(s) for s in row["hypothesis_offsets"]]
        )
    return rec
