"""The xe watchdog with fakes: engine, kernel journal, /proc and sysfs trees, py-spy; real sd_notify sockets.

Also journal following (arcops.box.journal.follow) against a real journald, in a namespace of its own.
"""

import json
import os
import queue
import shutil
import socket
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest
from arcops.box import journal
from arcops.cli import main
from arcops.common.sysroot import SysRoot
from arcops.vllm.docker_api import DockerError, process_tree
from arcops.vllm.watchdog import Options, SpecError, Watchdog, load_spec, sd_notify

from .test_docker_api import podman_engine, podman_shell_container  # noqa: F401  (podman_engine: a fixture)

NAME = "vllm"
SPEC = {"name": NAME, "spec_hash": "3f9a1c", "image": "intel/llm-scaler-vllm:0.26.0-b2"}
RESET_29 = "xe 0000:29:00.0: [drm] Tile0: GT0: Engine reset: engine_class=bcs, logical_mask: 0x1, guc_id=32"
RESET_2D = "xe 0000:2d:00.0: [drm] Tile0: GT0: Engine reset: engine_class=bcs, logical_mask: 0x1, guc_id=32"
FIREWALL = "[UFW BLOCK] IN=enp5s0 OUT= SRC=192.168.1.20 DST=192.168.1.255 PROTO=UDP SPT=137 DPT=137"
FIRMWARE = "xe 0000:29:00.0: [drm] Tile0: GT0: Using GuC firmware from xe/bmg_guc_70.bin version 70.60.0"
LOADING = "Loading safetensors checkpoint shards:  75% Completed | 6/8 [00:41<00:13,  6.71s/it]"
READY = "INFO:     Application startup complete."


def kv(tokens: str) -> str:
    return (
        f"(EngineCore_DP0 pid=312) INFO 11-30 14:01:12 "
        f"[kv_cache_utils.py:1087] GPU KV cache size: {tokens} tokens"
    )


# --- fakes ----------------------------------------------------------------------------------------------


class FakeJournal:
    """Kernel entries; follow() marks the end like a cursor and yields only entries after it."""

    def __init__(self, calls, lines=()):
        self.entries = list(lines)
        self.calls = calls
        self.cond = threading.Condition()

    def append(self, line):
        with self.cond:
            self.entries.append(line)
            self.cond.notify_all()

    def follow(self):
        self.calls.append("journal")
        with self.cond:
            return FakeFollower(self, len(self.entries))


class FakeFollower:
    def __init__(self, journal_, mark):
        self.journal, self.next, self.closed = journal_, mark, False

    def __iter__(self):
        cond = self.journal.cond
        while True:
            with cond:
                cond.wait_for(lambda: self.closed or self.next < len(self.journal.entries))
                if self.closed:
                    return
                line = self.journal.entries[self.next]
                self.next += 1
            yield line

    def close(self):
        with self.journal.cond:
            self.closed = True
            self.journal.cond.notify_all()


class Run:
    def __init__(self):
        self.lines = queue.SimpleQueue()
        self.ended = threading.Event()
        self.code = None
        self.ended_at = None

    def end(self, code):
        if not self.ended.is_set():
            self.code = code
            self.ended_at = time.time()
            self.ended.set()
            self.lines.put(None)


class FakeLog:
    def __init__(self, run):
        self.run = run

    def __iter__(self):
        while (line := self.run.lines.get()) is not None:
            yield line

    def close(self):
        self.run.lines.put(None)


