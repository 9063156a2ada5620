"""A server process started in its own process group: wait until its /health answers, stop it
with everything it spawned."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

from . import http


def free_port() -> int:
    """A loopback TCP port free now, for a server about to start."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def health_answers(url: str, timeout: float) -> bool:
    """Whether GET URL/health answers 200 within TIMEOUT."""
    try:
        with http.open_request(url + "/health", timeout=timeout) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


class NotReady(RuntimeError):
    """The server exited, or did not answer within the time given."""


def wait_ready(proc: subprocess.Popen, url: str, timeout: float, what: str, poll: float = 0.2) -> None:
    """Until GET URL/health answers 200; NotReady (saying WHAT) when PROC exits or TIMEOUT passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise NotReady(f"{what} exited with {proc.returncode} before it was ready")
        if health_answers(url, 2):
            return
        time.sleep(poll)
    raise NotReady(f"{what} was not ready within {timeout:g} s")


def stop(proc: subprocess.Popen, grace: float = 30) -> None:
    """SIGTERM to PROC's process group (started with start_new_session), SIGKILL after GRACE."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
