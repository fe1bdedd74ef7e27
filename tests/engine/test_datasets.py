"""Loaders (JSONL, CSV, SST-2, labelled sentences), splits and the vocabulary."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from explain_engine.datasets import (
    balance,
    balanced_split,
    given_splits,
    load_records,
    read_csv,
    read_jsonl,
    read_labelled_sentences,
    read_sst2,
    split_records,
)
from explain_engine.vocab import PAD_ID, UNK_ID, Vocabulary
from tests.conftest import require_shared_data


def write(path, text: str):
    path.write_text(text, encoding="utf-8")
    return path


def test_read_jsonl_keeps_extra_fields(tmp_path):
    rows = [
        {
            "id": 7,
            "text": "Great food.",
            "label": 1,
            "words": [[0, 5], [6, 11]],
            "annotations": [{"map": [1, 0]}],
        },
        {"text": "Bad.", "label": "negative", "metadata": {"source": "x"}},
    ]
    path = write(tmp_path / "d.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n\n")
    recs = read_jsonl(path)
    assert recs[0] == {
        "id": "7",
        "text": "Great food.",
        "label": "1",
        "words": [[0, 5], [6, 11]],
        "annotations": [{"map": [1, 0]}],
    }
    assert recs[1] == {"id": "2", "text": "Bad.", "label": "negative", "metadata": {"source": "x"}}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"id": 1, "text": "ok", "label": 0}\n{"id": 2, "text": "x"', r"d.jsonl:2: invalid JSON"),
        ('{"id": 1, "label": 0}\n', r"d.jsonl:1: missing field 'text'"),
        ('{"id": 1, "text": "  ", "label": 0}\n', r"d.jsonl:1: field 'text' has no words"),
        ('{"id": 1, "text": "ok"}\n', r"d.jsonl:1: missing field 'label'"),
        ('{"id": 1, "text": 5, "label": 0}\n', r"field 'text' must be a string"),
        ("[1, 2]\n", r"d.jsonl:1: expected a JSON object"),
        (
            '{"id": 1, "text": "a", "label": 0}\n\n{"id": 1, "text": "b", "label": 1}\n',
            r"d.jsonl:3: id '1' already used at .*d.jsonl:1",
        ),
    ],
)
def test_read_jsonl_errors_name_line_and_field(tmp_path, content, message):
    with pytest.raises(ValueError, match=message):
        read_jsonl(write(tmp_path / "d.jsonl", content))


def test_labels_are_optional_when_asked(tmp_path):
    path = write(tmp_path / "d.jsonl", '{"id": "a", "text": "no label here"}\n')
    assert read_jsonl(path, require_label=False)[0]["label"] is None


def test_read_csv_with_quoted_newlines_and_errors(tmp_path):
    path = write(tmp_path / "d.csv", 'id,text,label,topic\na1,"Line one,\nline two",pos,food\na2,Fine,neg,\n')
    recs = read_csv(path)
    assert [r["id"] for r in recs] == ["a1", "a2"] and recs[0]["text"] == "Line one,\nline two"
    assert recs[0]["topic"] == "food" and recs[1]["label"] == "neg"
    with pytest.raises(ValueError, match=r"d2.csv:1: header has no column 'text'"):
        read_csv(write(tmp_path / "d2.csv", "id,body,label\n1,x,0\n"))
    with pytest.raises(ValueError, match=r"d3.csv:3: missing field 'label'"):
        read_csv(write(tmp_path / "d3.csv", "text,label\nfine,1\nnot fine,\n"))
    with pytest.raises(ValueError, match=r"d4.csv:2: more values than header columns"):
        read_csv(write(tmp_path / "d4.csv", "text,label\nfine,1,extra\n"))


def test_load_records_picks_the_loader(tmp_path):
    jsonl = write(tmp_path / "a.jsonl", '{"id": "1", "text": "x y", "label": 0}\n')
    csv_path = write(tmp_path / "a.csv", "text,label\nx y,0\n")
    tsv = write(tmp_path / "a.tsv", "text\tlabel\nx y\t0\n")
    sst = write(tmp_path / "dev.tsv", "sentence\tlabel\nit 's fine . \t1\n")
    for path in (jsonl, csv_path, tsv):
        assert load_records(path)[0]["text"] == "x y"
    assert load_records(sst) == [
        {"id": "sst2-validation-1", "text": "it 's fine .", "label": "1", "split": "validation"}
    ]
    raw = write(
        tmp_path / "ham.csv",
        "Input.label,Input.text,Answer.Q1Answer,Answer.html_output\n"
        '1,Great food,yes,"<span class=""active"">Great</span> <span>food</span> <span></span>"\n'
        '1,Great food,yes,"<span>Great</span> <span>food</span> <span></span>"\n',
    )
    (review,) = load_records(raw)
    assert review["text"] == "Great food" and str(review["label"]) == "1" and len(review["annotations"]) == 2
    with pytest.raises(FileNotFoundError):
        load_records(tmp_path / "missing.jsonl")
    with pytest.raises(ValueError, match="unknown data format"):
        load_records(write(tmp_path / "a.xml", "<x/>"))


def test_sst2_and_sentences_from_small_files(tmp_path):
    write(tmp_path / "train.tsv", "sentence\tlabel\nhide new secretions \t0\ncharming \t1\n")
    write(tmp_path / "dev.tsv", "sentence\tlabel\nbleak \t0\n")
    recs = load_records(tmp_path)
    assert [(r["text"], r["label"], r["split"]) for r in recs] == [
        ("hide new secretions", "0", "train"),
        ("charming", "1", "train"),
        ("bleak", "0", "validation"),
    ]
    with pytest.raises(ValueError, match=r"bad.tsv:2: expected 'sentence<TAB>0\|1'"):
        read_sst2(write(tmp_path / "bad.tsv", "sentence\tlabel\nno label here\n"))
    folder = tmp_path / "uci"
    folder.mkdir()
    write(folder / "imdb_labelled.txt", 'A "quoted, very" slow movie.  \t0\nLoved it.\t1\n')
    recs = load_records(folder)
    assert recs[0] == {
        "id": "imdb-1",
        "text": 'A "quoted, very" slow movie.',
        "label": "0",
        "metadata": {"source": "imdb"},
    }
    assert read_labelled_sentences(folder / "imdb_labelled.txt")[1]["label"] == "1"


def test_real_sst2():
    folder = require_shared_data("sst2-glue")
    recs = read_sst2(folder)
    by_split = Counter(r["split"] for r in recs)
    assert by_split == {"train": 67349, "validation": 872}
    dev = [r for r in recs if r["split"] == "validation"]
    assert Counter(r["label"] for r in dev) == {"1": 444, "0": 428}
    assert dev[0]["text"] == "it 's a charming and often affecting journey ."
    train, val, test = given_splits(recs)
    assert (len(train), len(val), len(test)) == (67349, 872, 0)


def test_real_labelled_sentences():
    folder = require_shared_data("uci-sentiment-labelled-sentences")
    recs = read_labelled_sentences(folder)
    assert len(recs) == 3000 and len({r["id"] for r in recs}) == 3000
    assert Counter((r["metadata"]["source"], r["label"]) for r in recs)[("imdb", "0")] == 500
    yelp = [r for r in recs if r["metadata"]["source"] == "yelp"]
    assert yelp[0]["text"] == "Wow... Loved this place." and yelp[0]["label"] == "1"


def labelled(n_pos: int, n_neg: int) -> list[dict]:
    return [{"id": f"p{i}", "text": "x", "label": "1"} for i in range(n_pos)] + [
        {"id": f"n{i}", "text": "x", "label": "0"} for i in range(n_neg)
    ]


def test_balance_downsamples_to_the_smallest_class():
    recs = labelled(30, 12)
    kept = balance(recs, seed=3)
    assert Counter(r["label"] for r in kept) == {"1": 12, "0": 12}
    assert kept == balance(recs, seed=3) and kept != balance(recs, seed=4)
    assert [r["id"] for r in kept] == sorted((r["id"] for r in kept), key=[x["id"] for x in recs].index)


def test_split_is_stratified_disjoint_and_seeded():
    recs = labelled(50, 50)
    train, val, test = split_records(recs, seed=1)
    assert (len(train), len(val), len(test)) == (80, 10, 10)
    for part, n in ((train, 40), (val, 5), (test, 5)):
        assert Counter(r["label"] for r in part) == {"1": n, "0": n}
    ids = [set(r["id"] for r in part) for part in (train, val, test)]
    assert not (ids[0] & ids[1] or ids[0] & ids[2] or ids[1] & ids[2]) and len(set.union(*ids)) == 100
    assert split_records(recs, seed=1) == (train, val, test)
    assert split_records(recs, seed=2)[2] != test
    b_train, b_val, b_test = balanced_split(labelled(70, 50), seed=1)
    assert Counter(r["label"] for r in b_train + b_val + b_test) == {"1": 50, "0": 50}
    with pytest.raises(ValueError, match="summing to 1"):
        split_records(recs, (0.8, 0.1, 0.2))


def test_given_splits():
    recs = [
        {"id": "a", "label": "1", "split": "train"},
        {"id": "b", "label": "0", "split": "dev"},
        {"id": "c", "label": "0", "split": "test"},
    ]
    assert [len(p) for p in given_splits(recs)] == [1, 1, 1]
    assert given_splits(recs + [{"id": "d", "label": "1"}]) is None
    with pytest.raises(ValueError, match="unknown split 'holdout'"):
        given_splits([{"id": "e", "label": "1", "split": "holdout"}])
    # ERASER's "val", and a rationale record's null split (none named: the caller splits)
    assert [len(p) for p in given_splits([*recs, {"id": "f", "label": "1", "split": "val"}])] == [1, 2, 1]
    assert given_splits([*recs, {"id": "g", "label": "1", "split": None}]) is None


def test_vocabulary_counts_unknowns_and_round_trips():
    texts = ["The food, the FOOD!", "food was cold", "cold cold"]
    vocab = Vocabulary.build(texts, min_count=2)
    assert vocab.itos == ["<pad>", "<unk>", "cold", "food", "the"]  # ties alphabetical
    capped = Vocabulary.build(texts, max_size=4)
    assert capped.itos == ["<pad>", "<unk>", "cold", "food"]
    batch = vocab.encode(["The food was hot.", "cold"])
    assert batch.ids.tolist() == [[4, 3, UNK_ID, UNK_ID, UNK_ID], [2, PAD_ID, PAD_ID, PAD_ID, PAD_ID]]
    assert batch.mask.tolist() == [[True] * 5, [True] + [False] * 4]
    assert batch.owners == [[0, 1, 2, 3, 3], [0]] and batch.n_words == [4, 1]
    short = vocab.encode(["The food was hot."], max_len=2)
    assert short.ids.tolist() == [[4, 3]] and short.owners == [[0, 1]] and short.n_words == [4]
    again = Vocabulary.from_dict(json.loads(json.dumps(vocab.to_dict())))
    assert again.itos == vocab.itos and again.min_count == 2
    with pytest.raises(ValueError, match="no words"):
        vocab.encode(["   "])