class FakeEngine:
    """Plays one script per start: ("log", text), ("kernel", line), ("sleep", s), ("exit", code)."""

    def __init__(self, journal_, calls, scripts, sysroot, exists=True):
        self.journal, self.calls, self.scripts, self.exists = journal_, calls, scripts, exists
        self.sysroot = sysroot
        self.freed: list[str] = []  # devcoredumps the watchdog freed (wrote to their data)
        self.run: Run | None = None
        self.starts = 0
        self.start_times: list[float] = []
        self.runs: list[Run] = []
        self.fail_start = None

    @property
    def running(self):
        return self.run is not None and not self.run.ended.is_set()

    def inspect(self, name):
        if not self.exists:
            return None
        state = {"Running": self.running, "Pid": 100 if self.running else 0}
        if self.run is not None and self.run.ended_at is not None:  # as podman says it: ns, UTC
            whole = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(self.run.ended_at))
            state["FinishedAt"] = f"{whole}.{int(self.run.ended_at % 1 * 1e9):09d}Z"
        return {"State": state, "Config": {"Tty": False}}

    def start(self, name):
        self.calls.append("start")
        if self.fail_start:
            raise DockerError(self.fail_start, 500)
        self.starts += 1
        self.start_times.append(time.time())
        run = self.run = Run()
        self.runs.append(run)
        script = self.scripts[min(self.starts, len(self.scripts)) - 1]
        threading.Thread(target=self._play, args=(run, script), daemon=True).start()

    def _play(self, run, script):
        for step, value in script:
            if step == "kernel":  # the kernel logs whether or not the container still runs
                self.journal.append(value)
            elif step == "coredump":  # xe snapshots the hang of the card at this PCI address
                data = self.sysroot.path(f"/sys/bus/pci/devices/{value}/devcoredump/data")
                data.parent.mkdir()
                data.write_text(f"**** Xe Device Coredump ****\nPCI ID: {value}\n")
            elif step == "sleep" and run.ended.is_set():
                time.sleep(min(value, 1))
            elif run.ended.is_set():
                return
            elif step == "log":
                run.lines.put(value)
            elif step == "sleep":
                run.ended.wait(value)
            elif step == "exit":
                run.end(value)

    def stop(self, name, timeout=30):
        self.calls.append("stop")
        # Writing to a devcoredump's data frees it: the kernel removes it. Check and mimic that.
        for card in self.sysroot.listdir("/sys/class/drm"):
            data = self.sysroot.path(f"/sys/class/drm/{card}/device/devcoredump/data")
            if data.is_file() and data.read_text() == "1":
                self.freed.append(card)
                shutil.rmtree(data.parent)
        if self.running:
            self.run.end(143)

    def wait(self, name):
        run = self.run
        run.ended.wait()
        return run.code

    def logs(self, name, since, follow=True):
        return FakeLog(self.run)

    def pids(self, name, sysroot):
        return process_tree(100, sysroot) if self.running else []


def build_tree(root: Path, dumps=()) -> SysRoot:
    """/proc with the container's processes and sysfs with two B60s (devcoredumps for `dumps`)."""
    for pid, ppid, comm, exe in [
        (1, 0, "systemd", "/usr/lib/systemd/systemd"),
        (100, 90, "vllm", "/usr/bin/python3.12"),
        (101, 100, "VLLM::Worker_TP0", "/usr/bin/python3.12"),
        (102, 100, "VLLM::Worker_TP1", "/usr/bin/python3.12"),
        (103, 100, "sh", "/usr/bin/dash"),
        (200, 1, "python3 (other)", "/usr/bin/python3.11"),
    ]:
        d = root / "proc" / str(pid)
        d.mkdir(parents=True)
        (d / "stat").write_text(
            f"{pid} ({comm}) S {ppid} {pid} {pid} 0 -1 4194560 1 0 0 0 5 3 0 0 20 0 1 0 1\n"
        )
        (d / "exe").symlink_to(exe)
    drm = root / "sys/class/drm"
    drm.mkdir(parents=True)
    for card, address in [("card0", "0000:29:00.0"), ("card1", "0000:2d:00.0")]:
        device = root / "sys/devices/pci0000:00/0000:00:01.1" / address
        device.mkdir(parents=True)
        if address in dumps:
            (device / "devcoredump").mkdir()
            (device / "devcoredump/data").write_text(f"**** Xe Device Coredump ****\nold hang on {address}\n")
        (drm / card).mkdir()
        (drm / card / "device").symlink_to(f"../../../devices/pci0000:00/0000:00:01.1/{address}")
        bus = root / "sys/bus/pci/devices"
        bus.mkdir(parents=True, exist_ok=True)
        (bus / address).symlink_to(f"../../../devices/pci0000:00/0000:00:01.1/{address}")
    (drm / "card0-DP-1").mkdir()  # a connector: no devcoredump of its own
    return SysRoot(root)


