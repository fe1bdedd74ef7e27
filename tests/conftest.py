"""Shared fixtures: where the shared data sets live, and how their absence is reported."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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
