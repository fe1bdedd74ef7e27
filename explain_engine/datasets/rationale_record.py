"""The one shape every human-rationale data set is read into and written from.

A *rationale record* is what ``yelphat convert`` writes, with the annotators named::

    {"id": str, "text": str, "words": [[start, end], ...], "label": str | None, "split": str | None,
     "annotations": [{"annotator": str, "label": str | None, "map": [0/1 per word]}],
     "metadata": {...}}

``words`` are the text's canonical words (:func:`explain_engine.text.word_spans`); every map indexes
them. A natural-language-inference pair adds ``"hypothesis"`` (its text) and ``"hypothesis_words"``, and
each annotation a ``"hypothesis_map"``; the ``text`` is then the premise. ``cam`` and ``sam`` (the
consensus and super attention maps, Sen et al. 2020 Defs. 2.4 and 2.5) are derived, never stored here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from pathlib import Path

from explain_engine.text import word_spans

SPLITS = ("train", "val", "test")


class RationaleFormatError(ValueError):
    """A file of a rationale format that cannot be read; ``where`` is ``"path:line"`` (or the file),
    ``field`` the field at fault."""

    def __init__(self, where: str, field: str | None, message: str):
        self.where, self.field, self.message = where, field, message
        super().__init__(f"{where}: {'field ' + repr(field) + ': ' if field else ''}{message}")


def token_text(tokens: Sequence[str]) -> str:
    """Pre-tokenised words joined by one space, so that each is one canonical word (a token holding
    whitespace is split by it, and so counts as several)."""
    return " ".join(str(t) for t in tokens)


def map_over_words(text: str, marked: Sequence[tuple[int, int]]) -> list[int]:
    """A 0/1 map over the canonical words of ``text``: 1 for a word overlapping a marked character span."""
    out = []
    for s, e in word_spans(text):
        out.append(int(any(ms < e and s < me for ms, me in marked)))
    return out


def spans_to_map(n: int, spans: Sequence[Sequence[int]], where: str, field: str) -> list[int]:
    """A 0/1 map of ``n`` words from ``[start, end)`` word spans; a span outside ``0..n`` is an error."""
    out = [0] * n
    for span in spans:
        try:
            start, end = int(span[0]), int(span[1])
        except (TypeError, ValueError, IndexError):
            raise RationaleFormatError(where, field, f"{span!r} is not a [start, end) pair") from None
        if not 0 <= start <= end <= n:
            raise RationaleFormatError(where, field, f"span [{start}, {end}) is outside the {n} words")
        for i in range(start, end):
            out[i] = 1
    return out


def map_to_spans(values: Sequence[int]) -> list[tuple[int, int]]:
    """The maximal runs of 1 in a 0/1 map as ``[start, end)`` word spans."""
    spans, start = [], None
    for i, v in enumerate(values):
        if v and start is None:
            start = i
        elif not v and start is not None:
            spans.append((start, i))
            start = None
    if start is not None:
        spans.append((start, len(values)))
    return spans


def stable_split(ident: str, val: float = 0.1, test: float = 0.1) -> str:
    """``train``, ``val`` or ``test`` for an id, from its SHA-1: the same id always lands in the same
    split, whatever else is exported with it."""
    x = int(hashlib.sha1(ident.encode("utf-8")).hexdigest()[:8], 16) / 0xFFFFFFFF
    return "test" if x < test else "val" if x < test + val else "train"


def record(
    ident: str,
    text: str,
    label: str | None,
    annotations: list[dict],
    split: str | None = None,
    metadata: dict | None = None,
) -> dict:
    """A rationale record (see the module's docstring) with its canonical words."""
    return {
        "id": ident,
        "text": text,
        "words": [list(s) for s in word_spans(text)],
        "label": label,
        "split": split,
        "annotations": annotations,
        "metadata": metadata or {},
    }


def check_record(rec: dict, where: str) -> None:
    """Every map of ``rec`` is 0/1 and as long as its words; raises :class:`RationaleFormatError`."""
    n = len(rec["words"])
    if n == 0:
        raise RationaleFormatError(where, "text", "has no words")
    n_h = len(rec.get("hypothesis_words") or [])
    for k, ann in enumerate(rec["annotations"]):
        for field, size in (("map", n), ("hypothesis_map", n_h)):
            if field == "hypothesis_map" and "hypothesis" not in rec:
                continue
            values = ann.get(field)
            if not isinstance(values, list) or len(values) != size or any(v not in (0, 1) for v in values):
                raise RationaleFormatError(
                    where, field, f"annotation {k + 1}: must be {size} values of 0/1 (one per word)"
                )


def consensus(maps: Sequence[Sequence[int]]) -> tuple[list[int], list[int]]:
    """CAM (1 where every map has 1) and SAM (1 where any has 1) of equal-length maps (Sen et al. 2020
    Defs. 2.4, 2.5); two empty lists when there are none."""
    if not maps:
        return [], []
    cam = [int(all(col)) for col in zip(*maps, strict=True)]
    sam = [int(any(col)) for col in zip(*maps, strict=True)]
    return cam, sam


def jsonl_objects(path: Path) -> Iterator[tuple[str, dict]]:
    """The JSON objects of a JSON-lines file, each with where it stands (``file:line``); blank lines are
    skipped, and a line that is not a JSON object raises :class:`RationaleFormatError` naming it."""
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise RationaleFormatError(where, None, f"invalid JSON ({exc.msg})") from None
            if not isinstance(row, dict):
                raise RationaleFormatError(where, None, "expected a JSON object")
            yield where, row


def read_records(path: str | Path) -> list[dict]:
    """The rationale records of a JSON-lines file (``rationales import`` writes them; ``yelphat convert``'s
    records are read too, their annotators numbered from 1); a bad line is refused with its field."""
    if not Path(path).exists():
        raise FileNotFoundError(f"no such file: {path}")
    out = []
    for where, row in jsonl_objects(Path(path)):
        for field in ("id", "text", "words", "annotations"):
            if field not in row:
                raise RationaleFormatError(where, field, "missing")
        row["id"] = str(row["id"])
        row.setdefault("label", None)
        for k, ann in enumerate(row["annotations"]):
            ann.setdefault("annotator", str(k + 1))
        check_record(row, where)
        out.append(row)
    return out


def is_rationale_file(head: str) -> bool:
    """Whether the first line of a JSON-lines file is a rationale record with named annotators."""
    return '"annotations"' in head and '"annotator"' in head and '"words"' in head


def pointing_truth(records: Sequence[dict]) -> list[dict]:
    """The manual pointing game's ground truth (Poerner et al. 2018 §4.1) from rationale records:
    ``{id, text, label, words, relevant}``, ``relevant`` being the words any annotator marked (the SAM,
    Sen et al. 2020 Def. 2.5); texts nobody marked are left out."""
    out = []
    for rec in records:
        sam = consensus([a["map"] for a in rec["annotations"]])[1]
        relevant = [i for i, v in enumerate(sam) if v]
        if relevant:
            out.append({"id": rec["id"], "text": rec["text"], "label": rec["label"], "words": rec["words"],
                        "relevant": relevant})  # fmt: skip
    return out
