"""Shared fixtures: where the shared data sets live, and how their absence is reported; this run's own Redis
database (``HATLAB_TEST_BROKER_URL``, unless set); the guards that keep a run to what is its own (no
connection to a database but its test database, none beyond this machine: ``--allow-hosts`` in
pyproject.toml); ``--reverse``; and the teardown that leaves no test database behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.services import REDIS, claim_redis_db, release_redis_db, run_id

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = (ROOT.parent / "shared" / "data").resolve()


def require_shared_data(*parts: str) -> Path:
    """Path to a file under ``../shared/data``; skip when absent, but fail under ``CI=true``."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        reason = f"shared data set not found at {path} (it ships beside the repository, not in it)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def require_tool(present: bool, reason: str) -> None:
    """Skip a test whose server binary is missing, but fail under ``CI=true``, where ``.ci/services``
    installs it: there a missing tool is a broken set-up, not a reason to pass."""
    if present:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(reason)
    pytest.skip(reason)


_CLAIMED_REDIS_DB = pytest.StashKey[int]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--reverse",
        action="store_true",
        help="run the tests in the reverse of their collected order (with -p no:randomly: exactly reversed)",
    )


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--reverse``: the collected (or shuffled) order, reversed, so a test that needs what ran before
    it fails."""
    if config.getoption("--reverse"):
        items.reverse()


#: Databases a test run may connect to besides its own test database: PostgreSQL's maintenance database,
#: through which the test database is created and dropped.
MAINTENANCE_DATABASES = ("postgres",)


def own_database(name: object) -> bool:
    """Whether a connection to the database ``name`` is this run's own: a test database (PostgreSQL's
    ``test_*``, SQLite's in-memory or ``test_*`` file) or the maintenance database (``None``: the server's
    default one, which Django's PostgreSQL backend uses to create and drop the test database)."""
    if name is None:
        return True
    text = str(name)
    base = text.rsplit("/", 1)[-1]
    return (
        base.startswith("test_") or "memorydb" in text or text == ":memory:" or text in MAINTENANCE_DATABASES
    )


def _refuse_foreign_databases() -> None:
    """Refuse any connection to a database that is not the run's own: a fixture that runs before the test
    database exists would otherwise write to the one ``DATABASE_URL`` names (a developer's real data)."""
    try:
        from django.db.backends.signals import connection_created
    except ImportError:  # the engine's tests run without Django
        return

    def check(sender, connection, **kwargs) -> None:
        name = connection.settings_dict.get("NAME")
        if not own_database(name):
            connection.close()
            raise RuntimeError(
                f"a test connected to the database {name!r}, which is not this run's test database: "
                "use the db fixture (or django_db_setup) before touching the database"
            )

    connection_created.connect(check, weak=False, dispatch_uid="hatlab-tests-own-database")


def _drop_test_databases_by_force() -> None:
    """Drop a PostgreSQL test database even while a session the tests opened is still connected (a live
    server's thread, a worker a test started): ``DROP DATABASE ... WITH (FORCE)`` (PostgreSQL 13+) ends
    them first, so no run leaves its database on the server."""
    try:
        from django.db.backends.postgresql.creation import DatabaseCreation
    except ImportError:  # the engine's tests run without Django
        return

    def destroy(self, test_database_name: str, verbosity: int) -> None:
        with self._nodb_cursor() as cursor:
            cursor.execute(f"DROP DATABASE {self.connection.ops.quote_name(test_database_name)} WITH (FORCE)")

    DatabaseCreation._destroy_test_db = destroy


def pytest_configure(config: pytest.Config) -> None:
    _refuse_foreign_databases()
    _drop_test_databases_by_force()
    if "HATLAB_TEST_BROKER_URL" not in os.environ:
        number = claim_redis_db(run_id())
        config.stash[_CLAIMED_REDIS_DB] = number
        os.environ["HATLAB_TEST_BROKER_URL"] = f"{REDIS}/{number}"


def pytest_unconfigure(config: pytest.Config) -> None:
    number = config.stash.get(_CLAIMED_REDIS_DB, None)
    if number is not None:
        release_redis_db(run_id(), number)
        del os.environ["HATLAB_TEST_BROKER_URL"]


def pytest_runtest_setup(item: pytest.Item) -> None:
    """``@pytest.mark.postgres_only(reason=...)`` tests are skipped, with their reason, on SQLite (the demo's
    database; CI deselects them there with ``-m "not postgres_only"``)."""
    marker = item.get_closest_marker("postgres_only")
    if marker is not None and os.environ.get("DATABASE_URL", "").startswith("sqlite"):
        pytest.skip(f"PostgreSQL only: {marker.kwargs['reason']}")


@pytest.fixture
def shared_data() -> Path:
    return require_shared_data()


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a core dependency
        return
    torch.set_num_threads(1)
