"""The public human-rationale data sets read as rationale records (:mod:`.rationale_record`).

* ``eraser``: any ERASER set (DeYoung et al. 2020), a folder (:mod:`.eraser`).
* ``hatexplain``: HateXplain's ``dataset.json`` (Mathew et al. 2021): ``{post_id: {post_tokens,
  annotators: [{label, annotator_id, target}], rationales: [[0/1 per token], ...]}}``. Only annotators
  who called a post hateful or offensive gave a rationale (§3), in annotator order; they become the
  annotations, the others' labels stay in ``metadata["labels"]``. The post's label is the annotators'
  majority (``undecided`` when there is none). ``post_id_divisions.json`` beside it gives the splits.
* ``esnli``: e-SNLI's CSV (Camburu et al. 2018): ``pairID, gold_label, Sentence1, Sentence2`` and, per
  annotator ``k``, ``Sentence1_marked_k`` / ``Sentence2_marked_k`` with highlighted words between ``*``;
  premise and hypothesis maps of a pair record, the annotator's ``Explanation_k`` in the metadata.
* ``zaidan``: Zaidan, Eisner & Piatko 2007's movie reviews as in ``movie_rationales.jsonl``
  (``rationale_spans`` as ``[start, end)`` offsets into ``text.split(" ")``); one annotator.
* ``mohseni``: the 20 Newsgroups human attention (Mohseni, Block & Ragan 2018): marked word *types* per
  article, the texts from ``texts_dir`` (``20news-bydate-test``); a word is marked when one of its model
  tokens is a type of weight ≥ 0.5 (Poerner et al. 2018 §4.1); one aggregated annotator.
* ``yelphat``: YELP-HAT's raw MTurk CSVs (Sen et al. 2020); the k-th answer to a review is annotator
  ``<file>:<k>`` (the files name no workers).
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from explain_engine.datasets.eraser import read_eraser
from explain_engine.datasets.rationale_record import (
    RationaleFormatError,
    check_record,
    jsonl_objects,
    record,
    spans_to_map,
    token_text,
)
from explain_engine.datasets.rationales import read_mohseni
from explain_engine.datasets.yelphat import read_raw
from explain_engine.text import word_spans

FORMATS = ("eraser", "hatexplain", "esnli", "zaidan", "mohseni", "yelphat")
HATEXPLAIN_SPLITS = {"train": "train", "val": "val", "test": "test"}


def _load_json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise RationaleFormatError(f"{path}:{exc.lineno}", None, f"invalid JSON ({exc.msg})") from None
    except UnicodeDecodeError as exc:
        raise RationaleFormatError(str(path), None, f"not UTF-8 ({exc.reason})") from None


def _hatexplain_splits(path: Path) -> dict[str, str]:
    divisions = path.parent / "post_id_divisions.json"
    if not divisions.exists():
        return {}
    raw = _load_json(divisions)
    if not isinstance(raw, dict):
        raise RationaleFormatError(str(divisions), None, "expected an object of splits")
    return {
        str(pid): HATEXPLAIN_SPLITS.get(str(split), str(split)) for split, ids in raw.items() for pid in ids
    }


def read_hatexplain(path: str | Path) -> list[dict]:
    """HateXplain's ``dataset.json`` as rationale records (see the module's docstring)."""
    path = Path(path)
    raw = _load_json(path)
    if not isinstance(raw, dict):
        raise RationaleFormatError(str(path), None, "expected an object of posts by post id")
    splits = _hatexplain_splits(path)
    out = []
    for n, (pid, post) in enumerate(raw.items(), 1):
        where = f"{path}: post {n} ({pid})"
        if not isinstance(post, dict):
            raise RationaleFormatError(where, None, "expected an object")
        tokens, annotators = post.get("post_tokens"), post.get("annotators")
        if not isinstance(tokens, list) or not tokens:
            raise RationaleFormatError(where, "post_tokens", "must be a non-empty list of tokens")
        if not isinstance(annotators, list) or not all(
            isinstance(a, dict) and "label" in a for a in annotators
        ):
            raise RationaleFormatError(where, "annotators", "must be a list of objects with a label")
        rationales = post.get("rationales") or []
        givers = [a for a in annotators if a["label"] != "normal"]
        if len(rationales) > len(givers):
            raise RationaleFormatError(
                where, "rationales", f"{len(rationales)} rationales for {len(givers)} annotators"
            )
        text = token_text(tokens)
        if len(word_spans(text)) != len(tokens):
            raise RationaleFormatError(where, "post_tokens", "a token is empty or holds whitespace")
        annotations = []
        for k, (giver, values) in enumerate(zip(givers, rationales, strict=False)):
            if (
                not isinstance(values, list)
                or len(values) != len(tokens)
                or any(v not in (0, 1) for v in values)
            ):
                raise RationaleFormatError(
                    where, "rationales", f"rationale {k + 1} must be {len(tokens)} values of 0/1"
                )
            annotations.append({"annotator": str(giver.get("annotator_id", k + 1)), "label": giver["label"],
                                "map": [int(v) for v in values]})  # fmt: skip
        counts = Counter(a["label"] for a in annotators).most_common()
        label = counts[0][0] if counts and (len(counts) == 1 or counts[0][1] > counts[1][1]) else "undecided"
        meta = {"labels": [a["label"] for a in annotators], "targets": [a.get("target") for a in annotators]}
        out.append(record(str(pid), text, label, annotations, splits.get(str(pid)), meta))
    return out


def _marked(cell: str, plain: str, where: str, field: str) -> list[int]:
    """A 0/1 map over the words of ``plain`` from its e-SNLI marked copy (highlighted words in ``*``)."""
    marked = cell.split()
    words = plain.split()
    if [w.replace("*", "") for w in marked] != [w.replace("*", "") for w in words]:
        raise RationaleFormatError(where, field, "its words (without the *) are not the sentence's words")
    return [int(w.count("*") >= 2) for w in marked]


def read_esnli(path: str | Path) -> list[dict]:
    """e-SNLI's CSV as premise-hypothesis pair records, one annotation per annotator (1, 2, 3)."""
    path = Path(path)
    out = []
    with path.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        header = reader.fieldnames or []
        for col in (
            "pairID",
            "gold_label",
            "Sentence1",
            "Sentence2",
            "Sentence1_marked_1",
            "Sentence2_marked_1",
        ):
            if col not in header:
                raise RationaleFormatError(f"{path}:1", col, "missing from the header")
        annotators = [k for k in (1, 2, 3) if f"Sentence1_marked_{k}" in header]
        for row in reader:
            where = f"{path}:{reader.line_num}"
            premise, hypothesis = row["Sentence1"] or "", row["Sentence2"] or ""
            for field, value in (("Sentence1", premise), ("Sentence2", hypothesis)):
                if not value.split():
                    raise RationaleFormatError(where, field, "has no words")
            annotations, explanations = [], []
            for k in annotators:
                if not (row.get(f"Sentence1_marked_{k}") or "").strip():
                    continue
                annotations.append({"annotator": str(k), "label": row["gold_label"],
                                    "map": _marked(row[f"Sentence1_marked_{k}"], premise, where, f"Sentence1_marked_{k}"),
                                    "hypothesis_map": _marked(row[f"Sentence2_marked_{k}"] or "", hypothesis, where,
                                                              f"Sentence2_marked_{k}")})  # fmt: skip
                explanations.append(row.get(f"Explanation_{k}") or "")
            rec = record(
                row["pairID"], premise, row["gold_label"], annotations, None, {"explanations": explanations}
            )
            rec.update(hypothesis=hypothesis, hypothesis_words=[list(s) for s in word_spans(hypothesis)])
            check_record(rec, where)
            out.append(rec)
    return out


