#!/usr/bin/env python3
"""arcops TEST STAND-IN for Intel's llm-scaler vLLM container: starts like vLLM, serves no model.

The real image (intel/llm-scaler-vllm) needs Intel GPUs and a registry; neither exists on the build
machines. This entrypoint (python3 stdlib only) takes the same argv (first positional = model path,
then vLLM flags, recorded but not interpreted except -tp/--tensor-parallel-size and
--served-model-name), prints vLLM's start-up lines on stdout/stderr in vLLM's formats, spawns one
python3 worker per tensor-parallel rank (multiprocessing "spawn", so py-spy can dump each one),
serves /health, /v1/models and /metrics (vLLM's request gauges and generation token counter,
open without the API key) on
port 8000 and exits like vLLM does.

Each start pops the first line of the plan file <cache>/arcops-standin-plan (missing or empty:
ready):
    ready     start up, serve until SIGTERM/SIGINT, exit 0
    slow:N    like ready, N more seconds before "Application startup complete."
    hang      stop after "Loading safetensors checkpoint shards:  75% Completed | 6/8" with every
              worker blocked in weight_loader -> copy_; SIGTERM still exits 0
    crash     a worker raises RuntimeError while loading weights; exit 1
    wrong     like ready, but every answer's text comes back reversed (a server that looks
              healthy and answers garbage: what the verify gate exists to catch)
    stall     like ready, but every completion request hangs once it runs: /metrics shows it
              running while the generation token counter stays flat (the field report's
              stall before shm_broadcast timed out); SIGTERM still exits 0
A worker that dies after start-up takes the server down too (exit 1); bad argv or plan: exit 2.

Answers: with ARCOPS_STANDIN_ENGINE=http://HOST:PORT (a real OpenAI-compatible server: the
lab runs llama.cpp's CPU llama-server), /v1/chat/completions, /v1/completions and /tokenize are
answered by that engine (its model in place of the served name; streams passed through), and
/v1/models lists the engine's context length, and chat messages given to /tokenize are counted
through the engine's chat template, as vLLM counts them; the engine unreachable at start-up
fails the start like a model that does not load (exit 1). Without it, those routes answer 404:
the stand-in serves no model.

KV cache: a start without <cache>/torch_compile_cache is cold (553,472 tokens), later ones warm
(680,000); the first start that compiles also writes a kernel file under the Triton cache.

Environment: VLLM_API_KEY (Bearer key for /v1/*; never logged), ARCOPS_STANDIN_STEP_SECONDS
(pause between start-up phases, default 0.3), and for running outside the container
ARCOPS_STANDIN_CACHE (default /root/.cache/vllm), ARCOPS_STANDIN_TRITON (default /root/.triton),
ARCOPS_STANDIN_PORT (default 8000). Extra endpoint for tests: GET /arcops-standin/argv (argv, env
var names, mode, worker pids). SIGUSR1 dumps Python stacks to stderr (faulthandler), for hosts
without py-spy.
"""

import contextlib
import faulthandler
import hashlib
import hmac
import http.client
import json
import multiprocessing
import multiprocessing.connection
import os
import re
import signal
import sys
import threading
import time
import traceback
import urllib.parse
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

VLLM_VERSION = "0.26.0"
MAX_MODEL_LEN = 262_144
SHARDS = 8
HANG_BEFORE_SHARD = 6  # the report's hung starts stopped at 6/8
CRASH_AT_SHARD = 2
KV_TOKENS_COLD = 553_472
KV_TOKENS_WARM = 680_000
WEIGHTS_GIB = 27.8292
PLAN_NAME = "arcops-standin-plan"
STARTS_NAME = "arcops-standin-starts"
SECRET_FLAGS = {"--api-key"}
ROUTES = [
    ("/health", "GET"),
    ("/version", "GET"),
    ("/v1/models", "GET"),
    ("/arcops-standin/argv", "GET"),
]
CYAN, RESET = "\033[1;36m", "\033[0;0m"


class UsageError(Exception):
    """Bad argv or plan file: exit 2 like argparse."""


class Stop(Exception):
    """SIGTERM/SIGINT in the API server process."""


# ---------------------------------------------------------------- logging in vLLM's formats


def _write(fd: int, text: str) -> None:
    data = text.encode()
    try:
        while data:  # one write per call keeps lines from different processes whole
            data = data[os.write(fd, data) :]
    except OSError:
        pass


