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

import itertools
import json
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext

from ..common.numbers import MAX_RATE, MAX_TOKENS, NumberError, count, number, shown
from . import (
    gate,  # the served model, its maximum length and sized prompts: read as the gate reads them
    server_counters,
)
from .openai_api import ApiError, Endpoint
from .prompts import lead, leading, run_tag

PERCENTILES = (50, 90, 99)


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
    chunks = len(gaps) + 1
    burst = is_burst(chunks, out_tokens)
    return {
        "ttft": ttft,
        "e2el": e2el,
        # A burst's gaps are between a few large chunks, not between tokens: no ITL, no TPOT.
        "itl": [] if burst else gaps,
        "tpot": (e2el - ttft) / (out_tokens - 1) if out_tokens > 1 and not burst else None,
        "input_tokens": usage.get("prompt_tokens") or 0,
        "output_tokens": out_tokens,
        "chunks": chunks,
        "burst": burst,
    }


def is_burst(chunks: int, tokens: int) -> bool:
    """An answer that came in a few chunks instead of token by token: fewer text chunks than half
    its tokens (a server that buffers, or a proxy). Its time to first token is then most of the
    answer's time, and time per output token cannot be measured on the client."""
    return tokens >= 4 and chunks * 2 < tokens


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
    bursts = sum(1 for r in ok if r.get("burst"))
    out["burst_requests"] = bursts
    out["tpot_unknown_why"] = (
        f"{bursts} of {len(ok)} answers came in a few chunks (most tokens in one): time per output "
        "token cannot be measured on the client, and time to first token holds most of the answer"
        if bursts
        else None
    )
    out.update(_stats("ttft", [r["ttft"] for r in ok]))
    out.update(_stats("tpot", [r["tpot"] for r in ok if r["tpot"] is not None]))
    out.update(_stats("itl", [g for r in ok for g in r["itl"]]))
    out.update(_stats("e2el", [r["e2el"] for r in ok]))
    return out


# Default prefill lengths (tokens): the field report's 8K, 32K and 64K, capped at the served max.
DEFAULT_LENGTHS = (8192, 32768, 65536)
DEFAULT_CONCURRENCY = (1, 4, 8)
DECODE_PROMPT_TOKENS = 128


class BenchError(ValueError):
    """Bad input or a server that cannot be asked (exit 2)."""


def request_body(model: str, messages: list[dict], max_tokens: int) -> dict:
    # ignore_eos: every request generates max_tokens (vLLM honours it; others ignore it), as
    # vllm bench serve's random dataset does; greedy, so runs compare.
    return {
        "model": model,
        "messages": messages,
        "max_tokens": max_tokens,
        "temperature": 0,
        "ignore_eos": True,
    }


def decode_prompt(endpoint: Endpoint, model: str) -> list[dict]:
    """The decode levels' prompt: DECODE_PROMPT_TOKENS at most, sized with lead(0) (distinct_bodies
    gives each request its own lead in its place)."""
    return gate.sized_needle(endpoint, model, "0", DECODE_PROMPT_TOKENS, lead(0))


def distinct_bodies(model: str, short: list[dict], max_tokens: int, indices, run: str) -> list[dict]:
    """One body per index in INDICES, SHORT opening with that request's own lead in RUN."""
    return [request_body(model, leading(short, i, run), max_tokens) for i in indices]


def prefill_lengths(
    asked: list[int] | None, limit: int | None, output_tokens: int
) -> tuple[list[int], list[int]]:
    """(lengths to run, default lengths left out because the server serves less). Lengths a user
    asked for above the served maximum are refused."""
    room = None if limit is None else limit - output_tokens - 16
    if asked is not None:
        too_long = [n for n in asked if room is not None and n > room]
        if too_long:
            raise BenchError(
                f"--prompt-lengths {','.join(map(str, too_long))}: above what the server serves "
                f"({limit} tokens with {output_tokens} to generate)"
            )
        return asked, []
    if room is None:
        raise BenchError("the server does not say its maximum length: give --prompt-lengths")
    kept = [n for n in DEFAULT_LENGTHS if n <= room]
    left = [n for n in DEFAULT_LENGTHS if n > room]
    return kept + ([room] if left and room not in kept else []), left


