"""The vLLM stand-in entrypoint (images/vllm-standin/vllm_standin.py), run on this host, once per plan mode.

No container: the cache and Triton directories and the port come from ARCOPS_STANDIN_* overrides and
start-up phases are 0.05 s apart, so a start takes about a second.
"""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from arcops.vllm import health, serving_metrics

from .conftest import REPO

STANDIN = REPO / "images" / "vllm-standin" / "vllm_standin.py"
MODEL = "/models/qwen38-fp8"
# vLLM's logger behind decorate_logs(), or uvicorn's formatter behind the same prefix.
LOG_LINE = re.compile(
    r"\((APIServer|EngineCore|Worker(?:_TP\d+)?) pid=\d+\) "
    r"(?:(?:INFO|WARNING|ERROR) \d\d-\d\d \d\d:\d\d:\d\d \[\w+\.py:\d+\] |INFO:     )"
)
SHARD_LINE = re.compile(r"Loading safetensors checkpoint shards: +\d+% Completed \| \d/8 \[\S+<\S+, +\S+\]")
# urllib would send 127.0.0.1 through an http_proxy from the environment.
HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class Run:
    """One start of the stand-in: its output lines as they arrive (time, stream, text)."""

    def __init__(self, tmp_path: Path, argv: list[str], env: dict[str, str]):
        self.cache, self.triton = tmp_path / "cache", tmp_path / "triton"
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.argv = argv
        full_env = {k: v for k, v in os.environ.items() if not k.startswith(("VLLM_", "ARCOPS_STANDIN_"))}
        full_env.pop("NO_COLOR", None)
        full_env.update(
            ARCOPS_STANDIN_CACHE=str(self.cache),
            ARCOPS_STANDIN_TRITON=str(self.triton),
            ARCOPS_STANDIN_PORT=str(self.port),
            ARCOPS_STANDIN_STEP_SECONDS="0.05",
            **env,
        )
        self.lines: list[tuple[float, str, str]] = []
        self.changed = threading.Condition()
        self.proc = subprocess.Popen(
            [sys.executable, str(STANDIN), *argv],
            env=full_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its own process group, so teardown can end workers too
        )
        self.readers = [
            threading.Thread(target=self._read, args=(stream, name), daemon=True)
            for stream, name in ((self.proc.stdout, "out"), (self.proc.stderr, "err"))
        ]
        for reader in self.readers:
            reader.start()

    def _read(self, stream, name: str) -> None:
        for line in stream:
            with self.changed:
                self.lines.append((time.monotonic(), name, line.rstrip("\n")))
                self.changed.notify_all()

    def text(self, stream: str | None = None) -> list[str]:
        with self.changed:
            return [line for _, name, line in self.lines if stream in (None, name)]

    def wait_for(self, needle: str, count: int = 1, timeout: float = 10) -> float:
        """Arrival time of the count-th line containing needle."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                hits = [t for t, _, line in self.lines if needle in line]
                if len(hits) >= count:
                    return hits[count - 1]
                left = deadline - time.monotonic()
                if left <= 0 or (
                    self.proc.poll() is not None and not any(r.is_alive() for r in self.readers)
                ):
                    pytest.fail(
                        f"no {needle!r} (x{count}) in:\n" + "\n".join(line for _, _, line in self.lines)
                    )
                self.changed.wait(min(left, 0.1))

    def exit_code(self, timeout: float = 10) -> int:
        code = self.proc.wait(timeout)
        for reader in self.readers:
            reader.join(timeout)
        return code

    def get(self, path: str, key: str | None = None, timeout: float = 2) -> tuple[int, bytes]:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", headers=headers)
        try:
            with HTTP.open(request, timeout=timeout) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as err:
            return err.code, err.read()

    def worker_pids(self) -> dict[int, int]:
        """Rank -> pid, from the '(Worker_TPn pid=N)' log prefixes."""
        found = re.findall(r"\(Worker_TP(\d+) pid=(\d+)\)", "\n".join(self.text()))
        return {int(rank): int(pid) for rank, pid in found}

    def children(self) -> dict[int, str]:
        """Child pid -> command line, from /proc."""
        pid = self.proc.pid
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        return {
            int(kid): Path(f"/proc/{kid}/cmdline").read_bytes().replace(b"\0", b" ").decode() for kid in kids
        }


@pytest.fixture
def start(tmp_path):
    runs: list[Run] = []

    def _start(argv: list[str], plan: str | None = None, **env: str) -> Run:
        if plan is not None:
            (tmp_path / "cache").mkdir(exist_ok=True)
            (tmp_path / "cache" / "arcops-standin-plan").write_text(plan)
        runs.append(Run(tmp_path, argv, env))
        return runs[-1]

    yield _start
    for run in runs:
        if run.proc.poll() is None:
            os.killpg(run.proc.pid, signal.SIGKILL)
            run.proc.wait()


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def _in_order(lines: list[str], needles: list[str]) -> list[str]:
    """The needles not found in this order (an empty list when all are)."""
    it = iter(lines)
    return [needle for needle in needles if not any(needle in line for line in it)]


def test_ready_start_logs_like_vllm_serves_and_exits_0_on_sigterm(start):
    key = "sekrit-standin-key"
    argv = [MODEL, "--quantization=fp8", "-tp", "2", "--max-model-len", "262144"]
    argv += ["--served-model-name", "qwen38", "--trust-remote-code"]
    run = start(argv, VLLM_API_KEY=key)
    run.wait_for("Application startup complete.")
    # stdout and stderr are read by two threads: under load the last stdout line can arrive
    # after stderr's "startup complete"; wait for it too before reading the order.
    run.wait_for(f"Starting vLLM API server 0 on http://0.0.0.0:{run.port}")
    pid = run.proc.pid

    assert not _in_order(
        run.text("out"),
        [
            "[api_server.py:1885] vLLM API server version 0.26.0",
            "non-default args: {'model_tag': '/models/qwen38-fp8', 'quantization': 'fp8', "
            "'tensor_parallel_size': 2",
            "(Worker_TP0 pid=",
            "GPU KV cache size: 553,472 tokens",
            "Maximum concurrency for 262,144 tokens per request: 2.11x",
            f"Starting vLLM API server 0 on http://0.0.0.0:{run.port}",
        ],
    )
    assert not _in_order(
        run.text("err"),
        [
            "Loading safetensors checkpoint shards:   0% Completed | 0/8 [00:00<?, ?it/s]",
            "Loading safetensors checkpoint shards:  75% Completed | 6/8 [",
            "Loading safetensors checkpoint shards: 100% Completed | 8/8 [",
            f"(APIServer pid={pid}) INFO:     Started server process [{pid}]",
            f"(APIServer pid={pid}) INFO:     Waiting for application startup.",
            f"(APIServer pid={pid}) INFO:     Application startup complete.",
        ],
    )
    assert [line for line in run.text() if not (LOG_LINE.match(line) or SHARD_LINE.fullmatch(line))] == []

    # One spawned python3 per rank, children of the API server, named in the log prefixes.
    workers = run.worker_pids()
    assert sorted(workers) == [0, 1]
    children = run.children()
    spawned = {kid for kid, cmd in children.items() if "multiprocessing.spawn import spawn_main" in cmd}
    assert spawned == set(workers.values())
    assert all(Path(f"/proc/{kid}/exe").resolve().name.startswith("python") for kid in spawned)

    assert run.get("/health") == (200, b"")
    assert run.get("/v1/models")[0] == 401
    assert run.get("/v1/models", key="wrong")[0] == 401
    status, body = run.get("/v1/models", key=key)
    assert status == 200
    models = json.loads(body)
    assert [(m["id"], m["root"], m["owned_by"]) for m in models["data"]] == [("qwen38", MODEL, "vllm")]
    info = json.loads(run.get("/arcops-standin/argv")[1])
    assert info["argv"] == argv
    assert {"VLLM_API_KEY", "ARCOPS_STANDIN_PORT"} <= set(info["env"])
    assert (info["mode"], info["tensor_parallel_size"]) == ("ready", 2)
    assert info["workers"] == [workers[0], workers[1]]

    run.proc.send_signal(signal.SIGTERM)
    assert run.exit_code() == 0
    assert run.text("err")[-1] == f"(APIServer pid={pid}) INFO:     Finished server process [{pid}]"
    assert not any(_alive(kid) for kid in workers.values())
    assert key not in "\n".join(run.text()) + json.dumps(info)


def test_first_start_sizes_a_cold_kv_cache_later_starts_a_warm_one(start):
    figures = []
    for _ in range(2):
        run = start([MODEL, "--tensor-parallel-size=1"])
        run.wait_for("Application startup complete.")
        out = "\n".join(run.text("out"))
        figures.append(
            (
                re.search(r"GPU KV cache size: ([\d,]+) tokens", out).group(1),
                re.search(r"tokens per request: ([\d.]+x)", out).group(1),
                "Compiling a graph for dynamic shape" in out,
                "Directly load the compiled graph(s) for dynamic shape from the cache" in out,
            )
        )
        run.proc.send_signal(signal.SIGTERM)
        assert run.exit_code() == 0, "\n".join(run.text("err")[-20:])
    assert figures == [("553,472", "2.11x", True, False), ("680,000", "2.59x", False, True)]
    assert list((run.cache / "torch_compile_cache").glob("*/rank_0_0/backbone/*"))
    assert list(run.triton.rglob("*.json"))  # the Triton cache mount gets a kernel file too
    starts = (run.cache / "arcops-standin-starts").read_text().splitlines()
    assert [line.split()[1] for line in starts] == ["ready", "ready"]


def test_hang_blocks_every_worker_in_weight_loader_copy_and_sigterm_exits_0(start):
    run = start([MODEL, "-tp", "2"], plan="hang\nready\n")
    run.wait_for("Loading safetensors checkpoint shards:  75% Completed | 6/8")
    assert (run.cache / "arcops-standin-plan").read_text() == "ready\n"  # popped and rewritten
    time.sleep(0.6)  # a dozen start-up steps: nothing more may come
    settled = run.text()
    assert settled[-1].startswith("Loading safetensors checkpoint shards:  75% Completed | 6/8")
    assert run.proc.poll() is None
    with pytest.raises(OSError):  # the port is bound, as vLLM's is, but nothing answers yet
        run.get("/health", timeout=0.3)

    workers = run.worker_pids()
    assert sorted(workers) == [0, 1] and all(_alive(pid) for pid in workers.values())
    before = len(run.text("err"))
    # faulthandler's dumps (what py-spy shows on the real thing), one worker at a time: they interleave
    for done, pid in enumerate(workers.values(), 1):
        os.kill(pid, signal.SIGUSR1)
        run.wait_for(" in <module>", count=done)
    dumps = "\n".join(run.text("err")[before:])
    assert re.findall(r"line \d+ in (copy_|weight_loader)", dumps) == ["copy_", "weight_loader"] * 2

    run.proc.send_signal(signal.SIGTERM)
    assert run.exit_code() == 0
    assert not any(_alive(pid) for pid in workers.values())
    assert not any("Application startup complete" in line for line in run.text())
    assert not (run.cache / "torch_compile_cache").exists()  # never got to compile: the next start is cold


def test_crash_logs_a_worker_traceback_and_exits_1(start):
    run = start([MODEL, "-tp", "2"], plan="crash\n")
    assert run.exit_code() == 1
    out, err = run.text("out"), run.text("err")
    worker = run.worker_pids()[0]
    head = rf"\(Worker_TP0 pid={worker}\) ERROR \d\d-\d\d \S+ \[multiproc_executor\.py:559\] "
    worker_lines = [line for line in out if re.match(head, line)]
    assert re.sub(head, "", worker_lines[0]) == "WorkerProc failed to start."
    assert re.sub(head, "", worker_lines[1]) == "Traceback (most recent call last):"
    assert re.sub(head, "", worker_lines[-1]).startswith("RuntimeError: ")
    assert any("EngineCore failed to start." in line for line in out)
    assert err[-1].endswith(
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}"
    )
    assert not any(_alive(pid) for pid in run.worker_pids().values())
    assert (run.cache / "arcops-standin-plan").read_text() == ""


def test_slow_start_waits_before_startup_complete(start):
    run = start([MODEL], plan="slow:1\n")
    waiting = run.wait_for("Waiting for application startup.")
    # Before ready the port is taken but refuses connections, as real vLLM's does (no hang).
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", run.port), 2):
        pass
    with socket.socket() as other, pytest.raises(OSError):
        other.bind(("0.0.0.0", run.port))
    complete = run.wait_for("Application startup complete.")
    assert complete - waiting >= 0.95
    assert run.get("/health")[0] == 200
    run.proc.send_signal(signal.SIGTERM)
    assert run.exit_code() == 0


def test_a_worker_that_dies_after_start_up_takes_the_server_down(start):
    run = start([MODEL, "-tp", "2"])
    run.wait_for("Application startup complete.")
    os.kill(run.worker_pids()[1], signal.SIGKILL)
    assert run.exit_code() == 1
    assert any("Worker proc VllmWorker-1 died unexpectedly, shutting down executor." in x for x in run.text())


@pytest.mark.parametrize(
    ("argv", "plan", "message"),
    [
        ([MODEL], "bogus\nready\n", "unknown plan mode 'bogus'"),
        (["--max-model-len", "8192"], None, "the following arguments are required: model_tag"),
        ([MODEL, "-tp", "two"], None, "invalid int value: 'two'"),
    ],
)
def test_bad_plan_or_argv_exits_2(start, argv, plan, message):
    run = start(argv, plan=plan)
    assert run.exit_code() == 2
    assert message in "\n".join(run.text("err"))
    if plan:
        assert (run.cache / "arcops-standin-plan").read_text() == "ready\n"


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
