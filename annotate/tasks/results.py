"""What the researcher's results pages of every kind share: the page class a kind declares
(:class:`ResultsPage`, its ``results`` attribute), the query fields a page reads (:class:`RunField`,
:class:`MethodField`, :class:`ChoiceField`, :class:`FloatField`, :class:`FlagField`), which answers count,
worker trust and CSV cells.

A kind's results page is mounted once for every kind, as Django's admin mounts a registered model:
``studies/<uid>/results/`` renders :attr:`ResultsPage.template` with :meth:`ResultsPage.context`, and
``studies/<uid>/results/<table>.<fmt>`` downloads one of :attr:`ResultsPage.tables` in one of
:attr:`ResultsPage.formats` (:mod:`annotate.views.results`). A query value a page does not offer is a
400 naming the field (:class:`BadQuery`).

Only answers to non-gold items count, and only those of workers the trust rule counts
(:func:`annotate.quality.exclusion.answer_weights`: in a study with gold items, trusted workers,
each weighing their trust; pending workers' answers wait until they qualify). Every page says how many
answers it leaves out and why: the view that mounts the pages adds ``left_out``
(:func:`annotate.quality.exclusion.left_out`) to the context, and every kind's results template includes
``annotate/results/left_out.html``, which says it with a link to the study's quality page.
"""

from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cached_property
from typing import Any, ClassVar
from urllib.parse import urlencode

from django.db.models import QuerySet
from django.http import HttpResponse
from django.urls import reverse

from annotate.access import visible_to
from annotate.infra import csvfile
from annotate.models import ModelRun, Study, Worker

#: Bootstrap resamples per interval on a results page: fewer than the engine's default, since a page
#: computes an interval per annotator pair and is rendered while the researcher waits.
N_BOOT = 500


CONTENT_TYPES = {"csv": "text/csv", "jsonl": "application/x-ndjson"}


def download(study: Study, name: str, body: str, fmt: str = "csv") -> HttpResponse:
    """``body`` as the file ``study-<uid>-<name>.<fmt>`` a browser saves."""
    response = HttpResponse(body, content_type=CONTENT_TYPES[fmt])
    response["Content-Disposition"] = f'attachment; filename="study-{study.uid}-{name}.{fmt}"'
    return response


def worker_names(study: Study, worker_ids) -> dict[int, str]:
    """The workers' pseudonyms as the study's owner sees them."""
    return {w.pk: w.pseudonym_for(study.owner_id) for w in Worker.objects.filter(pk__in=list(worker_ids))}


def csv_text(columns: list[str], rows: list[list]) -> str:
    """A results table as CSV (formula-safe cells, :mod:`annotate.infra.csvfile`)."""
    return csvfile.csv_text(columns, rows, cell=_cell)


def _cell(value) -> Any:
    """A CSV cell: empty for None/NaN."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    return value


def finite_or_none(value) -> float | None:
    """``value`` as a float, or ``None`` when it is missing or not finite (JSON has no NaN)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


#: The columns and rows of one results table; a row is a sequence of cells in column order or a dict by column.
Rows = tuple[Sequence[str], Iterable[Sequence[Any] | Mapping[str, Any]]]


