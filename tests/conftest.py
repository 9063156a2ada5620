"""Shared pytest fixtures: the simulated hardware trees (tests/fixtures/build_host_trees.py)."""

from pathlib import Path

import pytest

from arcops.common.sysroot import SysRoot

REPO = Path(__file__).resolve().parent.parent
HOST_FIXTURES = REPO / "tests" / "fixtures" / "hosts"


@pytest.fixture
def dual_b60() -> Path:
    return HOST_FIXTURES / "dual-b60"


@pytest.fixture
def host_tree():
    """SysRoot of a named fixture tree: host_tree('pcie-downgraded')."""
    return lambda name: SysRoot(HOST_FIXTURES / name)


def pytest_collection_modifyitems(config, items):
    """Tests marked arc_hardware run only on a real Arc box, with ARCOPS_ARC_HARDWARE=1 set."""
    import os

    if os.environ.get("ARCOPS_ARC_HARDWARE") == "1":
        return
    skip = pytest.mark.skip(
        reason="needs a real Arc box: run with ARCOPS_ARC_HARDWARE=1 there (docs/hardware-check.md)"
    )
    for item in items:
        if "arc_hardware" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def sycl_sdk():
    """PyPI's SYCL runtime + headers; a missing SDK fails (scripts/bootstrap installs it), never skips."""
    from .helpers.sycl_sdk import find_sdk

    sdk = find_sdk()
    if sdk is None:
        pytest.fail("no SYCL SDK in $ARCOPS_SYCL_SDK or .venv-sycl: run scripts/bootstrap")
    return sdk


@pytest.fixture(scope="session")
def llama_fixture_repo(tmp_path_factory):
    """(bare repo, tag -> sha) of tests/fixtures/llama_cpp."""
    from .helpers.llama_fixture import make_repo

    repo = tmp_path_factory.mktemp("llama") / "llama.cpp.git"
    return repo, make_repo(repo)


@pytest.fixture(scope="session")
def vllm_server(tmp_path_factory):
    """A real vLLM (PyPI's CPU build) serving the tiny test model on loopback, with an API key and
    the hermes tool-call parser; one start for every test that asks it (about a minute)."""
    import socket

    from .helpers.vllm_cpu import Server

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tmp_path_factory.mktemp("vllm") / "server.log"
    extra = ["--enable-auto-tool-choice", "--tool-call-parser", "hermes"]
    try:
        server = Server(port, log, extra).start()
    except RuntimeError as e:
        pytest.fail(str(e))
    yield server
    server.stop()
