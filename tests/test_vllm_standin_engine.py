"""The vLLM stand-in with a real engine behind it (llama.cpp's CPU server on the tiny model):
answers, metrics, stalls and wrong answers as the lab's checks see them."""

import json
import signal
import socket
import threading
import time
import urllib.error
import urllib.request

import pytest
from arcops.vllm import health, serving_metrics

from .helpers.vllm_standin_run import HTTP, MODEL

# ---------------------------------------------------------------- answers from a real engine


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    """llama.cpp's CPU llama-server on the tiny GGUF (built by scripts/bootstrap): the engine the
    lab's stand-ins answer through."""
    from .helpers import llama_cpu

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tmp_path_factory.mktemp("engine") / "server.log"
    server = llama_cpu.Server(port, log, ["--jinja", "--parallel", "1"]).start()
    yield server
    server.stop()


def _answers(url: str, key: str | None = None) -> tuple[dict, list[str]]:
    """The gate's report against URL, and one streamed answer's text."""
    from arcops.prove import gate
    from arcops.prove.openai_api import Endpoint

    endpoint = Endpoint(url, key)
    report = gate.run(endpoint, gate.only_model(endpoint), gate.prompt_set.DEFAULT)
    body = gate.request_body(report["model"], {}, [{"role": "user", "content": "Count to five."}], 16)
    chunks = list(endpoint.stream_chat(body))
    text = "".join((c.get("choices") or [{}])[0].get("delta", {}).get("content") or "" for c in chunks)
    return report, [text, chunks[-1].get("usage", {}).get("completion_tokens")]


def test_with_an_engine_the_stand_in_answers_as_the_engine_does(start, engine):
    """Through the stand-in's API (key, served name, vLLM's /v1/models) the engine's own answers,
    streamed ones included, and its context length as the served maximum."""
    key = "standin-engine-key"
    run = start(
        [MODEL, "--served-model-name", "qwen38-fp8"], VLLM_API_KEY=key, ARCOPS_STANDIN_ENGINE=engine.url
    )
    run.wait_for("Application startup complete.")
    status, body = run.get("/v1/models", key)
    (served,) = json.loads(body)["data"]
    assert (status, served["id"], served["max_model_len"]) == (200, "qwen38-fp8", 2048)
    direct, direct_stream = _answers(engine.url)
    via, via_stream = _answers(f"http://127.0.0.1:{run.port}", key)
    assert via["model"] == "qwen38-fp8" and via["max_model_len"] == 2048
    for d, v in zip(direct["prompts"], via["prompts"], strict=True):
        for mode in ("sequential", "concurrent"):
            assert v[mode].get("error") is None, (v["id"], v[mode])
            assert v[mode]["text"] == d[mode]["text"], v["id"]
    assert via_stream == direct_stream and via_stream[1] > 0  # usage from the engine's last chunk
    assert run.get("/v1/models")[0] == 401


def test_its_metrics_count_requests_in_flight_as_vllm_s_do(start, engine):
    """/metrics is open without the key and the drain reads it as it reads real vLLM's
    (tests/test_drain.py holds it against PyPI's vLLM CPU build): 1 running mid-stream, 0 after."""
    from arcops.fleet import drain
    from arcops.prove import gate
    from arcops.prove.openai_api import Endpoint

    key = "standin-metrics-key"
    run = start([MODEL, "--served-model-name", "m"], VLLM_API_KEY=key, ARCOPS_STANDIN_ENGINE=engine.url)
    run.wait_for("Application startup complete.")
    url = f"http://127.0.0.1:{run.port}"
    idle = drain.requests_in_flight(drain.fetch_metrics(url))
    # Long enough to be running still when the metrics are read, however fast the engine is.
    body = gate.request_body("m", {}, [{"role": "user", "content": "Count to fifty."}], 1500)
    chunks = Endpoint(url, key).stream_chat({**body, "ignore_eos": True})
    first = next(chunks)
    busy = drain.requests_in_flight(drain.fetch_metrics(url))
    streamed = sum(
        bool((c.get("choices") or [{}])[0].get("delta", {}).get("content")) for c in [first, *chunks]
    )
    assert idle == {"vllm:num_requests_running": 0.0, "vllm:num_requests_waiting": 0.0}
    assert busy["vllm:num_requests_running"] == 1.0
    assert drain.wait(url, timeout=10, poll=0.1)["drained"] is True
    # The generation token counter the health watch reads: a token per streamed event, then what
    # an answer's usage says it generated.
    after_stream = health.reading(serving_metrics.fetch(url), 0).generated
    answer = Endpoint(url, key).chat({**gate.request_body("m", {}, [{"role": "user", "content": "Hi"}], 8)})
    after = health.reading(serving_metrics.fetch(url), 1).generated
    assert after_stream == streamed and after - after_stream == answer["usage"]["completion_tokens"] > 0


