"""Human rationales in the ERASER format (DeYoung et al. 2020, §3 and its ``rationale_benchmark``).

A folder holds ``docs/<docid>`` (one sentence per line, tokens separated by one space) and
``{train,val,test}.jsonl``: one annotation per line with exactly the fields the benchmark's loader and
scorer read (``annotation_id``, ``classification``, ``evidences``: a list of evidence groups, each a list
of ``{docid, start_token, end_token, start_sentence, end_sentence, text}``, ``query``, ``query_type``,
``docids``); token ends are exclusive. The benchmark's loader builds its dataclasses from these keys and
nothing else, so what it has no field for is written beside them:

* ``texts.jsonl``: per document its original ``text``, canonical ``words`` (character offsets), label,
  metadata and the record id it came from (the docs/ files lose the original spacing);
* ``evidence_chars.jsonl``: each evidence span again in character offsets of that text;
* ``cam/`` and ``sam/``: the consensus and super attention maps (Sen et al. 2020 Defs. 2.4, 2.5) as
  annotations of their own, one per document, in the same split files.

:func:`write_eraser` writes a folder from rationale records (:mod:`.rationale_record`), one annotation per
annotator (``annotation_id`` = ``<docid>:<annotator>``); :func:`read_eraser` reads any ERASER set (movies,
e-SNLI, FEVER, MultiRC, BoolQ, CoS-E, evidence inference) back into records: documents keyed by docid and
query, a ``<x>_premise`` / ``<x>_hypothesis`` pair (e-SNLI) as one pair record.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from explain_engine.datasets.rationale_record import (
    SPLITS,
    RationaleFormatError,
    check_record,
    consensus,
    jsonl_objects,
    map_to_spans,
    stable_split,
)
from explain_engine.text import sentence_spans, word_spans, words_of

ANNOTATION_FIELDS = ("annotation_id", "classification", "evidences", "query", "query_type", "docids")
EVIDENCE_FIELDS = ("docid", "start_token", "end_token", "start_sentence", "end_sentence", "text")
DEFAULT_QUERY = "What is the label of this text, and which words show it?"
ERASER_ANNOTATOR = "eraser"
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _docid(ident: str, taken: set[str]) -> str:
    base = _SAFE.sub("_", ident).strip("._") or "doc"
    docid, n = base, 1
    while docid in taken:
        n += 1
        docid = f"{base}_{n}"
    taken.add(docid)
    return docid


def _doc_lines(text: str, words: Sequence[Sequence[int]]) -> tuple[str, list[int]]:
    """The docs/ file body (a sentence a line) and each word's sentence index."""
    tokens = words_of(text, words)
    lines, sentence_of = [], []
    for k, (a, b) in enumerate(sentence_spans(text, words)):
        lines.append(" ".join(tokens[a:b]))
        sentence_of += [k] * (b - a)
    return "\n".join(lines) + "\n", sentence_of


def _evidences(docid: str, text: str, words, sentence_of, values) -> tuple[list[list[dict]], list[dict]]:
    groups, chars = [], []
    tokens = words_of(text, words)
    for start, end in map_to_spans(values):
        groups.append(
            [
                {
                    "docid": docid,
                    "start_token": start,
                    "end_token": end,
                    "start_sentence": sentence_of[start],
                    "end_sentence": sentence_of[end - 1] + 1,
                    "text": " ".join(tokens[start:end]),
                }
            ]
        )
        chars.append(
            {"docid": docid, "start_token": start, "end_token": end,
             "start_char": words[start][0], "end_char": words[end - 1][1]}
        )  # fmt: skip
    return groups, chars


class _Sides:
    """The documents of one record: ``[(docid, text, words, sentence_of, map_field)]``."""

    def __init__(self, rec: dict, taken: set[str]):
        if "hypothesis" in rec:
            base = _docid(rec["id"], taken)
            self.sides = [
                (f"{base}_premise", rec["text"], rec["words"], "map"),
                (f"{base}_hypothesis", rec["hypothesis"], rec["hypothesis_words"], "hypothesis_map"),
            ]
        else:
            self.sides = [(_docid(rec["id"], taken), rec["text"], rec["words"], "map")]
        self.sentences = {}
        for docid, text, words, _ in self.sides:
            self.sentences[docid] = _doc_lines(text, words)

    @property
    def docids(self) -> list[str]:
        return [s[0] for s in self.sides]

    def annotation(
        self, ann_id: str, label: str, query: str, maps: dict[str, list[int]]
    ) -> tuple[dict, list]:
        groups, chars = [], []
        for docid, text, words, field in self.sides:
            g, c = _evidences(docid, text, words, self.sentences[docid][1], maps[field])
            groups += g
            chars += [{"annotation_id": ann_id, **x} for x in c]
        line = {"annotation_id": ann_id, "classification": label, "evidences": groups,
                "query": query, "query_type": None, "docids": self.docids}  # fmt: skip
        return line, chars


