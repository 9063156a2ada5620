"""Draining a box: vLLM's request gauges read from its /metrics text, the wait, the units."""

from __future__ import annotations

import urllib.error

import pytest
from arcops.fleet import drain
from hypothesis import given
from hypothesis import strategies as st

# vLLM 0.11's /metrics, cut to the gauges a drain reads and their neighbours (real format: HELP,
# TYPE, labels with the engine and model, floats).
METRICS = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="qwen38-fp8"} 2.0
vllm:num_requests_running{engine="1",model_name="qwen38-fp8"} 1.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="qwen38-fp8"} 4.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="qwen38-fp8"} 0.25
vllm:prompt_tokens_total{engine="0",model_name="qwen38-fp8"} 1.2e+06
"""


def test_the_gauges_are_summed_over_engines():
    assert drain.requests_in_flight(METRICS) == {
        "vllm:num_requests_running": 3.0,
        "vllm:num_requests_waiting": 4.0,
    }


@pytest.mark.parametrize(
    "text, message",
    [
        ("# nothing\nprocess_cpu_seconds_total 1.0\n", "no vllm:num_requests_running"),
        ('vllm:num_requests_running{engine="0"} lots\n', "has no number"),
        ("vllm:num_requests_running NaN\n", "not a count"),
        ("vllm:num_requests_running -1\n", "not a count"),
    ],
)
def test_metrics_that_are_not_vllm_s_are_refused(text, message):
    with pytest.raises(drain.DrainError, match=message):
        drain.requests_in_flight(text)


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def test_the_wait_ends_when_nothing_runs_or_waits():
    clock = Clock()
    texts = iter([METRICS, 'vllm:num_requests_running{engine="0"} 1\n', "vllm:num_requests_running 0\n"])
    out = drain.wait("http://box:8000", 60, 5, fetch=lambda url: next(texts), clock=clock, sleep=clock.sleep)
    assert out == {"drained": True, "running": 0, "waiting": 0, "seconds": 10.0, "error": None}


def test_the_wait_gives_up_at_the_timeout_and_says_what_still_ran():
    clock = Clock()
    out = drain.wait("http://box:8000", 12, 5, fetch=lambda url: METRICS, clock=clock, sleep=clock.sleep)
    assert out == {"drained": False, "running": 3, "waiting": 4, "seconds": 15.0, "error": None}


def test_a_server_that_does_not_answer_serves_nobody():
    def refused(url):
        raise urllib.error.URLError(ConnectionRefusedError(111, "Connection refused"))

    out = drain.wait("http://box:8000", 60, fetch=refused, clock=Clock(), sleep=lambda s: None)
    assert out["drained"] and "not answering" in out["error"]


def test_the_units_to_stop_come_from_the_records():
    records = {
        "vllm_service": {"unit": "arcops-vllm.service", "endpoint": {"url": "http://127.0.0.1:8000"}},
        "llama_cpp_sycl": {"endpoint": {"url": "http://127.0.0.1:8080"}},
        "intel_stack": {},
    }
    assert drain.units(records) == ["arcops-vllm.service", drain.LLAMA_UNIT]
    assert drain.units({"vllm_service": {"unit": "arcops-vllm.service", "endpoint": {}}}) == []


@given(st.text(max_size=400))
def test_any_text_reads_or_is_refused(text):
    try:
        found = drain.requests_in_flight(text)
    except drain.DrainError as e:
        assert "\n" not in str(e)
    else:
        assert found["vllm:num_requests_running"] >= 0


def test_a_real_vllm_s_gauges_count_a_request_in_flight(vllm_server):
    """PyPI's vLLM CPU build: idle it is drained; while a request streams its gauge counts it and
    a wait that times out says what still runs; the wait ends once the stream is done."""
    from .helpers.vllm_cpu import MODEL_NAME, while_streaming

    assert drain.wait(vllm_server.url, timeout=30, poll=0.2)["drained"] is True
    body = {"model": MODEL_NAME, "messages": [{"role": "user", "content": "count"}], "max_tokens": 1536}
    body |= {"temperature": 0, "ignore_eos": True}

    def look():  # the request runs: a wait with no time left must not call the box drained
        busy = drain.requests_in_flight(drain.fetch_metrics(vllm_server.url))
        if busy["vllm:num_requests_running"] != 1:
            return None
        stopped = drain.wait(vllm_server.url, timeout=0, poll=0.2)
        return (busy, stopped) if not stopped["drained"] else None  # it ended just now: look again

    seen, _ = while_streaming(vllm_server.url, body, look)
    assert seen, "vLLM handed each of 12 requests over in one burst: /metrics never showed one running"
    busy, stopped = seen
    assert busy["vllm:num_requests_running"] == 1 and busy["vllm:num_requests_waiting"] == 0
    assert stopped["drained"] is False and stopped["running"] == 1  # the timeout: what still ran
    done = drain.wait(vllm_server.url, timeout=30, poll=0.2)
    assert done["drained"] is True and done["error"] is None
