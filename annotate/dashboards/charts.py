"""The shapes a dashboard hands the browser: bar and scatter charts (the ``BarChartData`` and
``ScatterChartData`` of ``frontend/src/charts.ts``) and tables, and their CSV.

A bar chart is ``{"id", "title", "yLabel", "labels", "series": [{"name", "values", "lower"?, "upper"?}]}``;
a scatter chart is ``{"id", "kind": "scatter", "title", "xLabel", "yLabel", "points": [{"label", "x",
"xLower", "xUpper", "y", "yLower", "yUpper"}], "better"?: {"corner", "text"}}``; a table is ``{"id",
"title", "columns", "rows"}`` where a cell may be ``{"text", "href"}`` (a link). The CSV of a chart has
the columns of ``tableToCsv`` / ``scatterToCsv`` in ``charts.ts`` (label, then each series' value and
bounds, or each axis' value and bounds), so the server's file and the page's download link hold the
same numbers.

Every figure of a dashboard has an id of its own, one namespace for charts and tables: a chart is named
for what it shows (``behavioral``) and a table ends in ``-table`` (``behavioral-table``, the full numbers
behind that chart; ``annotators-table``, a table alone). The id addresses the figure's CSV
(``csv/<id>.csv``), names its downloaded file and marks it on the page (``data-chart``, ``data-table``),
so a chart's address never depends on whether a table of the same figure is shown; :func:`figures`
checks a dashboard's ids when it is assembled.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from annotate.infra import csvfile

TABLE_SUFFIX = "-table"


def _chart_id(chart_id: str) -> str:
    if chart_id.endswith(TABLE_SUFFIX):
        raise ValueError(f"chart {chart_id!r}: ids ending in {TABLE_SUFFIX!r} are for tables")
    return chart_id


def estimate_series(name: str, estimates: Sequence[dict | None]) -> dict:
    """A chart series from engine estimates (``Estimate.to_dict()``): values with their intervals."""
    return {
        "name": name,
        "values": [None if e is None else e.get("value") for e in estimates],
        "lower": [None if e is None else e.get("ci_low") for e in estimates],
        "upper": [None if e is None else e.get("ci_high") for e in estimates],
    }


def chart(chart_id: str, title: str, labels: Sequence[str], series: list[dict], y_label: str = "") -> dict:
    return {
        "id": _chart_id(chart_id),
        "title": title,
        "yLabel": y_label,
        "labels": list(labels),
        "series": series,
    }


def estimate_point(label: str, x: dict | None, y: dict | None) -> dict:
    """A scatter point from two engine estimates (``Estimate.to_dict()``), each with its interval."""

    def part(e: dict | None, key: str) -> Any:
        return None if e is None else e.get(key)

    return {
        "label": label,
        "x": part(x, "value"),
        "xLower": part(x, "ci_low"),
        "xUpper": part(x, "ci_high"),
        "y": part(y, "value"),
        "yLower": part(y, "ci_low"),
        "yUpper": part(y, "ci_high"),
    }


SCATTER_CORNERS = ("top right", "top left", "bottom right", "bottom left")


def scatter(
    chart_id: str,
    title: str,
    points: list[dict],
    x_label: str,
    y_label: str,
    better: tuple[str, str] | None = None,
) -> dict:
    """A scatter chart: one point per label with intervals on both axes (``estimate_point``), titled
    axes, and ``better`` = (corner, what the points there are), e.g. ("top right", "plausible and
    faithful")."""
    if not x_label.strip() or not y_label.strip():
        raise ValueError(f"scatter {chart_id!r}: both axes need a title")
    data: dict[str, Any] = {
        "id": _chart_id(chart_id),
        "kind": "scatter",
        "title": title,
        "xLabel": x_label,
        "yLabel": y_label,
        "points": points,
    }
    if better is not None:
        corner, text = better
        if corner not in SCATTER_CORNERS:
            raise ValueError(
                f"scatter {chart_id!r}: better corner must be one of {SCATTER_CORNERS}, not {corner!r}"
            )
        data["better"] = {"corner": corner, "text": text}
    return data


def table(table_id: str, title: str, columns: Sequence[str], rows: list[list[Any]]) -> dict:
    """A table; its id ends in ``-table`` (``behavioral-table``), so it never shares one with a chart."""
    if not table_id.endswith(TABLE_SUFFIX):
        raise ValueError(f"table {table_id!r}: a table's id ends in {TABLE_SUFFIX!r}")
    return {"id": table_id, "title": title, "columns": list(columns), "rows": rows}


def scatter_rows(data: dict) -> tuple[list[str], list[list[Any]]]:
    """The header and rows of a scatter chart's table: per point its label, x and y with their bounds."""
    header = ["label"]
    for name in (data["xLabel"], data["yLabel"]):
        header += [name, f"{name} lower", f"{name} upper"]
    keys = ("label", "x", "xLower", "xUpper", "y", "yLower", "yUpper")
    return header, [[p.get(k) for k in keys] for p in data["points"]]


def chart_rows(data: dict) -> tuple[list[str], list[list[Any]]]:
    """The header and rows of a chart's table (one row per label, or per point of a scatter chart)."""
    if data.get("kind") == "scatter":
        return scatter_rows(data)
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
    """CSV text with CRLF line ends, cells defused against spreadsheet formulas (:mod:`annotate.infra.csvfile`)."""
    return csvfile.csv_text(header, rows, cell=_cell, lineterminator="\r\n")


def figures(charts: list[dict], tables: list[dict]) -> tuple[list[dict], list[dict]]:
    """A dashboard's charts and tables as they go into its result, once every id is known to be unique
    among them all (the id addresses the figure's CSV and marks it on the page): a repeated id is a
    mistake in the dashboard's code, raised as ``ValueError`` naming the id and both figures' titles."""
    seen: dict[str, dict] = {}
    for figure in [*charts, *tables]:
        first = seen.get(figure["id"])
        if first is not None:
            raise ValueError(
                f"dashboard figure id {figure['id']!r} is used twice: {first['title']!r} and {figure['title']!r}"
            )
        seen[figure["id"]] = figure
    return charts, tables


def find(result: dict, name: str) -> tuple[list[str], list[list[Any]]] | None:
    """Header and rows of the chart or table with id ``name`` of a computed dashboard, or None."""
    for c in result.get("charts", ()):
        if c["id"] == name:
            return chart_rows(c)
    for t in result.get("tables", ()):
        if t["id"] == name:
            return t["columns"], t["rows"]
    return None
