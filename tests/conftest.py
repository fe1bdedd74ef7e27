"""Shared fixtures: where the shared data sets live, and how their absence is reported; this run's own Redis
database (``HATLAB_TEST_BROKER_URL``, unless set)."""

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


_CLAIMED_REDIS_DB = pytest.StashKey[int]()


def pytest_configure(config: pytest.Config) -> None:
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
