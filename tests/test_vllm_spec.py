"""vllm_spec: the defaults reproduce the measured docker run (docs/field-knowledge.md), and every
setting lands where the settings table says.

tests/fixtures/vllm/report-docker-run.txt is the report's command, copied verbatim; the reproduction
test parses it with shlex rather than restating its flags.
"""

from __future__ import annotations

import hashlib
import json
import re

import pytest
from arcops.vllm import residency_shim, vllm_spec
from arcops.vllm.vllm_spec import SpecError, render

from .conftest import REPO
from .helpers.ansible_run import needs_ansible, run_module
from .helpers.vllm_settings import (
    BASE,
    FIELD_WIDER,
    NODES,
    OPEN,
    REPORT_RUN,
    SECRET,
    flag_value,
    parse_docker_run,
    problems,
    spec,
)


def test_defaults_reproduce_the_field_reports_docker_run():
    """The report's command, plus the residency filter its author ran but did not print, from
    the defaults and the four wider settings the report used (each an opt-in now)."""
    report = parse_docker_run(REPORT_RUN.read_text())
    out = spec(64, residency_filter=False, **FIELD_WIDER)
    assert out["name"] == report["--name"]
    assert out["image"] == report["image"]
    assert out["privileged"] is True and report["flags"] == ["--privileged"]
    assert out["devices"] == report["--device"]
    volumes = [f"{m['source']}:{m['target']}" + (":ro" if m["read_only"] else "") for m in out["mounts"]]
    assert volumes == report["-v"]
    assert (out["shm_size"], out["ipc"]) == (report["--shm-size"], report["--ipc"])
    assert out["env"] == dict(e.split("=", 1) for e in report["-e"])
    assert list(out["env"]) == sorted(out["env"])
    # The report publishes 8000:8000 on every interface with no key; the spec's default is loopback.
    [published] = report["-p"]
    assert [f"{p['host_port']}:{p['container_port']}" for p in out["ports"]] == [published]
    assert out["ports"][0]["host_ip"] == "127.0.0.1"
    # The report wraps the compilation config over lines for the blog; vLLM gets it compact.
    expected = list(report["argv"])
    i = expected.index("--compilation-config") + 1
    assert json.loads(expected[i])["cudagraph_capture_sizes"] == [4, 8, 16, 32]
    expected[i] = "".join(expected[i].split())
    assert out["argv"] == expected
    assert out["env_file"] is None
    assert out["caches"] == ["/srv/cache/vllm-compile", "/srv/cache/triton"]


def test_the_defaults_are_least_privilege():
    """Unprivileged, a private IPC namespace, only the render nodes of the GPUs in use, no model
    code run; the tuned settings otherwise as measured."""
    out = spec()
    wide = spec(**FIELD_WIDER)
    assert (out["privileged"], out["ipc"]) == (False, "private")
    assert out["devices"] == [
        "/dev/dri/renderD128:/dev/dri/renderD128",
        "/dev/dri/renderD129:/dev/dri/renderD129",
    ]
    assert "--trust-remote-code" not in out["argv"] and "--trust-remote-code" in wide["argv"]
    assert [a for a in wide["argv"] if a != "--trust-remote-code"] == out["argv"]
    assert out["env"] == wide["env"] and out["mounts"] == wide["mounts"]
    one = spec(tensor_parallel_size=1, residency_filter=False)
    assert one["devices"] == ["/dev/dri/renderD128:/dev/dri/renderD128"]
    assert spec(devices=["/dev/dri/renderD130"], tensor_parallel_size=1)["devices"] == ["/dev/dri/renderD130"]
    with pytest.raises(SpecError) as e:
        render({**BASE, "devices": ["/dev/dri/renderD130"]}, 64, None)
    assert e.value.problems == [
        "tensor_parallel_size 2 needs 2 GPUs' render nodes; devices give 1: add their /dev/dri/renderD* "
        "nodes or lower tensor_parallel_size"
    ]
    with pytest.raises(SpecError) as e:
        render(BASE, 64, ["/dev/dri/renderD128"])
    assert e.value.problems == [
        "tensor_parallel_size 2 needs 2 Arc GPUs' render nodes; this box has 1 (/dev/dri/renderD128)"
    ]
    with pytest.raises(SpecError) as e:
        render(BASE, 64, None)
    assert e.value.problems[0].startswith("devices is empty (the render nodes of the GPUs vLLM uses)")