def _coloured(fd: int) -> bool:
    colour = os.environ.get("VLLM_LOGGING_COLOR", "")
    if os.environ.get("NO_COLOR") or colour == "0":
        return False
    return colour == "1" or os.isatty(fd)


class Log:
    """vLLM's logger with decorate_logs(): '(NAME pid=N) LEVEL mm-dd HH:MM:SS [file.py:line] msg'."""

    def __init__(self, process_name: str):
        self.name = process_name

    def prefix(self, fd: int) -> str:
        tag = f"({self.name} pid={os.getpid()})"
        return f"{CYAN}{tag}{RESET} " if _coloured(fd) else f"{tag} "

    def raw(self, text: str, fd: int = 1) -> None:
        prefix = self.prefix(fd)
        _write(fd, "".join(f"{prefix}{line}\n" for line in text.split("\n")))

    def log(self, level: str, where: str, message: str) -> None:
        head = f"{level} {time.strftime('%m-%d %H:%M:%S')} [{where}] "
        self.raw("\n".join(head + line for line in message.split("\n")))

    def info(self, where: str, message: str) -> None:
        self.log("INFO", where, message)

    def error(self, where: str, message: str) -> None:
        self.log("ERROR", where, message)

    def uvicorn(self, message: str, fd: int = 2) -> None:
        """uvicorn's default formatter: level prefix padded to 9 columns ('INFO:     ...')."""
        self.raw(f"INFO:     {message}", fd)


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes:02d}:{secs:02d}"


def shard_progress(done: int, started: float) -> str:
    """vLLM's tqdm bar for safetensors shards, as the first local rank prints it (stderr, no prefix)."""
    line = f"Loading safetensors checkpoint shards: {100 * done / SHARDS:3.0f}% Completed | {done}/{SHARDS} "
    elapsed = time.monotonic() - started
    if done == 0 or elapsed <= 0:
        return line + "[00:00<?, ?it/s]"
    rate = done / elapsed
    speed = f"{rate:5.2f}it/s" if rate >= 1 else f"{1 / rate:5.2f}s/it"
    return line + f"[{_clock(elapsed)}<{_clock((SHARDS - done) / rate)}, {speed}]"


# ---------------------------------------------------------------- argv and plan


class Args:
    """vLLM's argv, recorded; only the model, -tp and --served-model-name are read."""

    def __init__(self, argv: list[str]):
        self.argv = list(argv)
        self.model: str | None = argv[0] if argv and not argv[0].startswith("-") else None
        self.tp = 1
        self.served: list[str] = []
        self.non_default: dict[str, object] = {}
        if self.model:
            self.non_default["model_tag"] = self.model
        i = 1 if self.model else 0
        while i < len(argv):
            flag, has_value, value = argv[i].partition("=")
            i += 1
            if not flag.startswith("-"):
                continue  # stray positional: recorded in argv only
            key = {"-tp": "tensor_parallel_size"}.get(flag, flag.lstrip("-").replace("-", "_"))
            if flag == "--served-model-name" and not has_value:
                values = []
                while i < len(argv) and not argv[i].startswith("-"):
                    values.append(argv[i])
                    i += 1
                self.served = values
                self.non_default[key] = values
                continue
            if not has_value:
                if i < len(argv) and not _is_flag(argv[i]):
                    value = argv[i]
                    i += 1
                else:
                    self.non_default[key] = True
                    continue
            if flag in ("-tp", "--tensor-parallel-size"):
                if not value.isdigit() or int(value) < 1:
                    raise UsageError(f"argument --tensor-parallel-size/-tp: invalid int value: {value!r}")
                self.tp = int(value)
            elif flag == "--served-model-name":
                self.served = [value]
            elif flag == "--model" and self.model is None:
                self.model = value
            self.non_default[key] = "***" if flag in SECRET_FLAGS else _typed(value)
        if self.model is None:
            raise UsageError("the following arguments are required: model_tag")
        self.non_default.setdefault("model", self.model)
        self.served = self.served or [self.model]

    def redacted_argv(self) -> list[str]:
        out, hide = [], False
        for arg in self.argv:
            flag, eq, _ = arg.partition("=")
            if hide:
                out.append("***")
            elif eq and flag in SECRET_FLAGS:
                out.append(f"{flag}=***")
            else:
                out.append(arg)
            hide = arg in SECRET_FLAGS
        return out


