"""Server-side prepared statements (PostgreSQL) for the annotator API's hot path.

The statements that hand out items and store answers run hundreds of times a second; planning them
costs as much as running them. Each is prepared once per database connection (``PREPARE``) and then
only executed. Written by hand because psycopg2 has no statement cache; a prepared statement lives
as long as its connection and survives rollbacks, so it is re-prepared only on a new connection.
(Behind a transaction-pooling proxy such as PgBouncer, use ``conn_max_age=0`` sessions pooling.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections


def native() -> bool:
    """Whether the hand-written PostgreSQL statements apply; elsewhere (the SQLite demo) the callers
    take their portable ORM path."""
    return connections[DEFAULT_DB_ALIAS].vendor == "postgresql"


@dataclass(frozen=True)
class Prepared:
    """A statement with ``$1 .. $n`` parameters of the given PostgreSQL types."""

    name: str
    types: tuple[str, ...]
    sql: str

    def execute(self, cursor, args: Sequence[Any], prefix: str = "") -> None:
        """Run the statement; ``prefix`` (constant SQL ending with ``;``) is sent in the same round trip."""
        if len(args) != len(self.types):
            raise ValueError(f"{self.name} takes {len(self.types)} arguments, got {len(args)}")
        known = _prepared_on_this_connection()
        if self.name not in known:
            cursor.execute(f"PREPARE {self.name} ({', '.join(self.types)}) AS {self.sql}")
            known.add(self.name)
        cursor.execute(f"{prefix}EXECUTE {self.name} ({', '.join(['%s'] * len(args))})", list(args))


def _prepared_on_this_connection() -> set[str]:
    """Names prepared on the present low-level connection (a reconnect starts a new set)."""
    wrapper = connections[DEFAULT_DB_ALIAS]
    wrapper.ensure_connection()
    raw = wrapper.connection
    state = getattr(wrapper, "_hatlab_prepared", None)
    if state is None or state[0] is not raw:
        state = (raw, set())
        wrapper._hatlab_prepared = state
    return state[1]
