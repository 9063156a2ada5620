"""vllm_spec: the defaults reproduce the measured docker run (docs/field-knowledge.md), and the
guardrails refuse what hung.

tests/fixtures/vllm/report-docker-run.txt is the report's command, copied verbatim; the reproduction
test parses it with shlex rather than restating its flags.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex

import pytest
from arcops import cli
from arcops.vllm import residency_shim, vllm_spec
from arcops.vllm.vllm_spec import SpecError, render

from .conftest import REPO
from .test_ansible_module import needs_ansible, run_module

REPORT_RUN = REPO / "tests/fixtures/vllm/report-docker-run.txt"
BASE = {
    "image": "intel/llm-scaler-vllm:0.26.0-b2",
    "model_dir": "/srv/models",
    "model": "qwen38-fp8",
    "cache_dir": "/srv/cache",
}
SECRET = "sk-arcops-7f3a9c1e"
# The dual-B60 box's render nodes (arcops facts read them), which empty devices stand for.
NODES = ["/dev/dri/renderD128", "/dev/dri/renderD129"]
# What the field report's run had that arcops' defaults no longer give without asking.
OPEN = {"allow_open_routes": True}
FIELD_WIDER = {"privileged": True, "ipc": "host", "devices": ["/dev/dri:/dev/dri"], "trust_remote_code": True}


def spec(host_mem: float | None = 64, **changes):
    return render(BASE | changes, host_mem, NODES)


def problems(host_mem: float | None = 64, **changes) -> list[str]:
    with pytest.raises(SpecError) as e:
        spec(host_mem, **changes)
    assert str(e.value) == "\n".join(e.value.problems)
    return e.value.problems


def flag_value(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def parse_docker_run(text: str) -> dict:
    """docker run's options, image and container arguments, as docker reads them."""
    tokens = shlex.split(text.replace("\\\n", " "))
    assert tokens[:2] == ["docker", "run"]
    takes_value = {"--name", "--device", "-v", "-p", "--shm-size", "-e", "--ipc"}
    run: dict = {"-v": [], "-e": [], "--device": [], "-p": [], "flags": []}
    i = 2
    while tokens[i].startswith("-"):
        opt, eq, value = tokens[i].partition("=")
        if opt in takes_value and not eq:
            i, value = i + 1, tokens[i + 1]
        if opt not in takes_value:
            run["flags"].append(opt)
        elif isinstance(run.get(opt), list):
            run[opt].append(value)
        else:
            run[opt] = value
        i += 1
    run["image"], run["argv"] = tokens[i], tokens[i + 1 :]
    return run


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
    assert spec(devices=["/dev/dri/renderD130"])["devices"] == ["/dev/dri/renderD130"]
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
    assert list(vllm_spec.DEFAULTS) == list(vllm_spec.TYPES)
    nulls = ["image", "model", "served_model_name", "capture_sizes"]
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


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"capture_sizes": [5, 10, 20, 40]},
            "capture_sizes [5, 10, 20, 40] are not all multiples of num_speculative_tokens + 1 = 4: "
            "each MTP decode step runs k+1 tokens per sequence, so other sizes pad every step "
            "(5,10,20,40 with k=3 padded by 25%); use [4, 8, 16, 32]",
        ),
        (
            {"capture_sizes": []},
            "capture_sizes must be a non-empty list of positive integers: use [4, 8, 16, 32]",
        ),
        (
            {"capture_sizes": [0, 4], "num_speculative_tokens": 1},
            "capture_sizes must be a non-empty list of positive integers: use [2, 4, 8, 16]",
        ),
        (
            {"capture_sizes": [4, 8], "profile": "eager"},
            "capture_sizes is set but profile eager captures no graphs: "
            "remove capture_sizes or use profile graph_mtp",
        ),
    ],
)
def test_capture_size_errors_name_the_right_list(changes, message):
    assert problems(**changes) == [message]