def _is_flag(arg: str) -> bool:
    return arg.startswith("-") and not re.fullmatch(r"-\d+(\.\d+)?", arg)


def _typed(value: str) -> object:
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def pop_plan(cache: Path) -> str:
    """First line of the plan file, which is rewritten without it; no file or no lines: ready."""
    plan = cache / PLAN_NAME
    try:
        lines = [line.strip() for line in plan.read_text().splitlines() if line.strip()]
    except FileNotFoundError:
        return "ready"
    if not lines:
        return "ready"
    plan.write_text("".join(f"{line}\n" for line in lines[1:]))  # in place: works for a file mount too
    return lines[0]


def parse_mode(mode: str) -> tuple[str, float]:
    if mode in ("ready", "hang", "crash", "wrong", "stall"):
        return mode, 0.0
    name, _, seconds = mode.partition(":")
    if name == "slow":
        try:
            if float(seconds) >= 0:
                return name, float(seconds)
        except ValueError:
            pass
    raise UsageError(f"unknown plan mode {mode!r} (ready, hang, crash, wrong, stall, slow:SECONDS)")


# ---------------------------------------------------------------- worker processes


def _on_worker_signal(signum, frame):
    raise SystemExit(0)  # vLLM's workers turn SIGTERM into SystemExit too


class ModelRunner:
    """One tensor-parallel rank's model loading, shaped so a stack dump reads like vLLM's."""

    def __init__(self, log: Log, rank: int, world: int, model: str, mode: str, step: float):
        self.log, self.rank, self.world = log, rank, world
        self.model, self.mode, self.step = model, mode, step
        self.parent = os.getppid()

    def load_model(self) -> None:
        self.log.info("gpu_model_runner.py:1843", f"Starting to load model {self.model}...")
        time.sleep(self.step)
        started = time.monotonic()
        self.load_weights()
        took = time.monotonic() - started
        self.log.info("default_loader.py:262", f"Loading weights took {took:.2f} seconds")
        gib = WEIGHTS_GIB / self.world
        self.log.info("gpu_model_runner.py:1892", f"Model loading took {gib:.4f} GiB and {took:.6f} seconds")

    def load_weights(self) -> None:
        started = time.monotonic()
        self.progress(0, started)
        for shard in range(SHARDS):
            time.sleep(self.step / 4)  # reading the shard from /models
            name = "model.embed_tokens.weight" if shard == HANG_BEFORE_SHARD else f"model.layers.{shard}"
            self.weight_loader(name, shard)
            self.progress(shard + 1, started)

    def progress(self, done: int, started: float) -> None:
        if self.rank == 0:  # vLLM shows the bar on the first local rank only; close() repeats 100%
            _write(2, (shard_progress(done, started) + "\n") * (2 if done == SHARDS else 1))

    def weight_loader(self, name: str, shard: int) -> None:
        self.copy_(name, shard)

    def copy_(self, name: str, shard: int) -> None:
        if self.mode == "crash" and self.rank == 0 and shard == CRASH_AT_SHARD:
            raise RuntimeError(
                f"XPU out of memory while copying {name} to xpu:{self.rank}"
                " (arcops stand-in: plan mode crash)"
            )
        if self.mode == "hang" and shard == HANG_BEFORE_SHARD:
            while True:  # the report's hung copy_ of a vocab-sized tensor; only a signal ends it
                time.sleep(0.5)
                if os.getppid() != self.parent:
                    os._exit(0)

    def compile(self, cache_dir: str, cold: bool) -> None:
        started = time.monotonic()
        self.log.info(
            "backends.py:530",
            f"Using cache directory: {cache_dir}/rank_{self.rank}_0/backbone for vLLM's torch.compile",
        )
        time.sleep(self.step)
        took = time.monotonic() - started
        if cold:
            self.log.info("backends.py:215", f"Compiling a graph for dynamic shape takes {took:.2f} s")
        else:
            self.log.info(
                "backends.py:161",
                f"Directly load the compiled graph(s) for dynamic shape from the cache, took {took:.3f} s",
            )
        self.log.info("monitor.py:34", f"torch.compile takes {took:.2f} s in total")


