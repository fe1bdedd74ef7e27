"""The one CSV writer of the app: every CSV file it hands out (study exports, aggregated labels, the kinds'
results, the dashboards) is written through it, with its cells made safe to open in a spreadsheet.

A text cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is taken for a formula
by spreadsheet programs (``=HYPERLINK(...)``, ``@SUM(...)``, ``+cmd|...``), so it is written with a single
quote in front, which makes it plain text (OWASP, "CSV Injection"). Numbers stay numbers: a number object
is written as it is, and so is a text that is nothing but a number (``"-0.5"``, ``"+3"``, ``"-1e-3"``),
which a spreadsheet reads as that number and never runs.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def safe_cell(value: Any) -> Any:
    """``value`` as a CSV cell a spreadsheet will not run: formula-like text gets a leading ``'``."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


class _Line:
    """A file-like target that hands back what the csv writer writes (for streaming)."""

    def write(self, value: str) -> str:
        return value


class SafeWriter:
    """:func:`csv.writer` whose rows pass through ``cell`` (a shaping of values, e.g. lists as text) and
    then :func:`safe_cell`."""

    def __init__(self, target, cell: Callable[[Any], Any] | None = None, lineterminator: str = "\r\n"):
        self._writer = csv.writer(target, lineterminator=lineterminator)
        self._cell = cell

    def writerow(self, row: Iterable[Any]) -> Any:
        shape = self._cell
        return self._writer.writerow([safe_cell(shape(v) if shape else v) for v in row])

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)


def csv_text(
    header: Sequence[Any],
    rows: Iterable[Sequence[Any]],
    cell: Callable[[Any], Any] | None = None,
    lineterminator: str = "\n",
) -> str:
    """The whole file as text: ``header``, then ``rows``."""
    out = io.StringIO()
    writer = SafeWriter(out, cell, lineterminator)
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def stream_csv(
    header: Sequence[Any], rows: Iterable[Sequence[Any]], cell: Callable[[Any], Any] | None = None
) -> Iterator[str]:
    """The file line by line (for a streaming response): ``header``, then ``rows``."""
    writer = SafeWriter(_Line(), cell)
    yield writer.writerow(header)
    for row in rows:
        yield writer.writerow(row)
