"""Exports that rebuild the data set (issue 27, point 6): every kind's every export table (the per-response
export, the kind's aggregated exports and its results page's tables, in CSV and JSON lines) carries the
texts its maps index. A map is a list of numbers; the row must hold a text (a string, read as whitespace
words, or a list of words) with exactly as many words. The NLI pairs have premises and hypotheses of
different lengths, so a map cannot borrow the other text's length.
"""

from __future__ import annotations

import csv
import io
import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from django.test import RequestFactory

from annotate.exports.tables import offered, stream
from annotate.kinds.nli_pair.pairs import import_pairs
from annotate.models import Dataset, Item, Study
from annotate.studies.lifecycle import start_study
from annotate.tasks import TASK_KINDS, get_kind
from tests.annotate.conftest import make_dataset, make_study, make_worker
from tests.annotate.kinds.forced_choice.test_scoring import NEG, POS, study_with_items
from tests.annotate.kinds.sentence_rating.test_kind import make_rating_study
from tests.annotate.kinds.token_marking.test_kind import make_marking_study
from tests.annotate.test_kind_exports import store

pytestmark = pytest.mark.django_db

NLI_LABELS = ["entailment", "neutral", "contradiction"]
NLI_PAIRS = [
    {"id": "p1", "premise": "A man rides a red bike home", "hypothesis": "A person cycles", "label": "entailment"},
    {"id": "p2", "premise": "Two dogs sleep", "hypothesis": "The dogs run in the park", "label": "contradiction"},
]  # fmt: skip


def nli_study(owner) -> Study:
    dataset = Dataset.objects.create(owner=owner, name=f"pairs-{uuid.uuid4().hex[:6]}")
    import_pairs(dataset, "".join(json.dumps(p) + "\n" for p in NLI_PAIRS).encode(), "jsonl", NLI_LABELS)
    study = Study.objects.create(
        name="nli", owner=owner, dataset=dataset, kind="nli_pair",
        config=get_kind("nli_pair").validate_config({}), annotators_per_item=3,
    )  # fmt: skip
    start_study(study)
    return study


def forced_choice_study(kind: str) -> Callable[[Any], Study]:
    def make(owner) -> Study:
        questions = [(0, "occ_1", "correct", POS), (1, "occ_1", "misclassified", NEG)]
        study, _ = study_with_items(owner, kind, questions, n_docs=2, name=f"fc-{kind}")
        return study

    return make


def one_hot(n: int, at: int) -> list[int]:
    return [1 if i == at % max(n, 1) else 0 for i in range(n)]


def answer_for(item: Item, k: int) -> dict[str, Any]:
    """A stored answer of worker ``k`` to ``item``, in the shape of its kind."""
    payload, kind = item.payload, item.study.kind
    if kind == "highlight":
        return {"label": ["positive", "negative"][k % 2], "map": one_hot(len(payload["words"]), k)}
    if kind == "sentence_rating":
        return {"rating": 1 + k}
    if kind == "token_marking":
        return {"map": one_hot(len(payload["words"]), k)}
    if kind == "nli_pair":
        return {
            "label": NLI_LABELS[k % 3],
            "premise_map": one_hot(len(payload["premise"]["words"]), k),
            "hypothesis_map": one_hot(len(payload["hypothesis"]["words"]), k + 1),
        }
    options = get_kind(kind).options(item.study)
    return {"choice": options[k % len(options)], "confident": True}


MAKERS: dict[str, Callable[[Any], Study]] = {
    "highlight": lambda owner: make_study(owner, make_dataset(owner, n=3, name="hl"), annotators_per_item=3),
    "sentence_rating": lambda owner: make_rating_study(owner, judges=3),
    "token_marking": lambda owner: make_marking_study(owner, judges=3),
    "nli_pair": nli_study,
    "justify": forced_choice_study("justify"),
    "investigate": forced_choice_study("investigate"),
    "reveal_model": forced_choice_study("reveal_model"),
}


def test_every_kind_has_an_answered_study_here():
    assert set(TASK_KINDS) == set(MAKERS)


def answered(owner, kind: str) -> Study:
    study = MAKERS[kind](owner)
    workers = [make_worker(f"{kind}-w{k}") for k in range(3)]
    for item in study.items.select_related("study").order_by("position"):
        for k, worker in enumerate(workers):
            store(item, worker, answer_for(item, k))
    return study