# How much worse than the baseline a figure may be before it counts as worse (0.1: 10 %).
TOLERANCE = 0.1


def run(
    endpoint: Endpoint,
    model: str,
    concurrency: list[int],
    lengths: list[int] | None,
    output_tokens: int,
    requests: int | None,
    stack: str | None = None,
    progress: Callable[[str], None] = lambda text: None,
    clock: Callable[[], float] = time.perf_counter,
    watch=None,
    baseline: tuple[str, dict] | None = None,
    tolerance: float = TOLERANCE,
    warmup_per_stream: int = 1,
) -> dict:
    """The bench result. WATCH (a HostWatch, on the serving box): RAM and xe events during the
    run; BASELINE (load_baseline's answer): each figure compared, worse beyond TOLERANCE;
    WARMUP_PER_STREAM requests per stream before each decode level, not counted."""
    try:
        served = gate.served_model(endpoint, model)
    except gate.GateError as e:
        raise BenchError(str(e)) from None
    limit = gate.max_length(endpoint, served)
    runs, left_out = prefill_lengths(lengths, limit, output_tokens)
    short = decode_prompt(endpoint, model)
    with watch if watch is not None else nullcontext():
        warmup, decode, prefill = _levels(
            endpoint,
            model,
            short,
            concurrency,
            runs,
            output_tokens,
            requests,
            progress,
            clock,
            warmup_per_stream,
        )
    result = {
        "format": 1,
        "url": endpoint.base,
        "model": model,
        "stack": stack,
        "max_model_len": limit,
        "output_tokens": output_tokens,
        "warmup": {k: v for k, v in warmup.items() if k != "itl"},
        "decode": decode,
        "prefill": prefill,
        "prefill_left_out": left_out,
        "host": watch.report() if watch is not None else None,
    }
    if baseline is not None:
        result["baseline"] = {"what": baseline[0], "tolerance": tolerance}
        result["comparison"] = compare(result, baseline[1], tolerance)
    return result


def failures(result: dict) -> list[str]:
    """Why a run fails (exit 1): figures worse than the baseline, xe events during it. As the
    gate's verdict, in the package: a role or a rollout judges a result the same way."""
    out = [f"{c['what']} worse than the baseline" for c in result.get("comparison", []) if c["worse"]]
    if result.get("host") and result["host"]["xe_events"]:
        out.append("xe events during the run")
    return out


def _levels(endpoint, model, short, concurrency, runs, output_tokens, requests, progress, clock, warm=1):
    seq, run = itertools.count(1), run_tag()  # each request's own lead (prompts.lead)

    def bodies(n: int) -> list[dict]:
        return distinct_bodies(model, short, output_tokens, itertools.islice(seq, n), run)

    progress("warm-up request (its timings are reported on their own: caches may be cold)")
    warmup = stream_one(endpoint, bodies(1)[0], clock)
    if "error" in warmup:
        raise BenchError(f"warm-up request: {warmup['error']}")
    decode = []
    for c in concurrency:
        n = requests or max(2 * c, 4)
        if warm:  # each stream's first request at this concurrency, not counted: batches form first
            progress(f"decode: {warm * c} warm-up request(s), {c} at a time (not counted)")
            run_level(endpoint, bodies(warm * c), c, clock)
        progress(f"decode: {n} requests, {c} at a time, {output_tokens} tokens each")
        before = server_counters.read(endpoint)
        results, duration = run_level(endpoint, bodies(n), c, clock)
        summary = {**summarize(results, duration, c), "warmup_requests": warm * c}
        summary["server"] = server_counters.level(before, server_counters.read(endpoint), summary)
        decode.append(summary)
    prefill = []
    for length in runs:
        progress(f"prefill: one {length}-token prompt")
        messages = gate.sized_needle(endpoint, model, "0", length, lead(next(seq), run))
        one = stream_one(endpoint, request_body(model, messages, 16), clock)
        entry: dict = {"target_tokens": length}
        if "error" in one:
            entry["error"] = one["error"]
        else:
            entry.update(
                input_tokens=one["input_tokens"],
                ttft_ms=one["ttft"] * 1000,
                prefill_throughput=one["input_tokens"] / one["ttft"] if one["ttft"] > 0 else None,
            )
        prefill.append(entry)
    return warmup, decode, prefill


