"""The shapes a dashboard hands the browser: bar charts (the ``BarChartData`` of
``frontend/src/charts.ts``) and tables, and their CSV.

A chart is ``{"id", "title", "yLabel", "labels", "series": [{"name", "values", "lower"?, "upper"?}]}``;
a table is ``{"id", "title", "columns", "rows"}`` where a cell may be ``{"text", "href"}`` (a link).
The CSV of a chart has the columns of ``tableToCsv`` in ``charts.ts`` (label, then each series' value
and bounds), so the server's file and the page's download link hold the same numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from annotate import csvfile


def estimate_series(name: str, estimates: Sequence[dict | None]) -> dict:
    """A chart series from engine estimates (``Estimate.to_dict()``): values with their intervals."""
    return {
        "name": name,
        "values": [None if e is None else e.get("value") for e in estimates],
        "lower": [None if e is None else e.get("ci_low") for e in estimates],
        "upper": [None if e is None else e.get("ci_high") for e in estimates],
    }


def chart(chart_id: str, title: str, labels: Sequence[str], series: list[dict], y_label: str = "") -> dict:
    return {"id": chart_id, "title": title, "yLabel": y_label, "labels": list(labels), "series": series}


def table(table_id: str, title: str, columns: Sequence[str], rows: list[list[Any]]) -> dict:
    return {"id": table_id, "title": title, "columns": list(columns), "rows": rows}


def chart_rows(data: dict) -> tuple[list[str], list[list[Any]]]:
    """The header and rows of a chart's table (one row per label)."""
    header = ["label"]
    for s in data["series"]:
        header.append(s["name"])
        if "lower" in s:
            header.append(f"{s['name']} lower")
        if "upper" in s:
            header.append(f"{s['name']} upper")
    rows = []
    for i, label in enumerate(data["labels"]):
        row: list[Any] = [label]
        for s in data["series"]:
            row.append(s["values"][i])
            if "lower" in s:
                row.append(s["lower"][i])
            if "upper" in s:
                row.append(s["upper"][i])
        rows.append(row)
    return header, rows


def _cell(value: Any) -> Any:
    if isinstance(value, dict) and "text" in value:
        value = value["text"]
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)  # as JavaScript's String(x)
    return value


def to_csv(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """CSV text with CRLF line ends, cells defused against spreadsheet formulas (:mod:`annotate.csvfile`)."""
    return csvfile.csv_text(header, rows, cell=_cell, lineterminator="\r\n")


def find(result: dict, name: str) -> tuple[list[str], list[list[Any]]] | None:
    """Header and rows of the chart or table ``name`` of a computed dashboard, or None."""
    for c in result.get("charts", ()):
        if c["id"] == name:
            return chart_rows(c)
    for t in result.get("tables", ()):
        if t["id"] == name:
            return t["columns"], t["rows"]
    return None