def test_output_is_json_in_the_documented_key_order_with_a_hash_of_the_rest():
    out = spec()
    assert list(out) == [
        "name",
        "image",
        "profile",
        "privileged",
        "ipc",
        "shm_size",
        "devices",
        "mounts",
        "ports",
        "env",
        "p2p",
        "env_file",
        "env_file_keys",
        "argv",
        "caches",
        "residency_filter",
        "spec_hash",
    ]
    rest = {k: v for k, v in out.items() if k != "spec_hash"}
    canonical = json.dumps(rest, sort_keys=True, separators=(",", ":")).encode()
    assert out["spec_hash"] == hashlib.sha256(canonical).hexdigest()
    assert json.loads(json.dumps(out)) == out
    assert spec()["spec_hash"] == out["spec_hash"]
    assert spec(port=8001)["spec_hash"] != out["spec_hash"]


def test_residency_filter_is_mounted_read_only_and_audits_every_process_with_two_gpus():
    off = spec(residency_filter=False)
    out = spec(residency_filter_dir="/opt/l0")
    assert out["residency_filter"] == {"dir": "/opt/l0", "library": "/opt/l0/arcops-l0-residency.so"}
    assert out["mounts"] == off["mounts"] + [
        {"source": "/opt/l0", "target": "/opt/arcops/l0-residency", "read_only": True}
    ]
    assert out["env"] == dict(
        sorted((off["env"] | {"LD_AUDIT": "/opt/arcops/l0-residency/arcops-l0-residency.so"}).items())
    )
    assert out["argv"] == off["argv"]
    assert vllm_spec.residency_probe(out) == {
        "argv": ["python3", "-c", "pass"],
        "env": {"ARCOPS_L0_RESIDENCY_LOG": "1"},
        "expect": "arcops-l0-residency 1: loaded",
    }
    # One GPU has no peer to make memory resident on: nothing to filter.
    for quiet in (off, spec(tensor_parallel_size=1)):
        assert quiet["residency_filter"] is None and "LD_AUDIT" not in quiet["env"]
        assert vllm_spec.residency_probe(quiet) is None
        assert all(m["target"] != "/opt/arcops/l0-residency" for m in quiet["mounts"])


def test_residency_filter_settings_are_checked():
    assert problems(residency_filter_dir="l0") == [
        "residency_filter_dir 'l0' is not an absolute path: give the full host path"
    ]
    assert problems(residency_filter="yes") == ["residency_filter must be true or false, not str"]
    for var in ("LD_AUDIT", "ARCOPS_L0_PEER_RESIDENT"):
        assert problems(extra_env={var: "1"}) == [
            f"extra_env sets {var}, which the spec manages: set residency_filter instead"
        ]


def test_the_marker_the_role_expects_is_the_one_the_filter_prints():
    source = (REPO / "plugins/module_utils/arcops/cxx/arcops-l0-residency.c").read_text()
    version = re.search(r"#define ARCOPS_L0_RESIDENCY_VERSION (\d+)", source)[1]
    assert f"arcops-l0-residency {version}: loaded" == residency_shim.MARKER
    assert '"arcops-l0-residency %d: loaded%s\\n", ARCOPS_L0_RESIDENCY_VERSION' in source


def test_defaults_are_every_setting_and_missing_keys_take_them():
    nulls = ["image", "model", "served_model_name", "capture_sizes", "p2p"]
    assert [k for k, v in vllm_spec.DEFAULTS.items() if v is None] == nulls
    everything = BASE | {k: v for k, v in vllm_spec.DEFAULTS.items() if k not in BASE}
    assert render(everything, 64, NODES) == spec()


def test_compiled_profile_has_no_graphs_but_keeps_mtp():
    out = spec(profile="compiled")
    assert "VLLM_XPU_ENABLE_XPU_GRAPH" not in out["env"]
    assert flag_value(out["argv"], "--compilation-config") == '{"cudagraph_mode":"NONE"}'
    assert json.loads(flag_value(out["argv"], "--speculative-config")) == {
        "method": "qwen3_5_mtp",
        "num_speculative_tokens": 3,
        "enforce_eager": True,
    }
    assert "--enforce-eager" not in out["argv"]
    assert out["profile"] == "compiled"


def test_eager_profile_enforces_eager_and_keeps_an_eager_drafter():
    out = spec(profile="eager", num_speculative_tokens=2)
    assert "VLLM_XPU_ENABLE_XPU_GRAPH" not in out["env"]
    assert "--compilation-config" not in out["argv"]
    i = out["argv"].index("--enforce-eager")
    assert out["argv"][i - 2 : i] == ["--dtype", "float16"]  # the profile flags' place
    assert flag_value(out["argv"], "--speculative-config") == (
        '{"method":"qwen3_5_mtp","num_speculative_tokens":2,"enforce_eager":true}'
    )


@pytest.mark.parametrize("profile", ["compiled", "eager"])
def test_no_mtp_leaves_the_speculative_config_out(profile):
    assert "--speculative-config" not in spec(profile=profile, num_speculative_tokens=0)["argv"]


