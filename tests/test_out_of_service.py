"""A wedged GPU takes the box out of service (vllm/out_of_service.py): the health watch, seeing a
failed GT reset in the kernel journal, takes the evidence, stops vLLM instead of restarting it
and marks the box; the start watchdog then refuses to start (exit 2, which the unit does not
retry); the metrics and `arcops fleet status` say so. The kernel lines are the xe driver's own
(tests/fixtures/journal/xe-mainline-pagefaults.cat.log), the box's parts fakes and a fixture root."""

from __future__ import annotations

import json
from pathlib import Path

from arcops.common.prometheus_text import render
from arcops.fleet import fleet_status
from arcops.operate import metrics
from arcops.vllm import out_of_service
from arcops.vllm.health_watch import HealthWatch, Options, RestartError

from .helpers.watchdog_fakes import Harness, ready_script

JOURNAL = Path(__file__).parent / "fixtures" / "journal" / "xe-mainline-pagefaults.cat.log"
WEDGED = [line for line in JOURNAL.read_text().splitlines() if "reset failed" in line or "wedged" in line]
RUNNING = (
    'vllm:num_requests_running{engine="0",model_name="m"} 1.0\n'
    'vllm:num_requests_waiting{engine="0",model_name="m"} 0.0\n'
    'vllm:generation_tokens_total{engine="0",model_name="m"} 40.0\n'
)


def _watch(
    tmp_path: Path, done: list[str], lines: list[list[str]], per_day: int = 0, at: float = 1_796_500_000.0
) -> HealthWatch:
    return HealthWatch(
        "http://127.0.0.1:8000",
        tmp_path / "reports",
        Options(max_reboots_per_day=per_day),
        new_kernel_lines=lambda: lines.pop(0) if lines else [],
        evidence=lambda where: (
            done.append("evidence") or {"dir": str(where), "stacks": [], "devcoredumps": []}
        ),
        restart=lambda: done.append("restart"),
        fetch=lambda url: RUNNING,
        monotonic=lambda: 100.0,
        wall=lambda: at,
        stop=lambda: done.append("stop"),
        out_of_service=tmp_path / "run" / "arcops" / "vllm-out-of-service.json",
        reboot=lambda: done.append("reboot"),
        reboots=tmp_path / "var" / "wedged-reboots.json",
    )


def test_a_failed_gt_reset_stops_vllm_and_marks_the_box_instead_of_restarting(tmp_path):
    assert WEDGED[0].endswith("reset failed (-ETIMEDOUT)")
    done: list[str] = []
    watch = _watch(tmp_path, done, [[], WEDGED])
    assert watch.step() is None  # serving, no kernel line: all is well
    report = watch.step()
    assert done == ["evidence", "stop"]  # evidence first, then stopped; never restarted
    assert report["state"] == "wedged" and report["restarted"] is False
    assert report["detail"] == "GT reset failed on 0000:03:00.0: the GPU is wedged"
    mark = json.loads((tmp_path / "run/arcops/vllm-out-of-service.json").read_text())
    assert mark["cards"] == ["0000:03:00.0"] and mark["since"] == "2026-12-05T19:46:40Z"
    assert mark["evidence"].endswith(report["evidence"]["dir"].rsplit("/", 1)[1])
    latest = json.loads((tmp_path / "reports/health-latest.json").read_text())
    assert latest["state"] == "wedged" and latest["rebooted"] is False
    assert latest["why_not"].endswith(
        "rebooting is not allowed here (arcops_allow_reboot): the box needs a person"
    )
    # The kernel's own lines are kept with the evidence, whatever the journal keeps.
    assert Path(report["evidence"]["kernel_log"]).read_text().splitlines() == WEDGED


