"""What the box went through during a gate or a bench: RAM sampled from /proc/meminfo (a fixture
tree), xe events followed in a real journald of the tests' own; an xe event fails the run."""

import time

from arcops.box import journal
from arcops.prove import gate
from arcops.prove.host_watch import HostWatch
from arcops.prove.openai_api import Endpoint

from .helpers.meminfo import OTHER, RESET, meminfo_tree
from .helpers.vllm_cpu import API_KEY, MODEL_NAME


def test_ram_low_point_and_xe_events_of_the_run(journald_namespace, tmp_path):
    selection, log = journald_namespace
    log("an engine reset before the run: not counted")
    log(RESET)
    time.sleep(0.3)
    root = meminfo_tree(tmp_path, 40_000_000, 8_388_608)
    with HostWatch(root, selection, interval=0.05) as watch:
        meminfo_tree(tmp_path, 10_485_760, 7_340_032)  # 10 GiB available, 1 GiB of swap used
        time.sleep(0.2)
        log(OTHER)
        log(RESET)
        meminfo_tree(tmp_path, 30_000_000, 8_388_608)
        deadline = time.monotonic() + 30  # returns as soon as it is there; a loaded machine is slow
        while not watch._events and time.monotonic() < deadline:
            time.sleep(0.05)
    report = watch.report()
    assert report["mem_available_min_gib"] == 10.0 and report["swap_used_max_gib"] == 1.0
    assert [e["kind"] for e in report["xe_events"]] == ["engine_reset"] and report["journal_error"] is None
    assert report["samples"] >= 3


def test_an_unreadable_journal_is_said_not_fatal(tmp_path):
    def broken(selection):
        raise journal.JournalError("journalctl not found")

    with HostWatch(meminfo_tree(tmp_path, 1_048_576, 0), follow=broken, interval=0.05) as watch:
        time.sleep(0.1)
    report = watch.report()
    assert report["journal_error"] == "journalctl not found" and report["mem_available_min_gib"] == 1.0


class ResetDuringRun:
    """A watch whose run saw an engine reset (the journal side is proven above)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass

    def report(self):
        return {
            "mem_available_min_gib": 9.0,
            "swap_used_max_gib": 0.0,
            "samples": 4,
            "journal_error": None,
            "xe_events": [{"kind": "engine_reset", "device": "0000:29:00.0"}],
        }


def test_an_xe_event_during_the_gate_fails_it(vllm_server):
    data = {
        "format": 1,
        "max_tokens": 4,
        "prompts": [{"id": "p", "messages": [{"role": "user", "content": "hi"}], "expect": {"regex": "."}}],
    }
    endpoint = Endpoint(vllm_server.url, API_KEY)
    clean = gate.run(endpoint, MODEL_NAME, data)
    assert clean["passed"] is True and clean["host"] is None
    report = gate.run(endpoint, MODEL_NAME, data, watch=ResetDuringRun())
    assert report["passed"] is False and report["host"]["xe_events"][0]["kind"] == "engine_reset"
    assert all(p["pass"] for p in report["prompts"])  # the answers were right; the reset still fails it
