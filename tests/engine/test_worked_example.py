"""The README's worked example, from the CLI: import Zaidan et al. 2007's movie rationales, train a tiny
model, explain it, and read plausibility (ERASER's token F1, IOU F1, AUPRC) and faithfulness
(comprehensiveness and sufficiency AOPC) side by side; the imported maps are the pointing game's truth."""

from __future__ import annotations

import json

import pytest

from explain_engine.__main__ import main
from tests.conftest import require_shared_data


def test_movie_rationales_end_to_end(tmp_path, capsys):
    source = require_shared_data("movie-review-rationales-zaidan2007", "movie_rationales.jsonl")
    lines = source.read_text(encoding="utf-8").splitlines()
    sample = tmp_path / "movies.jsonl"
    sample.write_text("\n".join(lines[:15] + lines[1000:1015]) + "\n", encoding="utf-8")  # 15 pos, 15 neg
    maps, run, expl = tmp_path / "maps.jsonl", tmp_path / "run", tmp_path / "expl.jsonl"

    assert main(["rationales", "import", "zaidan", str(sample), "--out", str(maps)]) == 0
    assert "wrote 30 texts with 30 human maps" in capsys.readouterr().out
    train = ["train", "--data", str(maps), "--model", "cnn", "--out", str(run), "--epochs", "2",
             "--embedding-dim", "16", "--min-count", "1", "--device", "cpu"]  # fmt: skip
    assert main(train) == 0
    capsys.readouterr()
    methods = "grad_dot_1s,random"
    explain = ["explain", "--model", str(run), "--data", str(maps), "--methods", methods, "--out", str(expl),
               "--device", "cpu"]  # fmt: skip
    assert main(explain) == 0
    capsys.readouterr()
    assert sum(1 for _ in expl.open()) == 30

    side_by_side = ["rationales", "plausibility", "--maps", str(maps), "--explanations", str(expl),
                    "--model", str(run), "--n-boot", "200", "--device", "cpu", "--json"]  # fmt: skip
    assert main(side_by_side) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["texts"] == 30 and set(report["methods"]) == {"grad_dot_1s", "random"}
    for figures in report["methods"].values():
        for key in ("token_f1", "iou_f1", "auprc", "comprehensiveness_aopc", "sufficiency_aopc"):
            e = figures[key]
            assert e["value"] is not None and e["ci_low"] <= e["value"] <= e["ci_high"], key
        assert 0 <= figures["token_f1"]["value"] <= 1 and figures["token_f1"]["n"] == 30

    assert main(side_by_side[:-1]) == 0
    table = capsys.readouterr().out
    assert "token F1" in table and "IOU F1" in table and "comprehensiveness AOPC" in table
    # ferret's set on the same explanations: token IOU in place of IOU F1, one K for all texts
    assert main([*side_by_side[:-1][:10], "--set", "ferret", "--n-boot", "0", "--json"]) == 0
    ferret = json.loads(capsys.readouterr().out)["methods"]["grad_dot_1s"]
    assert {"token_f1", "token_iou", "auprc"} <= set(ferret) and "iou_f1" not in ferret
    assert ferret["token_iou"]["k"] >= 1
    assert ferret["auprc"]["value"] == pytest.approx(report["methods"]["grad_dot_1s"]["auprc"]["value"])

    game = ["pointing-game", "--model", str(run), "--data", str(maps), "--methods", methods, "--json",
            "--device", "cpu"]  # fmt: skip
    assert main(game) == 0
    played = json.loads(capsys.readouterr().out)
    assert played["kind"] == "manual"
