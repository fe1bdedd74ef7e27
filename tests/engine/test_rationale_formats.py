"""Human rationale sets in and out: the ERASER and Hugging Face ``datasets`` exports read back with their
formats' own readers, and every public format read into rationale records, with the line and field of
every refusal."""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path

import pytest

from explain_engine.__main__ import main
from explain_engine.datasets.eraser import read_eraser, write_eraser
from explain_engine.datasets.hf_folder import read_hf_folder, write_hf_folder
from explain_engine.datasets.public_rationales import (
    read_esnli,
    read_hatexplain,
    read_mohseni_maps,
    read_rationales,
    read_yelphat_maps,
    read_zaidan,
)
from explain_engine.datasets.rationale_record import (
    RationaleFormatError,
    consensus,
    is_rationale_file,
    pointing_truth,
    read_records,
    record,
)
from explain_engine.text import word_spans
from tests.conftest import require_shared_data

# --------------------------------------------------------------------- ERASER's own loader, as it is defined


@dataclasses.dataclass(eq=True, frozen=True)
class Evidence:
    """``rationale_benchmark.utils.Evidence`` (DeYoung et al. 2020): built from an evidence's keys, and
    from nothing else (an unknown key is a TypeError)."""

    text: str
    docid: str
    start_token: int = -1
    end_token: int = -1
    start_sentence: int = -1
    end_sentence: int = -1


@dataclasses.dataclass(eq=True, frozen=True)
class Annotation:
    """``rationale_benchmark.utils.Annotation``."""

    annotation_id: str
    query: str
    evidences: frozenset
    classification: str
    query_type: str | None = None
    docids: tuple | None = None


def eraser_annotations(path: Path) -> list[Annotation]:
    """``annotations_from_jsonl`` as the benchmark writes it."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        content = json.loads(line)
        content["evidences"] = frozenset(
            tuple(Evidence(**ev) for ev in group) for group in content["evidences"]
        )
        content["docids"] = tuple(content["docids"]) if content.get("docids") else None
        out.append(Annotation(**content))
    return out


def eraser_documents(folder: Path) -> dict[str, list[list[str]]]:
    """``load_documents``: per docid its sentences, each a list of tokens."""
    return {
        p.name: [line.split(" ") for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
        for p in (folder / "docs").iterdir()
    }


def eraser_maps(folder: Path, split: str) -> dict[str, list[int]]:
    """annotation id → the 0/1 token map its evidences give, from the benchmark's definitions only."""
    docs = eraser_documents(folder)
    out = {}
    for ann in eraser_annotations(folder / f"{split}.jsonl"):
        for docid in ann.docids or ():
            tokens = [t for sentence in docs[docid] for t in sentence]
            values = [0] * len(tokens)
            for group in ann.evidences:
                for ev in group:
                    if ev.docid == docid:
                        assert ev.text == " ".join(tokens[ev.start_token : ev.end_token])
                        flat = [k for k, s in enumerate(docs[docid]) for _ in s]
                        assert (
                            flat[ev.start_token] == ev.start_sentence
                            and flat[ev.end_token - 1] == ev.end_sentence - 1
                        )
                        values[ev.start_token : ev.end_token] = [1] * (ev.end_token - ev.start_token)
            out[f"{ann.annotation_id}@{docid}"] = values
    return out


def _records() -> list[dict]:
    """Three annotators over two texts (one with a line break and double spaces), and one text nobody
    marked; maps with runs at the edges."""
    a = "Great food.  Terrible\nservice, though!"
    b = "The soup was cold and the bread stale"
    return [
        record(
            "r/1",
            a,
            "positive",
            [
                {"annotator": "w1", "label": "positive", "map": [1, 1, 0, 0, 0]},
                {"annotator": "w2", "label": "negative", "map": [0, 1, 1, 1, 1]},
                {"annotator": "w3", "label": None, "map": [1, 1, 1, 0, 0]},
            ],
            "train",
            {"source": "test"},
        ),  # fmt: skip
        record(
            "r 2",
            b,
            "negative",
            [{"annotator": "w1", "label": "negative", "map": [0, 0, 0, 1, 0, 0, 0, 1]}],
            "test",
        ),
        record(
            "r3",
            "nothing marked here",
            "neutral",
            [{"annotator": "w2", "label": "neutral", "map": [0, 0, 0]}],
            "val",
        ),
    ]