def read_zaidan(path: str | Path, annotated_only: bool = True) -> list[dict]:
    """Zaidan et al. 2007's movie reviews (``movie_rationales.jsonl``) with their one annotator's map."""
    path = Path(path)
    out = []
    for where, row in jsonl_objects(path):
        for field in ("text", "label"):
            if not isinstance(row.get(field), str):
                raise RationaleFormatError(where, field, "missing or not a string")
        spans = row.get("rationale_spans") or []
        tokens = row["text"].split(" ")
        if len(word_spans(row["text"])) != len(tokens):
            raise RationaleFormatError(where, "text", "tokens must be separated by exactly one space")
        values = spans_to_map(len(tokens), spans, where, "rationale_spans")
        if annotated_only and not any(values):
            continue
        ann = [{"annotator": "zaidan2007", "label": row["label"], "map": values}]
        out.append(
            record(str(row.get("id", where.rsplit(":", 1)[1])), row["text"], row["label"], ann, None, {})
        )
    return out


def read_mohseni_maps(path: str | Path, texts_dir: str | Path) -> list[dict]:
    """The 20 Newsgroups human attention with its article texts, one aggregated map per article."""
    out = []
    for rec in read_mohseni(path, texts_dir):
        relevant = set(rec["relevant"])
        n = len(word_spans(rec["text"]))
        values = [int(i in relevant) for i in range(n)]
        ann = [{"annotator": "mohseni2018", "label": rec["label"], "map": values}]
        out.append(record(rec["id"], rec["text"], rec["label"], ann, "test", {"types": rec["types"]}))
    return out


def read_yelphat_maps(paths: Sequence[str | Path]) -> list[dict]:
    """YELP-HAT's raw CSVs with annotator ``<file>:<k>`` for the k-th answer to each review."""
    out = []
    for rec in read_raw([Path(p) for p in paths]):
        anns = [{"annotator": f"{rec['source']['file']}:{k}", "label": a["label"], "map": a["map"]}
                for k, a in enumerate(rec["annotations"])]  # fmt: skip
        label = {0: "negative", 1: "positive"}.get(rec["label"], str(rec["label"]))
        out.append(record(rec["id"], rec["text"], label, anns, None, {"source": rec["source"]}))
    return out


def read_rationales(fmt: str, paths: Sequence[str | Path], texts_dir: str | Path | None = None) -> list[dict]:
    """The records of one public format (:data:`FORMATS`) from its file(s) or folder."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown rationale format {fmt!r}; use one of {', '.join(FORMATS)}")
    if not paths:
        raise ValueError(f"the {fmt} format needs a file")
    if fmt == "yelphat":
        return read_yelphat_maps(paths)
    if len(paths) != 1:
        raise ValueError(f"the {fmt} format reads one {'folder' if fmt == 'eraser' else 'file'}")
    if fmt == "mohseni":
        if texts_dir is None:
            raise ValueError(
                "the mohseni format needs the 20news-bydate-test folder of article texts (texts_dir)"
            )
        return read_mohseni_maps(paths[0], texts_dir)
    reader: dict[str, Callable[[str | Path], list[dict]]] = {
        "eraser": read_eraser,
        "hatexplain": read_hatexplain,
        "esnli": read_esnli,
        "zaidan": read_zaidan,
    }
    return reader[fmt](paths[0])