def write_eraser(records: Iterable[dict], folder: str | Path, query: str = DEFAULT_QUERY) -> dict[str, int]:
    """Write rationale records as an ERASER folder (see the module's docstring); returns the
    annotations written per split. A record without a ``split`` goes where :func:`stable_split` puts it."""
    out = Path(folder)
    (out / "docs").mkdir(parents=True, exist_ok=True)
    files = {}
    for part in ("", "cam/", "sam/"):
        (out / part).mkdir(exist_ok=True)
        for split in SPLITS:
            files[part + split] = (out / f"{part}{split}.jsonl").open("w", encoding="utf-8")
    texts = (out / "texts.jsonl").open("w", encoding="utf-8")
    chars_out = (out / "evidence_chars.jsonl").open("w", encoding="utf-8")
    counts = dict.fromkeys(SPLITS, 0)
    taken: set[str] = set()
    try:
        for rec in records:
            check_record(rec, f"record {rec['id']!r}")
            split = rec.get("split") or stable_split(rec["id"])
            if split not in SPLITS:
                raise RationaleFormatError(f"record {rec['id']!r}", "split", f"must be one of {SPLITS}")
            sides = _Sides(rec, taken)
            for docid, text, words, _ in sides.sides:
                (out / "docs" / docid).write_text(sides.sentences[docid][0], encoding="utf-8")
                texts.write(json.dumps({"docid": docid, "id": rec["id"], "text": text, "words": words,
                                        "label": rec.get("label"), "split": split,
                                        "metadata": rec.get("metadata") or {}}, ensure_ascii=False) + "\n")  # fmt: skip
            label = "" if rec.get("label") is None else str(rec["label"])
            for ann in rec["annotations"]:
                ann_label = label if ann.get("label") is None else str(ann["label"])
                maps = {"map": ann["map"], "hypothesis_map": ann.get("hypothesis_map") or []}
                line, chars = sides.annotation(
                    f"{sides.docids[0]}:{ann['annotator']}", ann_label, query, maps
                )
                files[split].write(json.dumps(line, ensure_ascii=False) + "\n")
                chars_out.writelines(json.dumps(c, ensure_ascii=False) + "\n" for c in chars)
                counts[split] += 1
            for part, index in (("cam/", 0), ("sam/", 1)):
                maps = {
                    field: consensus([a[field] for a in rec["annotations"]])[index]
                    for field in (("map", "hypothesis_map") if "hypothesis" in rec else ("map",))
                }
                if rec["annotations"]:
                    line, _ = sides.annotation(sides.docids[0], label, query, maps)
                    files[part + split].write(json.dumps(line, ensure_ascii=False) + "\n")
    finally:
        for fh in (*files.values(), texts, chars_out):
            fh.close()
    return counts


def _read_annotations(path: Path) -> list[tuple[str, dict]]:
    rows = []
    for where, row in jsonl_objects(path):
        for field in ("annotation_id", "evidences"):
            if field not in row:
                raise RationaleFormatError(where, field, "missing")
        if not isinstance(row["evidences"], list) or not all(isinstance(g, list) for g in row["evidences"]):
            raise RationaleFormatError(where, "evidences", "must be a list of lists of evidence objects")
        rows.append((where, row))
    return rows


def _texts(folder: Path) -> dict[str, dict]:
    path = folder / "texts.jsonl"
    if not path.exists():
        return {}
    out = {}
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                out[row["docid"]] = row
    return out