def _pairs() -> list[dict]:
    rec = record("p1", "A man plays a guitar on stage.", "entailment", [
        {"annotator": "1", "label": "entailment", "map": [0, 1, 1, 0, 1, 0, 0], "hypothesis_map": [0, 1, 1, 0]},
        {"annotator": "2", "label": "entailment", "map": [0, 1, 0, 0, 1, 0, 0], "hypothesis_map": [0, 0, 1, 1]},
    ], "test")  # fmt: skip
    rec.update(
        hypothesis="A man plays music.", hypothesis_words=[list(s) for s in word_spans("A man plays music.")]
    )
    return [rec]


def _by_id(records: list[dict]) -> dict[str, dict]:
    return {r["id"]: r for r in records}


def test_eraser_export_reads_back_with_the_benchmarks_loader(tmp_path):
    records = _records()
    counts = write_eraser(records, tmp_path)
    assert counts == {"train": 3, "val": 1, "test": 1}
    maps = {**eraser_maps(tmp_path, "train"), **eraser_maps(tmp_path, "val"), **eraser_maps(tmp_path, "test")}
    assert maps["r_1:w1@r_1"] == [1, 1, 0, 0, 0]
    assert maps["r_1:w2@r_1"] == [0, 1, 1, 1, 1]
    assert maps["r_2:w1@r_2"] == [0, 0, 0, 1, 0, 0, 0, 1]
    assert maps["r3:w2@r3"] == [0, 0, 0]
    # labels: each annotator's own, the text's where the annotator gave none
    labels = {a.annotation_id: a.classification for a in eraser_annotations(tmp_path / "train.jsonl")}
    assert labels == {"r_1:w1": "positive", "r_1:w2": "negative", "r_1:w3": "positive"}
    # character offsets: each evidence cut from the original text
    text = records[0]["text"]
    chars = [json.loads(x) for x in (tmp_path / "evidence_chars.jsonl").read_text().splitlines()]
    w2 = [c for c in chars if c["annotation_id"] == "r_1:w2"]
    assert [text[c["start_char"] : c["end_char"]] for c in w2] == ["food.  Terrible\nservice, though!"]
    # CAM and SAM as annotations of their own
    cam_rows = [json.loads(x) for x in (tmp_path / "cam" / "train.jsonl").read_text().splitlines()]
    assert [(ev["start_token"], ev["end_token"]) for g in cam_rows[0]["evidences"] for ev in g] == [(1, 2)]
    sam_rows = [json.loads(x) for x in (tmp_path / "sam" / "train.jsonl").read_text().splitlines()]
    assert [(ev["start_token"], ev["end_token"]) for g in sam_rows[0]["evidences"] for ev in g] == [(0, 5)]


def test_eraser_round_trip_gives_the_same_records(tmp_path):
    records = _records()
    write_eraser(records, tmp_path)
    back = _by_id(read_eraser(tmp_path))
    for rec in records:
        got = back[rec["id"]]
        assert got["text"] == rec["text"] and got["words"] == rec["words"] and got["label"] == rec["label"]
        assert got["split"] == rec["split"] and got["metadata"] == rec["metadata"]
        assert [(a["annotator"], a["map"]) for a in got["annotations"]] == [
            (a["annotator"], a["map"]) for a in rec["annotations"]
        ]
    cam = _by_id(read_eraser(tmp_path, layer="cam"))
    assert cam["r/1"]["annotations"][0]["map"] == consensus([a["map"] for a in records[0]["annotations"]])[0]