def test_all_reduce_is_appended_to_the_splitting_ops():
    ops = ["vllm::unified_attention_with_output"]
    config = json.loads(flag_value(spec(splitting_ops=ops)["argv"], "--compilation-config"))
    assert config["splitting_ops"] == ["vllm::unified_attention_with_output", "vllm::all_reduce"]
    assert ops == ["vllm::unified_attention_with_output"]  # the caller's list is left alone
    assert (
        spec(splitting_ops=["vllm::all_reduce"])["argv"] == spec(splitting_ops=["vllm::all_reduce"])["argv"]
    )


@pytest.mark.parametrize(
    ("changes", "host_mem", "message"),
    [
        (
            {"splitting_ops": []},
            64,
            "splitting_ops is empty: without them the all-reduce ends up inside the compiled graph and "
            "the output is garbage; keep the default list",
        ),
        (
            {"num_speculative_tokens": 0},
            64,
            "profile graph_mtp with num_speculative_tokens 0: XPU graphs without MTP stalled under load "
            "(0 tok/s, then a shm_broadcast timeout); use profile compiled, or num_speculative_tokens > 0",
        ),
        ({"profile": "graphs"}, 64, "unknown profile 'graphs': use one of graph_mtp, compiled, eager"),
        (
            {"extra_env": {" ccl_allreduce ": " Ring "}},
            64,
            "extra_env sets CCL_ALLREDUCE with the ring algorithm: on dual B60s the first concurrent "
            "request soft-locked the host for 15+ minutes and only a reboot cleared it; remove it",
        ),
        (
            {},
            60.1,
            "host RAM: MemTotal 60.1 GiB, profile graph_mtp needs 64 GB installed (MemTotal 60.16 GiB or "
            "more); with 32 GB one graph_mtp start in four hung with copy-engine resets: add RAM, use "
            "profile eager, or set allow_low_ram to accept the risk",
        ),
        (
            {"profile": "eager"},
            30,
            "host RAM: MemTotal 30.0 GiB, profile eager needs 32 GB installed (MemTotal 30.08 GiB or "
            "more); with 32 GB one graph_mtp start in four hung with copy-engine resets: add RAM, use "
            "profile eager, or set allow_low_ram to accept the risk",
        ),
        (
            {"listen_address": "0.0.0.0"},
            64,
            "listen_address 0.0.0.0 is not loopback and api_key is empty: anyone on the network could "
            "use the server; set api_key (keep it in a vault) or listen on 127.0.0.1",
        ),
        (
            {"extra_env": {"VLLM_XPU_ENABLE_XPU_GRAPH": "1"}, "profile": "eager"},
            64,
            "extra_env sets VLLM_XPU_ENABLE_XPU_GRAPH, which the spec manages: set profile instead",
        ),
        (
            {"extra_env": {"CCL_SYCL_ALLREDUCE_SIMPLE_THRESHOLD": "0"}},
            64,
            "extra_env sets CCL_SYCL_ALLREDUCE_SIMPLE_THRESHOLD, which the spec manages: "
            "set ccl_simple_threshold instead",
        ),
        (
            {"extra_env": {"VLLM_API_KEY": SECRET}},
            64,
            "extra_env sets VLLM_API_KEY, which the spec manages: set api_key (the role writes the key to "
            "api_key_env_file, out of the spec and argv) instead",
        ),
        (
            {"extra_env": {"1BAD": "x"}},
            64,
            "extra_env key '1BAD' is not an environment variable name: use letters, digits, _",
        ),
        ({"tensor_parallel_size": 0}, 64, "tensor_parallel_size 0 must be 1 or more"),
        ({"port": 70000}, 64, "port 70000 is out of range: use a host port from 1 to 65535"),
        ({"port": 0}, 64, "port 0 is out of range: use a host port from 1 to 65535"),
        (
            {"shm_size": "32 gigs"},
            64,
            "shm_size '32 gigs' is not a docker size: a positive number with an optional unit b, k, m, g or "
            "t, e.g. 32g",
        ),
        (
            {"devices": ["/dev/dri:/dev/dri:rwx"]},
            64,
            "devices entry '/dev/dri:/dev/dri:rwx' is not host[:container[:perms]] with absolute paths and "
            "perms of r, w, m: write it like /dev/dri:/dev/dri",
        ),
        (
            {"devices": ["dri:/dev/dri"]},
            64,
            "devices entry 'dri:/dev/dri' is not host[:container[:perms]] with absolute paths and "
            "perms of r, w, m: write it like /dev/dri:/dev/dri",
        ),
        (
            {"gpu_memory_utilization": 1.2},
            64,
            "gpu_memory_utilization 1.2 must be above 0 and at most 1 (a fraction of VRAM, e.g. 0.95)",
        ),
        (
            {"cudagraph_mode": "NONE"},
            64,
            "cudagraph_mode 'NONE' does not capture graphs for profile graph_mtp: use PIECEWISE "
            "(as measured, docs/field-knowledge.md), or profile compiled for no graphs",
        ),
        (
            {"tool_call_parser": None},
            64,
            "enable_auto_tool_choice needs a tool_call_parser (vLLM refuses to start without one): "
            "set tool_call_parser, e.g. qwen3_coder, or enable_auto_tool_choice false",
        ),
        (
            {"image": "intel/llm-scaler-vllm"},
            64,
            "image 'intel/llm-scaler-vllm' has no tag: pin a release, e.g. intel/llm-scaler-vllm:0.26.0-b2",
        ),
        (
            {"image": "registry:5000/llm-scaler-vllm"},
            64,
            "image 'registry:5000/llm-scaler-vllm' has no tag: pin a release, e.g. "
            "intel/llm-scaler-vllm:0.26.0-b2",
        ),
        (
            {"image": "intel/llm-scaler-vllm:latest"},
            64,
            "image 'intel/llm-scaler-vllm:latest' uses tag latest, which moves under you (0.26.0-b1 gave "
            "wrong output): pin a release tag, e.g. 0.26.0-b2",
        ),
        (
            {"image": "intel/llm-scaler-vllm@sha256:" + "0" * 64},
            64,
            f"image 'intel/llm-scaler-vllm@sha256:{'0' * 64}' has a digest: give image as repo:tag and the "
            "digest in the role's vllm_service_image_digest",
        ),
        (
            {"model": "../etc"},
            64,
            "model '../etc' must be a plain path under model_dir, without '..', '.' or '//'",
        ),
        (
            {"model": "/srv/models/qwen"},
            64,
            "model '/srv/models/qwen' is absolute: give its path under model_dir (mounted at /models)",
        ),
        ({"model_dir": "models"}, 64, "model_dir 'models' is not an absolute path: give the full host path"),
        (
            {"listen_address": "my-box"},
            64,
            "listen_address 'my-box' is not an IP address: use 127.0.0.1 or the NIC's IP",
        ),
    ],
)
def test_guardrails_refuse_with_what_to_do(changes, host_mem, message):
    assert problems(host_mem, **changes) == [message]