def worker_main(rank: int, world: int, model: str, mode: str, step: float, cache_dir: str, cold: bool, conn):
    """Entry point of a spawned worker (a separate python3 process)."""
    signal.signal(signal.SIGTERM, _on_worker_signal)
    signal.signal(signal.SIGINT, _on_worker_signal)
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    # vLLM names a worker by its parallel ranks once they are set: Worker_TP0, ... ("Worker" alone).
    log = Log(f"Worker_TP{rank}" if world > 1 else "Worker")
    log.info(
        "parallel_state.py:1076",
        f"rank {rank} in world size {world} is assigned as "
        f"DP rank 0, PP rank 0, TP rank {rank}, EP rank {rank}",
    )
    time.sleep(step)
    runner = ModelRunner(log, rank, world, model, mode, step)
    try:
        runner.load_model()
        time.sleep(step)
        runner.compile(cache_dir, cold)
    except Exception:
        log.error(
            "multiproc_executor.py:559", "WorkerProc failed to start.\n" + traceback.format_exc().rstrip()
        )
        conn.send(("failed", rank))
        sys.exit(1)
    conn.send(("ready", rank))
    with contextlib.suppress(EOFError):
        conn.recv()  # the API server never sends; EOF when it is gone


# ---------------------------------------------------------------- the engine behind the API

ENGINE_ENV = "ARCOPS_STANDIN_ENGINE"
ENGINE_ROUTES = ("/v1/chat/completions", "/v1/completions", "/tokenize")
STALL_ROUTES = ("/v1/chat/completions", "/v1/completions")  # the ones that generate


def _reverse_texts(answer: object) -> None:
    """Each choice's text reversed in place (message, delta or completion text)."""
    for choice in (answer.get("choices") or []) if isinstance(answer, dict) else []:
        for part in (choice.get("message"), choice.get("delta"), choice):
            if isinstance(part, dict):
                for key in ("content", "text"):
                    if isinstance(part.get(key), str):
                        part[key] = part[key][::-1]


def _mangled(data: bytes) -> bytes:
    try:
        answer = json.loads(data)
    except ValueError:
        return data
    _reverse_texts(answer)
    return json.dumps(answer).encode()


def _mangled_event(line: bytes) -> bytes:
    if not line.startswith(b"data: ") or line.strip() == b"data: [DONE]":
        return line
    return b"data: " + _mangled(line[6:].strip()) + b"\n"


def _metrics(state: dict) -> str:
    """vLLM's request gauges and generation token counter in its Prometheus text (one engine, the
    served model's name; prometheus_client names a counter's sample <family>_total)."""
    name = state["models"][0]["id"] if state["models"] else ""
    labels = f'engine="0",model_name="{name}"'
    out = []
    for family, kind, value, what in (
        (
            "vllm:num_requests_running",
            "gauge",
            state["running"],
            "Number of requests in model execution batches.",
        ),
        ("vllm:num_requests_waiting", "gauge", 0, "Number of requests waiting to be processed."),
        ("vllm:generation_tokens", "counter", state["generated"], "Number of generation tokens processed."),
    ):
        sample = f"{family}_total" if kind == "counter" else family
        out += [f"# HELP {family} {what}", f"# TYPE {family} {kind}", f"{sample}{{{labels}}} {float(value)}"]
    return "\n".join(out) + "\n"


def _generated(data: bytes, event: bool = False) -> int:
    """Tokens an engine's answer says it generated (usage's completion_tokens), or for one EVENT
    of a stream, one per choice with text (a stream's usage event repeats what was counted)."""
    try:
        answer = json.loads(data)
    except ValueError:
        return 0
    if not isinstance(answer, dict):
        return 0
    usage = answer.get("usage")
    if not event and isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
        return usage["completion_tokens"]
    count = 0
    for choice in answer.get("choices") or []:
        part = (choice.get("delta") or choice) if isinstance(choice, dict) else {}
        count += bool(isinstance(part, dict) and (part.get("content") or part.get("text")))
    return count


def _post(engine: dict, path: str, body: dict) -> dict | None:
    conn = http.client.HTTPConnection(engine["host"], engine["port"], timeout=60)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        answer = conn.getresponse()
        data = answer.read()
        return json.loads(data) if answer.status == 200 else None
    except (OSError, ValueError):
        return None
    finally:
        conn.close()


