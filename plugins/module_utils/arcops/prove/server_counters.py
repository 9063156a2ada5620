"""The server's own counters around a bench level, beside what the bench measured on the client.

vLLM's /metrics counts the tokens it generated, the requests it finished and the time to first
token it saw (a histogram's sum and count); llama-server with --metrics counts the tokens it
predicted. Read before and after a level, their differences are the server's figures for that
level: a bench that agrees with them measured what the server did. They differ when something
else used the server meanwhile (the figures then say so), or when the bench misreads the stream.

Stdlib only: the bench may run on the box.
"""

from __future__ import annotations

from ..common.prometheus_text import MetricsError, sums
from .openai_api import ApiError, Endpoint

# What each figure is called by the servers arcops runs (the first found counts).
NAMES = {
    "tokens": ("vllm:generation_tokens_total", "llamacpp:tokens_predicted_total"),
    "requests": ("vllm:request_success_total",),
    "ttft_sum": ("vllm:time_to_first_token_seconds_sum",),
    "ttft_count": ("vllm:time_to_first_token_seconds_count",),
}


def read(endpoint: Endpoint) -> dict[str, float] | None:
    """The server's counters now, or None when it has no /metrics (or none of these)."""
    try:
        found = sums(endpoint.text("/metrics"), tuple(n for names in NAMES.values() for n in names))
    except (ApiError, MetricsError, OSError):
        return None
    counters = {}
    for figure, names in NAMES.items():
        value = next((found[n] for n in names if n in found), None)
        if value is not None:
            counters[figure] = value
    return counters or None


def level(before: dict | None, after: dict | None, measured: dict) -> dict | None:
    """The server's figures for one level beside the bench's (MEASURED: bench.summarize's),
    with the differences; None when the server's counters could not be read."""
    if not before or not after:
        return None
    delta = {k: after[k] - before[k] for k in after if k in before}
    out: dict = {}
    if "tokens" in delta:
        out["output_tokens"] = {"server": delta["tokens"], "bench": measured["total_output_tokens"]}
    if "requests" in delta:
        out["requests"] = {"server": delta["requests"], "bench": measured["completed"]}
    if delta.get("ttft_count"):
        mean = delta["ttft_sum"] / delta["ttft_count"] * 1000 if "ttft_sum" in delta else None
        if mean is not None:
            out["mean_ttft_ms"] = {"server": mean, "bench": measured.get("mean_ttft_ms")}
    for figure in out.values():
        server, bench = figure["server"], figure["bench"]
        figure["difference"] = None if bench is None else bench - server
    return out or None
