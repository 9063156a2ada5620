"""The watchdog tests' stand-ins: a journal, an engine and a container log that script what a
real start does (kernel lines, xe resets, vLLM's start-up lines), and a harness that runs one."""

from __future__ import annotations

import json
import queue
import shutil
import threading
import time
from pathlib import Path

from arcops.common.sysroot import SysRoot
from arcops.vllm.docker_api import DockerError, process_tree
from arcops.vllm.watchdog import Options, Watchdog

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