def test_eraser_round_trip_of_premise_hypothesis_pairs(tmp_path):
    write_eraser(_pairs(), tmp_path)
    maps = eraser_maps(tmp_path, "test")
    assert maps["p1_premise:1@p1_hypothesis"] == [0, 1, 1, 0]
    assert maps["p1_premise:2@p1_premise"] == [0, 1, 0, 0, 1, 0, 0]
    (got,) = read_eraser(tmp_path)
    assert got["id"] == "p1" and got["hypothesis"] == "A man plays music."
    assert [a["hypothesis_map"] for a in got["annotations"]] == [[0, 1, 1, 0], [0, 0, 1, 1]]


def test_eraser_round_trip_of_the_movie_rationales(tmp_path):
    path = require_shared_data("movie-review-rationales-zaidan2007", "movie_rationales.jsonl")
    records = read_zaidan(path)[:60]
    write_eraser(records, tmp_path)
    maps = {}
    for split in ("train", "val", "test"):
        maps.update(eraser_maps(tmp_path, split))
    for rec in records:
        docid = rec["id"]
        assert maps[f"{docid}:zaidan2007@{docid}"] == rec["annotations"][0]["map"]


def _load_dataset(folder: Path, cache: Path):
    datasets = pytest.importorskip("datasets", reason="the datasets library is a dev extra")
    return datasets.load_dataset(str(folder), cache_dir=str(cache))


