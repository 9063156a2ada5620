"""A server that stays stuck after the health watch restarted it (arcops.vllm.health_watch): no
progress since the restart and a stall or a hang again means the restart did not help, so the box
goes out of service as for a wedged GPU (evidence, the server stopped, the mark, a reboot where
allowed) instead of restarting in a loop; progress after the restart clears it. The box is played
by callables, /metrics as vLLM writes it."""

from __future__ import annotations

import json

from arcops.fleet import fleet_status
from arcops.vllm import out_of_service

from .helpers.health_watch_box import HANG, Box, metrics


def watch_with_mark(box: Box, tmp_path, **options):
    watch = box.watch(tmp_path / "reports", stall_seconds=20, min_interval=0, **options)
    box.stopped = []
    watch.stop = lambda: box.stopped.append(box.t)
    watch.out_of_service = tmp_path / "run" / "vllm-out-of-service.json"
    return watch


def test_a_stall_again_after_the_restart_takes_the_box_out_of_service(tmp_path):
    box = Box([metrics(2, 7)] * 12)
    watch = watch_with_mark(box, tmp_path)
    reports = [r for r in box.run(watch, 12, every=10) if r]
    assert [r["state"] for r in reports] == ["stall", "stuck"]
    assert reports[0]["restarted"] and box.restarts == [1_000_020.0]
    stuck = reports[1]
    assert stuck["restarted"] is False and box.stopped == [1_000_050.0]
    assert stuck["detail"].startswith("2 request(s) running and no token generated for 20 s")
    assert stuck["detail"].endswith("again after its restart: the restart did not help")
    assert stuck["why_not"].startswith("vLLM stopped, the box out of service")
    assert box.evidence == ["health-19700112T134700Z", "health-19700112T134730Z"]
    mark = json.loads((tmp_path / "run" / "vllm-out-of-service.json").read_text())
    assert mark["state"] == "stuck" and mark["cards"] == []
    assert out_of_service.sentence(mark).endswith(
        "stayed stuck after a restart; a reboot puts it back in service"
    )
    row = fleet_status.box_facts({}, {}, {"result": "ready"}, 0, mark)
    assert row["start"] == "OUT OF SERVICE (stuck after a restart)"


def test_an_engine_reset_after_the_restart_with_no_progress_is_stuck_too(tmp_path):
    box = Box([metrics(1, 10), metrics(1, 20), metrics(1, 0), metrics(1, 0)], kernel=[[], HANG, [], HANG])
    watch = watch_with_mark(box, tmp_path)
    reports = [r for r in box.run(watch, 4, every=10) if r]
    assert [r["state"] for r in reports] == ["xe_event", "stuck"]
    assert box.restarts == [1_000_010.0] and box.stopped == [1_000_030.0]
    mark = json.loads((tmp_path / "run" / "vllm-out-of-service.json").read_text())
    assert mark["cards"] == ["0000:29:00.0", "0000:2d:00.0"]  # the cards the kernel named


def test_progress_after_the_restart_makes_the_next_stall_a_new_one(tmp_path):
    flowing = [metrics(2, 7 + 10 * n) for n in range(1, 4)]
    box = Box([metrics(2, 7)] * 3 + flowing + [metrics(2, 40)] * 4)
    watch = watch_with_mark(box, tmp_path)
    reports = [r for r in box.run(watch, 10, every=10) if r]
    assert [r["state"] for r in reports] == ["stall", "stall"]
    assert all(r["restarted"] for r in reports) and len(box.restarts) == 2 and box.stopped == []
    assert not (tmp_path / "run" / "vllm-out-of-service.json").exists()


def test_a_watch_without_a_mark_to_write_restarts_as_before(tmp_path):
    box = Box([metrics(2, 7)] * 12)
    reports = [r for r in box.run(box.watch(tmp_path, stall_seconds=20, min_interval=0), 12, every=10) if r]
    # Three restarts in the hour, then the refusal said once (the policy's limit).
    assert [r["state"] for r in reports] == ["stall"] * 4 and len(box.restarts) == 3
