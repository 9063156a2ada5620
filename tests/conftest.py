"""Shared pytest fixtures: the simulated hardware trees (tests/fixtures/build_host_trees.py), the
SYCL SDK, the llama.cpp fixture, a real vLLM (CPU build), a journald of the tests' own and
Prometheus' tools."""

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
from arcops.common.sysroot import SysRoot

from .helpers.podman import podman_engine  # noqa: F401  (a fixture the docker and watchdog tests share)
from .helpers.seal_box import box  # noqa: F401  (a fixture the seal tests share)
from .helpers.verify_play import key_file, passing_set, play  # noqa: F401  (the verify tests')
from .helpers.vllm_standin_run import start  # noqa: F401  (the stand-in tests' starts)

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
def prometheus_tools(tmp_path_factory):
    """Debian's promtool, prometheus and node_exporter, unpacked once per run (nothing installed)."""
    from .helpers.debian_mirror import MirrorUnreachable, unreachable
    from .helpers.prometheus import unpack_tools

    try:
        return unpack_tools(tmp_path_factory.mktemp("prometheus"))
    except MirrorUnreachable as e:
        unreachable(e)


@pytest.fixture(scope="session")
def llama_fixture_repo(tmp_path_factory):
    """(bare repo, tag -> sha) of tests/fixtures/llama_cpp."""
    from .helpers.llama_fixture import make_repo

    repo = tmp_path_factory.mktemp("llama") / "llama.cpp.git"
    return repo, make_repo(repo)


# The session's real vLLM, launched as soon as the run is collected when any test asks for it:
# its start is about a minute, mostly one core, and the tests before the first that asks run
# meanwhile. {"server": Server} once launched, {"error": why} when it could not be.
_VLLM: dict = {}


def _vllm_launch(log_dir: Path) -> None:
    from arcops.common.served import free_port

    from .helpers.vllm_cpu import Server

    extra = ["--enable-auto-tool-choice", "--tool-call-parser", "hermes"]
    try:
        _VLLM["server"] = Server(free_port(), log_dir / "server.log", extra).launch()
    except RuntimeError as e:
        _VLLM["error"] = str(e)


def pytest_collection_finish(session):
    if any("vllm_server" in getattr(item, "fixturenames", ()) for item in session.items):
        _vllm_launch(session.config._tmp_path_factory.mktemp("vllm"))


def pytest_sessionfinish(session):
    server = _VLLM.pop("server", None)
    if server is not None:
        server.stop()


@pytest.fixture(scope="session")
def vllm_server(tmp_path_factory):
    """A real vLLM (PyPI's CPU build) serving the tiny test model on loopback, with an API key and
    the hermes tool-call parser; one start for every test that asks it (about a minute, begun
    when the run was collected)."""
    if not _VLLM:
        _vllm_launch(tmp_path_factory.mktemp("vllm"))
    if "error" in _VLLM:
        pytest.fail(_VLLM["error"])
    try:
        server = _VLLM["server"].wait_ready()
    except RuntimeError as e:  # wait_ready stopped it
        del _VLLM["server"]
        _VLLM["error"] = str(e)
        pytest.fail(str(e))
    return server


@pytest.fixture(scope="session")
def default_report(vllm_server):
    """The gate's report of the shipped prompt set on the real vLLM server (the tiny model's
    answers: every one wrong, deterministically)."""
    from arcops.prove import gate
    from arcops.prove.openai_api import Endpoint

    from .helpers.vllm_cpu import API_KEY, MODEL_NAME

    return gate.run(Endpoint(vllm_server.url, API_KEY), MODEL_NAME, gate.prompt_set.DEFAULT)


@pytest.fixture
def journald_namespace():
    """A journald of its own (`systemd-journald NAMESPACE`), so the test neither needs nor disturbs
    the system journal. Root only: it writes /var/log/journal/<machine-id>.<namespace>."""
    daemon = "/lib/systemd/systemd-journald"
    if not os.path.exists(daemon) or shutil.which("journalctl") is None:
        pytest.skip("systemd-journald or journalctl is not installed")
    if os.geteuid() != 0 or not Path("/etc/machine-id").read_text().strip():
        pytest.skip("a journald namespace needs root and a machine id")
    namespace = f"arcopstest{os.getpid()}"
    proc = subprocess.Popen([daemon, namespace], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    socket_path = f"/run/systemd/journal.{namespace}/socket"
    try:
        deadline = time.monotonic() + 30  # returns as soon as it is there; a loaded machine is slow
        while not os.path.exists(socket_path):
            if time.monotonic() > deadline:
                pytest.skip("the namespaced journald did not come up")
            time.sleep(0.02)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)

        def log(message):
            sock.sendto(f"SYSLOG_IDENTIFIER=arcops-test\nMESSAGE={message}\n".encode(), socket_path)

        yield (f"--namespace={namespace}", "SYSLOG_IDENTIFIER=arcops-test"), log
        sock.close()
    finally:
        proc.terminate()
        proc.wait(timeout=5)
        machine = Path("/etc/machine-id").read_text().strip()
        for d in (f"/var/log/journal/{machine}.{namespace}", f"/run/log/journal/{machine}.{namespace}"):
            shutil.rmtree(d, ignore_errors=True)
        shutil.rmtree(f"/run/systemd/journal.{namespace}", ignore_errors=True)
