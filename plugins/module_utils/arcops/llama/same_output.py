"""One GPU against all: llama-server answers the gate's prompts byte for byte the same with the
model on one GPU and split by layers over all of them (greedy, a fixed seed), and what loading
the model cost in host RAM.

Each setup starts its own llama-server on a free loopback port. While the model loads (until
/health answers), MemAvailable is sampled with the server's resident memory and its DRM
buffers' GTT use (drm-total-gtt in /proc/PID/fdinfo: where xe's mirror of device allocations
shows; VmRSS does not). Multi-GPU SYCL builds that allocate with sycl::malloc_device mirror the
whole model in host RAM (60 GiB and the OOM killer for a 15.6 GiB model over two B60); with
Level Zero allocations the load costs the host-side buffers only (~6.7 GiB).

Stdlib only.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

from ..box import drm_memory
from ..box.host import GIB, meminfo
from ..common import served
from ..common.sysroot import SysRoot
from ..prove import gate
from ..prove.openai_api import ApiError, Endpoint

# The two setups: the whole model on the first GPU, and split by layers over every GPU.
SETUPS = {
    "one": ["--split-mode", "none", "--main-gpu", "0"],
    "all": ["--split-mode", "layer"],
}
SERVER_ARGS = ["--n-gpu-layers", "999", "--seed", str(gate.SEED), "--jinja"]


class SameOutputError(ValueError):
    """Bad input, or a server that did not come up (the message says which and where its log is)."""


def process_memory(pid: int, proc: Path = Path("/proc")) -> tuple[int, int]:
    """(VmRSS, drm-total-gtt of its DRM clients) of PID in bytes; 0 for what is not there."""
    rss = 0
    try:
        for line in (proc / str(pid) / "status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    found, _unused = drm_memory.clients(SysRoot(proc.parent), [pid])
    return rss, sum(c.memory.get("total-gtt", 0) for c in found)


class LoadWatch:
    """Samples host RAM and the server's memory every INTERVAL seconds until stopped."""

    def __init__(self, pid: int, sysroot: SysRoot | None = None, interval: float = 0.1):
        self.pid, self.sysroot, self.interval = pid, sysroot or SysRoot("/"), interval
        self.before = meminfo(self.sysroot).get("MemAvailable")
        self.mem_min = self.before
        self.rss_max = self.gtt_max = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        available = meminfo(self.sysroot).get("MemAvailable")
        if available is not None:
            self.mem_min = available if self.mem_min is None else min(self.mem_min, available)
        rss, gtt = process_memory(self.pid)
        self.rss_max, self.gtt_max = max(self.rss_max, rss), max(self.gtt_max, gtt)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def stop(self) -> dict:
        self._sample()
        self._stop.set()
        self._thread.join(timeout=5)
        drop = None if self.before is None or self.mem_min is None else self.before - self.mem_min
        return {
            "host_ram_used_peak_gib": None if drop is None else round(max(drop, 0) / GIB, 3),
            "server_rss_peak_gib": round(self.rss_max / GIB, 3),
            "server_gtt_peak_gib": round(self.gtt_max / GIB, 3),
        }


def serve_and_ask(
    server: str, model: str, setup: str, data: dict, log: Path, extra: list[str], timeout: float
) -> dict:
    """Start llama-server with SETUP, watch the load, ask the prompt set, stop it."""
    port = served.free_port()
    argv = [server, "--model", model, "--host", "127.0.0.1", "--port", str(port)]
    argv += SERVER_ARGS + SETUPS[setup] + list(extra)
    started = time.monotonic()
    try:
        with open(log, "wb") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    except FileNotFoundError:
        raise SameOutputError(f"--llama-server {server}: no such program") from None
    except PermissionError:
        raise SameOutputError(f"--llama-server {server}: not executable") from None
    watch = LoadWatch(proc.pid)
    try:
        try:
            served.wait_ready(proc, f"http://127.0.0.1:{port}", timeout, "llama-server", poll=0.1)
        except served.NotReady as e:
            raise SameOutputError(f"{e}; its log: {log}") from None
        finally:
            load = watch.stop()
        load["load_seconds"] = round(time.monotonic() - started, 2)
        endpoint = Endpoint(f"http://127.0.0.1:{port}", timeout=timeout)
        report = gate.run(endpoint, gate.only_model(endpoint), data)
    except (ApiError, gate.GateError) as e:
        raise SameOutputError(f"llama-server ({setup}): {e}; its log: {log}") from None
    finally:
        served.stop(proc)
    return {"setup": setup, "argv": argv, "load": load, "gate": report}


def texts(report: dict) -> dict[str, str]:
    """Each prompt's answers as compared: its one-at-a-time text (tool calls included)."""
    out = {}
    for p in report["prompts"]:
        answer = p["sequential"]
        out[p["id"]] = repr((answer.get("text"), answer.get("tool_calls"), answer.get("error")))
    return out


def run(server: str, model: str, data: dict, log_dir: Path, extra: list[str], timeout: float) -> dict:
    """Both setups, one after the other; {same, differ, setups, model_gib}."""
    if not os.path.isfile(model):
        raise SameOutputError(f"--model {model}: not a file")
    runs = {
        s: serve_and_ask(server, model, s, data, log_dir / f"llama-server-{s}.log", extra, timeout)
        for s in SETUPS
    }
    one, every = texts(runs["one"]["gate"]), texts(runs["all"]["gate"])
    differ = [k for k in one if one[k] != every.get(k)]
    errors = [
        f"{s}: {p['id']}: {p['sequential']['error']}"
        for s, r in runs.items()
        for p in r["gate"]["prompts"]
        if p["sequential"].get("error")
    ]
    return {
        "format": 1,
        "model": model,
        "model_gib": round(os.path.getsize(model) / GIB, 3),
        "same": not differ and not errors,
        "differ": differ,
        "errors": errors,
        "setups": runs,
    }
