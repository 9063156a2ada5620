"""The watch after start-up (arcops.vllm.health_watch), run look by look with its box played by
callables: /metrics texts as vLLM writes them, kernel lines from the real xe hang, a clock."""

from __future__ import annotations

import json
import urllib.error

from arcops.vllm import health_watch

from .helpers.health_watch_box import HANG, Box, metrics


def test_a_stall_takes_evidence_restarts_and_reports(tmp_path):
    box = Box([metrics(4, 100)] + [metrics(4, 5120)] * 5 + [metrics(0, 0)])
    watch = box.watch(tmp_path, stall_seconds=30)
    reports = box.run(watch, 7, every=10)
    assert [r["state"] if r else None for r in reports] == [None, None, None, None, "stall", None, None]
    stall = reports[4]
    assert stall["restarted"] and box.restarts == [1_000_040.0]
    assert box.evidence == ["health-19700112T134720Z"]
    assert stall["detail"] == "4 request(s) running and no token generated for 30 s (stall after 30 s)"
    assert json.loads((tmp_path / "health-latest.json").read_text())["state"] == "stall"
    assert json.loads((tmp_path / health_watch.RESTARTS_FILE).read_text()) == [1_000_040.0]


def test_a_stall_that_outlives_its_restarts_is_left_to_a_person_not_looped(tmp_path):
    box = Box([metrics(2, 7)] * 200)
    watch = box.watch(tmp_path, stall_seconds=20, max_restarts_per_hour=2, min_interval=60)
    reports = [r for r in box.run(watch, 200, every=10) if r]
    assert len(box.restarts) == 2 and box.restarts[1] - box.restarts[0] >= 60
    # Each refusal said once: the pause between restarts, then the hour's limit (not every look).
    refused = [r["why_not"] for r in reports if not r["restarted"]]
    assert len(refused) == 2 and refused[0] == "last restart 30 s ago (at least 60 s apart)"
    assert refused[-1].startswith("2 restart(s) in the last hour (limit 2)")
    # A new watch (the service restarted it) still knows the restarts it made.
    again = Box([metrics(2, 7)] * 10)
    again.t = box.t
    later = again.watch(tmp_path, stall_seconds=20, max_restarts_per_hour=2, min_interval=60)
    assert [r["restarted"] for r in again.run(later, 10, every=10) if r] == [False]
    assert again.restarts == []


def test_a_new_xe_reset_restarts_even_while_tokens_flow(tmp_path):
    box = Box([metrics(1, 10), metrics(1, 20)], kernel=[[], HANG])
    reports = box.run(box.watch(tmp_path), 2, every=10)
    assert reports[0] is None and reports[1]["state"] == "xe_event" and reports[1]["restarted"]
    assert reports[1]["xe_events"]["engine_reset"] == 2


def test_silence_is_reported_once_and_left_to_systemd(tmp_path):
    gone = urllib.error.URLError(ConnectionRefusedError(111, "Connection refused"))
    box = Box([gone] * 8 + [metrics(0, 0)])
    reports = box.run(box.watch(tmp_path, unreachable_after=3), 9, every=10)
    assert [r["state"] if r else None for r in reports] == [None, None, "unreachable", *[None] * 6]
    assert not reports[2]["restarted"] and "not answering for 3 look(s)" in reports[2]["detail"]
    assert box.restarts == []


def test_a_restart_is_counted_before_it_is_asked_for_and_a_refused_one_is_reported(tmp_path):
    """The restart goes on record first, so a watch killed by the restart it asked for (or a
    systemctl that fails) still counts it: no crash turns the policy into a loop."""
    box = Box([metrics(1, 5)] * 4)
    watch = box.watch(tmp_path, stall_seconds=20, max_restarts_per_hour=1, min_interval=0)

    def refused():
        assert json.loads((tmp_path / health_watch.RESTARTS_FILE).read_text()) == [box.t]
        raise health_watch.RestartError("systemctl restart arcops-vllm: Unit arcops-vllm.service not found.")

    watch.restart = refused
    reports = [r for r in box.run(watch, 4, every=10) if r]
    assert not reports[0]["restarted"] and reports[0]["restart_error"].endswith("not found.")
    assert json.loads((tmp_path / health_watch.RESTARTS_FILE).read_text()) == [1_000_020.0]


def test_the_loop_looks_only_while_the_unit_is_up(tmp_path):
    """health_box.run: while the unit starts (its start watchdog's watch) kernel lines are dropped
    and silence is no report; once up, a stall is said in one line."""
    import threading

    from arcops.vllm import health_box

    box = Box([metrics(1, 5)] * 5, kernel=[HANG, HANG])
    watch = box.watch(tmp_path, stall_seconds=20, unreachable_after=1)
    up = iter([False, False, True, True, True, True, True])
    said: list[str] = []

    class Clock(threading.Event):
        def wait(self, timeout=None):
            box.t += timeout
            return False

    assert health_box.run(watch, 10, lambda: next(up), Clock(), said.append, looks=7) == 0
    # The xe hang lines came while the unit was starting: the start watchdog's, not a restart.
    assert box.restarts == [1_000_040.0] and len(said) == 1 and said[0].startswith("stall: 1 request(s)")


def test_kernel_lines_are_gathered_by_a_thread_and_taken_once():
    import time

    from arcops.vllm import health_box

    lines = health_box.KernelLines(iter(HANG[:3]))
    deadline = time.monotonic() + 30  # returns as soon as it is there; a loaded machine is slow
    taken: list[str] = []
    while len(taken) < 3 and time.monotonic() < deadline:
        taken += lines()
    assert taken == HANG[:3] and lines() == []
    lines.close()