def fake_py_spy(directory: Path) -> Path:
    script = directory / "py-spy"
    script.write_text(
        "#!/bin/sh\n"
        '[ "$1" = dump ] && [ "$2" = --pid ] || exit 2\n'
        'echo "Process $3: /usr/bin/python3.12 -m vllm.entrypoints.openai.api_server"\n'
        'echo "Thread 0x7F3A (active): \\"MainThread\\""\n'
        'echo "    copy_ (torch/_tensor.py:1234)"\n'
        'echo "    weight_loader (vllm/model_executor/layers/vocab_parallel_embedding.py:412)"\n'
    )
    script.chmod(0o755)
    return script


class Harness:
    def __init__(self, tmp_path, scripts, journal_lines=(), caches=None, dumps=(), **options):
        self.calls: list[str] = []
        self.journal = FakeJournal(self.calls, journal_lines)
        self.sysroot = build_tree(tmp_path / "root", dumps)
        self.engine = FakeEngine(self.journal, self.calls, scripts, self.sysroot)
        self.reports = tmp_path / "reports"
        self.out: list[str] = []
        self.notified: list[str] = []
        spec = {**SPEC, "caches": [str(c) for c in caches] if caches is not None else []}
        opts = {
            "report_dir": self.reports,
            "attempts": 3,
            "start_timeout": 5.0,
            "dump_settle": 0.2,
            "py_spy": str(fake_py_spy(tmp_path)),
            "until_ready": True,
            **options,
        }
        self.dog = Watchdog(
            spec,
            self.engine,
            Options(**opts),
            journal_factory=self.journal.follow,
            sysroot=self.sysroot,
            notify=lambda state: self.notified.append(state) or True,
            out=self.out.append,
        )

    def run(self) -> int:
        return self.dog.run()

    @property
    def report(self) -> dict:
        return json.loads((self.reports / "latest.json").read_text())

    def said(self, text) -> list[str]:
        return [line for line in self.out if line.startswith("arcops-watchdog: ") and text in line]


def ready_script(tokens="657,184"):
    return [
        ("log", "INFO vLLM API server version 0.26.0"),
        ("log", kv(tokens)),
        ("log", READY),
        ("sleep", 30),
    ]


def hang_script():
    return [
        ("log", LOADING),
        ("kernel", RESET_29),
        ("kernel", RESET_2D),
        ("sleep", 0.05),  # the devcoredumps show up a moment after the resets
        ("coredump", "0000:29:00.0"),
        ("coredump", "0000:2d:00.0"),
        ("sleep", 30),
    ]


# --- scenarios ------------------------------------------------------------------------------------------


def test_ready_first_time_ignores_old_and_non_xe_kernel_lines(tmp_path):
    # An engine reset from before the start is in the journal; the start logs only non-xe lines.
    script = [("kernel", FIREWALL), ("kernel", FIRMWARE), *ready_script()]
    h = Harness(tmp_path, [script], journal_lines=[RESET_29, RESET_2D])
    assert h.run() == 0
    assert h.calls == ["journal", "start"]  # the journal mark comes before the start; no stop
    report = h.report
    assert report["result"] == "ready" and report["exit_code"] == 0
    [attempt] = report["attempts"]
    assert attempt["outcome"] == "ready"
    assert attempt["kv_cache_tokens"] == 657184
    assert attempt["events"] == [] and attempt["stacks"] == [] and attempt["devcoredumps"] == []
    assert 0 <= attempt["seconds_to_ready"] < 5
    assert kv("657,184") in h.out and READY in h.out  # the container's log goes to stdout
    assert h.said("attempt 1/3: ready after") and h.said("657,184 tokens")
    assert h.notified == []  # --until-ready: no READY=1, the container is left running
    assert h.engine.running