@pytest.mark.parametrize(
    ("arg", "flag", "setting"),
    [
        ("--enforce-eager", "--enforce-eager", "profile"),
        ("--compilation-config={}", "--compilation-config", "profile"),
        ("--compilation-config.cudagraph_mode=NONE", "--compilation-config", "profile"),
        ("-O3", "-O", "profile"),
        ("-O", "-O", "profile"),
        ("--speculative-config", "--speculative-config", "speculative_method and num_speculative_tokens"),
        ("-tp=4", "-tp", "tensor_parallel_size"),
        ("--tensor_parallel_size", "--tensor-parallel-size", "tensor_parallel_size"),
        ("--host=0.0.0.0", "--host", "listen_address"),
        ("--port", "--port", "port"),
        ("--model", "--model", "model"),
        ("--served-model-name=x", "--served-model-name", "served_model_name"),
    ],
)
def test_extra_args_may_not_set_managed_flags(arg, flag, setting):
    assert problems(extra_args=[arg]) == [
        f"extra_args sets {flag}, which the spec manages: set {setting} instead"
    ]


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


def test_every_problem_is_listed_one_per_line():
    found = problems(
        30,
        image="vllm:latest",
        port=True,
        num_speculative_tokens=0,
        listen_address="0.0.0.0",
        extra_env={"CCL_ALLREDUCE": "ring"},
        typo=1,
    )
    assert [p.split(" ")[0] for p in found] == [
        "unknown",
        "port",
        "image",
        "listen_address",
        "profile",
        "extra_env",
        "host",
    ]


