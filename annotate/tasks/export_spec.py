"""What a task kind tells the exports about itself: the columns its answers fill in a per-response export
and the aggregated tables it offers (:meth:`annotate.tasks.base.TaskKind.export_columns`,
:meth:`~annotate.tasks.base.TaskKind.export_answer`, :meth:`~annotate.tasks.base.TaskKind.export_tables`).

:mod:`annotate.exports.tables` asks every kind through these hooks and never tests a kind's name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

#: A column of an export: its name and a sentence saying what it holds (listed in the datasheet).
Column = tuple[str, str]
#: The columns and rows of one table: ``(names, rows as dicts)``.
Table = tuple[Sequence[str], Iterable[dict[str, Any]]]


@dataclass(frozen=True)
class ExportItem:
    """What a kind may read of an item to describe an answer to it: the browser's ``payload``, the
    researcher's ``secret`` (methods compared, model sides, gold answers) and the document's ``words``."""

    payload: dict[str, Any]
    secret: dict[str, Any]
    words: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ExportTable:
    """An aggregated export a kind offers: ``name`` (its file name part, e.g. ``items``), ``title`` (the
    link on the study page), ``summary`` (one line beside it) and ``columns`` (for the datasheet);
    ``rows(study, unverified)`` gives its column names and rows. ``takes_unverified``: whether the table
    can be computed over the answers not (yet) verified too (otherwise such a request is refused), and
    ``unverified_columns`` the columns it then adds."""

    name: str
    title: str
    summary: str
    columns: tuple[Column, ...]
    rows: Callable[[Any, bool], Table]
    takes_unverified: bool = False
    unverified_columns: tuple[Column, ...] = ()


def highlighted_words(words: Sequence[str], word_map: Any) -> list[str]:
    """The words a 0/1 map marks, in order (empty when the map is missing or of another length)."""
    if not isinstance(word_map, list) or len(word_map) != len(words):
        return []
    return [word for word, on in zip(words, word_map, strict=True) if on]