def test_xe_event_stacks_dumps_stop_and_retry(tmp_path):
    h = Harness(tmp_path, [hang_script(), ready_script()])
    assert h.run() == 0
    assert h.calls == ["journal", "start", "stop", "journal", "start"]
    report = h.report
    first, second = report["attempts"]
    assert first["outcome"] == "xe_event" and second["outcome"] == "ready"
    assert [(e["kind"], e["device"]) for e in first["events"]] == [
        ("engine_reset", "0000:29:00.0"),
        ("engine_reset", "0000:2d:00.0"),  # the second card's reset, collected while settling
    ]
    assert first["events"][0]["detail"] == {"engine_class": "bcs", "logical_mask": "0x1", "guc_id": 32}
    assert first["events"][0]["line"] == RESET_29
    # Stacks of the python processes in the container only: not sh (103), not another python (200).
    assert [s["pid"] for s in first["stacks"]] == [100, 101, 102]
    for stack in first["stacks"]:
        text = Path(stack["file"]).read_text()
        assert f"Process {stack['pid']}:" in text and "weight_loader" in text
    artifacts = h.reports / h.dog.stamp / "attempt-1"
    assert Path(first["stacks"][0]["file"]).parent == artifacts
    # Each devcoredump copied off, then freed by a write to its data file (before the stop).
    assert [(d["card"], d["device"]) for d in first["devcoredumps"]] == [
        ("card0", "0000:29:00.0"),
        ("card1", "0000:2d:00.0"),
    ]
    for dump in first["devcoredumps"]:
        assert Path(dump["file"]).read_text() == f"**** Xe Device Coredump ****\nPCI ID: {dump['device']}\n"
    assert h.engine.freed == ["card0", "card1"]
    assert report["devcoredumps_before_start"] == []
    assert second["events"] == [] and second["kv_cache_tokens"] == 657184
    line = h.said("attempt 1/3: xe engine_reset on 0000:29:00.0 GT0")
    assert (
        line and "before startup complete; stacks -> " in line[0] and "(3 of 3 python processes)" in line[0]
    )
    assert h.said("attempt 1/3: stopping vllm") and h.said("attempt 1/3: starting again")
    assert h.said("attempt 2/3: ready after")


def test_a_devcoredump_from_before_is_saved_and_freed_first(tmp_path):
    # Only the first hang is kept until freed: an old dump would stand in for this start's.
    h = Harness(tmp_path, [ready_script()], dumps=("0000:2d:00.0",))
    assert h.run() == 0
    [old] = h.report["devcoredumps_before_start"]
    assert (old["card"], old["device"]) == ("card1", "0000:2d:00.0")
    assert Path(old["file"]).parent == h.reports / h.dog.stamp / "before-start"
    assert Path(old["file"]).read_text().endswith("old hang on 0000:2d:00.0\n")
    assert h.sysroot.path("/sys/class/drm/card1/device/devcoredump/data").read_text() == "1"
    assert h.said("devcoredump from before this start: card1 (0000:2d:00.0) -> ")


def test_a_hang_without_devcoredump(tmp_path):
    # Some resets never produce one (docs/field-knowledge.md).
    h = Harness(tmp_path, [[("kernel", RESET_29), ("sleep", 30)], ready_script()])
    assert h.run() == 0
    assert h.report["attempts"][0]["devcoredumps"] == []
    assert h.said("attempt 1/3: no devcoredump after 0.2 s")


def test_xe_events_on_every_attempt(tmp_path):
    h = Harness(tmp_path, [hang_script()])
    assert h.run() == 3
    assert h.calls == ["journal", "start", "stop"] * 3
    report = h.report
    assert report["result"] == "xe_events" and report["exit_code"] == 3
    assert [a["outcome"] for a in report["attempts"]] == ["xe_event"] * 3
    assert all(len(a["events"]) == 2 for a in report["attempts"])
    assert h.said("xe events on all 3 attempts: giving up")


def test_a_crash_is_not_retried(tmp_path):
    h = Harness(tmp_path, [[("log", "RuntimeError: out of memory"), ("exit", 1)], ready_script()])
    assert h.run() == 1
    assert h.calls == ["journal", "start"]
    report = h.report
    assert report["result"] == "crash" and report["exit_code"] == 1
    [attempt] = report["attempts"]
    assert attempt["outcome"] == "crash" and attempt["exit_code"] == 1
    assert h.said("exited with code 1 before startup complete and no xe event: crash")


