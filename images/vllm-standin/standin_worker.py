"""One tensor-parallel rank's process, shaped so that a stack dump reads like vLLM's worker."""

import contextlib
import faulthandler
import os
import signal
import sys
import time
import traceback

from standin_log import Log, shard_progress, write
from standin_plan import CRASH_AT_SHARD, HANG_BEFORE_SHARD, SHARDS, WEIGHTS_GIB

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
            write(2, (shard_progress(done, started) + "\n") * (2 if done == SHARDS else 1))

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