def test_ram_check_passes_a_64_gb_box_and_can_be_waived_or_skipped():
    assert spec(62.7)["profile"] == "graph_mtp"  # what 64 GB shows as MemTotal
    assert spec(24, allow_low_ram=True)["profile"] == "graph_mtp"
    assert spec(None)["profile"] == "graph_mtp"
    assert spec(31, profile="compiled")["profile"] == "compiled"
    assert vllm_spec.RAM_REQUIRED_GIB == {"graph_mtp": 64, "compiled": 32, "eager": 32}
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


def test_unknown_settings_are_refused():
    assert problems(prot=8001) == ["unknown setting 'prot': did you mean 'port'?"]
    assert problems(vllm_service_port=8001) == [
        "unknown setting 'vllm_service_port': settings have no vllm_service_ prefix, use 'port'"
    ]
    assert problems(colour="red") == ["unknown setting 'colour': remove it"]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"port": True}, "port must be an integer, not bool"),
        ({"port": 8000.0}, "port must be an integer, not float"),
        ({"port": "8000"}, "port must be an integer, not str"),
        ({"privileged": 1}, "privileged must be true or false, not int"),
        (
            {"max_model_len": "262144"},
            "max_model_len must be an integer or null (leaves the flag out), not str",
        ),
        ({"gpu_memory_utilization": True}, "gpu_memory_utilization must be a number, not bool"),
        ({"devices": ["/dev/dri", 1]}, "devices must be a list of strings, not a list with int, str items"),
        ({"devices": "/dev/dri"}, "devices must be a list of strings, not str"),
        (
            {"capture_sizes": [4, "8"]},
            "capture_sizes must be a list of integers or null (leaves the flag out), "
            "not a list with int, str items",
        ),
        (
            {"extra_env": {"HF_HUB_OFFLINE": 1}},
            "extra_env must be a mapping of strings to strings (quote numbers and booleans), "
            "not a mapping with int values",
        ),
        (
            {"quantization": ""},
            "quantization must be a non-empty string or null (leaves the flag out), not an empty string",
        ),
        ({"profile": None}, "profile must be a non-empty string, not null"),
        ({"image": 3}, "image must be a non-empty string, not int"),
    ],
)
def test_types_are_checked_strictly(changes, message):
    assert problems(**changes) == [message]


def test_required_settings():
    assert problems(image=None, model_dir=None, model="") == [
        "image is required: set it to repo:tag, e.g. intel/llm-scaler-vllm:0.26.0-b2",
        "model_dir is required: set it to the host directory holding the model "
        "(mounted read-only at /models)",
        "model is required: set it to the model's path under model_dir",
    ]
    with pytest.raises(SpecError, match="settings must be a mapping"):
        render(["image"], None)


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


VARS_YAML = """\
vllm_service_image: intel/llm-scaler-vllm:0.26.0-b2
vllm_service_model_dir: /srv/models
vllm_service_model: qwen38-fp8
vllm_service_cache_dir: /srv/cache
vllm_service_listen_address: 0.0.0.0
vllm_service_allow_open_routes: true
vllm_service_api_key: !vault |
  $ANSIBLE_VAULT;1.1;AES256
  36643662303931336362356361373334663632343232323763663465383334353931
other_role_password: !vault |
  $ANSIBLE_VAULT;1.1;AES256
  61626364656667
ansible_user: root
"""


