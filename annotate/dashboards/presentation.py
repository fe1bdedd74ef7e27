"""A dashboard's figures as a declared, ordered list of figure builders.

A builder takes what the dashboard computed and returns its figures (:class:`Shown`: a chart, its table,
or a table alone) or, when the data does not allow them, :class:`Omitted` with the reason. :func:`present`
runs the builders in their order: the charts and tables keep that order, and each omission is kept with
its reason (the result's ``omitted_figures``). The dashboard then checks the ids with
:func:`annotate.dashboards.charts.figures`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Shown:
    """A builder's charts and tables."""

    charts: list[dict] = field(default_factory=list)
    tables: list[dict] = field(default_factory=list)


@dataclass(frozen=True)
class Omitted:
    """A figure the data does not allow, and why."""

    figure: str
    why: str


@dataclass(frozen=True)
class Presentation:
    """Every builder's charts and tables in builder order, and the omitted figures with their reasons."""

    charts: list[dict]
    tables: list[dict]
    omitted: list[dict]


FigureBuilder = Callable[[T], Shown | Omitted]


def present(builders: Sequence[Callable[[T], Shown | Omitted]], data: T) -> Presentation:
    """Run ``builders`` over ``data`` in order."""
    charts: list[dict] = []
    tables: list[dict] = []
    omitted: list[dict] = []
    for build in builders:
        built = build(data)
        if isinstance(built, Omitted):
            omitted.append({"id": built.figure, "why": built.why})
        else:
            charts += built.charts
            tables += built.tables
    return Presentation(charts, tables, omitted)