def _document(folder: Path, docid: str, texts: dict[str, dict], where: str) -> tuple[str, list]:
    """A document's text and canonical words: the original from ``texts.jsonl`` when there, else the
    docs/ file (sentences joined by line breaks); its words must be the docs/ file's tokens."""
    if docid in texts:
        return texts[docid]["text"], texts[docid]["words"]
    path = folder / "docs" / docid
    if not path.is_file():
        raise RationaleFormatError(where, "docid", f"no document docs/{docid}")
    text = "\n".join(line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    return text, [list(s) for s in word_spans(text)]


def _map(evidences: list, docid: str, n: int, where: str) -> list[int]:
    out = [0] * n
    for group in evidences:
        for ev in group:
            if not isinstance(ev, dict) or ev.get("docid") != docid:
                continue
            try:
                start, end = int(ev["start_token"]), int(ev["end_token"])
            except (KeyError, TypeError, ValueError):
                raise RationaleFormatError(
                    where, "evidences", "an evidence needs start_token and end_token"
                ) from None
            if not 0 <= start <= end <= n:
                raise RationaleFormatError(
                    where, "evidences", f"tokens [{start}, {end}) of {docid} are outside its {n} tokens"
                )
            for i in range(start, end):
                out[i] = 1
    return out


def _docids(row: dict) -> list[str]:
    if row.get("docids"):
        return [str(d) for d in row["docids"]]
    found = [
        ev["docid"] for group in row["evidences"] for ev in group if isinstance(ev, dict) and "docid" in ev
    ]
    return list(dict.fromkeys(found)) or [str(row["annotation_id"])]


def _annotator(ann_id: str, docid: str) -> str:
    prefix = f"{docid}:"
    return ann_id[len(prefix) :] if ann_id.startswith(prefix) else ERASER_ANNOTATOR


def _pair(docids: list[str]) -> tuple[str, str] | None:
    if len(docids) == 2 and docids[0].endswith("_premise") and docids[1].endswith("_hypothesis"):
        return docids[0], docids[1]
    return None


def read_eraser(folder: str | Path, splits: Sequence[str] = SPLITS, layer: str = "") -> list[dict]:
    """Rationale records of an ERASER folder's ``splits`` (those present); ``layer`` ``"cam"`` or
    ``"sam"`` reads the consensus maps this module writes instead of the annotators'. One annotation
    per ERASER annotation; the annotator is named by ``<docid>:<annotator>`` ids, else ``eraser``."""
    root = Path(folder)
    if not (root / "docs").is_dir():
        raise RationaleFormatError(str(root), None, "an ERASER folder needs a docs/ folder")
    base = root / layer if layer else root
    texts = _texts(root)
    records: dict[tuple[str, str], dict] = {}
    queries: dict[str, set[str]] = defaultdict(set)
    found = [s for s in splits if (base / f"{s}.jsonl").exists()]
    if not found:
        raise RationaleFormatError(str(base), None, f"none of {', '.join(s + '.jsonl' for s in splits)}")
    for split in found:
        for where, row in _read_annotations(base / f"{split}.jsonl"):
            _add(records, queries, root, texts, split, where, row)
    return list(records.values())


def _add(records, queries, root: Path, texts, split: str, where: str, row: dict) -> None:
    docids = _docids(row)
    pair = _pair(docids)
    query = "" if row.get("query") is None else str(row["query"])
    label = None if row.get("classification") in (None, "") else str(row["classification"])
    for docid in [pair[0]] if pair else docids:
        key = (docid, query)
        if key not in records:
            queries[docid].add(query)
            text, words = _document(root, docid, texts, where)
            known = texts.get(docid, {})
            ident = known.get("id") or (docid[: -len("_premise")] if pair else docid)
            if len(queries[docid]) > 1:
                ident = f"{ident}#{len(queries[docid])}"
            rec = {"id": ident, "text": text, "words": words, "label": known.get("label", label),
                   "split": split, "annotations": [],
                   "metadata": known["metadata"] if "metadata" in known else {"docid": docid, "query": query,
                                                          "query_type": row.get("query_type")}}  # fmt: skip
            if pair:
                h_text, h_words = _document(root, pair[1], texts, where)
                rec.update(hypothesis=h_text, hypothesis_words=h_words)
            records[key] = rec
        rec = records[key]
        ann = {"annotator": _annotator(str(row["annotation_id"]), docid), "label": label,
               "map": _map(row["evidences"], docid, len(rec["words"]), where)}  # fmt: skip
        if pair:
            ann["hypothesis_map"] = _map(row["evidences"], pair[1], len(rec["hypothesis_words"]), where)
        rec["annotations"].append(ann)