def render_cli(capsys, *argv: str) -> tuple[int, str, str]:
    nodes = [] if "--render-nodes" in argv else ["--render-nodes", ",".join(NODES)]
    rc = cli.main(["vllm", "render", *nodes, *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_cli_renders_a_vars_file_with_a_vault_value(tmp_path, capsys):
    vars_file = tmp_path / "vllm.yml"
    vars_file.write_text(VARS_YAML)
    rc, out, err = render_cli(capsys, "--vars", str(vars_file), "--host-mem-gib", "62.7")
    assert rc == 0, err
    printed = json.loads(out)
    assert out == json.dumps(printed, indent=2) + "\n"
    assert printed["env_file"] == "/etc/arcops/vllm/api-key.env"  # the vaulted key counts as set
    assert printed["ports"][0]["host_ip"] == "0.0.0.0"
    assert "ANSIBLE_VAULT" not in out + err and "3664366" not in out + err
    assert err == "arcops: host RAM figure for the check: --host-mem-gib 62.7\n"
    assert printed == render(BASE | {"listen_address": "0.0.0.0", "api_key": True, **OPEN}, 62.7, NODES)


def test_cli_e_overrides_win_and_parse_as_json(tmp_path, capsys):
    vars_file = tmp_path / "vllm.yml"
    vars_file.write_text(VARS_YAML)
    rc, out, err = render_cli(
        capsys,
        "--vars",
        str(vars_file),
        "-e",
        "vllm_service_port=8001",
        "-e",
        "vllm_service_profile=eager",
        "-e",
        'vllm_service_extra_env={"ZE_AFFINITY_MASK": "0,1"}',
        "-e",
        "vllm_service_served_model_name=null",
        "--host-mem-gib",
        "64",
    )
    assert rc == 0, err
    printed = json.loads(out)
    assert printed["ports"][0]["host_port"] == 8001
    assert printed["profile"] == "eager" and "--enforce-eager" in printed["argv"]
    assert "ZE_AFFINITY_MASK" in printed["env_file_keys"] and "0,1" not in out  # the env file's


def test_cli_reads_json_vars_and_later_files_win(tmp_path, capsys):
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps({f"vllm_service_{k}": v for k, v in BASE.items()}))
    second.write_text(json.dumps({"vllm_service_port": 9000}))
    rc, out, _ = render_cli(capsys, "--vars", str(first), "--vars", str(second), "--host-mem-gib", "64")
    assert rc == 0
    assert json.loads(out) == spec(port=9000)


def test_cli_refuses_with_exit_2_and_every_problem(tmp_path, capsys):
    vars_file = tmp_path / "vllm.yml"
    vars_file.write_text(VARS_YAML.replace("/srv/models", "!vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  6162"))
    rc, out, err = render_cli(
        capsys,
        "--vars",
        str(vars_file),
        "-e",
        f"vllm_service_extra_env={json.dumps({'CCL_ALLREDUCE': 'ring'})}",
        "-e",
        "vllm_service_profile={{ arcops_vllm_profile }}",
        "--host-mem-gib",
        "24",
    )
    assert rc == 2 and out == ""
    lines = err.splitlines()
    assert lines[0] == "arcops: host RAM figure for the check: --host-mem-gib 24"
    assert lines[1] == (
        "arcops: vllm_service_model_dir is vault-encrypted, which arcops cannot read: give it with -e"
    )
    assert lines[2] == ("vllm_service_profile is a Jinja template, which arcops cannot read: give it with -e")
    assert lines[3].startswith("extra_env sets CCL_ALLREDUCE with the ring algorithm")
    assert lines[4].startswith("host RAM: MemTotal 24.0 GiB, profile graph_mtp needs 64 GB")
    assert len(lines) == 5  # no "model_dir is required" on top of the vault problem


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-e", f"vllm_service_api_key{SECRET}"], "arcops: -e number 1 is not key=value"),
        (
            ["--vars", "/nonexistent/vars.yml"],
            "arcops: vars file /nonexistent/vars.yml: cannot read: No such file or directory",
        ),
        (["-e", "vllm_service_image=x:1"], "arcops: model is required"),
    ],
)
def test_cli_bad_input_is_exit_2(capsys, argv, message):
    rc, out, err = render_cli(capsys, *argv, "--host-mem-gib", "64")
    assert rc == 2 and out == ""
    assert message in err and SECRET not in err