def test_plan_stall_runs_requests_that_never_generate_and_the_health_watch_sees_it(start, tmp_path):
    """The field report's stall, as /metrics shows it: a request running, the generation counter
    flat. The health watch (real HTTP, real clock) calls it a stall and restarts; SIGTERM still
    ends the server, and the stalled request with it."""
    from arcops.vllm import health_watch

    run = start([MODEL, "--served-model-name", "m"], plan="stall\n")
    run.wait_for("Application startup complete.")
    url = f"http://127.0.0.1:{run.port}"
    answered: list[int] = []

    def ask() -> None:
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "Hi"}]}).encode()
        request = urllib.request.Request(
            f"{url}/v1/chat/completions", body, {"Content-Type": "application/json"}
        )
        try:
            with HTTP.open(request, timeout=60) as response:
                answered.append(response.status)
        except urllib.error.HTTPError as err:
            answered.append(err.code)

    asker = threading.Thread(target=ask, daemon=True)
    asker.start()
    restarts: list[int] = []
    watch = health_watch.HealthWatch(
        url,
        tmp_path / "reports",
        health_watch.Options(stall_seconds=1.0, max_restarts_per_hour=1, min_interval=0),
        new_kernel_lines=list,
        evidence=lambda where: {"dir": str(where)},
        restart=lambda: restarts.append(1),
    )
    deadline = time.monotonic() + 20
    reports = []
    while not reports and time.monotonic() < deadline:
        reports = [r for r in [watch.step()] if r]
        time.sleep(0.3)
    (report,) = reports
    assert report["state"] == "stall" and report["restarted"] and restarts == [1]
    assert report["reading"]["running"] == 1 and report["reading"]["generated"] == 0
    run.proc.send_signal(signal.SIGTERM)
    assert run.exit_code() == 0
    asker.join(10)
    assert answered == [504]


def test_plan_wrong_answers_reversed_text(start, engine):
    run = start([MODEL, "--served-model-name", "m"], plan="wrong\n", ARCOPS_STANDIN_ENGINE=engine.url)
    run.wait_for("Application startup complete.")
    direct, direct_stream = _answers(engine.url)
    via, via_stream = _answers(f"http://127.0.0.1:{run.port}")
    texts = [
        (d["sequential"]["text"], v["sequential"]["text"])
        for d, v in zip(direct["prompts"], via["prompts"], strict=True)
    ]
    assert any(t for t, _ in texts) and all(v == d[::-1] for d, v in texts)
    assert via_stream[0] != direct_stream[0] or not direct_stream[0].strip()


def test_an_engine_that_does_not_answer_fails_the_start(start):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here
    run = start([MODEL], ARCOPS_STANDIN_ENGINE=f"http://127.0.0.1:{port}")
    assert run.exit_code(timeout=30) == 1
    assert any("EngineCore failed to start: the engine answered no model" in line for line in run.text())
    assert not any("Application startup complete." in line for line in run.text())
