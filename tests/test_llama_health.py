"""The health watch on llama-server (arcops llama health-watch): its /metrics read as llama-server
writes it, its silent loop told from a dead server, and a real llama-server (CPU build) whose
main thread is stopped mid-answer while its HTTP threads answer /health, as in
ggml-org/llama.cpp#25692."""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.error
import urllib.request

import pytest
from arcops.common import prometheus_text, served
from arcops.common.sysroot import SysRoot
from arcops.vllm import health, health_box
from arcops.vllm.health_watch import HealthWatch, Options

from .conftest import REPO
from .helpers import llama_cpu
from .helpers.frozen_thread import Frozen
from .helpers.health_watch_box import HANG, Box

# Captured from llama-server b11434 (the CPU build tests/helpers/llama_cpu.py makes) with --metrics,
# one request processing.
METRICS = (REPO / "tests/fixtures/llama_server/metrics-b11434-busy.txt").read_text()
TIMEOUT = urllib.error.URLError(TimeoutError("timed out"))
REFUSED = urllib.error.URLError(ConnectionRefusedError(111, "Connection refused"))
SILENT = r"the health route answers but /metrics has not for \d+ s \(stall after 2 s; timed out\)"
FLAT = "1 request(s) running and no llama_decode() call for 2 s (stall after 2 s)"


def llama_metrics(processing: int, decodes: int) -> str:
    return (
        "# TYPE llamacpp:requests_processing gauge\n"
        f"llamacpp:requests_processing {processing}\n"
        "llamacpp:requests_deferred 0\n"
        f"llamacpp:n_decode_total {decodes}\n"
    )


def test_llama_servers_own_metrics_are_read_by_their_names():
    r = health.reading(METRICS, 5.0, "llama-server")
    assert r.running == 1 and r.waiting == 0 and r.generated is not None and r.generated > 0
    with pytest.raises(prometheus_text.MetricsError, match="no llamacpp:requests_processing sample"):
        health.reading(llama_metrics(1, 2).replace("requests_processing", "x"), 0, "llama-server")
    # vLLM's text is not llama-server's, nor the other way round.
    with pytest.raises(prometheus_text.MetricsError, match="is this vllm's /metrics"):
        health.reading(METRICS, 0)


def test_a_silent_loop_behind_a_live_health_route_is_a_stall_and_restarted(tmp_path):
    box = Box([llama_metrics(1, 40)] + [TIMEOUT] * 5 + [llama_metrics(0, 0)])
    watch = box.watch(tmp_path, "llama-server", lambda: True, stall_seconds=30)
    reports = box.run(watch, 7, every=10)
    assert [r["state"] if r else None for r in reports] == [None, None, None, None, "stall", None, None]
    stall = reports[4]
    assert stall["restarted"] and box.restarts == [1_000_040.0]
    assert stall["detail"].startswith(
        "the health route answers but /metrics has not for 30 s (stall after 30 s; timed out)"
    )


def test_a_flat_decode_count_with_requests_processing_is_a_stall(tmp_path):
    box = Box([llama_metrics(2, 7)] * 5)
    reports = box.run(box.watch(tmp_path, "llama-server", lambda: True, stall_seconds=20), 5, every=10)
    assert [r["state"] if r else None for r in reports] == [None, None, "stall", None, None]
    assert reports[2]["reading"]["generated"] == 7 and reports[2]["restarted"]
    assert reports[2]["detail"].startswith("2 request(s) running and no llama_decode() call for 20 s")


def test_a_dead_server_is_left_to_systemd_and_a_new_xe_reset_still_restarts(tmp_path):
    box = Box([REFUSED] * 4, kernel=[[], [], [], HANG])
    watch = box.watch(tmp_path, "llama-server", lambda: False, unreachable_after=2)
    reports = box.run(watch, 4, every=10)
    assert [r["state"] if r else None for r in reports] == [None, "unreachable", None, "xe_event"]
    assert not reports[1]["restarted"] and reports[3]["restarted"]


