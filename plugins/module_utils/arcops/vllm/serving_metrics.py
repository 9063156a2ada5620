"""vLLM's /metrics (Prometheus text, open without the API key): the names arcops reads and the
fetch; common.prometheus_text.sums adds each up over engines and models. The drain reads the
request gauges; the health monitor reads those and the generation token counter; the bench the
token, request and time-to-first-token counters around each level.

Stdlib only: it runs on the box (inside modules and the watchdog).
"""

from __future__ import annotations

from ..common import http

RUNNING = "vllm:num_requests_running"
WAITING = "vllm:num_requests_waiting"
GENERATION_TOKENS = "vllm:generation_tokens_total"


def fetch(url: str, timeout: float = 5.0, headers: dict[str, str] | None = None) -> str:
    """URL's /metrics text (at most 4 MiB), asked with HEADERS (llama-server's API key)."""
    with http.open_request(http.request(url.rstrip("/") + "/metrics", headers), timeout=timeout) as r:
        return r.read(4 * 2**20).decode("utf-8", "replace")