@pytest.mark.parametrize(
    ("k", "sizes"), [(1, [2, 4, 8, 16]), (2, [3, 6, 12, 24]), (3, [4, 8, 16, 32]), (4, [5, 10, 20, 40])]
)
def test_capture_sizes_are_k_plus_one_times_1_2_4_8(k, sizes):
    config = json.loads(flag_value(spec(num_speculative_tokens=k)["argv"], "--compilation-config"))
    assert config["cudagraph_capture_sizes"] == sizes
    assert list(config) == ["cudagraph_mode", "cudagraph_capture_sizes", "splitting_ops"]


def test_given_capture_sizes_come_out_sorted_and_unique():
    out = spec(capture_sizes=[32, 4, 16, 4, 8, 64])
    config = json.loads(flag_value(out["argv"], "--compilation-config"))
    assert config["cudagraph_capture_sizes"] == [4, 8, 16, 32, 64]


def test_all_reduce_is_appended_to_the_splitting_ops():
    ops = ["vllm::unified_attention_with_output"]
    config = json.loads(flag_value(spec(splitting_ops=ops)["argv"], "--compilation-config"))
    assert config["splitting_ops"] == ["vllm::unified_attention_with_output", "vllm::all_reduce"]
    assert ops == ["vllm::unified_attention_with_output"]  # the caller's list is left alone
    assert (
        spec(splitting_ops=["vllm::all_reduce"])["argv"] == spec(splitting_ops=["vllm::all_reduce"])["argv"]
    )


def test_extra_env_goes_to_the_env_file_and_args_are_appended():
    """extra_env may hold a token: the spec names it (env_file_keys), the root-only env file the
    role writes holds it; a flag that carries a secret in argv is refused."""
    out = spec(extra_env={"ZE_AFFINITY_MASK": "0,1", "HF_TOKEN": SECRET}, extra_args=["--seed", "7"])
    assert "ZE_AFFINITY_MASK" not in out["env"] and SECRET not in json.dumps(out)
    assert (out["env_file"], out["env_file_keys"]) == (
        "/etc/arcops/vllm/api-key.env",
        ["HF_TOKEN", "ZE_AFFINITY_MASK"],
    )
    assert spec(api_key=True, extra_env={"A": "1"})["env_file_keys"] == ["A", "VLLM_API_KEY"]
    assert (spec()["env_file"], spec()["env_file_keys"]) == (None, [])
    assert list(out["env"]) == sorted(out["env"])
    assert out["argv"][-2:] == ["--seed", "7"]
    assert problems(extra_args=["--hf-token", SECRET, f"--hf_token={SECRET}"]) == [
        f"extra_args sets {flag}, which carries a secret: argv is readable by every user of the box; "
        "pass it in extra_env (vLLM's container reads it from a root-only env file)"
        for flag in ("--hf-token", "--hf_token")
    ]
    assert problems(extra_env={"A": "x\nB=y"}) == [
        "extra_env A holds a control character: one line per variable in the env file"
    ]


def test_ram_check_passes_a_64_gb_box_and_can_be_waived_or_skipped():
    assert spec(62.7)["profile"] == "graph_mtp"  # what 64 GB shows as MemTotal
    assert spec(24, allow_low_ram=True)["profile"] == "graph_mtp"
    assert spec(None)["profile"] == "graph_mtp"
    assert spec(31, profile="compiled")["profile"] == "compiled"
    # One rule with preflight's (arcops.box.ram_rule), the field report's figures.
    assert vllm_spec.RAM_REQUIRED_GIB == {"graph_mtp": 64, "compiled": 32, "eager": 32, "none": 16}
    assert vllm_spec.VISIBLE_FACTOR == 0.94


def test_the_api_key_is_never_in_the_spec_or_an_error():
    out = spec(api_key=SECRET, listen_address="0.0.0.0", allow_open_routes=True)
    assert out["env_file"] == "/etc/arcops/vllm/api-key.env"
    assert out["ports"][0]["host_ip"] == "0.0.0.0"
    assert SECRET not in json.dumps(out)
    assert spec(api_key=True)["env_file"] == "/etc/arcops/vllm/api-key.env"
    assert spec(api_key=True)["spec_hash"] == spec(api_key="another")["spec_hash"]
    found = problems(
        api_key=SECRET,
        port="x",
        extra_env={"VLLM_API_KEY": SECRET},
        extra_args=["--api-key", SECRET, f"--api-key={SECRET}"],
        profile="eager",
        capture_sizes=[1],
    )
    assert len(found) == 7 and SECRET not in "\n".join(found)  # each --api-key: managed and a secret
    assert problems(api_key=12345) == ["api_key must be a string or a boolean, not int"]
    assert SECRET not in "\n".join(problems(api_key=[SECRET], listen_address="0.0.0.0"))