ROLE_DEFAULTS_YAML = """\
vllm_service_image: "intel/llm-scaler-vllm:0.26.0-b2"
vllm_service_image_digest: ""
vllm_service_profile: "{{ arcops_vllm_profile | default('graph_mtp') }}"
vllm_service_model_dir: /srv/models
vllm_service_model: ""
vllm_service_cache_dir: /srv/cache
vllm_service_allow_low_ram: "{{ arcops_allow_low_ram | default(false) }}"
vllm_service_watchdog_attempts: 3
"""


def test_cli_reads_role_defaults_following_arcops_variables(tmp_path, capsys):
    defaults = tmp_path / "main.yml"
    defaults.write_text(ROLE_DEFAULTS_YAML)
    rc, out, err = render_cli(capsys, "--vars", str(defaults), "--host-mem-gib", "64")
    assert rc == 2 and err.splitlines()[1:] == [
        "arcops: model is required: set it to the model's path under model_dir"
    ]
    model = ("-e", "vllm_service_model=qwen38-fp8")
    rc, out, err = render_cli(capsys, "--vars", str(defaults), *model, "--host-mem-gib", "64")
    assert rc == 0, err
    assert json.loads(out) == spec()  # profile graph_mtp, allow_low_ram false: the templates' defaults
    rc, out, err = render_cli(capsys, "--vars", str(defaults), *model, "--host-mem-gib", "24")
    assert rc == 2 and "host RAM: MemTotal 24.0 GiB" in err
    group_vars = tmp_path / "group_vars.yml"
    group_vars.write_text("arcops_vllm_profile: eager\n")
    argv = ["--vars", str(defaults), "--vars", str(group_vars), *model, "-e", "arcops_allow_low_ram=true"]
    rc, out, err = render_cli(capsys, *argv, "--host-mem-gib", "24")
    assert rc == 0, err
    assert json.loads(out) == spec(24, profile="eager", allow_low_ram=True)
    assert "-e arcops_allow_low_ram" not in err  # a setting refers to it


def test_cli_says_which_variables_it_ignores(capsys):
    base = [a for k, v in BASE.items() for a in ("-e", f"vllm_service_{k}={v}")]
    rc, _, err = render_cli(
        capsys, *base, "-e", "vllm_service_prot=8001", "-e", "port=8001", "--host-mem-gib", "64"
    )
    assert rc == 0
    assert err.splitlines()[:2] == [
        "arcops: vllm_service_prot is not a container setting (did you mean vllm_service_port?)",
        "arcops: -e port is not a container setting and no setting refers to it",
    ]


def test_cli_bad_yaml_names_the_line_not_its_text(tmp_path, capsys):
    vars_file = tmp_path / "bad.yml"
    vars_file.write_text(f"vllm_service_api_key: {SECRET}\nvllm_service_port: [8000\n")
    rc, _, err = render_cli(capsys, "--vars", str(vars_file), "--host-mem-gib", "64")
    assert rc == 2 and SECRET not in err
    assert f"arcops: {vars_file} is not YAML (" in err and "at line" in err


def test_cli_checks_against_this_machines_memtotal_by_default(capsys, monkeypatch):
    from arcops.box import host

    monkeypatch.setattr(host, "meminfo", lambda sysroot: {"MemTotal": 25 * 2**30})
    args = [a for k, v in BASE.items() for a in ("-e", f"vllm_service_{k}={v}")]
    rc, out, err = render_cli(capsys, *args)
    assert rc == 2 and "arcops: host RAM figure for the check: this machine's MemTotal, 25.0 GiB" in err
    assert "host RAM: MemTotal 25.0 GiB, profile graph_mtp needs 64 GB" in err
    rc, out, err = render_cli(
        capsys, *args, "-e", "vllm_service_profile=eager", "-e", "vllm_service_allow_low_ram=true"
    )
    assert rc == 0 and json.loads(out)["profile"] == "eager"


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


