"""``agreement`` and ``similarity`` commands on converted YELP-HAT maps."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from explain_engine.__main__ import main
from explain_engine.datasets.yelphat import read_maps_jsonl
from explain_engine.metrics.behavioral import HumanMaps, behavioral_similarity
from tests.conftest import require_shared_data


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> tuple[Path, Path]:
    raw = require_shared_data("yelp-hat", "raw", "ham_part1(50words).csv")
    out = tmp_path_factory.mktemp("maps") / "maps.jsonl"
    assert main(["yelphat", "convert", str(raw), "--out", str(out), "--pos", "--quiet"]) == 0
    preds = out.parent / "preds.jsonl"
    rng = np.random.default_rng(0)
    with open(preds, "w") as fh:
        for rec in read_maps_jsonl(out):
            share = np.mean([a["map"] for a in rec["annotations"]], axis=0)
            att = np.exp(2 * share + rng.normal(0, 1, share.size))
            fh.write(
                json.dumps({"id": rec["id"], "attention": (att / att.sum()).tolist(), "label": 1}) + "\n"
            )
    return out, preds


def test_agreement_json(converted, capsys):
    maps, _ = converted
    assert main(["agreement", "--maps", str(maps), "--json", "--n-boot", "200"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["texts"] == 300 and rep["maps"] == 900 and rep["maps_per_text"] == {"3": 300}
    assert set(rep["k"]) == {"HAM1", "HAM2", "HAM3", "CAM", "SAM"}
    assert abs(rep["k"]["CAM"]["value"] - 5) < 0.5 and abs(rep["k"]["SAM"]["value"] - 22) < 1.0
    cells = {(r["truth"], r["score"]): r["value"] for r in rep["human_human"]}
    assert len(cells) == 6
    assert abs(cells[("HAM1", "HAM2")] - 0.73) <= 0.02 and abs(cells[("HAM2", "HAM3")] - 0.75) <= 0.02
    kappa = rep["fleiss_kappa_labels"]
    assert kappa["n"] == 300 and kappa["ci_low"] < kappa["value"] < kappa["ci_high"]


def test_agreement_text(converted, capsys):
    maps, _ = converted
    assert main(["agreement", "--maps", str(maps), "--n-boot", "0", "--max-maps", "2"]) == 0
    out = capsys.readouterr().out
    assert "Average words selected per map, k" in out and "HAM3" not in out
    assert "Fleiss κ of the labels" in out and "column = truth, row = score" in out


def test_similarity_json_matches_library(converted, capsys):
    maps, preds = converted
    lexicon = require_shared_data("opinion-lexicon-hu-liu")
    argv = ["similarity", "--maps", str(maps), "--machine", str(preds), "--lexicon", str(lexicon)]
    assert main([*argv, "--json", "--n-boot", "100", "--draws", "3"]) == 0
    rep = json.loads(capsys.readouterr().out)
    refs = {r["reference"]: r for r in rep["references"]}
    assert list(refs) == ["HAM1", "HAM2", "HAM3", "CAM", "SAM"]
    humans = HumanMaps.from_records(read_maps_jsonl(maps))
    machine = [json.loads(line)["attention"] for line in preds.read_text().splitlines()]
    idx, cam = humans.consensus()
    ref = behavioral_similarity(cam, [machine[i] for i in idx], n_boot=0)
    assert refs["CAM"]["behavioral"]["value"] == pytest.approx(ref.value)
    assert refs["CAM"]["behavioral"]["skipped"] == ref.extra["skipped"] > 0
    for r in refs.values():
        assert 0.5 < r["behavioral"]["value"] < 1.0
        assert r["lexical"]["value"] > r["lexical_random"]["value"]
        adj = (r["lexical"]["value"] - r["lexical_random"]["value"]) / (1 - r["lexical_random"]["value"])
        assert r["lexical_adjusted"] == pytest.approx(adj)
        assert set(r["cssr_machine"]) == {"cssr_p", "cssr_n"}
    assert len(rep["tag_distribution"]) == 36

    assert main([*argv, "--n-boot", "0", "--draws", "2", "--tags-table"]) == 0
    out = capsys.readouterr().out
    for heading in ("Table 2", "Table 3", "Table 4", "Table 5"):
        assert heading in out


def test_similarity_reports_bad_predictions(converted, tmp_path, capsys):
    maps, _ = converted
    first = read_maps_jsonl(maps)[0]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": first["id"], "attention": [0.5, 0.5]}) + "\n")
    assert main(["similarity", "--maps", str(maps), "--machine", str(bad)]) == 2
    assert "2 scores for 50 words" in capsys.readouterr().err
    bad.write_text('{"id": "x"}\n')
    assert main(["similarity", "--maps", str(maps), "--machine", str(bad)]) == 2
    assert "needs 'id' and 'attention'" in capsys.readouterr().err
