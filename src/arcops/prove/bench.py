"""Serving benchmarks against an OpenAI-compatible server: decode at N concurrent streams, prefill
and time to first token at given prompt lengths.

Every request streams, so time to first token (TTFT), the gaps between tokens (ITL), time per
output token after the first (TPOT) and end-to-end latency (E2EL) are measured on the client, as
`vllm bench serve` measures them; token counts come from the server's usage (include_usage), not
from stream chunks (some chunks carry no text). Summaries use `vllm bench serve`'s field names
where the metric is the same (completed, total_input_tokens, output_throughput, mean_ttft_ms,
p99_itl_ms, ...), so results from either tool compare.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from .openai_api import ApiError, Endpoint

PERCENTILES = (50, 90, 99)
METRICS = ("ttft", "tpot", "itl", "e2el")


def stream_one(endpoint: Endpoint, body: dict, clock: Callable[[], float] = time.perf_counter) -> dict:
    """One streamed request: its timings (seconds) and the server's token counts, or its error."""
    t0 = clock()
    first = last = None
    gaps: list[float] = []
    usage: dict = {}
    try:
        for chunk in endpoint.stream_chat(body):
            now = clock()
            if chunk.get("usage"):
                usage = chunk["usage"]
            delta = ((chunk.get("choices") or [{}])[0].get("delta") or {}).get("content")
            if not delta:
                continue
            if first is None:
                first = now
            else:
                gaps.append(now - last)
            last = now
    except ApiError as e:
        return {"error": str(e)}
    end = clock()
    out_tokens = usage.get("completion_tokens")
    if first is None or not out_tokens:
        return {"error": "the stream carried no generated text"}
    ttft, e2el = first - t0, end - t0
    return {
        "ttft": ttft,
        "e2el": e2el,
        "itl": gaps,
        "tpot": (e2el - ttft) / (out_tokens - 1) if out_tokens > 1 else None,
        "input_tokens": usage.get("prompt_tokens") or 0,
        "output_tokens": out_tokens,
    }


def run_level(
    endpoint: Endpoint, bodies: list[dict], concurrency: int, clock: Callable[[], float] = time.perf_counter
) -> tuple[list[dict], float]:
    """BODIES sent with CONCURRENCY requests in flight at a time; (results, wall seconds)."""
    t0 = clock()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        results = list(pool.map(lambda b: stream_one(endpoint, b, clock), bodies))
    return results, clock() - t0


def _stats(name: str, values: list[float]) -> dict:
    ms = [v * 1000 for v in values]
    out: dict = {f"mean_{name}_ms": None, f"median_{name}_ms": None, f"std_{name}_ms": None}
    out.update({f"p{p}_{name}_ms": None for p in PERCENTILES})
    if not ms:
        return out
    out[f"mean_{name}_ms"] = statistics.fmean(ms)
    out[f"median_{name}_ms"] = statistics.median(ms)
    out[f"std_{name}_ms"] = statistics.pstdev(ms)
    for p in PERCENTILES:
        out[f"p{p}_{name}_ms"] = percentile(ms, p)
    return out


def percentile(values: list[float], p: float) -> float:
    """Linear interpolation between closest ranks (numpy's default, which vllm bench serve uses)."""
    data = sorted(values)
    if len(data) == 1:
        return data[0]
    k = (len(data) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (k - lo)


def summarize(results: list[dict], duration: float, concurrency: int) -> dict:
    """A level's results as `vllm bench serve` names them (times in ms, throughputs per second)."""
    ok = [r for r in results if "error" not in r]
    total_in = sum(r["input_tokens"] for r in ok)
    total_out = sum(r["output_tokens"] for r in ok)
    out: dict = {
        "max_concurrency": concurrency,
        "completed": len(ok),
        "failed": len(results) - len(ok),
        "errors": sorted({r["error"] for r in results if "error" in r}),
        "duration": duration,
        "total_input_tokens": total_in,
        "total_output_tokens": total_out,
        "request_throughput": len(ok) / duration if duration > 0 else None,
        "output_throughput": total_out / duration if duration > 0 else None,
        "total_token_throughput": (total_in + total_out) / duration if duration > 0 else None,
    }
    out.update(_stats("ttft", [r["ttft"] for r in ok]))
    out.update(_stats("tpot", [r["tpot"] for r in ok if r["tpot"] is not None]))
    out.update(_stats("itl", [g for r in ok for g in r["itl"]]))
    out.update(_stats("e2el", [r["e2el"] for r in ok]))
    return out
