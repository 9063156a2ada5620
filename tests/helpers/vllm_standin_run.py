"""Running the vLLM stand-in entrypoint (images/vllm-standin/vllm_standin.py) on this host: one
start per test, its log lines as vLLM writes them, and a fixture that kills what is left."""

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


STANDIN = REPO / "images" / "vllm-standin" / "vllm_standin.py"
MODEL = "/models/qwen38-fp8"
# vLLM's logger behind decorate_logs(), or uvicorn's formatter behind the same prefix.
LOG_LINE = re.compile(
    r"\((APIServer|EngineCore|Worker(?:_TP\d+)?) pid=\d+\) "
    r"(?:(?:INFO|WARNING|ERROR) \d\d-\d\d \d\d:\d\d:\d\d \[\w+\.py:\d+\] |INFO:     )"
)
SHARD_LINE = re.compile(r"Loading safetensors checkpoint shards: +\d+% Completed \| \d/8 \[\S+<\S+, +\S+\]")
# urllib would send 127.0.0.1 through an http_proxy from the environment.
HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class Run:
    """One start of the stand-in: its output lines as they arrive (time, stream, text)."""

    def __init__(self, tmp_path: Path, argv: list[str], env: dict[str, str]):
        self.cache, self.triton = tmp_path / "cache", tmp_path / "triton"
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.argv = argv
        full_env = {k: v for k, v in os.environ.items() if not k.startswith(("VLLM_", "ARCOPS_STANDIN_"))}
        full_env.pop("NO_COLOR", None)
        full_env.update(
            ARCOPS_STANDIN_CACHE=str(self.cache),
            ARCOPS_STANDIN_TRITON=str(self.triton),
            ARCOPS_STANDIN_PORT=str(self.port),
            ARCOPS_STANDIN_STEP_SECONDS="0.05",
            **env,
        )
        self.lines: list[tuple[float, str, str]] = []
        self.changed = threading.Condition()
        self.proc = subprocess.Popen(
            [sys.executable, str(STANDIN), *argv],
            env=full_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its own process group, so teardown can end workers too
        )
        self.readers = [
            threading.Thread(target=self._read, args=(stream, name), daemon=True)
            for stream, name in ((self.proc.stdout, "out"), (self.proc.stderr, "err"))
        ]
        for reader in self.readers:
            reader.start()

    def _read(self, stream, name: str) -> None:
        for line in stream:
            with self.changed:
                self.lines.append((time.monotonic(), name, line.rstrip("\n")))
                self.changed.notify_all()

    def text(self, stream: str | None = None) -> list[str]:
        with self.changed:
            return [line for _, name, line in self.lines if stream in (None, name)]

    def wait_for(self, needle: str, count: int = 1, timeout: float = 10) -> float:
        """Arrival time of the count-th line containing needle."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                hits = [t for t, _, line in self.lines if needle in line]
                if len(hits) >= count:
                    return hits[count - 1]
                left = deadline - time.monotonic()
                if left <= 0 or (
                    self.proc.poll() is not None and not any(r.is_alive() for r in self.readers)
                ):
                    pytest.fail(
                        f"no {needle!r} (x{count}) in:\n" + "\n".join(line for _, _, line in self.lines)
                    )
                self.changed.wait(min(left, 0.1))

    def exit_code(self, timeout: float = 10) -> int:
        code = self.proc.wait(timeout)
        for reader in self.readers:
            reader.join(timeout)
        return code

    def get(self, path: str, key: str | None = None, timeout: float = 2) -> tuple[int, bytes]:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", headers=headers)
        try:
            with HTTP.open(request, timeout=timeout) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as err:
            return err.code, err.read()

    def worker_pids(self) -> dict[int, int]:
        """Rank -> pid, from the '(Worker_TPn pid=N)' log prefixes."""
        found = re.findall(r"\(Worker_TP(\d+) pid=(\d+)\)", "\n".join(self.text()))
        return {int(rank): int(pid) for rank, pid in found}

    def children(self) -> dict[int, str]:
        """Child pid -> command line, from /proc."""
        pid = self.proc.pid
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        return {
            int(kid): Path(f"/proc/{kid}/cmdline").read_bytes().replace(b"\0", b" ").decode() for kid in kids
        }


@pytest.fixture
def start(tmp_path):
    runs: list[Run] = []

    def _start(argv: list[str], plan: str | None = None, **env: str) -> Run:
        if plan is not None:
            (tmp_path / "cache").mkdir(exist_ok=True)
            (tmp_path / "cache" / "arcops-standin-plan").write_text(plan)
        runs.append(Run(tmp_path, argv, env))
        return runs[-1]

    yield _start
    for run in runs:
        if run.proc.poll() is None:
            os.killpg(run.proc.pid, signal.SIGKILL)
            run.proc.wait()


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def in_order(lines: list[str], needles: list[str]) -> list[str]:
    """The needles not found in this order (an empty list when all are)."""
    it = iter(lines)
    return [needle for needle in needles if not any(needle in line for line in it)]
