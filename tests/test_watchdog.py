"""The xe watchdog with fakes: engine, kernel journal, /proc and sysfs trees, py-spy; real sd_notify sockets.

Also journal following (arcops.box.journal.follow) against a real journald, in a namespace of its own.
"""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import time
import uuid
from pathlib import Path

from arcops.vllm.watchdog import sd_notify

from .helpers.watchdog_fakes import (
    FIREWALL,
    FIRMWARE,
    LOADING,
    READY,
    RESET_2D,
    RESET_29,
    Harness,
    hang_script,
    kv,
    ready_script,
)

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
            deadline = time.monotonic() + 30  # returns as soon as it is there; a loaded machine is slow
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
