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

import faulthandler
import hashlib
import json
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path

# The stand-in's other modules sit beside this file (the image copies them all to /opt/arcops).
from standin_api import ENGINE_ENV, Handler, Server, engine_info, server_state
from standin_log import Log, write
from standin_plan import (
    KV_TOKENS_COLD,
    KV_TOKENS_WARM,
    MAX_MODEL_LEN,
    PLAN_NAME,
    ROUTES,
    STARTS_NAME,
    VLLM_VERSION,
    Args,
    Stop,
    UsageError,
    parse_mode,
    pop_plan,
)
from standin_worker import worker_main


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
        self.server.state = server_state(self.args, self.procs, mode, kv, cold, upstream)
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
        write(2, f"usage: vllm serve [model_tag] [options]\nvllm serve: error: {err}\n")
        return 2
    standin = Standin(args)
    standin.cache.mkdir(parents=True, exist_ok=True)
    try:
        mode, slow = parse_mode(pop_plan(standin.cache))
    except UsageError as err:
        write(2, f"arcops-standin: error: {err} in {standin.cache / PLAN_NAME}\n")
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
