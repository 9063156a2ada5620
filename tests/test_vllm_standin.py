"""The vLLM stand-in entrypoint (images/vllm-standin/vllm_standin.py), run on this host, once per plan mode.

No container: the cache and Triton directories and the port come from ARCOPS_STANDIN_* overrides and
start-up phases are 0.05 s apart, so a start takes about a second.
"""

import json
import os
import re
import signal
import socket
import time
from pathlib import Path

import pytest

from .helpers.vllm_standin_run import LOG_LINE, MODEL, SHARD_LINE, alive, in_order


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

    assert not in_order(
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
    assert not in_order(
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
    assert not any(alive(kid) for kid in workers.values())
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
    assert sorted(workers) == [0, 1] and all(alive(pid) for pid in workers.values())
    before = len(run.text("err"))
    # faulthandler's dumps (what py-spy shows on the real thing), one worker at a time: they interleave
    for done, pid in enumerate(workers.values(), 1):
        os.kill(pid, signal.SIGUSR1)
        run.wait_for(" in <module>", count=done)
    dumps = "\n".join(run.text("err")[before:])
    assert re.findall(r"line \d+ in (copy_|weight_loader)", dumps) == ["copy_", "weight_loader"] * 2

    run.proc.send_signal(signal.SIGTERM)
    assert run.exit_code() == 0
    assert not any(alive(pid) for pid in workers.values())
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
    assert not any(alive(pid) for pid in run.worker_pids().values())
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