def test_the_silence_starts_again_after_an_answer(tmp_path):
    box = Box([TIMEOUT, TIMEOUT, llama_metrics(0, 3), TIMEOUT, TIMEOUT, TIMEOUT])
    reports = box.run(box.watch(tmp_path, "llama-server", lambda: True, stall_seconds=20), 6, every=10)
    assert [r["state"] if r else None for r in reports] == [None] * 5 + ["stall"]


# ------------------------------------------------------------------ a real llama-server, frozen


def stream(url: str, tokens: int, got: threading.Event) -> None:
    body = json.dumps({"prompt": "a", "n_predict": tokens, "ignore_eos": True, "stream": True}).encode()
    request = urllib.request.Request(url + "/completion", body, {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as r:
            for line in r:
                if line.startswith(b"data:"):
                    got.set()
    except (urllib.error.URLError, OSError):
        pass  # the server is stopped under it


# One slot whose answer outlasts the tiny model's context (shifted as it fills): 4,095 tokens
# take under a second on two cores, 100,000 some twenty, ended by the test long before.
LONG = ["--metrics", "--parallel", "1", "--context-shift"]


def test_a_real_llama_server_whose_loop_hangs_is_restarted_and_one_that_serves_is_not(tmp_path):
    try:
        server = llama_cpu.Server(served.free_port(), tmp_path / "server.log", LONG, ctx=4096).start()
    except RuntimeError as e:  # scripts/bootstrap builds it: missing, it fails, never skips
        pytest.fail(str(e))
    restarted: list[float] = []
    frozen: list[Frozen] = []

    # As systemd's restart: the old process goes (SIGTERM, then SIGKILL), a new one serves.
    def restart() -> None:
        for f in frozen:
            f.thaw()
        served.stop(server.proc, grace=3)
        restarted.append(time.monotonic())
        server.start()

    watch = HealthWatch(
        server.url,
        tmp_path / "reports",
        Options(stall_seconds=2.0, unreachable_after=2),
        new_kernel_lines=list,
        evidence=health_box.devcoredump_taker(SysRoot("/nonexistent")),
        restart=restart,
        fetch=health_box.metrics_fetch({}, timeout=1.0),
        server="llama-server",
        alive=health_box.health_route(server.url, timeout=1.0),
    )
    try:
        # Serving: a long answer streams while the watch looks; every look is well.
        got = threading.Event()
        talk = threading.Thread(target=stream, args=(server.url, 100_000, got), daemon=True)
        talk.start()
        assert got.wait(60), "the server streamed nothing"
        before = health.reading(health_box.metrics_fetch({})(server.url), 0, "llama-server")
        for _ in range(3):
            assert watch.step() is None
            time.sleep(0.1)
        after = health.reading(health_box.metrics_fetch({})(server.url), 0, "llama-server")
        # The looks were made while the answer streamed: one request processing, decodes counting up.
        assert before.running == after.running == 1 and after.generated > before.generated
        # Hung: the loop (the main thread) stops in the middle of that answer; /health still
        # answers 200.
        frozen.append(Frozen(server.proc.pid))
        assert health_box.health_route(server.url)()
        reports = []
        deadline = time.monotonic() + 30
        while not restarted and time.monotonic() < deadline:
            reports.append(watch.step())
            time.sleep(0.5)
        stalls = [r for r in reports if r]
        assert len(stalls) == 1 and stalls[0]["state"] == "stall" and stalls[0]["restarted"]
        # Both are seen from llama-server b11434: stopped in a decode, its loop never takes the
        # /metrics request, which times out while /health answers; stopped between two, /metrics
        # answered once with the decode count flat.
        detail = stalls[0]["detail"]
        assert re.fullmatch(SILENT, detail) or detail == FLAT, detail
        # The new server serves, and the watch sees it well.
        assert watch.step() is None
    finally:
        for f in frozen:
            f.thaw()
        server.stop()
