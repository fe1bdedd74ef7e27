"""Server-side prepared statements (PostgreSQL) for the annotator API's hot path.

The statements that hand out items and store answers run hundreds of times a second; planning them
costs as much as running them. Each is prepared once per database connection (``PREPARE``) and then
only executed. Written by hand because psycopg2 has no statement cache; a prepared statement lives
as long as its connection and survives rollbacks, so it is re-prepared only on a new connection.
(Behind a transaction-pooling proxy such as PgBouncer, use ``conn_max_age=0`` sessions pooling.)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections, transaction

BEGIN = "BEGIN; "


def native() -> bool:
    """Whether the hand-written PostgreSQL statements apply; elsewhere (the SQLite demo) the callers
    take their portable ORM path."""
    return connections[DEFAULT_DB_ALIAS].vendor == "postgresql"


def refresh_statistics(*models) -> None:
    """``ANALYZE`` the tables of ``models`` once the present transaction commits (PostgreSQL only).

    A study's first start writes its items in bulk; until autovacuum's next round (a minute or more)
    the planner still counts the table as it was, and the hand-out's prepared statements, planned
    generically after five runs, sort every open item of a study for each request (43 ms instead of
    0.5 ms for 6,000 items) instead of reading the queue's index in order. The crowd arrives within
    seconds of a publish, so the statistics are brought up to date at once. Only tables just filled: a
    table analyzed while empty is planned as empty (sequential scans inside every per-item subquery) until
    autovacuum looks again, which costs more than never analyzing it."""
    if not native():
        return
    tables = ", ".join(connections[DEFAULT_DB_ALIAS].ops.quote_name(m._meta.db_table) for m in models)

    def analyze() -> None:
        with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
            cursor.execute(f"ANALYZE {tables}")

    transaction.on_commit(analyze)


@dataclass(frozen=True)
class Prepared:
    """A statement with ``$1 .. $n`` parameters of the given PostgreSQL types."""

    name: str
    types: tuple[str, ...]
    sql: str
    #: SQL sent once per connection before the statement is prepared: a temporary function it calls
    #: (``CREATE FUNCTION pg_temp...``), which lives as long as the connection, as the statement does.
    needs: str = ""

    def execute(self, cursor, args: Sequence[Any], prefix: str = "") -> None:
        """Run the statement; ``prefix`` (constant SQL ending with ``;``) is sent in the same round trip."""
        execute_together(cursor, [(self, args)], prefix)

    def _call(self, cursor, args: Sequence[Any]) -> str:
        """``EXECUTE name (%s, ...)``, preparing the statement on this connection first if needed."""
        if len(args) != len(self.types):
            raise ValueError(f"{self.name} takes {len(self.types)} arguments, got {len(args)}")
        known = _prepared_on_this_connection()
        if self.name not in known:
            if self.needs:
                cursor.execute(self.needs)
            cursor.execute(f"PREPARE {self.name} ({', '.join(self.types)}) AS {self.sql}")
            known.add(self.name)
        return f"EXECUTE {self.name} ({', '.join(['%s'] * len(args))})"


#: SQLSTATEs of a statement whose temporary function is gone: made in a transaction that rolled back
#: (``invalid_schema_name`` for the connection's first temporary object, ``undefined_function`` otherwise).
FUNCTION_LOST = frozenset({"3F000", "42883"})


def function_lost(exc: BaseException) -> bool:
    """Whether ``exc`` says a :attr:`Prepared.needs` function no longer exists (see :func:`forget`)."""
    return getattr(exc.__cause__, "pgcode", None) in FUNCTION_LOST


def forget(statement: Prepared) -> None:
    """Deallocate ``statement`` on this connection, so that its next use prepares it again and first makes
    the function it needs again: DDL is transactional, and a function made inside a transaction that rolled
    back is gone, while the statement prepared with it is not."""
    known = _prepared_on_this_connection()
    if statement.name not in known:
        return
    known.discard(statement.name)
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(f"DEALLOCATE {statement.name}")


def execute_together(cursor, calls: Sequence[tuple[Prepared, Sequence[Any]]], prefix: str = "") -> None:
    """Run prepared statements one after the other in a single round trip (one query string of the
    simple protocol); the cursor then holds the rows of the last one only."""
    sql = "; ".join(statement._call(cursor, args) for statement, args in calls)
    cursor.execute(prefix + sql, [arg for _, args in calls for arg in args])


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


@contextmanager
def transaction_begun_by_first_statement() -> Iterator[str]:
    """A transaction whose ``BEGIN`` travels with its first statement: yields the prefix (``BEGIN; ``)
    that the block's first :meth:`Prepared.execute` must send; commits on exit, rolls back on error.

    Django's ``atomic()`` makes psycopg2 send ``BEGIN`` in a round trip of its own before the first
    statement; on the hot path that trip costs as much as a statement. Inside an enclosing atomic
    block (or off PostgreSQL) this is plain ``atomic()`` and the prefix is empty.
    """
    wrapper = connections[DEFAULT_DB_ALIAS]
    if getattr(wrapper, "_hatlab_in_one_trip", False):  # nested: part of the enclosing transaction
        yield ""
        return
    if wrapper.in_atomic_block or not native():
        with transaction.atomic():
            yield ""
        return
    wrapper._hatlab_in_one_trip = True
    try:
        yield BEGIN
    except BaseException:
        with wrapper.cursor() as cursor:
            cursor.execute("ROLLBACK")
        raise
    else:
        with wrapper.cursor() as cursor:
            cursor.execute("COMMIT")  # deferred constraint checks run here and may raise IntegrityError
    finally:
        wrapper._hatlab_in_one_trip = False