@needs_ansible
def test_module_fails_with_every_problem_and_never_takes_the_key():
    settings = BASE | {"profile": "compiled", "capture_sizes": [4], "extra_env": {"CCL_ALLREDUCE": "ring"}}
    task = run_module(
        "arcops_vllm_spec",
        json.dumps({"settings": settings, "host_mem_total_gib": 24, "render_nodes": NODES}),
    )
    assert task["failed"] is True
    assert task["msg"].splitlines() == task["problems"]
    assert [p.split(" ")[0] for p in task["problems"]] == ["capture_sizes", "extra_env", "host"]
    keyed = run_module(
        "arcops_vllm_spec", json.dumps({"settings": BASE | {"api_key": SECRET, "listen_address": "0.0.0.0"}})
    )
    assert keyed["failed"] is True and keyed["msg"].startswith("settings.api_key must be a boolean")
    assert SECRET not in json.dumps(keyed)
    ok = run_module(
        "arcops_vllm_spec",
        json.dumps(
            {
                "settings": BASE | {"api_key": True, "listen_address": "0.0.0.0", **OPEN},
                "host_mem_total_gib": 62.7,
                "render_nodes": NODES,
            }
        ),
    )
    assert ok["spec"]["env_file"] == "/etc/arcops/vllm/api-key.env"


@needs_ansible
def test_module_reads_this_hosts_ram_when_not_told():
    from arcops.box.host import GIB, meminfo
    from arcops.common.sysroot import SysRoot

    here = meminfo(SysRoot("/"))["MemTotal"] / GIB
    task = run_module(
        "arcops_vllm_spec", json.dumps({"settings": BASE | {"profile": "graph_mtp"}, "render_nodes": NODES})
    )
    low = here < vllm_spec.RAM_REQUIRED_GIB["graph_mtp"] * vllm_spec.VISIBLE_FACTOR
    assert task.get("failed", False) is low
    if low:
        assert [p.split(" ")[0] for p in task["problems"]] == ["host"]


def test_the_role_passes_every_setting_and_documents_the_same_defaults():
    """roles/vllm_service: vars/main.yml maps every setting, defaults/main.yml holds DEFAULTS."""
    import yaml

    from .conftest import REPO

    role = REPO / "roles" / "vllm_service"
    mapped = yaml.safe_load((role / "vars" / "main.yml").read_text())["vllm_service_settings"]
    assert list(mapped) == list(vllm_spec.DEFAULTS)
    defaults = yaml.safe_load((role / "defaults" / "main.yml").read_text())
    templated = {"profile", "allow_low_ram"}  # shared with preflight through arcops_* variables
    for name, value in vllm_spec.DEFAULTS.items():
        if name in templated:
            assert "{{" in defaults[vllm_spec.PREFIX + name]
        elif name == "image":
            assert defaults[vllm_spec.PREFIX + name] == "intel/llm-scaler-vllm:0.26.0-b2"
        elif name == "model":
            assert defaults[vllm_spec.PREFIX + name] == ""
        else:
            assert defaults[vllm_spec.PREFIX + name] == value, name


@pytest.mark.parametrize(
    "value",
    ["ring", "RING", "ring:0-max", "direct:0-8192;ring:8193-max", " direct:0-8;ring ", "rabenseifner,ring"],
)
def test_ring_is_refused_in_any_of_oneccls_forms(value):
    assert vllm_spec.uses_ring(value)
    with pytest.raises(vllm_spec.SpecError, match="CCL_ALLREDUCE with the ring algorithm"):
        vllm_spec.render({"extra_env": {"CCL_ALLREDUCE": value}}, 64)


@pytest.mark.parametrize("value", ["direct", "rabenseifner:0-max", "direct:0-8192;rabenseifner:8193-max", ""])
def test_other_allreduce_algorithms_are_allowed(value):
    assert not vllm_spec.uses_ring(value)


@pytest.mark.parametrize(
    ("profile", "arg", "flag"),
    [("eager", "--no-enforce-eager", "--enforce-eager"), ("graph_mtp", "--enforce_eager", "--enforce-eager")],
)
def test_a_flag_that_contradicts_the_profile_is_refused(profile, arg, flag):
    with pytest.raises(vllm_spec.SpecError, match=f"extra_args sets {flag}, which the spec manages"):
        vllm_spec.render({"profile": profile, "extra_args": [arg]}, 64)


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