def test_an_exit_with_a_late_xe_line_is_a_hang_not_a_crash(tmp_path):
    # vLLM died of the hang; the kernel line reaches the journal just after the exit.
    died = [("log", LOADING), ("exit", 1), ("sleep", 0.05), ("kernel", RESET_29)]
    h = Harness(tmp_path, [died, ready_script()])
    assert h.run() == 0
    first, second = h.report["attempts"]
    assert first["outcome"] == "xe_event" and first["exit_code"] == 1
    assert first["stacks"] == []  # nothing left to dump
    assert second["outcome"] == "ready"


def test_timeout_stops_and_does_not_retry(tmp_path):
    h = Harness(tmp_path, [[("log", LOADING), ("sleep", 30)]], start_timeout=0.4)
    started = time.monotonic()
    assert h.run() == 4
    assert time.monotonic() - started < 3
    assert h.calls == ["journal", "start", "stop"]
    report = h.report
    assert report["result"] == "timeout" and report["exit_code"] == 4
    assert report["attempts"][0]["outcome"] == "timeout"
    assert [s["pid"] for s in report["attempts"][0]["stacks"]] == [100, 101, 102]  # why it hung
    assert not h.engine.running


def test_py_spy_missing_is_recorded_not_fatal(tmp_path):
    h = Harness(tmp_path, [hang_script(), ready_script()], py_spy=str(tmp_path / "no-such-py-spy"))
    assert h.run() == 0
    stacks = h.report["attempts"][0]["stacks"]
    assert [s["pid"] for s in stacks] == [100, 101, 102]
    assert all("not found" in s["error"] and "file" not in s for s in stacks)


def test_py_spy_failures_and_hangs_are_recorded_per_process(tmp_path):
    py_spy = tmp_path / "py-spy-flaky"
    py_spy.write_text(
        "#!/bin/sh\n"
        'case "$3" in\n'
        "  101) exec sleep 30 ;;\n"
        '  102) echo "Error: Failed to find python version from target process" >&2; exit 1 ;;\n'
        '  *) echo "Thread 0x7F3A (idle)" ;;\n'
        "esac\n"
    )
    py_spy.chmod(0o755)
    h = Harness(tmp_path, [hang_script(), ready_script()], py_spy=str(py_spy), py_spy_timeout=0.5)
    started = time.monotonic()
    assert h.run() == 0
    assert time.monotonic() - started < 3
    ok, hung, failed = h.report["attempts"][0]["stacks"]
    assert ok["pid"] == 100 and Path(ok["file"]).read_text() == "Thread 0x7F3A (idle)\n"
    assert hung == {"pid": 101, "exe": "python3.12", "error": "py-spy took more than 0.5 s"}
    assert failed["pid"] == 102 and "exited 1: Error: Failed to find python version" in failed["error"]


def test_warm_restart_when_the_caches_are_cold(tmp_path):
    cache = tmp_path / "cache/vllm-compile"
    cache.mkdir(parents=True)
    marker = cache / ".arcops-warm-3f9a1c"
    (cache / ".arcops-warm-0ld5pec").write_text("another spec\n")
    h = Harness(
        tmp_path, [ready_script("553,184"), ready_script("657,184")], caches=[cache], warm_restart=True
    )
    assert h.run() == 0
    assert marker.exists()
    assert h.calls == ["journal", "start", "stop", "journal", "start"]
    report = h.report
    assert report["caches_cold"] is True
    assert [(a["outcome"], a["warm_restart"], a["kv_cache_tokens"]) for a in report["attempts"]] == [
        ("ready", False, 553184),
        ("ready", True, 657184),
    ]
    assert report["warm_restart"] == {
        "requested": True,
        "done": True,
        "cold_kv_cache_tokens": 553184,
        "kv_cache_tokens": 657184,
    }
    assert h.said("warm restart: GPU KV cache 553,184 tokens cold -> 657,184 warm")
    # podman stamps log lines in whole seconds: the restart waits for the second after the first
    # run ended, so that run's lines cannot pass for the new one's.
    assert int(h.engine.start_times[1]) > int(h.engine.runs[0].ended_at)


def test_no_warm_restart_when_the_caches_are_warm(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / ".arcops-warm-3f9a1c").write_text("")
    h = Harness(tmp_path, [ready_script()], caches=[cache], warm_restart=True)
    assert h.run() == 0
    assert h.calls == ["journal", "start"]
    report = h.report
    assert report["caches_cold"] is False
    assert report["warm_restart"]["done"] is False and len(report["attempts"]) == 1


