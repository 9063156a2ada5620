"""The correctness gate: every prompt of a set answered right, one at a time and all at once.

Greedy decoding (temperature 0, a fixed seed), thinking off where the chat template has it. Both
runs must answer every prompt right: batching is where wrong output showed on Arc (a graph with
the all-reduce compiled in answered garbage while the server looked healthy). The sequential
answers are also compared with a golden file recorded on a known-good run of the same stack;
a difference is reported as drift, and fails the gate only when asked.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from datetime import UTC, datetime

from ..common.numbers import MAX_TOKENS, NumberError, count
from . import prompts as prompt_set
from .openai_api import ApiError, Endpoint

SEED = 0
# Characters per token when the server cannot count them for us (it errs long: English prose
# runs near 4; a shorter estimate keeps the needle context under the served maximum).
CHARS_PER_TOKEN = 3.0


class GateError(ValueError):
    """Bad input or a server that cannot be asked (exit 2): the message says which."""


def served_model(endpoint: Endpoint, model: str) -> dict:
    try:
        served = endpoint.models()
    except ApiError as e:
        raise GateError(str(e)) from None
    for m in served:
        if m["id"] == model:
            return m
    names = ", ".join(m["id"] for m in served) or "none"
    raise GateError(f"--model {model!r}: the server does not serve it (it serves: {names})")


def only_model(endpoint: Endpoint) -> str:
    """The one model a server serves (llama-server serves one, under its file's name)."""
    try:
        served = [m["id"] for m in endpoint.models()]
    except ApiError as e:
        raise GateError(str(e)) from None
    if len(served) != 1:
        raise GateError(f"no model named and the server serves {len(served)}: {', '.join(served) or 'none'}")
    return served[0]


def max_length(endpoint: Endpoint, served: dict) -> int | None:
    """The served maximum length in tokens: vLLM lists it with the model; llama-server in /props."""
    value = served.get("max_model_len")
    if value is None:
        try:
            props = endpoint.request_json("GET", "/props")
        except ApiError:
            return None
        props = props if isinstance(props, dict) else {}
        settings = props.get("default_generation_settings")
        value = (settings if isinstance(settings, dict) else {}).get("n_ctx") or props.get("n_ctx")
        if value is None:
            return None
    try:  # the server's answer: a token count that makes sense, or the gate cannot size prompts
        return count(value, "the server's maximum length (max_model_len or n_ctx)", 1, MAX_TOKENS)
    except NumberError as e:
        raise GateError(str(e)) from None


def request_body(model: str, prompt: dict, messages: list[dict], max_tokens: int) -> dict:
    body = {
        "model": model,
        "messages": messages,
        "temperature": 0,
        "seed": SEED,
        "max_tokens": max_tokens,
        # Qwen3-style templates think first unless told not to; other templates ignore it.
        "chat_template_kwargs": {"enable_thinking": False},
    }
    if "tools" in prompt:
        body["tools"] = prompt["tools"]
        body["tool_choice"] = "auto"
    return body


def build_requests(endpoint: Endpoint, model: str, data: dict, limit: int | None) -> list[tuple[dict, dict]]:
    """(prompt, request body) for every prompt; needles sized to their fraction of LIMIT."""
    out = []
    for p in data["prompts"]:
        if "needle" in p:
            if limit is None:
                raise GateError(f"prompt {p['id']}: the server does not say its maximum length")
            budget = int(limit * p["needle"].get("fraction", 0.8)) - data["max_tokens"]
            messages = sized_needle(endpoint, model, p["needle"]["secret"], budget)
        else:
            messages = p["messages"]
        out.append((p, request_body(model, p, messages, data["max_tokens"])))
    return out


def count_tokens(endpoint: Endpoint, model: str, messages: list[dict]) -> int | None:
    """The prompt's length in the server's own tokens: vLLM's /tokenize takes chat messages,
    llama-server's takes text (the prompt its /apply-template makes of them, where it has one).
    None when the server has neither."""
    try:
        answer = endpoint.request_json("POST", "/tokenize", {"model": model, "messages": messages})
        if isinstance(answer.get("count"), int):
            return answer["count"]
    except ApiError:
        pass
    try:  # llama-server: the prompt its chat template makes, so the template's tokens count too
        text = endpoint.request_json("POST", "/apply-template", {"messages": messages}).get("prompt")
    except ApiError:
        text = None
    if not isinstance(text, str):
        text = "\n".join(m["content"] for m in messages)
    try:
        tokens = endpoint.request_json("POST", "/tokenize", {"content": text, "add_special": True}).get(
            "tokens"
        )
        return len(tokens) if isinstance(tokens, list) else None
    except ApiError:
        return None


def sized_needle(endpoint: Endpoint, model: str, secret: str, budget: int, lead: str = "") -> list[dict]:
    """A needle context of about BUDGET tokens and never more, measured by the server when it
    can count (a few rescales; the last one under budget is kept when none lands within 90%).
    LEAD opens the context (prompts.needle_messages) and counts within BUDGET."""
    chars = int(budget * CHARS_PER_TOKEN)
    smallest = None
    for _unused in range(6):
        messages = prompt_set.needle_messages(secret, chars, lead)
        count = count_tokens(endpoint, model, messages)
        if count is None or 0.9 * budget <= count <= budget:
            return messages
        if count < budget and (smallest is None or count > smallest[0]):
            smallest = (count, messages)
        # A tokenizer is not uniform at every size: aim lower each time rather than overshoot.
        chars = int(chars * budget / count * (0.95 if count < budget else 0.93))
    if smallest is not None:
        return smallest[1]  # under budget, if not within 90% of it: never more than asked
    return prompt_set.needle_messages(secret, max(1, chars // 2), lead)


def ask(endpoint: Endpoint, prompt: dict, body: dict, clock: Callable[[], float]) -> dict:
    t0 = clock()
    try:
        answer = endpoint.chat(body)
    except ApiError as e:
        return {"text": None, "pass": False, "latency_s": round(clock() - t0, 3), "error": str(e)}
    latency = round(clock() - t0, 3)
    choice = (answer.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    text = message.get("content") or ""
    calls = message.get("tool_calls") or []
    usage = answer.get("usage") or {}
    out = {
        "text": text,
        "pass": prompt_set.judge(prompt["expect"], text, calls),
        "latency_s": latency,
        "prompt_tokens": usage.get("prompt_tokens"),
        "completion_tokens": usage.get("completion_tokens"),
        "finish_reason": choice.get("finish_reason"),
    }
    if calls:
        out["tool_calls"] = [c.get("function") for c in calls]
    return out


def run(
    endpoint: Endpoint,
    model: str,
    data: dict,
    golden: dict | None = None,
    fail_on_drift: bool = False,
    stack: str | None = None,
    clock: Callable[[], float] = time.monotonic,
    watch=None,
) -> dict:
    """The gate's report. GateError when the model is not served or a needle cannot be sized.
    WATCH (a HostWatch, on the serving box): RAM and xe events during both runs; an xe event
    fails the gate."""
    served = served_model(endpoint, model)
    limit = max_length(endpoint, served)
    requests = build_requests(endpoint, model, data, limit)
    started = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    with watch if watch is not None else nullcontext():
        sequential = [ask(endpoint, p, body, clock) for p, body in requests]
        with ThreadPoolExecutor(max_workers=len(requests)) as pool:
            concurrent = list(pool.map(lambda r: ask(endpoint, r[0], r[1], clock), requests))
    results = []
    for (p, _unused), seq, con in zip(requests, sequential, concurrent, strict=True):
        results.append(
            {
                "id": p["id"],
                "expected": prompt_set.expected_text(p["expect"]),
                "sequential": seq,
                "concurrent": con,
                "pass": seq["pass"] and con["pass"],
                "same_text": seq["text"] == con["text"],
            }
        )
    drift = compare_golden(golden, results, model, stack) if golden is not None else None
    host = watch.report() if watch is not None else None
    passed = (
        all(r["pass"] for r in results) and not (fail_on_drift and drift) and not (host and host["xe_events"])
    )
    return {
        "host": host,
        "format": 1,
        "url": endpoint.base,
        "model": model,
        "stack": stack,
        "max_model_len": limit,
        "started_at": started,
        "passed": passed,
        "prompts": results,
        "drift": drift,
        "fail_on_drift": fail_on_drift,
    }


def compare_golden(golden: dict, results: list[dict], model: str, stack: str | None) -> list[str]:
    """The prompts whose sequential answer differs from the golden one."""
    if golden.get("model") != model or golden.get("stack") != stack:
        raise GateError(
            f"the golden file was recorded for model {golden.get('model')!r} on stack "
            f"{golden.get('stack')!r}, this run is {model!r} on {stack!r}"
        )
    outputs = golden.get("outputs") or {}
    return [r["id"] for r in results if outputs.get(r["id"]) != r["sequential"]["text"]]


def load_golden(text: str, where: str) -> dict:
    try:
        golden = json.loads(text)
    except ValueError as e:
        raise GateError(f"{where}: not JSON ({e})") from None
    if not (
        isinstance(golden, dict) and golden.get("format") == 1 and isinstance(golden.get("outputs"), dict)
    ):
        raise GateError(f"{where}: not a golden file (format 1 with outputs)")
    return golden


def golden_from(report: dict) -> dict:
    """What --write-golden keeps: this run's sequential answers for its model and stack."""
    return {
        "format": 1,
        "model": report["model"],
        "stack": report["stack"],
        "recorded_at": report["started_at"],
        "outputs": {r["id"]: r["sequential"]["text"] for r in report["prompts"]},
    }


def table_rows(report: dict) -> list[dict]:
    def cell(answer: dict) -> str:
        if answer.get("error"):
            return "ERROR"
        shown = answer["text"] if answer["text"] is not None else ""
        if answer.get("tool_calls"):
            f = answer["tool_calls"][0] or {}
            shown = f"{f.get('name')}({f.get('arguments')})"
        shown = " ".join(shown.split())
        return ("ok " if answer["pass"] else "BAD ") + (shown[:28] + "..." if len(shown) > 31 else shown)

    return [
        {
            "prompt": r["id"],
            "expected": r["expected"],
            "one at a time": cell(r["sequential"]),
            "all at once": cell(r["concurrent"]),
            "s": r["sequential"]["latency_s"],
        }
        for r in report["prompts"]
    ]
