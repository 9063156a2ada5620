"""The watchdog's refusals, its report files and the command line; journal following against a
real journald; the command against podman's Docker API."""

from __future__ import annotations

import json
import shutil
import socket
import threading
import time

import pytest
from arcops.box import journal
from arcops.cli import main
from arcops.vllm.watchdog import SpecError, load_spec

from .helpers.podman import podman_shell_container
from .helpers.watchdog_fakes import (
    FIREWALL,
    NAME,
    RESET_2D,
    RESET_29,
    SPEC,
    Harness,
    hang_script,
    ready_script,
)

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
    assert main(["vllm", "watchdog", "--spec", str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["vllm", "watchdog", "--spec", "x.json", "--attempts", "0"])
    assert e.value.code == 2


def test_cli_engine_unreachable(tmp_path, capsys):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({**SPEC, "caches": []}))
    reports = tmp_path / "reports"
    code = main(
        [
            "vllm",
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
    deadline = time.monotonic() + 30  # returns as soon as it is there; a loaded machine is slow
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
    deadline = time.monotonic() + 30  # returns as soon as it is there; a loaded machine is slow
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


def test_cli_until_ready_against_podman(podman_engine, tmp_path, capsys):
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
        args = ["vllm", "watchdog", "--spec", str(spec), "--docker-host", f"unix://{podman_engine.path}"]
        args += ["--report-dir", str(tmp_path / "reports"), "--until-ready", "--start-timeout", "20"]
        assert main(args) == 0
        out = capsys.readouterr().out
        assert "INFO:     Application startup complete." in out
        report = json.loads((tmp_path / "reports/latest.json").read_text())
        assert report["result"] == "ready" and report["attempts"][0]["kv_cache_tokens"] == 553184
        assert (cache / ".arcops-warm-abc123").exists()
        assert podman_engine.inspect(name)["State"]["Running"] is True  # left running