def test_cold_caches_without_warm_restart_only_write_the_marker(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    h = Harness(tmp_path, [ready_script()], caches=[cache])
    assert h.run() == 0
    assert h.calls == ["journal", "start"]
    assert (cache / ".arcops-warm-3f9a1c").exists()
    assert h.report["caches_cold"] is True and h.report["warm_restart"]["done"] is False


def test_a_hang_on_the_warm_restart_is_retried_too(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    h = Harness(
        tmp_path, [ready_script("553,184"), hang_script(), ready_script()], caches=[cache], warm_restart=True
    )
    assert h.run() == 0
    report = h.report
    assert [(a["n"], a["outcome"], a["warm_restart"]) for a in report["attempts"]] == [
        (1, "ready", False),
        (2, "xe_event", True),
        (3, "ready", True),
    ]
    assert h.said("warm restart: attempt 1/3: xe engine_reset")
    assert report["warm_restart"]["done"] is True


# --- running under systemd --------------------------------------------------------------------------


def _datagram_socket(address):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(address)
    sock.settimeout(5)
    return sock


def test_ready_notifies_systemd_then_forwards_the_log_until_sigterm(tmp_path):
    with tempfile.TemporaryDirectory(prefix="arcops-notify-") as d:
        address = os.path.join(d, "notify")
        with _datagram_socket(address) as sock:
            script = [
                *ready_script()[:-1],
                ("sleep", 0.3),
                ("log", "INFO 127.0.0.1 - POST /v1/chat/completions 200"),
            ]
            h = Harness(tmp_path, [[*script, ("sleep", 30)]], until_ready=False)
            h.dog.notify = lambda state: sd_notify(state, {"NOTIFY_SOCKET": address})
            result = []
            runner = threading.Thread(target=lambda: result.append(h.run()))
            runner.start()
            message = sock.recv(4096).decode()
            assert message.splitlines()[0] == "READY=1"
            deadline = time.monotonic() + 5
            while (
                "INFO 127.0.0.1 - POST /v1/chat/completions 200" not in h.out and time.monotonic() < deadline
            ):
                time.sleep(0.02)
            assert "INFO 127.0.0.1 - POST /v1/chat/completions 200" in h.out  # forwarded after ready
            h.dog.request_stop(15)
            runner.join(timeout=5)
    assert result == [0]
    assert h.calls == ["journal", "start", "stop"]
    assert h.report["result"] == "ready" and h.report["stopped_by_signal"] == 15
    assert h.said("READY=1 sent to systemd") and h.said("signal 15: stopping vllm")


def test_sd_notify_abstract_socket_and_no_socket():
    name = f"arcops-test-{uuid.uuid4().hex}"
    with _datagram_socket("\0" + name) as sock:
        assert sd_notify("READY=1", {"NOTIFY_SOCKET": "@" + name}) is True
        assert sock.recv(100) == b"READY=1"
    assert sd_notify("READY=1", {}) is False


def test_a_crash_after_ready(tmp_path):
    h = Harness(tmp_path, [[*ready_script()[:-1], ("sleep", 0.2), ("exit", 137)]], until_ready=False)
    assert h.run() == 1
    assert h.notified and h.notified[0].startswith("READY=1")
    report = h.report
    assert report["result"] == "crash" and report["exit_code"] == 1
    assert report["attempts"][0]["outcome"] == "ready" and report["attempts"][0]["exit_code"] == 137
    assert h.said("vllm exited with code 137 after startup: crash")


def test_sigterm_before_ready_stops_the_container(tmp_path):
    h = Harness(tmp_path, [[("log", LOADING), ("sleep", 30)]])
    threading.Timer(0.3, h.dog.request_stop, args=(15,)).start()
    assert h.run() == 0
    assert h.calls == ["journal", "start", "stop"]
    assert h.report["result"] == "stopped" and h.report["attempts"][0]["outcome"] == "stopped"


# --- errors and the report ------------------------------------------------------------------------------


def test_missing_container_and_engine_errors(tmp_path):
    h = Harness(tmp_path / "a", [ready_script()])
    h.engine.exists = False
    assert h.run() == 2
    assert h.report["result"] == "error" and "does not exist" in h.report["error"]
    h = Harness(tmp_path / "b", [ready_script()])
    h.engine.fail_start = "error gathering device information while adding custom device"
    assert h.run() == 2
    assert h.report["result"] == "error" and "error gathering device information" in h.report["error"]
    assert h.report["attempts"][0]["outcome"] is None


def test_a_running_container_is_stopped_first(tmp_path):
    h = Harness(tmp_path, [ready_script()])
    h.engine.start(NAME)
    h.calls.clear()
    assert h.run() == 0
    assert h.calls == ["stop", "journal", "start"]


def test_report_files(tmp_path):
    h = Harness(tmp_path, [hang_script(), ready_script()])
    assert h.run() == 0
    stamped = h.reports / f"{h.dog.stamp}.json"
    assert json.loads(stamped.read_text()) == h.report
    report = h.report
    assert set(report) >= {
        "spec_hash",
        "container",
        "started_at",
        "caches_cold",
        "result",
        "exit_code",
        "attempts",
        "warm_restart",
    }
    assert (report["spec_hash"], report["container"], report["caches_cold"]) == ("3f9a1c", NAME, None)
    assert report["started_at"].endswith("Z")
    for attempt in report["attempts"]:
        assert set(attempt) >= {
            "n",
            "started_at",
            "outcome",
            "seconds_to_ready",
            "kv_cache_tokens",
            "exit_code",
            "events",
            "stacks",
            "devcoredumps",
        }
    assert not list(h.reports.glob(".*.tmp"))  # atomic writes leave nothing behind
    assert h.said(f"report -> {stamped}")


def test_load_spec(tmp_path):
    good = tmp_path / "spec.json"
    good.write_text(json.dumps({**SPEC, "caches": ["/srv/cache/vllm-compile", "/srv/cache/triton"]}))
    assert load_spec(good)["caches"][1] == "/srv/cache/triton"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"caches": "/srv/cache"}))
    with pytest.raises(SpecError, match=r"`name`.*`spec_hash`.*`caches`"):
        load_spec(bad)
    with pytest.raises(SpecError, match="cannot read"):
        load_spec(tmp_path / "missing.json")