def test_optional_flags_and_mounts_can_be_left_out():
    out = spec(
        quantization=None,
        max_model_len=None,
        trust_remote_code=False,
        enable_prefix_caching=False,
        enable_auto_tool_choice=False,
        tool_call_parser=None,
        reasoning_parser=None,
        ccl_simple_threshold=None,
        allow_long_max_model_len=False,
        p2p=False,
        mount_dri_by_path=False,
        residency_filter=False,
        served_model_name="qwen",
        model="org/qwen38-fp8",
        listen_address="localhost",
        port=18000,
    )
    argv = out["argv"]
    assert argv[:3] == ["/models/org/qwen38-fp8", "-tp", "2"]
    for flag in ("--quantization=fp8", "--max-model-len", "--trust-remote-code", "--enable-prefix-caching"):
        assert flag not in argv
    assert "--enable-auto-tool-choice" not in argv and "--reasoning-parser" not in argv
    assert argv[-2:] == ["--served-model-name", "qwen"]
    assert out["env"] == {
        "CCL_TOPO_P2P_ACCESS": "0",
        "VLLM_WORKER_MULTIPROC_METHOD": "spawn",
        "VLLM_XPU_ENABLE_XPU_GRAPH": "1",
    }
    assert [m["target"] for m in out["mounts"]] == ["/models", "/root/.cache/vllm", "/root/.triton"]
    assert out["ports"] == [{"host_ip": "127.0.0.1", "host_port": 18000, "container_port": 8000}]


def test_settings_from_role_vars_strips_the_prefix_and_ignores_the_rest():
    role_vars = {
        "vllm_service_image": "x:1",
        "vllm_service_image_digest": "sha256:00",
        "vllm_service_port": 8001,
        "vllm_service_watchdog_attempts": 3,
        "vllm_service_prot": 8002,
        "preflight_vllm_profile": "eager",
        "ansible_host": "box",
    }
    assert vllm_spec.settings_from_role_vars(role_vars) == {"image": "x:1", "port": 8001}


@needs_ansible
def test_module_renders_the_spec_through_ansiballz():
    task = run_module(
        "arcops_vllm_spec", json.dumps({"settings": BASE, "host_mem_total_gib": 62.7, "render_nodes": NODES})
    )
    assert task["changed"] is False
    assert task["spec"] == spec(62.7)
    # Not told: the render nodes of this machine's Arc GPUs (none here) stand for empty devices.
    here = run_module("arcops_vllm_spec", json.dumps({"settings": BASE, "host_mem_total_gib": 62.7}))
    assert here["problems"] == [
        "tensor_parallel_size 2 needs 2 Arc GPUs' render nodes; this box has 0 (none)"
    ]
    assert task["docker"] == vllm_spec.docker_container_args(task["spec"])


@pytest.mark.parametrize(
    ("address", "published"), [("127.0.0.1", "127.0.0.1:8000:8000"), ("::1", "[::1]:8000:8000")]
)
def test_docker_args_bracket_ipv6_and_mark_read_only_binds(address, published):
    args = vllm_spec.docker_container_args(
        {
            "mounts": [
                {"source": "/srv/m", "target": "/models", "read_only": True},
                {"source": "/var/cache/c", "target": "/root/.cache/vllm", "read_only": False},
            ],
            "ports": [{"host_ip": address, "host_port": 8000, "container_port": 8000}],
        }
    )
    assert args == {
        "binds": ["/srv/m:/models:ro", "/var/cache/c:/root/.cache/vllm:rw"],
        "published_ports": [published],
    }


@pytest.mark.parametrize(
    ("changes", "url", "model"),
    [
        ({}, "http://127.0.0.1:8000", "/models/"),
        (
            {"listen_address": "0.0.0.0", "api_key": True, "port": 9000, **OPEN},
            "http://127.0.0.1:9000",
            "/models/",
        ),
        ({"listen_address": "::", "api_key": True, **OPEN}, "http://[::1]:8000", "/models/"),
        ({"listen_address": "fd00::5", "api_key": True, **OPEN}, "http://[fd00::5]:8000", "/models/"),
        ({"served_model_name": "qwen"}, "http://127.0.0.1:8000", "qwen"),
    ],
)
def test_the_endpoint_is_where_the_box_reaches_its_api(changes, url, model):
    s = spec(**changes)
    found = vllm_spec.endpoint(s)
    assert found["url"] == url
    # Without --served-model-name, vLLM serves the model under the path it was given.
    assert found["model"] == (model if model == "qwen" else s["argv"][0]) and found["model"].startswith(model)
    assert found["api_key_file"] == (s["env_file"] or "")
