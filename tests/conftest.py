"""Shared pytest fixtures: the simulated hardware trees (tests/fixtures/build_host_trees.py)."""

from pathlib import Path

import pytest

from arcops.sysroot import SysRoot

REPO = Path(__file__).resolve().parent.parent
HOST_FIXTURES = REPO / "tests" / "fixtures" / "hosts"


@pytest.fixture
def dual_b60() -> Path:
    return HOST_FIXTURES / "dual-b60"


@pytest.fixture
def host_tree():
    """SysRoot of a named fixture tree: host_tree('pcie-downgraded')."""
    return lambda name: SysRoot(HOST_FIXTURES / name)