def _count_chat(engine: dict, request: dict) -> dict | None:
    """Chat messages tokenized as vLLM does (through the chat template), by an engine that has
    llama-server's /apply-template; None when it has not (vLLM answers /tokenize itself)."""
    templated = _post(engine, "/apply-template", {"messages": request["messages"]})
    if not isinstance(templated, dict) or not isinstance(templated.get("prompt"), str):
        return None
    tokens = (_post(engine, "/tokenize", {"content": templated["prompt"], "add_special": True}) or {}).get(
        "tokens"
    )
    return {"count": len(tokens), "tokens": tokens} if isinstance(tokens, list) else None


def engine_info(url: str) -> dict:
    """The engine's address, model and context length; OSError or ValueError when it cannot say."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError(f"{ENGINE_ENV} must be http://HOST:PORT, not {url!r}")
    host, port = parts.hostname, parts.port or 80

    def get(path: str) -> dict:
        conn = http.client.HTTPConnection(host, port, timeout=10)
        try:
            conn.request("GET", path)
            answer = conn.getresponse()
            data = answer.read()
            if answer.status != 200:
                raise ValueError(f"GET {path}: HTTP {answer.status}")
            return json.loads(data)
        finally:
            conn.close()

    (model,) = get("/v1/models")["data"][:1]
    length = model.get("max_model_len")
    if not isinstance(length, int):  # llama-server says its context in /props
        props = get("/props")
        length = (props.get("default_generation_settings") or {}).get("n_ctx") or props.get("n_ctx")
    return {"host": host, "port": port, "model": model["id"], "max_model_len": int(length)}


# ---------------------------------------------------------------- the API server process


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def version_string(self) -> str:
        return "uvicorn"

    def do_GET(self):
        state = self.server.state
        path = self.path.split("?", 1)[0]
        if path.startswith("/v1/") and state["api_key"] and not self._authorized(state["api_key"]):
            return self._json(HTTPStatus.UNAUTHORIZED, {"error": "Unauthorized"})
        if path == "/health":
            return self._send(HTTPStatus.OK, b"", None)
        if path == "/version":
            return self._json(HTTPStatus.OK, {"version": VLLM_VERSION})
        if path == "/v1/models":
            return self._json(HTTPStatus.OK, {"object": "list", "data": state["models"]})
        if path == "/arcops-standin/argv":
            return self._json(HTTPStatus.OK, state["info"])
        if path == "/metrics":  # open without the key, as vLLM's; the gauges a drain waits on
            return self._send(HTTPStatus.OK, _metrics(state).encode(), "text/plain; version=0.0.4")
        return self._json(HTTPStatus.NOT_FOUND, {"detail": "Not Found"})

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        state = self.server.state
        path = self.path.split("?", 1)[0]
        if path.startswith("/v1/") and state["api_key"] and not self._authorized(state["api_key"]):
            return self._json(HTTPStatus.UNAUTHORIZED, {"error": "Unauthorized"})
        if state["stall"] and path in STALL_ROUTES:
            with state["lock"]:
                state["running"] += 1
            try:  # running, and never a token: until the server stops (a daemon thread ends with it)
                state["stop"].wait(3600)
                return self._json(HTTPStatus.GATEWAY_TIMEOUT, {"detail": "stalled"})
            finally:
                with state["lock"]:
                    state["running"] -= 1
        engine = state.get("engine")
        if engine is None or path not in ENGINE_ROUTES:
            return self._json(HTTPStatus.NOT_FOUND, {"detail": "Not Found"})
        try:
            request = json.loads(body or b"{}")
        except ValueError:
            return self._json(HTTPStatus.BAD_REQUEST, {"detail": "body is not JSON"})
        if isinstance(request, dict) and "model" in request:
            request["model"] = engine["model"]
        if path == "/tokenize" and isinstance(request, dict) and "messages" in request:
            counted = _count_chat(engine, request)
            if counted is not None:  # vLLM's /tokenize templates chat messages; llama-server's takes text
                return self._json(HTTPStatus.OK, {**counted, "max_model_len": engine["max_model_len"]})
        with state["lock"]:
            state["running"] += 1
        try:
            self._forward(engine, path, json.dumps(request).encode(), state)
        finally:
            with state["lock"]:
                state["running"] -= 1

    def _forward(self, engine: dict, path: str, body: bytes, state: dict) -> None:
        """The engine's answer, streamed through as it comes (text reversed when wrong), its
        tokens counted as they pass."""
        wrong = state["wrong"]

        def count(data: bytes, event: bool = False) -> None:
            n = _generated(data, event)
            if n:
                with state["lock"]:
                    state["generated"] += n

        conn = http.client.HTTPConnection(engine["host"], engine["port"], timeout=600)
        try:
            conn.request("POST", path, body, {"Content-Type": "application/json"})
            answer = conn.getresponse()
            kind = answer.getheader("Content-Type", "application/json")
            if not kind.startswith("text/event-stream"):
                data = answer.read()
                if answer.status == 200 and path != "/tokenize":
                    count(data)
                return self._send(HTTPStatus(answer.status), _mangled(data) if wrong else data, kind)
            self.send_response(answer.status)
            self.send_header("Content-Type", kind)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for line in answer:
                if line.startswith(b"data: ") and line.strip() != b"data: [DONE]":
                    count(line[6:].strip(), event=True)
                line = _mangled_event(line) if wrong else line
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except OSError as e:
            with contextlib.suppress(OSError):
                self._json(HTTPStatus.BAD_GATEWAY, {"detail": f"engine: {e}"})
        finally:
            conn.close()

    def _authorized(self, key: str) -> bool:
        given = self.headers.get("Authorization", "")
        return hmac.compare_digest(given.encode(), f"Bearer {key}".encode())

    def _json(self, status: HTTPStatus, body: object) -> None:
        self._send(status, json.dumps(body).encode(), "application/json")

    def _send(self, status: HTTPStatus, body: bytes, content_type: str | None) -> None:
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_request(self, code="-", size="-"):
        """uvicorn's access log line, on stdout."""
        host, port = self.client_address[:2]
        phrase = HTTPStatus(int(code)).phrase if str(code).isdigit() else ""
        self.server.log.uvicorn(f'{host}:{port} - "{self.requestline}" {code} {phrase}'.rstrip(), fd=1)

    def log_message(self, format, *args):
        pass


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128


