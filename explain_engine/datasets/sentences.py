"""Sentiment Labelled Sentences (Kotzias et al. 2015): ``sentence<TAB>label`` per line, no header.

Three files of 1000 sentences (:data:`SOURCES`: ``amazon_cells``, ``imdb``, ``yelp``), 1 = positive. Each line is
split on its last tab by hand, because sentences contain ``"`` that a CSV reader would treat
as quoting.
"""

from __future__ import annotations

from pathlib import Path

SOURCES = ("amazon_cells", "imdb", "yelp")


def read_sentence_file(path: str | Path) -> list[dict]:
    """Records of one ``<source>_labelled.txt`` file (``id`` = ``<source>-<line>``)."""
    path = Path(path)
    source = path.stem.removesuffix("_labelled")
    records = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            sentence, sep, label = line.rstrip("\r\n").rpartition("\t")
            label = label.strip()
            if not sep or label not in ("0", "1"):
                raise ValueError(f"{path}:{lineno}: expected 'sentence<TAB>0|1'")
            if not sentence.split():
                raise ValueError(f"{path}:{lineno}: the sentence has no words")
            records.append(
                {
                    "id": f"{source}-{lineno}",
                    "text": sentence.strip(),
                    "label": label,
                    "metadata": {"source": source},
                }
            )
    return records


def read_labelled_sentences(path: str | Path, sources: tuple[str, ...] | None = None) -> list[dict]:
    """Records of one file, or of the folder ``path``: every ``*_labelled.txt`` in it (by name), or
    only the named ``sources`` (each must be there)."""
    path = Path(path)
    if path.is_file():
        return read_sentence_file(path)
    if sources is None:
        files = sorted(path.glob("*_labelled.txt"))
        if not files:
            raise FileNotFoundError(f"{path}: no *_labelled.txt files")
    else:
        files = [path / f"{source}_labelled.txt" for source in sources]
    return [rec for file in files for rec in read_sentence_file(file)]
