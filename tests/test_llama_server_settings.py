"""The llama-server settings are declared once (arcops.llama.server_settings): checked there, the
unit's command line and the verify endpoint rendered there (the role's files written from the
table: tests/test_settings_tables.py)."""

from __future__ import annotations

import json

import pytest
from arcops.llama import server_settings as ss
from hypothesis import given
from hypothesis import strategies as st

from .conftest import REPO
from .helpers.ansible_run import needs_ansible, run_module
from .helpers.fuzz import FUZZ

ROLE = REPO / "roles" / "llama_cpp_sycl"
P = ss.PREFIX
ON = {"enabled": True, "model": "/srv/models/m.gguf"}


def test_the_unit_templates_only_render_the_command_lines():
    for name, wanted in (("server", "exec_start"), ("health", "health_exec_start")):
        unit = (ROLE / f"templates/arcops-llama-{name}.service.j2").read_text()
        (line,) = [x for x in unit.splitlines() if x.startswith("ExecStart=")]
        assert line == f"ExecStart={{{{ llama_cpp_sycl_server_unit.{wanted} }}}}"


def test_the_health_watch_reaches_the_server_on_the_box_with_the_settings_policy():
    s, problems = ss.check(ON | {"host": "0.0.0.0", "port": 9000, "api_key": True, "health_interval": 5})
    assert problems == []
    assert ss.health_command(s) == [
        *["/usr/local/bin/arcops", "llama", "health-watch", "--url", "http://127.0.0.1:9000"],
        *["--api-key-file", ss.KEY_FILE, "--interval", "5", "--stall-seconds", "300"],
        *["--max-restarts-per-hour", "3", "--min-interval", "600", "--max-reboots-per-day", "0"],
    ]
    # Rebooting for a wedged GPU only where allowed (the role's default: arcops_allow_reboot).
    s = ss.check(ON | {"health_reboot_allowed": True, "health_max_reboots_per_day": 2})[0]
    assert ss.health_command(s)[-2:] == ["--max-reboots-per-day", "2"]
    s, problems = ss.check(ON | {"host": "::", "api_key": True})
    assert problems == [] and ss.health_command(s)[3:5] == ["--url", "http://[::1]:8080"]


def test_the_defaults_pass_and_an_enabled_server_renders_its_command_line():
    assert ss.check({}) == (dict(ss.TABLE.defaults, model=None), [])
    s, problems = ss.check(
        ON | {"tensor_split": [3, 1.5], "api_key": True, "extra_args": ["--flash-attn", "on"]}
    )
    assert problems == []
    argv = ss.command(s, "/opt/arcops/llama.cpp")
    assert argv == [
        "/opt/arcops/llama.cpp/current/bin/oneapi-env",
        "/opt/arcops/llama.cpp/current/bin/llama-server",
        *["--model", "/srv/models/m.gguf", "--host", "127.0.0.1", "--port", "8080", "--ctx-size", "8192"],
        *["--n-gpu-layers", "999", "--split-mode", "layer", "--metrics", "--tensor-split", "3,1.5"],
        *["--api-key-file", ss.KEY_FILE, "--flash-attn", "on"],
    ]
    assert ss.exec_start(["/a b/x", "--y", "it's"]) == "'/a b/x' --y 'it'\"'\"'s'"
    assert ss.endpoint(s, "b1") == {
        "url": "http://127.0.0.1:8080",
        "model": "",
        "api_key_file": ss.KEY_FILE,
        "stack": "llama.cpp b1 split-layer",
    }
    assert ss.endpoint(ss.check({})[0], "b1") == {}