class Standin:
    def __init__(self, args: Args):
        self.args = args
        self.step = float(os.environ.get("ARCOPS_STANDIN_STEP_SECONDS", "0.3"))
        self.cache = Path(os.environ.get("ARCOPS_STANDIN_CACHE", "/root/.cache/vllm"))
        self.triton = Path(os.environ.get("ARCOPS_STANDIN_TRITON", "/root/.triton"))
        self.port = int(os.environ.get("ARCOPS_STANDIN_PORT", "8000"))
        self.api = Log("APIServer")
        # Process names as vLLM 0.29-0.32 print them (their real start logs are tests/fixtures):
        # the engine is a thread of this process here, its own process in vLLM.
        self.engine = Log("EngineCore")
        self.procs: list = []
        self.conns: list = []
        self.server: Server | None = None
        self.serving = False

    # -- start-up

    def run(self, mode: str, slow: float) -> int:
        args, api, engine = self.args, self.api, self.engine
        compile_root = self.cache / "torch_compile_cache"
        cold = not compile_root.exists()
        digest = hashlib.sha256("\0".join(args.argv).encode()).hexdigest()[:10]
        compile_dir = compile_root / digest
        api.info("api_server.py:1885", f"vLLM API server version {VLLM_VERSION}")
        api.info("utils.py:326", f"non-default args: {args.non_default}")
        # Bound early, as vLLM binds its port before the engine starts, and listening only from
        # "Application startup complete.": before that a connection is refused, as vLLM's is.
        self.server = Server(("0.0.0.0", self.port), Handler, bind_and_activate=False)
        self.server.server_bind()
        self.server.log = api
        time.sleep(self.step)
        engine.info(
            "core.py:74",
            f"Initializing a V1 LLM engine (v{VLLM_VERSION}) with config: model={args.model!r}, "
            f"speculative_config=None, tokenizer={args.model!r}, tensor_parallel_size={args.tp}, "
            f"pipeline_parallel_size=1, device_config=xpu, served_model_name={args.served[0]}",
        )
        started = time.monotonic()
        ctx = multiprocessing.get_context("spawn")
        for rank in range(args.tp):
            parent_end, child_end = ctx.Pipe()
            proc = ctx.Process(
                target=worker_main,
                args=(rank, args.tp, args.model, mode, self.step, str(compile_dir), cold, child_end),
                name=f"VllmWorker-{rank}",
                daemon=True,
            )
            proc.start()
            child_end.close()
            self.procs.append(proc)
            self.conns.append(parent_end)
        failed = self.wait_for_workers()
        if failed is not None:
            return self.engine_failed(failed)
        self.persist_caches(compile_dir, cold)
        kv = KV_TOKENS_COLD if cold else KV_TOKENS_WARM
        engine.info("kv_cache_utils.py:849", f"GPU KV cache size: {kv:,} tokens")
        engine.info(
            "kv_cache_utils.py:853",
            f"Maximum concurrency for {MAX_MODEL_LEN:,} tokens per request: {kv / MAX_MODEL_LEN:.2f}x",
        )
        time.sleep(self.step)
        engine.info(
            "core.py:214",
            "init engine (profile, create kv cache, warmup model) took "
            f"{time.monotonic() - started:.2f} seconds",
        )
        upstream = None
        if os.environ.get(ENGINE_ENV):
            try:
                upstream = engine_info(os.environ[ENGINE_ENV])
            except (OSError, ValueError, KeyError, TypeError) as e:
                engine.error("core.py:700", f"EngineCore failed to start: the engine answered no model ({e})")
                self.shutdown()
                return 1
        self.server.state = self.state(mode, kv, cold, upstream)
        api.info("api_server.py:1611", "Supported_tasks: ['generate']")
        api.info("api_server.py:1818", f"Starting vLLM API server 0 on http://0.0.0.0:{self.port}")
        api.info("launcher.py:29", "Available routes are:")
        for path, methods in ROUTES:
            api.info("launcher.py:37", f"Route: {path}, Methods: {methods}")
        api.uvicorn(f"Started server process [{os.getpid()}]")
        api.uvicorn("Waiting for application startup.")
        time.sleep(slow)
        self.server.server_activate()
        api.uvicorn("Application startup complete.")
        threading.Thread(target=self.server.serve_forever, name="http", daemon=True).start()
        self.serving = True
        dead = multiprocessing.connection.wait([p.sentinel for p in self.procs])
        rank = next(r for r, p in enumerate(self.procs) if p.sentinel in dead)
        engine.error(
            "multiproc_executor.py:146",
            f"Worker proc VllmWorker-{rank} died unexpectedly, shutting down executor.",
        )
        self.shutdown()
        return 1

    def wait_for_workers(self) -> tuple[str, int] | None:
        """Until every rank reports ready; (what, rank) when one fails or dies first."""
        pending = set(range(len(self.procs)))
        while pending:
            waitables = [self.conns[r] for r in pending] + [self.procs[r].sentinel for r in pending]
            for ready in multiprocessing.connection.wait(waitables):
                rank = next(r for r in pending if ready in (self.conns[r], self.procs[r].sentinel))
                if ready is self.conns[rank]:
                    try:
                        what, _ = self.conns[rank].recv()
                    except EOFError:
                        return "died", rank
                    if what != "ready":
                        return what, rank
                    pending.discard(rank)
                    break
                if not self.conns[rank].poll():
                    return "died", rank
        return None

    def persist_caches(self, compile_dir: Path, cold: bool) -> None:
        for rank in range(self.args.tp):
            backbone = compile_dir / f"rank_{rank}_0" / "backbone"
            backbone.mkdir(parents=True, exist_ok=True)
            (backbone / "arcops-standin-graph").write_text(f"compiled {'cold' if cold else 'warm'}\n")
        kernel = self.triton / "cache" / compile_dir.name / "arcops_standin_kernel.json"
        if not kernel.exists():
            kernel.parent.mkdir(parents=True, exist_ok=True)
            kernel.write_text(json.dumps({"name": "arcops_standin_kernel", "stand_in": True}) + "\n")

    def state(self, mode: str, kv: int, cold: bool, engine: dict | None) -> dict:
        created = int(time.time())
        models = [
            {
                "id": name,
                "object": "model",
                "created": created,
                "owned_by": "vllm",
                "root": self.args.model,
                "parent": None,
                "max_model_len": MAX_MODEL_LEN,
                "permission": [
                    {
                        "id": f"modelperm-{hashlib.sha256(name.encode()).hexdigest()[:32]}",
                        "object": "model_permission",
                        "created": created,
                        "allow_create_engine": False,
                        "allow_sampling": True,
                        "allow_logprobs": True,
                        "allow_search_indices": False,
                        "allow_view": True,
                        "allow_fine_tuning": False,
                        "organization": "*",
                        "group": None,
                        "is_blocking": False,
                    }
                ],
            }
            for name in self.args.served
        ]
        info = {
            "argv": self.args.redacted_argv(),
            "env": sorted(os.environ),
            "mode": mode,
            "model": self.args.model,
            "served_model_names": self.args.served,
            "tensor_parallel_size": self.args.tp,
            "pid": os.getpid(),
            "workers": [p.pid for p in self.procs],
            "kv_cache_tokens": kv,
            "cold_start": cold,
        }
        if engine is not None:
            for m in models:
                m["max_model_len"] = engine["max_model_len"]
            info["engine"] = {k: engine[k] for k in ("model", "max_model_len")}
        return {
            "api_key": os.environ.get("VLLM_API_KEY", ""),
            "models": models,
            "info": info,
            "engine": engine,
            "wrong": mode == "wrong",
            "stall": mode == "stall",
            "stop": threading.Event(),  # set at shutdown: a stalled request ends with the server
            "running": 0,  # requests being answered now (vllm:num_requests_running)
            "generated": 0,  # tokens the engine answered (vllm:generation_tokens_total)
            "lock": threading.Lock(),
        }

    # -- failure and shutdown

    def engine_failed(self, failed: tuple[str, int]) -> int:
        what, rank = failed
        try:
            raise Exception(
                "WorkerProc initialization failed due to an exception in a background process. "
                "See stack trace for root cause."
            )
        except Exception:
            self.engine.error(
                "core.py:718", "EngineCore failed to start.\n" + traceback.format_exc().rstrip()
            )
        if what == "died":
            self.engine.error(
                "multiproc_executor.py:146", f"Worker proc VllmWorker-{rank} died unexpectedly."
            )
        self.stop_workers()
        try:
            wait_for_engine_startup()
        except RuntimeError:
            self.api.raw(traceback.format_exc().rstrip(), fd=2)
        return 1

    def stop_workers(self) -> None:
        for proc in self.procs:
            if proc.is_alive():
                proc.terminate()
        deadline = time.monotonic() + 5
        for proc in self.procs:
            proc.join(max(0.0, deadline - time.monotonic()))
            if proc.is_alive():
                proc.kill()
                proc.join()

    def shutdown(self) -> None:
        if self.server is not None and getattr(self.server, "state", None):
            self.server.state["stop"].set()  # stalled requests answer and end
        if self.serving:
            self.api.uvicorn("Shutting down")
            self.server.shutdown()
            self.api.uvicorn("Waiting for application shutdown.")
            self.api.uvicorn("Application shutdown complete.")
        self.stop_workers()
        if self.server is not None:
            self.server.server_close()
        if self.serving:
            self.api.uvicorn(f"Finished server process [{os.getpid()}]")


def wait_for_engine_startup() -> None:
    raise RuntimeError("Engine core initialization failed. See root cause above. Failed core proc(s): {}")


def _on_signal(signum, frame):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one stop at a time; docker stop's SIGKILL still ends it
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise Stop


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    try:
        args = Args(sys.argv[1:] if argv is None else argv)
    except UsageError as err:
        _write(2, f"usage: vllm serve [model_tag] [options]\nvllm serve: error: {err}\n")
        return 2
    standin = Standin(args)
    standin.cache.mkdir(parents=True, exist_ok=True)
    try:
        mode, slow = parse_mode(pop_plan(standin.cache))
    except UsageError as err:
        _write(2, f"arcops-standin: error: {err} in {standin.cache / PLAN_NAME}\n")
        return 2
    with open(standin.cache / STARTS_NAME, "a") as starts:  # one line per start, for tests counting restarts
        starts.write(f"{time.time():.3f} {mode}{f':{slow:g}' if mode == 'slow' else ''} pid={os.getpid()}\n")
    try:
        return standin.run(mode, slow)
    except Stop:
        standin.shutdown()
        return 0


if __name__ == "__main__":
    sys.exit(main())
