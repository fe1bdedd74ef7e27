"""SST-2, GLUE version (Socher et al. 2013): ``sentence<TAB>label`` with a header, 1 = positive.

The texts are lower-cased and PTB-tokenised already; trailing spaces are stripped. GLUE's
``dev.tsv`` becomes the ``validation`` split (GLUE's test split has no labels).
"""

from __future__ import annotations

from pathlib import Path

SPLIT_OF_FILE = {"train": "train", "dev": "validation"}


def read_sst2_file(path: str | Path, split: str | None = None) -> list[dict]:
    """Records of one SST-2 TSV file (``id`` = ``sst2-<split>-<row>``)."""
    path = Path(path)
    split = split or SPLIT_OF_FILE.get(path.stem, path.stem)
    records = []
    with path.open(encoding="utf-8") as fh:
        header = fh.readline().rstrip("\n").split("\t")
        if header != ["sentence", "label"]:
            raise ValueError(f"{path}:1: expected the header 'sentence<TAB>label', got {header}")
        for lineno, line in enumerate(fh, start=2):
            if not line.strip():
                continue
            sentence, sep, label = line.rstrip("\n").rpartition("\t")
            if not sep or label not in ("0", "1"):
                raise ValueError(f"{path}:{lineno}: expected 'sentence<TAB>0|1'")
            if not sentence.split():
                raise ValueError(f"{path}:{lineno}: field 'sentence' has no words")
            records.append(
                {"id": f"sst2-{split}-{lineno - 1}", "text": sentence.strip(), "label": label, "split": split}
            )
    return records


def read_sst2(path: str | Path, files: tuple[str, ...] = ("train", "dev")) -> list[dict]:
    """All records of the SST-2 folder ``path`` (``train.tsv`` and ``dev.tsv``), or of one file."""
    path = Path(path)
    if path.is_file():
        return read_sst2_file(path)
    return [rec for name in files for rec in read_sst2_file(path / f"{name}.tsv")]