def test_cli_refuses_a_bad_spec(tmp_path, capsys):
    assert main(["watchdog", "--spec", str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["watchdog", "--spec", "x.json", "--attempts", "0"])
    assert e.value.code == 2


def test_cli_engine_unreachable(tmp_path, capsys):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({**SPEC, "caches": []}))
    reports = tmp_path / "reports"
    code = main(
        [
            "watchdog",
            "--spec",
            str(spec),
            "--docker-host",
            f"unix://{tmp_path}/none.sock",
            "--report-dir",
            str(reports),
        ]
    )
    assert code == 2
    report = json.loads((reports / "latest.json").read_text())
    assert report["result"] == "error" and "docker engine" in report["error"]


# --- journal following against a real journald ------------------------------------------------------


def test_follow_argv_prefers_the_cursor():
    argv = journal.follow_argv("s=abc;i=5", 1796047200.25)
    assert argv[1:] == [
        "-k",
        "-f",
        "--no-tail",
        "-o",
        "json",
        "--output-fields=MESSAGE",
        "-q",
        "--after-cursor=s=abc;i=5",
    ]
    assert journal.follow_argv(None, 1796047200.25)[-1] == "--since=@1796047200.250000"


def _collect(follower, into):
    thread = threading.Thread(target=lambda: into.extend(follower), daemon=True)
    thread.start()
    return thread


