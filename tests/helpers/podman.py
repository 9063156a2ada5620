"""podman's Docker API as a real engine for the tests (root only, with the lab's base image)."""

import contextlib
import os
import shutil
import subprocess
import tempfile
import time

import pytest
from arcops.vllm.docker_api import Engine


def podman_missing(image: str = "localhost/arcops-bookworm-minbase") -> str | None:
    """Why a test cannot run IMAGE with podman here, or None when it can."""
    if shutil.which("podman") is None:
        return "podman is not installed"
    if os.geteuid() != 0:
        return "podman test runs as root only"
    images = subprocess.run(["podman", "image", "exists", image], capture_output=True, check=False)
    if images.returncode != 0:
        return f"no {image} image (scripts/build-container-image)"
    return None


@pytest.fixture
def podman_engine():
    reason = podman_missing()
    if reason:
        pytest.skip(reason)
    with tempfile.TemporaryDirectory(prefix="arcops-podman-") as d:
        sock = os.path.join(d, "podman.sock")
        service = subprocess.Popen(
            ["podman", "system", "service", "--time=0", f"unix://{sock}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 10
            while not os.path.exists(sock) and time.monotonic() < deadline:
                time.sleep(0.05)
            yield Engine(f"unix://{sock}", timeout=20)
        finally:
            service.terminate()
            service.wait(timeout=10)


@contextlib.contextmanager
def podman_shell_container(prefix: str, script: str):
    """A created (not started) container running `sh -c script`, removed afterwards; yields its name."""
    name = f"{prefix}-{os.getpid()}"
    subprocess.run(
        ["podman", "create", "--name", name, "localhost/arcops-bookworm-minbase", "sh", "-c", script],
        check=True,
        capture_output=True,
    )
    try:
        yield name
    finally:
        subprocess.run(["podman", "rm", "-f", "-t", "1", name], capture_output=True, check=False)
