"""Shared pytest fixtures: paths to the simulated hardware trees."""

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
HOST_FIXTURES = REPO / "tests" / "fixtures" / "hosts"


@pytest.fixture
def dual_b60() -> Path:
    return HOST_FIXTURES / "dual-b60"