@pytest.mark.parametrize(
    ("values", "wanted"),
    [
        ({"enabled": True}, [P + "model must be the absolute path of a .gguf on the box"]),
        (
            {"model": "m.gguf"},
            [P + "model must be the absolute path of a .gguf on the box"],
        ),
        ({"port": 0}, [P + "port 0 must be from 1 to 65535"]),
        ({"port": 65536}, [P + "port 65536 must be from 1 to 65535"]),
        ({"port": "8080"}, [P + "port must be an integer, not str"]),
        ({"ctx_size": -1}, [P + "ctx_size -1 must be from 0 to 1048576 (tokens)"]),
        ({"tensor_split": [1, -1]}, [P + "tensor_split: every item must be 0 or more"]),
        (
            {"tensor_split": [1, float("nan")]},
            [P + "tensor_split must be a list of numbers"],
        ),
        ({"host": "0.0.0.0"}, ["llama-server would listen on 0.0.0.0 without an API key: set"]),
        ({"extra_args": ["--port=9"]}, [P + "extra_args sets --port, which the role sets"]),
        (
            {"extra_args": ["--api-key", "k"]},
            [P + "extra_args sets --api-key, which the role"],
        ),
        (
            {"extra_args": ["--hf-token=x"]},
            [P + "extra_args sets --hf-token, which carries"],
        ),
        (
            {"extra_args": "--flash-attn on"},
            [P + "extra_args must be a list of strings, not str"],
        ),
        (
            {"user": "a\nb"},
            [P + "user holds a control character or text that is not UTF-8"],
        ),
        ({"nope": 1}, ["unknown setting 'nope': remove it"]),
        ({"extra_args": ["--metrics"]}, [P + "extra_args sets --metrics, which the role sets"]),
        (
            {"health_interval": 60, "health_stall_seconds": 30},
            [P + "health_stall_seconds must be at least " + P + "health_interval"],
        ),
        ({"health_max_restarts_per_hour": 0}, [P + "health_max_restarts_per_hour 0 must be from 1 to 60"]),
        ({"health_watch": "yes"}, [P + "health_watch must be true or false, not str"]),
        ({"health_max_reboots_per_day": 25}, [P + "health_max_reboots_per_day 25 must be from 0 to 24"]),
    ],
)
def test_bad_settings_are_refused_in_one_line_each(values, wanted):
    _, problems = ss.check(ON | values if "enabled" not in values else values)
    assert len(problems) == len(wanted), problems
    for got, want in zip(problems, wanted, strict=True):
        assert got.startswith(want), (got, want)


def test_the_edges_of_every_bound_pass():
    # The widest health policy, so that each bound's edge is tried alone.
    wide = ON | {"health_interval": 1, "health_stall_seconds": 86400}
    for s in ss.SETTINGS:
        if s.low is not None and s.kind == "int":
            assert ss.check(wide | {s.name: int(s.low)})[1] == [], s.name
            assert ss.check(wide | {s.name: int(s.high)})[1] == [], s.name
    assert ss.check(ON | {"tensor_split": [0, 1]})[1] == []


@FUZZ
@given(
    st.dictionaries(
        st.sampled_from([s.name for s in ss.SETTINGS]),
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats()
        | st.text()
        | st.lists(st.text() | st.floats()),
    )
)
def test_any_settings_are_refused_in_one_line_or_rendered(values):
    s, problems = ss.check(values)
    assert all("\n" not in p for p in problems)
    if not problems and s["enabled"]:
        assert all("\n" not in a for a in ss.command(s, "/opt/x"))


@needs_ansible
def test_the_module_renders_or_refuses_naming_the_variable():
    args = {"settings": ON | {"port": 9000}, "prefix_root": "/opt/l", "build_id": "b2"}
    done = run_module("arcops_llama_server", json.dumps(args))
    assert not done.get("failed") and done["changed"] is False
    assert done["argv"][4:8] == ["--host", "127.0.0.1", "--port", "9000"]
    wanted = "/usr/local/bin/arcops llama health-watch --url http://127.0.0.1:9000 "
    assert done["health_exec_start"].startswith(wanted)
    args["settings"] = ON | {"health_watch": False}
    assert run_module("arcops_llama_server", json.dumps(args))["health_exec_start"] == ""
    assert done["exec_start"].startswith(
        "/opt/l/current/bin/oneapi-env /opt/l/current/bin/llama-server --model"
    )
    assert done["endpoint"]["stack"] == "llama.cpp b2 split-layer"
    off = run_module("arcops_llama_server", json.dumps(args | {"settings": {}}))
    assert (off["argv"], off["exec_start"], off["endpoint"]) == ([], "", {})
    bad = run_module("arcops_llama_server", json.dumps(args | {"settings": ON | {"port": 0, "host": "::"}}))
    assert bad["failed"] and bad["msg"] == (
        "llama_cpp_sycl_server_port 0 must be from 1 to 65535; llama-server would listen on :: without an "
        "API key: set llama_cpp_sycl_server_api_key (vaulted) or listen on 127.0.0.1"
    )
