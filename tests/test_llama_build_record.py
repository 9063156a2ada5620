"""The llama_cpp_sycl record (arcops.llama.build_record): the earlier record with this run's news
over it, and the module that writes it where every record lives."""

import json

import pytest
from arcops.llama.build_record import PROBE_OFF, BuildRecordError, compose

from .helpers.ansible_run import needs_ansible, run_module

EARLIER = {"build_id": "b1", "prefix": "/opt/l/b1", "probe": {"build_id": "b1", "ok": True, "summary": []}}
BUILD = {
    "request_id": "r2",
    "build_id": "b2",
    "prefix": "/opt/l/b2",
    "source": {"version": "b8696"},
    "build": {"ok": True},
    "oneapi_version": "2026.2.0",
}
ENDPOINT = {
    "url": "http://127.0.0.1:8080",
    "model": "",
    "api_key_file": "",
    "stack": "llama.cpp b2 split-layer",
}


def test_a_run_that_built_nothing_keeps_the_earlier_record_and_names_the_endpoint():
    assert compose(EARLIER, endpoint=ENDPOINT) == EARLIER | {"endpoint": ENDPOINT}
    assert compose({}) == {"endpoint": {}}


def test_a_new_build_is_recorded_with_the_prefix_active_before_it():
    got = compose(EARLIER, build=BUILD, was_active="/opt/l/b1", probe={"build_id": "b2", "ok": True})
    assert got == BUILD | {
        "previous_prefix": "/opt/l/b1",
        "probe": {"build_id": "b2", "ok": True},
        "endpoint": {},
    }
    # Nothing was active, or the same prefix again: no previous one.
    assert "previous_prefix" not in compose({}, build=BUILD, was_active="")
    assert "previous_prefix" not in compose(EARLIER, build=BUILD, was_active="/opt/l/b2")


def test_a_new_build_with_the_probe_off_is_recorded_as_not_probed():
    got = compose(EARLIER, build=BUILD, probe_enabled=False)
    assert got["probe"] == {"build_id": "b2", "ok": False, "summary": [PROBE_OFF]}
    # No new build: the earlier verdict stands.
    assert compose(EARLIER, probe_enabled=False)["probe"] == EARLIER["probe"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"build": {"build_id": "b"}}, "build: lacks request_id, prefix, source, build, oneapi_version"),
        ({"build": []}, "build: must be a mapping, got list"),
        ({"probe": "ok"}, "probe: must be a mapping, got str"),
        ({"endpoint": [1]}, "endpoint: must be a mapping, got list"),
    ],
)
def test_parts_of_the_wrong_shape_are_refused_by_name(kwargs, message):
    with pytest.raises(BuildRecordError, match=f"^{message}$"):
        compose(EARLIER, **kwargs)


@needs_ansible
def test_the_module_writes_the_record_once_in_its_shape(tmp_path):
    args = {
        "earlier": EARLIER,
        "build": BUILD,
        "was_active": "/opt/l/b1",
        "endpoint": ENDPOINT,
        "state_dir": str(tmp_path / "state"),
        "fact_dir": str(tmp_path / "facts"),
    }
    first = run_module("arcops_llama_record", json.dumps(args))
    assert (
        first["changed"] and first["record"]["schema"] == 1 and first["record"]["stage"] == "llama_cpp_sycl"
    )
    fact = json.loads((tmp_path / "facts" / "arcops_llama_cpp_sycl.fact").read_text())
    assert fact == first["record"] and fact["previous_prefix"] == "/opt/l/b1"
    again = run_module("arcops_llama_record", json.dumps(args | {"earlier": fact}))
    assert again["changed"] is False
    bad = run_module("arcops_llama_record", json.dumps(args | {"build": {"build_id": "b"}}))
    assert bad["failed"] and bad["msg"] == "build: lacks request_id, prefix, source, build, oneapi_version"