def test_hf_folder_reads_back_with_the_datasets_library(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    records = _records()
    written = write_hf_folder(records, tmp_path / "hf", "# Datasheet\n\nThree texts.", pretty_name="t")
    assert written == {"train": 1, "val": 1, "test": 1}
    card = (tmp_path / "hf" / "README.md").read_text()
    assert card.startswith("---\n") and "# Datasheet" in card
    loaded = _load_dataset(tmp_path / "hf", tmp_path / "cache")
    assert set(loaded) == {"train", "val", "test"}
    row = loaded["train"][0]
    assert row["id"] == "r/1" and row["words"] == ["Great", "food.", "Terrible", "service,", "though!"]
    assert [a["map"] for a in row["annotations"]] == [a["map"] for a in records[0]["annotations"]]
    assert [a["annotator"] for a in row["annotations"]] == ["w1", "w2", "w3"]
    assert [a["label"] for a in row["annotations"]] == ["positive", "negative", None]
    assert row["cam"] == [0, 1, 0, 0, 0] and row["sam"] == [1, 1, 1, 1, 1]
    back = _by_id(read_hf_folder(tmp_path / "hf"))
    for rec in records:
        got = back[rec["id"]]
        assert {k: got[k] for k in ("text", "words", "label", "split", "metadata")} == {
            k: rec[k] for k in ("text", "words", "label", "split", "metadata")
        }
        assert got["annotations"] == rec["annotations"]


def _croissant_rows(folder: Path, split: str) -> list[dict]:
    """The rows of one split as the Croissant reference library reads them from ``croissant.json``."""
    mlc = pytest.importorskip("mlcroissant", reason="mlcroissant comes with the parquet extra")
    dataset = mlc.Dataset(jsonld=str(folder / "croissant.json"))
    assert not dataset.metadata.issues.errors, dataset.metadata.issues.report()

    def plain(value):
        if isinstance(value, bytes):
            return value.decode()
        if isinstance(value, list):
            return [plain(v) for v in value]
        if isinstance(value, dict):
            return {k.rsplit("/", 1)[-1]: plain(v) for k, v in value.items()}
        return value

    return [plain(row) for row in dataset.records(f"rationales_{split}")]


def test_hf_folder_croissant_metadata_reads_back_the_same_maps(tmp_path):
    records = _records()
    written = write_hf_folder(records, tmp_path / "hf", "# Datasheet", pretty_name="t")
    document = json.loads((tmp_path / "hf" / "croissant.json").read_text())
    assert {d["contentUrl"] for d in document["distribution"]} == {
        f"data/{s}-00000-of-00001.parquet" for s in written
    }
    for rec in records:
        (row,) = [r for r in _croissant_rows(tmp_path / "hf", rec["split"]) if r["id"] == rec["id"]]
        assert row["text"] == rec["text"] and row["label"] == rec["label"]
        assert [a["map"] for a in row["annotations"]] == [a["map"] for a in rec["annotations"]]
        assert [a["annotator"] for a in row["annotations"]] == [a["annotator"] for a in rec["annotations"]]
        assert (row["cam"], row["sam"]) == tuple(consensus([a["map"] for a in rec["annotations"]]))
    # a file changed after the export no longer matches its checksum
    parquet = tmp_path / "hf" / "data" / f"{records[0]['split']}-00000-of-00001.parquet"
    parquet.write_bytes(parquet.read_bytes() + b"\0")
    with pytest.raises(Exception) as refused:
        _croissant_rows(tmp_path / "hf", records[0]["split"])
    assert "Hash of downloaded file" in str(refused.value.__cause__)


def test_hf_folder_of_pairs_and_mixed_records_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    write_hf_folder(_pairs(), tmp_path / "hf", "pairs")
    row = _load_dataset(tmp_path / "hf", tmp_path / "cache")["test"][0]
    assert row["hypothesis_words"] == ["A", "man", "plays", "music."]
    assert [a["hypothesis_map"] for a in row["annotations"]] == [[0, 1, 1, 0], [0, 0, 1, 1]]
    assert row["hypothesis_cam"] == [0, 0, 1, 0] and row["hypothesis_sam"] == [0, 1, 1, 1]
    (pair,) = _croissant_rows(tmp_path / "hf", "test")
    assert pair["hypothesis_words"] == ["A", "man", "plays", "music."]
    assert [a["hypothesis_map"] for a in pair["annotations"]] == [[0, 1, 1, 0], [0, 0, 1, 1]]
    with pytest.raises(ValueError, match="do not mix"):
        write_hf_folder(_records() + _pairs(), tmp_path / "mixed", "x")


def test_exports_refuse_a_map_of_the_wrong_length(tmp_path):
    bad = _records()
    bad[1]["annotations"][0]["map"] = [0, 1]
    with pytest.raises(RationaleFormatError, match="'map'.*8 values"):
        write_eraser(bad, tmp_path / "e")
    with pytest.raises(RationaleFormatError, match="'map'"):
        write_hf_folder(bad, tmp_path / "h", "x")


# --------------------------------------------------------------------------------------- public formats


def _hatexplain(tmp_path: Path) -> Path:
    data = {
        "p1": {"post_id": "p1", "post_tokens": ["you", "are", "all", "vermin"],
               "annotators": [{"label": "hatespeech", "annotator_id": 7, "target": ["x"]},
                              {"label": "normal", "annotator_id": 8, "target": ["None"]},
                              {"label": "offensive", "annotator_id": 9, "target": ["x"]}],
               "rationales": [[0, 0, 0, 1], [0, 1, 0, 1]]},
        "p2": {"post_id": "p2", "post_tokens": ["nice", "day"],
               "annotators": [{"label": "normal", "annotator_id": 1, "target": []}] * 3, "rationales": []},
    }  # fmt: skip
    (tmp_path / "dataset.json").write_text(json.dumps(data))
    (tmp_path / "post_id_divisions.json").write_text(json.dumps({"train": ["p1"], "val": [], "test": ["p2"]}))
    return tmp_path / "dataset.json"


def test_hatexplain(tmp_path):
    p1, p2 = read_hatexplain(_hatexplain(tmp_path))
    assert p1["text"] == "you are all vermin" and p1["split"] == "train"
    assert [(a["annotator"], a["label"], a["map"]) for a in p1["annotations"]] == [
        ("7", "hatespeech", [0, 0, 0, 1]),
        ("9", "offensive", [0, 1, 0, 1]),
    ]
    assert p1["label"] == "undecided" and p1["metadata"]["labels"] == ["hatespeech", "normal", "offensive"]
    assert p2["label"] == "normal" and p2["annotations"] == [] and p2["split"] == "test"
    raw = json.loads((tmp_path / "dataset.json").read_text())
    raw["p1"]["rationales"][1] = [0, 1]
    (tmp_path / "dataset.json").write_text(json.dumps(raw))
    with pytest.raises(
        RationaleFormatError, match=r"post 1 \(p1\): field 'rationales': rationale 2 must be 4"
    ):
        read_hatexplain(tmp_path / "dataset.json")


def _esnli(tmp_path: Path, marked_hypothesis: str = "A *man* is *outside*.") -> Path:
    path = tmp_path / "esnli_dev.csv"
    header = ["pairID", "gold_label", "Sentence1", "Sentence2"] + [
        f"{c}_{k}" for k in (1, 2, 3) for c in ("Explanation", "Sentence1_marked", "Sentence2_marked")
    ]
    rows = [
        ["1a", "entailment", "A man stands in a field.", "A man is outside.",
         "a field is outside", "A *man* stands in a *field.*", marked_hypothesis,
         "field is outdoors", "A man stands in a *field.*", "A man is *outside.*",
         "", "", ""],
    ]  # fmt: skip
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def test_esnli(tmp_path):
    (rec,) = read_esnli(_esnli(tmp_path))
    assert rec["text"] == "A man stands in a field." and rec["hypothesis"] == "A man is outside."
    assert [(a["annotator"], a["map"], a["hypothesis_map"]) for a in rec["annotations"]] == [
        ("1", [0, 1, 0, 0, 0, 1], [0, 1, 0, 1]),
        ("2", [0, 0, 0, 0, 0, 1], [0, 0, 0, 1]),
    ]
    assert rec["metadata"]["explanations"] == ["a field is outside", "field is outdoors"]
    with pytest.raises(RationaleFormatError, match=r"esnli_dev.csv:2: field 'Sentence2_marked_1'"):
        read_esnli(_esnli(tmp_path, "A *woman* is outside."))


def test_eraser_sets_with_queries_and_several_queries_per_document(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "doc1").write_text("the sky is blue .\nwater is wet .\n")
    lines = [
        {"annotation_id": "q1", "classification": "True", "query": "is the sky blue ?", "query_type": None,
         "evidences": [[{"docid": "doc1", "start_token": 0, "end_token": 4, "start_sentence": 0, "end_sentence": 1, "text": "the sky is blue"}]],
         "docids": ["doc1"]},
        {"annotation_id": "q2", "classification": "False", "query": "is water dry ?", "query_type": None,
         "evidences": [[{"docid": "doc1", "start_token": 5, "end_token": 8, "start_sentence": 1, "end_sentence": 2, "text": "water is wet"}]]},
    ]  # fmt: skip
    (tmp_path / "val.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    first, second = read_eraser(tmp_path)
    assert first["id"] == "doc1" and second["id"] == "doc1#2"
    assert first["text"] == "the sky is blue .\nwater is wet ."
    assert first["annotations"][0]["map"] == [1, 1, 1, 1, 0, 0, 0, 0, 0]
    assert second["annotations"][0]["map"] == [0, 0, 0, 0, 0, 1, 1, 1, 0]
    assert second["metadata"]["query"] == "is water dry ?" and first["split"] == "val"
    lines[1]["evidences"][0][0]["end_token"] = 12
    (tmp_path / "val.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    with pytest.raises(RationaleFormatError, match=r"val.jsonl:2: field 'evidences': tokens \[5, 12\)"):
        read_eraser(tmp_path)


def test_zaidan_movie_rationales():
    path = require_shared_data("movie-review-rationales-zaidan2007", "movie_rationales.jsonl")
    records = read_zaidan(path)
    assert len(records) == 1799  # 900 annotated per class, posR_161 without a tag
    rec = next(r for r in records if r["id"] == "posR_000")
    raw = next(json.loads(x) for x in path.open() if '"posR_000"' in x)
    tokens = raw["text"].split(" ")
    marked = [tokens[i] for i, v in enumerate(rec["annotations"][0]["map"]) if v]
    assert " ".join(marked).startswith("ably captures oscar winner the acting in from hell is solid")


def test_zaidan_refuses_a_span_past_the_text(tmp_path):
    path = tmp_path / "z.jsonl"
    path.write_text(
        json.dumps({"id": "a", "label": "pos", "text": "so good", "rationale_spans": [[0, 5]]}) + "\n"
    )
    with pytest.raises(RationaleFormatError, match=r"z.jsonl:1: field 'rationale_spans': span \[0, 5\)"):
        read_zaidan(path)


def test_mohseni_20news_with_texts(tmp_path):
    path = require_shared_data("mohseni-20news-human-attention", "human_attention_subset.jsonl")
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    for row in rows:
        folder = tmp_path / row["category"]
        folder.mkdir(exist_ok=True)
        first = row["words"][0][0]
        (folder / row["article"]).write_text(f"Subject: a question\n\nMy {first.upper()}, here.")
    records = read_mohseni_maps(path, tmp_path)
    assert len(records) == len(rows)
    assert all(r["annotations"][0]["map"] == [0, 0, 0, 0, 1, 0] for r in records)
    with pytest.raises(ValueError, match="needs the 20news-bydate-test folder"):
        read_rationales("mohseni", [path])


def test_yelphat_raw_with_annotators():
    path = require_shared_data("yelp-hat", "raw", "ham_part1(50words).csv")
    records = read_yelphat_maps([path])
    assert len(records) == 300 and all(len(r["annotations"]) == 3 for r in records)
    assert records[0]["annotations"][2]["annotator"] == "ham_part1(50words).csv:2"
    assert records[0]["label"] in ("positive", "negative")


def test_cli_import_export_and_errors(tmp_path, capsys):
    assert (
        main(
            [
                "rationales",
                "import",
                "hatexplain",
                str(_hatexplain(tmp_path)),
                "--out",
                str(tmp_path / "m.jsonl"),
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "rationales",
                "export",
                "--data",
                str(tmp_path / "m.jsonl"),
                "--format",
                "eraser",
                "--out",
                str(tmp_path / "e"),
            ]
        )
        == 0
    )
    assert eraser_maps(tmp_path / "e", "train")["p1:9@p1"] == [0, 1, 0, 1]
    (tmp_path / "bad.csv").write_text("pairID,gold_label\n1,entailment\n")
    assert (
        main(["rationales", "import", "esnli", str(tmp_path / "bad.csv"), "--out", str(tmp_path / "x")]) == 2
    )
    assert "bad.csv:1: field 'Sentence1': missing from the header" in capsys.readouterr().err


def test_records_file_and_the_pointing_games_truth(tmp_path):
    path = tmp_path / "maps.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _records()))
    assert is_rationale_file(path.read_text().splitlines()[0])
    assert not is_rationale_file(json.dumps({"id": "x", "words": [], "annotations": [{"map": []}]}))
    truth = {t["id"]: t["relevant"] for t in pointing_truth(read_records(path))}
    assert truth == {"r/1": [0, 1, 2, 3, 4], "r 2": [3, 7]}  # the SAM; "r3" has no marked word
    bad = _records()[:1]
    bad[0]["annotations"][0]["map"] = [1]
    path.write_text(json.dumps(bad[0]) + "\n")
    with pytest.raises(RationaleFormatError, match=r"maps.jsonl:1: field 'map': annotation 1"):
        read_records(path)