def test_journal_follow_has_no_gap_and_no_old_lines(journald_namespace):
    selection, log = journald_namespace
    # A fresh journal has no cursor: following falls back to --since with the time of the call.
    assert journal.cursor(selection) is None
    first = journal.follow(selection)
    assert any(a.startswith("--since=@") for a in first.argv)
    log(RESET_29)
    log(FIREWALL)
    time.sleep(0.3)
    assert journal.cursor(selection) is not None
    # The mark is taken now; lines logged before journalctl got going (12 > its default tail of 10)
    # must still come, the older ones must not.
    follower = journal.follow(selection)
    assert any(a.startswith("--after-cursor=") for a in follower.argv)
    for i in range(12):
        log(f"burst {i}")
    got, got_first = [], []
    threads = [_collect(follower, got), _collect(first, got_first)]
    time.sleep(0.3)
    log(RESET_2D)
    deadline = time.monotonic() + 5
    while RESET_2D not in got and time.monotonic() < deadline:
        time.sleep(0.02)
    follower.close()
    first.close()
    for thread in threads:
        thread.join(timeout=5)
    assert got == [f"burst {i}" for i in range(12)] + [RESET_2D]
    assert got_first[:2] == [RESET_29, FIREWALL]


def test_follower_survives_binary_and_multi_valued_messages(journald_namespace):
    """journalctl -o json writes a MESSAGE that is not UTF-8 as an array of bytes, and a field
    logged twice as an array of values: neither may end the reader (xe events would go unseen)."""
    selection, log = journald_namespace
    log("mark")
    time.sleep(0.3)
    follower = journal.follow(selection)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    socket_path = f"/run/systemd/journal.{selection[0].removeprefix('--namespace=')}/socket"
    binary = b"xe 0000:29:00.0: \xff\xfe not UTF-8"
    sock.sendto(  # the native protocol's binary form: name, newline, 64-bit length, data
        b"SYSLOG_IDENTIFIER=arcops-test\nMESSAGE\n" + len(binary).to_bytes(8, "little") + binary + b"\n",
        socket_path,
    )
    sock.sendto(b"SYSLOG_IDENTIFIER=arcops-test\nMESSAGE=first value\nMESSAGE=second value\n", socket_path)
    sock.close()
    log(RESET_2D)
    got: list[str] = []
    thread = _collect(follower, got)
    deadline = time.monotonic() + 5
    while RESET_2D not in got and time.monotonic() < deadline:
        time.sleep(0.02)
    follower.close()
    thread.join(timeout=5)
    assert got[0] == "xe 0000:29:00.0: \ufffd\ufffd not UTF-8"
    assert got[1:3] == ["first value", "second value"]
    assert got[-1] == RESET_2D


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"MESSAGE": [120, 101]}', ["xe"]),
        ('{"MESSAGE": ["a", [98]]}', ["a", "b"]),
        ('{"MESSAGE": null}', []),
        ('{"MESSAGE": 7}', ["7"]),
        ('{"MESSAGE": [1000, -1]}', ["[1000, -1]"]),
        ('{"MESSAGE": {"x": 1}}', ['{"x": 1}']),
        ("[1, 2]", ["[1, 2]"]),
        ("not json at all", ["not json at all"]),
        ("[" * 100_000, ["[" * 100_000]),
    ],
)
def test_any_journal_line_becomes_text(line, message):
    assert journal._message(line).splitlines() == message


# --- the command against podman's Docker API, when podman works here ---------------------------------


def test_cli_until_ready_against_podman(podman_engine, tmp_path, capsys):  # noqa: F811
    if shutil.which("journalctl") is None:
        pytest.skip("journalctl is not installed")
    script = (
        'trap "exit 0" TERM; echo "GPU KV cache size: 553,184 tokens"; '
        'echo "INFO:     Application startup complete."; while :; do sleep 0.2; done'
    )
    with podman_shell_container("arcops-watchdog", script) as name:
        cache = tmp_path / "cache"
        cache.mkdir()
        spec = tmp_path / "spec.json"
        spec.write_text(json.dumps({"name": name, "caches": [str(cache)], "spec_hash": "abc123"}))
        args = ["watchdog", "--spec", str(spec), "--docker-host", f"unix://{podman_engine.path}"]
        args += ["--report-dir", str(tmp_path / "reports"), "--until-ready", "--start-timeout", "20"]
        assert main(args) == 0
        out = capsys.readouterr().out
        assert "INFO:     Application startup complete." in out
        report = json.loads((tmp_path / "reports/latest.json").read_text())
        assert report["result"] == "ready" and report["attempts"][0]["kv_cache_tokens"] == 553184
        assert (cache / ".arcops-warm-abc123").exists()
        assert podman_engine.inspect(name)["State"]["Running"] is True  # left running
