"""Serving health after start-up (arcops.vllm.health): the stall watch, the restart policy and the
verdict, on synthetic readings; the counter and gauges they read, on PyPI's real vLLM CPU build."""

from __future__ import annotations

import pytest
from arcops.common import prometheus_text
from arcops.vllm import health, serving_metrics
from arcops.vllm.health import Reading, RestartPolicy, StallWatch
from hypothesis import given, settings
from hypothesis import strategies as st

from .helpers.fuzz import FUZZ


def test_requests_running_with_a_flat_counter_is_a_stall_after_its_time():
    watch = StallWatch(stall_seconds=300)
    # The report's stall: four requests in flight, the counter stops at 5120 tokens.
    seen = [watch.feed(Reading(t, 4, 0, 5120 if t >= 20 else 100 * t)) for t in range(0, 400, 10)]
    assert seen[:3] == [0, 0, 0]  # generating
    assert seen[3] == 10  # t=30: flat since the last token, at t=20
    assert max(seen) == 390 - 20  # the last reading, t=390
    assert next(t for t, s in zip(range(0, 400, 10), seen, strict=True) if s >= 300) == 320


def test_no_stall_when_idle_generating_or_restarted():
    watch = StallWatch(stall_seconds=60)
    assert watch.feed(Reading(0, 0, 0, 500)) == 0  # idle: a flat counter is expected
    assert watch.feed(Reading(100, 0, 3, 500)) == 0  # waiting only: the scheduler's business
    assert watch.feed(Reading(110, 2, 0, 500)) == 0
    assert watch.feed(Reading(150, 2, 0, 500)) == 40
    assert watch.feed(Reading(160, 2, 0, 501)) == 0  # one token: alive
    assert watch.feed(Reading(200, 2, 0, 501)) == 40
    assert watch.feed(Reading(210, 2, 0, 7)) == 0  # the counter went down: a restarted server
    assert watch.feed(Reading(215, 2, 0, None)) == 0  # no counter: nothing to judge


def test_the_policy_allows_a_few_restarts_an_hour_and_never_a_loop():
    policy = RestartPolicy(max_per_hour=3, min_interval=120)
    now = 10_000.0
    for n in range(3):
        assert policy.decide(now) == (True, "allowed")
        policy.record(now)
        if n < 2:
            assert policy.decide(now + 60) == (False, "last restart 60 s ago (at least 120 s apart)")
        now += 600
    allowed, why = policy.decide(now)
    assert not allowed and why.startswith("3 restart(s) in the last hour (limit 3)")
    assert policy.decide(10_000 + health.HOUR + 1) == (True, "allowed")  # the first one aged out


def test_the_verdict_puts_a_new_xe_event_before_a_stall_and_says_why_it_does_not_restart():
    watch, policy = StallWatch(30), RestartPolicy(1, 60, history=[1000.0])
    ok = health.assess(Reading(0, 1, 0, 10), watch, 0, policy, now=1010)
    assert (ok.state, ok.restart) == ("ok", False)
    xe = health.assess(Reading(5, 1, 0, 11), watch, 2, policy, now=1010)
    assert (
        xe.state == "xe_event" and not xe.restart and xe.why_not.startswith("1 restart(s) in the last hour")
    )
    stall = health.assess(Reading(40, 1, 0, 11), watch, 0, RestartPolicy(1, 60), now=5000)
    assert stall.state == "stall" and stall.restart and "no token generated for 35 s" in stall.detail


def test_a_reading_of_metrics_that_are_not_vllm_s_is_refused():
    with pytest.raises(prometheus_text.MetricsError, match="no vllm:num_requests_running"):
        health.reading("node_load1 0.5\n", 0)
    r = health.reading(
        'vllm:num_requests_running{engine="0"} 2\nvllm:num_requests_running{engine="1"} 1\n'
        'vllm:generation_tokens_total{engine="0",model_name="m"} 42.0\n',
        7,
    )
    assert r == Reading(7, 3, 0, 42)


@settings(FUZZ)
@given(st.lists(st.tuples(st.floats(0, 1e6), st.floats(0, 100), st.floats(0, 1e9) | st.none()), max_size=30))
def test_any_readings_give_a_non_negative_flat_time(rows):
    watch = StallWatch(10)
    at = 0.0
    for step, running, generated in rows:
        at += step
        assert watch.feed(Reading(at, running, 0, generated)) >= 0


def test_a_real_vllm_counts_tokens_while_a_request_runs(vllm_server):
    """PyPI's vLLM CPU build: while a request runs, /metrics shows it running and the generation
    counter between its values before and after; after it, the counter grew by the tokens the
    response says it generated, and nothing runs. The watch sees no stall in any reading."""
    import time

    from .helpers.vllm_cpu import MODEL_NAME, while_streaming

    tokens = 1536  # about 2 s of the tiny model's generation
    body = {"model": MODEL_NAME, "messages": [{"role": "user", "content": "count"}], "max_tokens": tokens}
    body |= {"temperature": 0, "ignore_eos": True}
    watch = StallWatch(stall_seconds=30)
    readings: list[Reading] = []
    start: list[Reading] = []  # the counters each request starts from (the last one counts)

    def read():
        return health.reading(serving_metrics.fetch(vllm_server.url), time.monotonic())

    def look():
        r = read()
        readings.append(r)
        return r if r.running == 1 and r.generated > start[-1].generated else None

    mid, usage = while_streaming(vllm_server.url, body, look, before=lambda: start.append(read()))
    after, before = read(), start[-1]
    assert mid, "vLLM handed each of 12 requests over in one burst: /metrics never showed one running"
    assert after.running == 0
    assert after.generated - before.generated == usage["completion_tokens"] == tokens
    assert before.generated < mid.generated < after.generated
    assert all(r.running in (0, 1) for r in readings), readings
    assert not any(watch.stalled(r) for r in [mid, after])
