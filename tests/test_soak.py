"""The soak (arcops.prove.soak) against a real llama-server (the CPU build, the tiny model): a mixed
load answered throughout, through the verify stage after a gate that passed; the same server with
its main loop stopped by ptrace (llama.cpp#25692's hang) stalls and fails it; an engine reset
logged in a real journald of the test's own and host RAM below the floor fail it; bad options are
refused by name."""

from __future__ import annotations

import threading
import time

import pytest
from arcops.common import served
from arcops.prove import gate, soak, verify
from arcops.prove.host_watch import HostWatch
from arcops.prove.openai_api import Endpoint
from hypothesis import given
from hypothesis import strategies as st

from .helpers import llama_cpu
from .helpers.frozen_thread import Frozen
from .helpers.fuzz import FUZZ, json_values
from .helpers.meminfo import RESET, meminfo_tree
from .helpers.prompt_sets import self_answering_set


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    try:
        # As the lab's model server runs it: one slot, one thread, so batching changes no answer.
        flags = ["--jinja", "--parallel", "1", "--threads", "1"]
        running = llama_cpu.Server(
            served.free_port(), tmp_path_factory.mktemp("soak") / "server.log", flags
        ).start()
    except RuntimeError as e:  # scripts/bootstrap builds it: missing, it fails, never skips
        pytest.fail(str(e))
    yield running
    running.stop()


@pytest.fixture(scope="module")
def answered_set(server):
    """A prompt set the tiny model passes (its own greedy answers), so the gate lets the soak run."""
    endpoint = Endpoint(server.url)
    return self_answering_set(gate.run(endpoint, gate.only_model(endpoint), gate.prompt_set.DEFAULT))


def later(seconds: float, action) -> threading.Thread:
    """ACTION in a thread of its own, SECONDS from now."""
    thread = threading.Thread(target=lambda: (time.sleep(seconds), action()), daemon=True)
    thread.start()
    return thread


def test_the_verify_stage_soaks_a_service_after_its_gate_and_records_it(server, answered_set):
    targets = verify.check_targets([{"name": "llama_cpp_sycl", "url": server.url}])
    options = soak.options({"seconds": 3, "concurrency": 2, "stall_seconds": 120})
    out = verify.run(targets, answered_set, [], soak_options=options)
    assert out["passed"], out["reasons"]
    kept = out["record"]["targets"]["llama_cpp_sycl"]["soak"]
    assert kept["passed"] and kept["stalls"] == kept["failed"] == kept["xe_events"] == 0
    assert kept["sent"] >= 2 and kept["answered"] == kept["sent"] and kept["seconds"] == 3
    assert "answered" not in str(out["results"][0]["soak"]["errors"])
    assert out["results"][0]["soak"]["ran_s"] >= 3
    line = verify.lines(out["record"])[0]
    assert f"soak 3 s: {kept['sent']} of {kept['sent']} answered, 0 stall(s), 0 xe event(s); PASS" in line


def test_a_server_whose_loop_stops_stalls_the_soak(server):
    endpoint = Endpoint(server.url, timeout=2)
    model, out = gate.only_model(endpoint), {}
    options = soak.options({"seconds": 2, "concurrency": 2, "stall_seconds": 2})
    load = threading.Thread(
        target=lambda: out.update(soak.run(endpoint, model, gate.prompt_set.DEFAULT, options)), daemon=True
    )
    load.start()
    time.sleep(0.5)
    # Frozen here: a thread that traces a process must outlive the stop (the kernel lets go of a
    # tracee when its tracer thread ends).
    frozen = Frozen(server.proc.pid)
    try:
        load.join(timeout=30)
    finally:
        frozen.thaw()
    assert not out["passed"] and out["stalls"] >= 1, out
    assert "request(s) got no answer within 2 s (a stall)" in " ".join(out["reasons"])
    assert served.health_answers(server.url, timeout=30)  # serves again once thawed


def test_an_engine_reset_or_low_host_ram_during_the_soak_fails_it(server, journald_namespace, tmp_path):
    selection, log = journald_namespace
    root = meminfo_tree(tmp_path, 40_000_000, 8_388_608)

    def trouble() -> None:
        log(RESET)
        meminfo_tree(tmp_path, 524_288, 8_388_608)  # 0.5 GiB available

    endpoint = Endpoint(server.url, timeout=120)
    later(0.5, trouble)
    report = soak.run(
        endpoint,
        gate.only_model(endpoint),
        gate.prompt_set.DEFAULT,
        soak.options({"seconds": 3, "concurrency": 1}),
        watch=HostWatch(root, selection, interval=0.05),
    )
    assert not report["passed"] and report["stalls"] == 0
    assert "1 xe event(s) during the soak (engine_reset)" in report["reasons"]
    assert "host RAM fell to 0.5 GiB available (floor 1 GiB)" in report["reasons"]


def test_options_default_and_off():
    assert soak.options(None) is None and soak.options({"seconds": 0}) is None
    assert soak.options({"seconds": 60}) == {
        "seconds": 60,
        "concurrency": 4,
        "stall_seconds": 300.0,
        "ram_floor_gib": 1.0,
    }


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ([60], "soak: must be a mapping"),
        ({"seconds": 60, "hours": 2}, "'hours' is not a soak option"),
        ({"seconds": -1}, "soak.seconds is -1, must be from 0 to 604800"),
        ({"seconds": float("nan")}, "soak.seconds"),
        ({"seconds": True}, "soak.seconds"),
        ({"seconds": 10**9}, "soak.seconds"),
        ({"seconds": 60, "concurrency": 0}, "soak.concurrency"),
        ({"seconds": 60, "concurrency": 2.5}, "soak.concurrency: a whole number"),
        ({"seconds": 60, "stall_seconds": "5"}, "soak.stall_seconds"),
        ({"seconds": 60, "ram_floor_gib": float("inf")}, "soak.ram_floor_gib"),
    ],
)
def test_bad_options_are_refused_by_name(value, said):
    with pytest.raises(soak.SoakError, match=r"^soak") as e:
        soak.options(value)
    assert said in str(e.value)


@FUZZ
@given(json_values | st.dictionaries(st.sampled_from(soak.KNOWN), json_values, max_size=4))
def test_any_options_are_taken_or_refused_never_a_crash(value):
    try:
        found = soak.options(value)
    except soak.SoakError as e:
        assert str(e).startswith("soak")
    else:
        assert found is None or (found["seconds"] > 0 and isinstance(found["concurrency"], int))
