"""vLLM's /metrics (Prometheus text, open without the API key): the samples arcops reads, summed
over engines and models. The drain reads the request gauges; the health monitor reads those and
the generation token counter.

Stdlib only: it runs on the box (inside modules and the watchdog).
"""

from __future__ import annotations

import math
import re

from ..common import http

RUNNING = "vllm:num_requests_running"
WAITING = "vllm:num_requests_waiting"
GENERATION_TOKENS = "vllm:generation_tokens_total"
# name{labels} value  (labels optional; the value a float, NaN or +Inf as Prometheus writes them)
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)(?:\s+\S+)?$")


class MetricsError(ValueError):
    """Metrics that cannot be read as vLLM writes them."""


def sums(text: str, names: tuple[str, ...]) -> dict[str, float]:
    """Each of NAMES summed over its samples (absent names are absent); MetricsError for a
    sample that is not a count (not a number, NaN, infinite or negative)."""
    found: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line.strip())
        if m is None or m[1] not in names:
            continue
        try:
            value = float(m[3])
        except ValueError:
            raise MetricsError(f"metrics: {m[1]} has no number ({m[3][:40]!r})") from None
        if not math.isfinite(value) or value < 0:  # NaN, +Inf or negative: not a count
            raise MetricsError(f"metrics: {m[1]} is {m[3][:40]!r}, not a count")
        found[m[1]] = found.get(m[1], 0.0) + value
    return found


def fetch(url: str, timeout: float = 5.0) -> str:
    """URL's /metrics text (at most 4 MiB)."""
    with http.open_request(url.rstrip("/") + "/metrics", timeout=timeout) as r:
        return r.read(4 * 2**20).decode("utf-8", "replace")