def test_a_wedged_gpu_reboots_the_box_within_its_daily_limit(tmp_path):
    day = out_of_service.DAY
    ledger = tmp_path / "var" / "wedged-reboots.json"
    done: list[str] = []
    report = _watch(tmp_path, done, [WEDGED], per_day=1).step()
    # Evidence, stop, the mark and the report on disk first; the reboot asked for last, counted.
    assert done == ["evidence", "stop", "reboot"] and report["rebooted"] is True
    assert report["why_not"].endswith("; rebooting (reboot 1 of at most 1 in 24 h)")
    assert json.loads((tmp_path / "reports/health-latest.json").read_text())["rebooted"] is True
    assert json.loads(ledger.read_text()) == [1_796_500_000.0]
    # It wedges again after the reboot (a new watch, /run emptied): the day's reboot is used up.
    mark = tmp_path / "run" / "arcops" / "vllm-out-of-service.json"
    mark.unlink()
    done.clear()
    again = _watch(tmp_path, done, [WEDGED], per_day=1, at=1_796_500_000.0 + day - 60).step()
    assert done == ["evidence", "stop"] and again["rebooted"] is False
    assert again["why_not"].endswith(
        "1 reboot(s) for a wedged GPU in the last 24 h (limit 1): not rebooting again, the box needs a person"
    )
    # A day after the first, it may again; the ledger keeps only the last day's.
    mark.unlink()
    done.clear()
    later = _watch(tmp_path, done, [WEDGED], per_day=1, at=1_796_500_000.0 + day).step()
    assert done[-1] == "reboot" and later["rebooted"] is True
    assert json.loads(ledger.read_text()) == [1_796_500_000.0 + day]


def test_a_ledger_cut_short_or_a_refused_reboot_is_said_never_a_traceback(tmp_path):
    ledger = tmp_path / "var" / "wedged-reboots.json"
    ledger.parent.mkdir(parents=True)
    for text in ("[1796499000.0", "{}", '["x", null, 1e999]', ""):
        ledger.write_text(text)
        assert out_of_service.reboots(ledger, 1_796_500_000.0) == []
    done: list[str] = []
    watch = _watch(tmp_path, done, [WEDGED], per_day=2)

    def refused():
        raise RestartError("Access denied")

    watch.reboot = refused
    report = watch.step()
    assert report["rebooted"] is False and report["reboot_error"] == "Access denied"
    assert (
        json.loads((tmp_path / "reports/health-latest.json").read_text())["reboot_error"] == "Access denied"
    )


def test_the_watchdog_will_not_start_an_out_of_service_box(tmp_path):
    h = Harness(tmp_path, [ready_script()])
    mark = h.sysroot.path(out_of_service.MARK)
    mark.parent.mkdir(parents=True)
    mark.write_text(json.dumps({"since": "2026-12-05T17:46:40Z", "cards": ["0000:2d:00.0"]}))
    assert h.run() == 2  # the unit's RestartPreventExitStatus: no retry loop
    assert h.calls == []  # nothing started, not even the journal followed
    assert h.said("not starting: out of service since 2026-12-05T17:46:40Z: 0000:2d:00.0 wedged")
    mark.unlink()  # the reboot empties /run
    assert Harness(tmp_path / "after", [ready_script()]).run() == 0


def test_a_mark_that_cannot_be_read_still_means_out_of_service(tmp_path):
    path = tmp_path / "mark.json"
    assert out_of_service.read(path) is None
    path.write_text("{truncated")
    assert out_of_service.read(path) == {"cards": [], "detail": "unreadable mark"}
    path.write_text(json.dumps({"cards": ["0000:03:00.0", 7]}))
    assert out_of_service.read(path)["cards"] == ["0000:03:00.0"]


def test_metrics_and_fleet_status_say_out_of_service():
    vllm = {"vllm_service": {"image": "intel/llm-scaler-vllm:0.26.0-b2"}}
    mark = {"since": "2026-12-05T17:46:40Z", "cards": ["0000:03:00.0"]}

    def sample(records, wedged):
        text = render(metrics.collect(records, {"gpus": []}, None, None, 0.0, out_of_service=wedged))
        return [line for line in text.splitlines() if line.startswith("arcops_vllm_out_of_service")]

    assert sample(vllm, mark) == ['arcops_vllm_out_of_service{cards="0000:03:00.0",state="wedged"} 1']
    assert sample(vllm, None) == ['arcops_vllm_out_of_service{cards="",state=""} 0']
    assert sample({}, None) == []  # no vLLM on the box: nothing to be out of
    row = fleet_status.box_facts(vllm, {}, {"result": "ready"}, 1, mark)
    assert row["start"] == "OUT OF SERVICE (wedged 0000:03:00.0)"
    assert fleet_status.box_facts(vllm, {}, {"result": "ready"}, 0)["start"] == "ready"