def texts(row: dict[str, Any]) -> list[int]:
    """The word counts of the texts in ``row``: strings (whitespace words) and lists of strings."""
    found = []
    for value in row.values():
        if isinstance(value, str) and value.strip():
            found.append(len(value.split()))
        elif isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            found.append(len(value))
    return found


def maps(row: dict[str, Any]) -> dict[str, list]:
    return {
        name: value
        for name, value in row.items()
        if isinstance(value, list)
        and value
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    }


def unindexed(row: dict[str, Any]) -> list[str]:
    """The map columns of ``row`` whose length is the word count of no text in the row."""
    lengths = texts(row)
    return [f"{name} ({len(value)} long)" for name, value in maps(row).items() if len(value) not in lengths]


def csv_row(row: dict[str, str], map_columns: set[str]) -> dict[str, Any]:
    """A CSV row read back: 0/1 maps as space-separated digits, other lists as JSON."""
    out: dict[str, Any] = {}
    for name, cell in row.items():
        if name in map_columns and cell:
            out[name] = [float(x) for x in (json.loads(cell) if cell.startswith("[") else cell.split())]
        elif cell.startswith("[") and cell.endswith("]"):
            out[name] = json.loads(cell)
        else:
            out[name] = cell
    return out


def export_tables(study: Study) -> dict[str, list[dict[str, Any]]]:
    """Every table a researcher downloads of ``study``, by name and format, as rows of values."""
    tables: dict[str, list[dict[str, Any]]] = {}
    for export in offered(study):
        name = export["name"]
        jsonl = [json.loads(line) for line in "".join(stream(study, name, "jsonl")).splitlines()]
        tables[f"{name}.jsonl"] = jsonl
        map_columns = {c for row in jsonl for c in maps(row)}
        text = "".join(stream(study, name, "csv"))
        tables[f"{name}.csv"] = [csv_row(r, map_columns) for r in csv.DictReader(io.StringIO(text))]
    page_class = get_kind(study.kind).results_page()
    if page_class is not None:
        request = RequestFactory().get("/")
        request.user = study.owner
        page = page_class(request, study)
        for table in page.tables:
            for fmt in sorted(
                page.formats, reverse=True
            ):  # JSON lines first: they say which columns are maps
                body = page.download(table, fmt).content.decode()
                if fmt == "jsonl":
                    rows = [json.loads(line) for line in body.splitlines()]
                else:
                    jsonl_maps = {c for row in tables.get(f"results/{table}.jsonl", []) for c in maps(row)}
                    rows = [csv_row(r, jsonl_maps) for r in csv.DictReader(io.StringIO(body))]
                tables[f"results/{table}.{fmt}"] = rows
    return tables


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_every_export_carries_the_texts_its_maps_index(researcher, kind):
    study = answered(researcher, kind)
    tables = export_tables(study)
    assert tables and any(tables.values()), f"{kind}: no export has rows"
    problems = {
        f"{name} row {i}": bad
        for name, rows in tables.items()
        for i, row in enumerate(rows)
        if (bad := unindexed(row))
    }
    assert problems == {}, sorted({k.split(" row")[0] + ": " + ", ".join(v) for k, v in problems.items()})


def test_the_nli_pairs_tables_hold_both_texts(researcher):
    study = answered(researcher, "nli_pair")
    tables = export_tables(study)
    wanted = {p["id"]: (p["premise"].split(), p["hypothesis"].split()) for p in NLI_PAIRS}
    for name in ("pairs.jsonl", "pairs.csv", "results/pairs.jsonl", "results/pairs.csv"):
        got = {row["pair"]: (row["premise_words"], row["hypothesis_words"]) for row in tables[name]}
        assert got == wanted, name
    for row in tables["responses.jsonl"]:
        assert (row["words"], row["hypothesis_words"]) == wanted[row["document"]]


def test_forced_choice_responses_hold_what_the_worker_was_shown(researcher):
    study = answered(researcher, "justify")
    rows = export_tables(study)["responses.jsonl"]
    assert rows and all(row["shown"] == {"evidence": ["x"]} for row in rows)
