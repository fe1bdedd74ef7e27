"""Replaying answers under adaptive redundancy (explain_engine.replay) and its command."""

from __future__ import annotations

import json

import pytest

from explain_engine.__main__ import main
from explain_engine.redundancy import StoppingPolicy
from explain_engine.replay import figures, replay, replay_table, simulate


def record(i: int, labels: list[str], gold: int = 1) -> dict:
    maps = [[1, 1, 0, 0, 0], [1, 0, 1, 0, 0], [1, 1, 0, 0, 1]]
    return {
        "id": f"part:{i}",
        "text": "a b c d e",
        "words": [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]],
        "label": gold,
        "annotations": [{"label": lab, "map": m} for lab, m in zip(labels, maps, strict=False)],
    }


RECORDS = [record(0, ["positive"] * 3), record(1, ["positive", "negative", "positive"])] + [
    record(i, ["negative", "negative", "positive"], gold=0) for i in range(2, 6)
]


def test_replay_stops_agreeing_texts_early_and_uses_every_answer_of_split_ones():
    policy = StoppingPolicy(2, 3, "label_share", 0.9)
    used, stops = replay(RECORDS, policy, seed=0)
    assert len(used[0]["annotations"]) == 2  # all three agree: any two do
    assert all(len(u["annotations"]) in (2, 3) for u in used)
    assert stops["rule"] + stops["max"] == len(RECORDS)
    # the same seed gives the same orders
    assert replay(RECORDS, policy, seed=0)[0] == used


def test_the_fixed_design_changes_nothing_and_a_policy_reports_its_savings():
    base, rows = replay_table(RECORDS, [StoppingPolicy(3, 3, "label_share", 0.9)], 3, seeds=(0, 1))
    assert rows[0].saved == 0.0
    assert all(v == pytest.approx(0.0) for v in rows[0].change.values())
    assert base["majority_same"] == 1.0 and base["answers"] == 3.0
    _, rows = replay_table(RECORDS, [StoppingPolicy(1, 3, "label_share", 0.5)], 3, seeds=(0,))
    assert rows[0].saved == pytest.approx(2 / 3)  # one answer always has a share of 1
    assert figures(RECORDS)["accuracy_pooled"] == pytest.approx((3 + 2 + 4 * 2) / 18)


def test_simulated_annotators_give_the_asked_number_of_answers_with_labels_and_maps():
    made = simulate(RECORDS, 5, workers=8, seed=1)
    assert all(len(r["annotations"]) == 5 for r in made)
    assert {a["label"] for r in made for a in r["annotations"]} <= {"positive", "negative", "cannot decide"}
    assert all(len(a["map"]) == 5 and 0 < a["accuracy"] <= 1 for r in made for a in r["annotations"])


def test_the_command_prints_a_table_and_json(tmp_path, capsys):
    path = tmp_path / "maps.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS * 3))
    assert main(["redundancy-replay", "--maps", str(path), "--seeds", "1"]) == 0
    out = capsys.readouterr().out
    assert "fixed N=3" in out and "label_share" in out and "map_agreement" in out
    assert main(["redundancy-replay", "--maps", str(path), "--seeds", "1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data[0]["fixed"]["answers"] == 3.0 and data[0]["policies"]
