"""The soak: a service serves a mixed load for a set time while the box is watched, and any xe
reset, any stalled or failed request, or host RAM below a floor fails it. The rollout soaks its
canary after the gate, before any other box moves (dual-B70 boxes wedged after hours of
tensor-parallel serving, intel/compute-runtime#946; a health route kept answering while every
completion hung, ggml-org/llama.cpp#25692): a release that only fails under sustained load then
halts the rollout on one box.

The load is the gate's own prompt set, short prompts and the long-context needles mixed, sent by
CONCURRENCY workers back to back until the time is up. A request that gets no answer within
STALL_SECONDS is a stall (the server stopped making progress); answers are judged and the wrong
ones counted (the gate before it judges correctness; here they are reported, not failed on).

Stdlib only: shipped as module_utils.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from typing import Any

from ..common.numbers import NumberError, number
from . import gate
from .openai_api import Endpoint

KNOWN = ("seconds", "concurrency", "stall_seconds", "ram_floor_gib")
DEFAULTS = {"concurrency": 4, "stall_seconds": 300.0, "ram_floor_gib": 1.0}
MOST_SECONDS = 7 * 86400  # a week: longer is a typo
BOUNDS = (
    ("seconds", 0, MOST_SECONDS),
    ("concurrency", 1, 256),
    ("stall_seconds", 1, 86400),
    ("ram_floor_gib", 0, 4096),
)
KEPT_ERRORS = 5  # the first few failed requests' messages, for the record


class SoakError(ValueError):
    """Bad soak options (the message names the option)."""


def options(value: Any) -> dict | None:
    """{seconds, concurrency, stall_seconds, ram_floor_gib}, or None when the soak is off (no
    seconds, or 0)."""
    if value in (None, {}, False):
        return None
    if not isinstance(value, dict):
        raise SoakError(f"soak: must be a mapping, got {type(value).__name__}")
    unknown = sorted((str(k) for k in value if k not in KNOWN), key=str)
    if unknown:
        raise SoakError(f"soak: {unknown[0][:40]!r} is not a soak option ({', '.join(KNOWN)})")
    out = {"seconds": 0, **DEFAULTS, **{k: v for k, v in value.items() if v is not None}}
    try:
        for key, low, high in BOUNDS:
            number(out[key], f"soak.{key}", low, high)
    except NumberError as e:
        raise SoakError(str(e)) from None
    if not isinstance(out["concurrency"], int):
        raise SoakError("soak.concurrency: a whole number of streams")
    return None if not out["seconds"] else out


def run(
    endpoint: Endpoint,
    model: str,
    data: dict,
    soak: dict,
    clock: Callable[[], float] = time.monotonic,
    watch=None,
) -> dict:
    """The soak's report: what was sent and answered, the stalls and failures, the host watch's
    figures, and whether it passed (with the reasons when not). ENDPOINT's timeout is the stall
    limit (verify makes it so). GateError when the model is not served."""
    served = gate.served_model(endpoint, model)
    requests = gate.build_requests(endpoint, model, data, gate.max_length(endpoint, served))
    lock = threading.Lock()
    tally = {"sent": 0, "answered": 0, "wrong": 0, "stalls": 0, "failed": 0, "latency_max_s": 0.0}
    errors: list[str] = []
    start = clock()
    deadline = start + soak["seconds"]

    def worker(first: int) -> None:
        n = first
        while clock() < deadline:
            prompt, body = requests[n % len(requests)]
            n += soak["concurrency"]
            answer = gate.ask(endpoint, prompt, body, clock)
            with lock:
                tally["sent"] += 1
                tally["latency_max_s"] = max(tally["latency_max_s"], answer["latency_s"])
                if answer.get("error") is None:
                    tally["answered"] += 1
                    tally["wrong"] += not answer["pass"]
                    continue
                stalled = answer["latency_s"] >= soak["stall_seconds"] * 0.98
                tally["stalls" if stalled else "failed"] += 1
                if len(errors) < KEPT_ERRORS:
                    errors.append(" ".join(str(answer["error"]).split())[:300])

    watching = watch if watch is not None else nullcontext()
    with watching, ThreadPoolExecutor(max_workers=soak["concurrency"]) as pool:
        list(pool.map(worker, range(soak["concurrency"])))
    host = watch.report() if watch is not None else None
    report = {**soak, **tally, "ran_s": round(clock() - start, 1), "errors": errors, "host": host}
    report["reasons"] = reasons(report)
    report["passed"] = not report["reasons"]
    return report


def reasons(report: dict) -> list[str]:
    """Why a soak failed, one line each."""
    out = []
    host = report.get("host") or {}
    events = host.get("xe_events") or []
    if events:
        kinds = sorted({str(e.get("kind")) for e in events})
        out.append(f"{len(events)} xe event(s) during the soak ({', '.join(kinds)})")
    if report["stalls"]:
        out.append(
            f"{report['stalls']} request(s) got no answer within {report['stall_seconds']:g} s (a stall)"
        )
    if report["failed"]:
        out.append(
            f"{report['failed']} request(s) failed: {report['errors'][0] if report['errors'] else '?'}"
        )
    floor, lowest = report.get("ram_floor_gib") or 0, host.get("mem_available_min_gib")
    if floor and lowest is not None and lowest < floor:
        out.append(f"host RAM fell to {lowest} GiB available (floor {floor:g} GiB)")
    if not report["answered"] and not out:
        out.append("no request was answered during the soak")
    return out


def summary(report: dict) -> dict:
    """What the verify record keeps of a soak (no answers, no timestamps)."""
    host = report.get("host") or {}
    keep = ("seconds", "concurrency", "sent", "answered", "wrong", "stalls", "failed", "passed")
    return {
        **{k: report.get(k) for k in keep},
        "xe_events": len(host.get("xe_events") or []),
        "mem_available_min_gib": host.get("mem_available_min_gib"),
        "reasons": report.get("reasons") or [],
    }
