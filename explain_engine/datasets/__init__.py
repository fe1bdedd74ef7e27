"""Data loaders. Every loader returns records: dicts with ``id``, ``text``, ``label`` and extras.

:func:`load_records` picks the loader from the path: a ``.jsonl``/``.json`` file (corpus
export or YELP-HAT conversion output), a ``.csv`` file, a ``.tsv`` file (SST-2 when its header
is ``sentence<TAB>label``, otherwise a generic TSV with named columns), a raw YELP-HAT CSV
(header ``Input.label,Input.text,…``: one record per review, label = ``Input.label``), the SST-2 folder
(``train.tsv`` + ``dev.tsv``) or the labelled-sentences folder (``*_labelled.txt``).
"""

from __future__ import annotations

from pathlib import Path

from explain_engine.datasets.jsonl import read_csv, read_jsonl
from explain_engine.datasets.sentences import read_labelled_sentences
from explain_engine.datasets.splits import balance, balanced_split, given_splits, split_records
from explain_engine.datasets.sst2 import read_sst2
from explain_engine.datasets.yelphat import read_raw


def load_records(
    path: str | Path,
    text_field: str = "text",
    label_field: str = "label",
    id_field: str = "id",
    require_label: bool = True,
) -> list[dict]:
    """Read ``path`` with the loader its name (or folder contents) calls for."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such file or folder: {path}")
    fields = {"text_field": text_field, "label_field": label_field, "id_field": id_field}
    if path.is_dir():
        if (path / "train.tsv").exists() and (path / "dev.tsv").exists():
            return read_sst2(path)
        if any(path.glob("*_labelled.txt")):
            return read_labelled_sentences(path)
        raise ValueError(f"{path}: a folder must hold SST-2 (train.tsv, dev.tsv) or *_labelled.txt files")
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json"):
        return read_jsonl(path, require_label=require_label, **fields)
    if suffix == ".csv":
        with path.open(encoding="utf-8", errors="replace") as fh:
            header = fh.readline()
        if header.startswith("Input.label,Input.text"):
            return read_raw(path)
        return read_csv(path, require_label=require_label, **fields)
    if suffix == ".tsv":
        with path.open(encoding="utf-8") as fh:
            header = fh.readline().rstrip("\n")
        if header == "sentence\tlabel":
            return read_sst2(path)
        return read_csv(path, require_label=require_label, delimiter="\t", **fields)
    if path.name.endswith("_labelled.txt"):
        return read_labelled_sentences(path)
    raise ValueError(f"{path}: unknown data format; use .jsonl, .csv or .tsv")


__all__ = [
    "balance",
    "balanced_split",
    "given_splits",
    "load_records",
    "read_csv",
    "read_jsonl",
    "read_labelled_sentences",
    "read_raw",
    "read_sst2",
    "split_records",
]
