"""Drain a box before its stack changes: wait until vLLM runs no request, then say what to stop.

vLLM's /metrics (Prometheus text; open without the API key) carries `vllm:num_requests_running`
and `vllm:num_requests_waiting`, one sample per engine and model. A box is drained when both sum
to 0, or when the time given runs out (the services are stopped then anyway: a rollout does not
wait for ever on a client that never stops; the record says how many were still running).

Stdlib only: it runs on the box inside the arcops_drain module.
"""

from __future__ import annotations

import time
import urllib.error
from collections.abc import Callable

from ..common import prometheus_text
from ..vllm import serving_metrics

GAUGES = (serving_metrics.RUNNING, serving_metrics.WAITING)
DrainError = prometheus_text.MetricsError
fetch_metrics = serving_metrics.fetch


def requests_in_flight(text: str) -> dict[str, float]:
    """Each gauge of GAUGES summed over its samples; DrainError when neither is there (not vLLM)."""
    found = prometheus_text.sums(text, GAUGES)
    if serving_metrics.RUNNING not in found:
        raise DrainError("metrics: no vllm:num_requests_running sample (is this vLLM's /metrics?)")
    return found


def wait(
    url: str,
    timeout: float,
    poll: float = 1.0,
    fetch: Callable[[str], str] = fetch_metrics,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> dict:
    """Poll URL's /metrics until nothing runs or waits, or TIMEOUT passes:
    {drained, running, waiting, seconds, error}. A server that does not answer has nothing to
    drain (it serves nobody): drained, with the error said."""
    started = clock()
    while True:
        try:
            found = requests_in_flight(fetch(url))
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            return {
                "drained": True,
                "running": 0,
                "waiting": 0,
                "seconds": round(clock() - started, 1),
                "error": f"not answering ({reason}): nothing to drain",
            }
        running = int(found.get("vllm:num_requests_running", 0))
        waiting = int(found.get("vllm:num_requests_waiting", 0))
        seconds = round(clock() - started, 1)
        if running == 0 and waiting == 0:
            return {"drained": True, "running": 0, "waiting": 0, "seconds": seconds, "error": None}
        if clock() - started >= timeout:
            return {
                "drained": False,
                "running": running,
                "waiting": waiting,
                "seconds": seconds,
                "error": None,
            }
        sleep(poll)


# The llama-server unit's name as roles/llama_cpp_sycl installs it (its record names no unit).
LLAMA_UNIT = "arcops-llama-server.service"


def units(records: dict) -> list[str]:
    """The inference units a box runs, from the serving stages' records: what a drain stops."""
    out = []
    vllm = records.get("vllm_service") or {}
    if vllm.get("endpoint") and vllm.get("unit"):
        out.append(vllm["unit"])
    if (records.get("llama_cpp_sycl") or {}).get("endpoint"):
        out.append(LLAMA_UNIT)
    return out