class BadQuery(ValueError):
    """A query parameter whose value the page does not offer; the message names the field."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field} {problem}")
        self.field = field


class QueryField(ABC):
    """One query parameter of a results page: read from the request into :attr:`ResultsPage.query`
    (in declaration order, so a field may depend on the ones before it) and carried into the page's
    table links."""

    name: str = ""

    @abstractmethod
    def read(self, page: ResultsPage, raw: str | None) -> Any:
        """The value of the parameter ``raw`` (``None`` when absent); :class:`BadQuery` when refused."""

    def show(self, value: Any) -> str | None:
        """``value`` as it appears in a link; ``None`` leaves the parameter out."""
        return None if value is None else str(value)


class ChoiceField(QueryField):
    """One of ``choices``, ``default`` when absent."""

    def __init__(self, name: str, choices: Sequence[str], default: str) -> None:
        self.name, self.choices, self.default = name, tuple(choices), default

    def read(self, page: ResultsPage, raw: str | None) -> str:
        value = raw or self.default
        if value not in self.choices:
            raise BadQuery(self.name, f"must be one of {', '.join(self.choices)}")
        return value


class FloatField(QueryField):
    """A number strictly between ``low`` and ``high``, ``default`` when absent."""

    def __init__(self, name: str, default: float, low: float, high: float) -> None:
        self.name, self.default, self.low, self.high = name, default, low, high

    def read(self, page: ResultsPage, raw: str | None) -> float:
        if raw in (None, ""):
            return self.default
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and self.low < value < self.high):
            raise BadQuery(self.name, f"must be a number between {self.low:g} and {self.high:g}")
        return value

    def show(self, value: Any) -> str | None:
        return f"{value:g}"


class FlagField(QueryField):
    """``0``/``1`` (``false``/``true``), off when absent; shown in links only when on."""

    def __init__(self, name: str) -> None:
        self.name = name

    def read(self, page: ResultsPage, raw: str | None) -> bool:
        if raw is None or raw.lower() in ("", "0", "false"):
            return False
        if raw.lower() in ("1", "true"):
            return True
        raise BadQuery(self.name, f"must be 0 or 1, not {raw[:20]!r}")

    def show(self, value: Any) -> str | None:
        return "1" if value else None


class RunField(QueryField):
    """``?run=<id>``: the model run the crowd is compared with, among ``runs(study)`` the viewer may see
    (newest first); ``?run=none``: no model; the newest when absent. The page keeps the offered runs
    in ``page.runs``."""

    name = "run"

    def __init__(self, runs: Callable[[Study], QuerySet]) -> None:
        self.runs = runs

    def read(self, page: ResultsPage, raw: str | None) -> ModelRun | None:
        runs = visible_to(self.runs(page.study), page.request.user)
        page.runs = list(runs)
        if raw == "none":
            return None
        if not raw:
            return page.runs[0] if page.runs else None
        if not raw.isdigit():
            raise BadQuery(self.name, "must be a model run id or none")
        run = runs.filter(pk=int(raw)).first()
        if run is None:
            raise BadQuery(self.name, "names no model run of yours with results for this study's dataset")
        return run

    def show(self, value: Any) -> str | None:
        return "none" if value is None else str(value.pk)


class MethodField(QueryField):
    """``?method=<name>``: one of ``methods(run)`` of the run chosen by the :class:`RunField` before it
    (kept in ``page.methods``); the first when absent, none without a run."""

    name = "method"

    def __init__(self, methods: Callable[[ModelRun], list[str]], run_field: str = "run") -> None:
        self.methods, self.run_field = methods, run_field

    def read(self, page: ResultsPage, raw: str | None) -> str | None:
        run = page.query.get(self.run_field)
        page.methods = self.methods(run) if run is not None else []
        if not raw:
            return page.methods[0] if page.methods else None
        if raw not in page.methods:
            raise BadQuery(self.name, "names no method the model run has explanations of")
        return raw


def from_results(table: Callable[[dict[str, Any], str], Rows], name: str) -> Callable[[ResultsPage], Rows]:
    """A table of :attr:`ResultsPage.tables` cut from the page's :attr:`~ResultsPage.results` by
    ``table(results, name)``."""

    def rows(page: ResultsPage) -> Rows:
        return table(page.results, name)

    return rows


class ResultsPage:
    """The researcher's results page of one kind, declared on the kind class (``results = ...``).

    Configured by class attributes: :attr:`template`, :attr:`tables` (name → a function of the page giving
    the table's columns and rows), :attr:`formats` and :attr:`query` (the query fields, read when the
    page is made); a subclass computes :meth:`compute` from ``self.study`` and ``self.query`` and may
    add to :meth:`context`.
    """

    #: The page template; it gets :meth:`context`.
    template: ClassVar[str] = ""
    #: The downloadable tables: name → ``rows(page)`` giving ``(columns, rows)``.
    tables: ClassVar[Mapping[str, Callable[[Any], Rows]]] = {}
    #: The formats every table downloads in.
    formats: ClassVar[tuple[str, ...]] = ("csv",)
    #: The query fields the page reads, in order.
    query_fields: ClassVar[tuple[QueryField, ...]] = ()
    #: A template reads the class off its kind (``kind.results``) without calling it.
    do_not_call_in_templates: ClassVar[bool] = True

    def __init__(self, request, study: Study) -> None:
        self.request, self.study = request, study
        self.runs: list[ModelRun] = []
        self.methods: list[str] = []
        self.query: dict[str, Any] = {}
        for field in self.query_fields:
            self.query[field.name] = field.read(self, request.GET.get(field.name))

    def compute(self) -> dict[str, Any]:
        """The page's figures (what the template shows as ``results``)."""
        return {}

    @cached_property
    def results(self) -> dict[str, Any]:
        return self.compute()

    def link_query(self) -> dict[str, str]:
        """The query parameters a link to one of the page's tables carries (the page's choices)."""
        shown = {field.name: field.show(self.query[field.name]) for field in self.query_fields}
        return {name: value for name, value in shown.items() if value is not None}

    def table_url(self, table: str, fmt: str, **extra: str) -> str:
        """The download URL of ``table`` in ``fmt`` with the page's choices (and ``extra``)."""
        url = reverse("study-results-table", args=[self.study.uid, table, fmt])
        query = self.link_query() | extra
        return url + (f"?{urlencode(query)}" if query else "")

    def variants(self, table: str, fmt: str) -> list[tuple[str, str]]:
        """Other downloads of ``table`` in ``fmt`` offered beside it: ``(link text, url)``."""
        return []

    def downloads(self) -> list[dict[str, Any]]:
        """Every table in every format: ``name``, ``format``, ``url`` and its :meth:`variants`."""
        return [
            {
                "name": table,
                "format": fmt,
                "url": self.table_url(table, fmt),
                "variants": self.variants(table, fmt),
            }
            for table in self.tables
            for fmt in self.formats
        ]

    def context(self) -> dict[str, Any]:
        """What :attr:`template` gets: the study, its kind, ``results``, the choices and the downloads."""
        return {
            "study": self.study,
            "results": self.results,
            "query": self.query,
            "runs": self.runs,
            "run": self.query.get("run"),
            "methods": self.methods,
            "method": self.query.get("method"),
            "downloads": self.downloads(),
            "formats": self.formats,
        }

    def rows(self, table: str) -> Rows:
        """The columns and rows of ``table`` (one of :attr:`tables`)."""
        return self.tables[table](self)

    def file_name(self, table: str) -> str:
        """The part of the download's file name that names ``table``."""
        return table

    def csv_cells(self, columns: Sequence[str], rows: Iterable) -> list[list]:
        """Rows as CSV cells: a list as JSON."""
        return [
            [json.dumps(v, ensure_ascii=False) if isinstance(v, list | dict) else v for v in row]
            for row in _as_lists(columns, rows)
        ]

    def download(self, table: str, fmt: str) -> HttpResponse:
        """``table`` as a file in ``fmt``."""
        columns, rows = self.rows(table)
        if fmt == "jsonl":
            body = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in _as_dicts(columns, rows))
        else:
            body = csv_text(list(columns), self.csv_cells(columns, rows))
        return download(self.study, self.file_name(table), body, fmt)


def _as_lists(columns: Sequence[str], rows: Iterable) -> Iterable[list]:
    for row in rows:
        yield [row.get(c) for c in columns] if isinstance(row, Mapping) else list(row)


def _as_dicts(columns: Sequence[str], rows: Iterable) -> Iterable[dict]:
    """Rows as JSON objects of ``columns`` (NaN as null: JSON has none)."""
    for row in rows:
        values = [row.get(c) for c in columns] if isinstance(row, Mapping) else list(row)
        yield {c: _json_value(v) for c, v in zip(columns, values, strict=True)}


def _json_value(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value