# The field report's published figures (docs/field-knowledge.md), as named baselines. Decode:
# output tokens/s at 1, 4 and 8 streams (dual B60, Qwen3.8-27B int4, MTP k=3, tensor parallel 2,
# llm-scaler-vllm 0.26.0-b2, kernel 6.17.0-1009-intel, GuC 70.60.0); prefill: tokens/s per
# prompt length (the FP8 checkpoint, graph + MTP).
PROFILES: dict[str, dict] = {
    "b60x2-graph_mtp": {
        "decode": {1: 73.7, 4: 230.0, 8: 361.0},
        "prefill": {8192: 1509.0, 32768: 1332.0, 65536: 1126.0},
    },
    "b60x2-compiled": {"decode": {1: 42.6, 4: 162.0, 8: 313.0}},
    "b60x2-eager": {"decode": {1: 39.2, 4: 149.0, 8: 288.0}},
}


def figures(result: dict) -> dict:
    """A result's comparable figures: decode output tok/s per concurrency, prefill tok/s per
    target length."""
    decode = {d["max_concurrency"]: d["output_throughput"] for d in result.get("decode", [])}
    prefill = {p["target_tokens"]: p.get("prefill_throughput") for p in result.get("prefill", [])}
    return {
        "decode": {k: v for k, v in decode.items() if v},
        "prefill": {k: v for k, v in prefill.items() if v},
    }


def load_baseline(text_or_name: str, read: Callable[[str], str]) -> tuple[str, dict]:
    """(what it is, its figures): a profile name, or a previous result file."""
    if text_or_name in PROFILES:
        return f"profile {text_or_name}", PROFILES[text_or_name]
    try:
        data = json.loads(read(text_or_name))
    except ValueError as e:
        raise BenchError(f"--baseline {text_or_name}: not JSON ({e})") from None
    if not (isinstance(data, dict) and data.get("format") == 1 and isinstance(data.get("decode"), list)):
        known = ", ".join(PROFILES)
        raise BenchError(f"--baseline {text_or_name}: neither a bench result nor a profile ({known})")
    return f"result {text_or_name}", _checked_figures(data, f"--baseline {text_or_name}")


# A bench result's levels: the list, the level's key, its figure, the key's upper bound.
_LEVELS = (
    ("decode", "max_concurrency", "output_throughput", 65536),
    ("prefill", "target_tokens", "prefill_throughput", MAX_TOKENS),
)


def _checked_figures(data: dict, where: str) -> dict:
    """figures() of a result read from a file, every level and figure checked first: a whole
    key from 1 up, a figure from 0 to MAX_RATE tokens a second (null: none measured)."""
    try:
        for kind, key, figure, high in _LEVELS:
            levels = data.get(kind) or []
            if not isinstance(levels, list):
                raise NumberError(f"{kind} is {shown(levels)}, not a list")
            for n, level in enumerate(levels):
                at = f"{kind}[{n}]"
                if not isinstance(level, dict):
                    raise NumberError(f"{at} is {shown(level)}, not a mapping")
                count(level.get(key), f"{at}.{key}", 1, high)
                if level.get(figure) is not None:
                    number(level[figure], f"{at}.{figure}", 0, MAX_RATE)
    except NumberError as e:
        raise BenchError(f"{where}: {e}") from None
    return figures(data)


def compare(result: dict, baseline: dict, tolerance: float) -> list[dict]:
    """Each figure both have: this run's, the baseline's, the ratio, and whether it is worse
    than the baseline by more than TOLERANCE (a fraction: 0.1 = 10 %). Higher is better."""
    now = figures(result)
    out = []
    for kind in ("decode", "prefill"):
        for key, base in sorted((baseline.get(kind) or {}).items(), key=lambda kv: int(kv[0])):
            value = now[kind].get(int(key))
            if value is None or not base:
                continue
            ratio = value / base
            out.append(
                {
                    "what": f"{kind} {key}",
                    "value": value,
                    "baseline": base,
                    "ratio": ratio,
                    "worse": ratio < 1 - tolerance,
                }
            )
    return out
