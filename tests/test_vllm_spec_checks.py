"""vllm_spec's guardrails: types, ranges and shapes from the settings table, and the rules that
refuse what hung, stalled or soft-locked a dual-B60 host, each with what to do."""

from __future__ import annotations

import json

import pytest
from arcops.vllm import vllm_spec
from arcops.vllm.vllm_spec import SpecError, render

from .helpers.ansible_run import needs_ansible, run_module
from .helpers.vllm_settings import (
    BASE,
    NODES,
    OPEN,
    SECRET,
    problems,
)


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
            "capture_sizes must be a non-empty list of integers from 1 to 4096: use [4, 8, 16, 32]",
        ),
        (
            {"capture_sizes": [0, 4], "num_speculative_tokens": 1},
            "capture_sizes must be a non-empty list of integers from 1 to 4096: use [2, 4, 8, 16]",
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
        ({"tensor_parallel_size": 0}, 64, "tensor_parallel_size 0 must be from 1 to 64"),
        ({"port": 70000}, 64, "port 70000 must be from 1 to 65535 (a host port)"),
        ({"port": 0}, 64, "port 0 must be from 1 to 65535 (a host port)"),
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
            {"devices": ["/dev/sda:/dev/dri/renderD128", "/dev/dri/renderD129"]},
            64,
            "devices entry '/dev/sda:/dev/dri/renderD128' maps the host's /dev/sda, not a plain path under "
            "/dev/dri: give GPU nodes (/dev/null may stand in for one where there is no GPU)",
        ),
        (
            {"devices": ["/dev/dri/../mem:/dev/dri/renderD128"]},
            64,
            "devices entry '/dev/dri/../mem:/dev/dri/renderD128' maps the host's /dev/dri/../mem, not a "
            "plain path under /dev/dri: give GPU nodes (/dev/null may stand in for one where there is "
            "no GPU)",
        ),
        (
            {"devices": ["/dev/dri/renderD128:/dev/kmsg"]},
            64,
            "devices entry '/dev/dri/renderD128:/dev/kmsg' maps onto /dev/kmsg, not a plain path under "
            "/dev/dri: the container gets GPU nodes only",
        ),
        (
            {"devices": ["/dev/dri-evil"]},
            64,
            "devices entry '/dev/dri-evil' maps onto /dev/dri-evil, not a plain path under /dev/dri: the "
            "container gets GPU nodes only",
        ),
        ({"max_model_len": 10**12}, 64, "max_model_len 1000000000000 must be from 1 to 16777216 (tokens)"),
        ({"max_num_seqs": 10**9}, 64, "max_num_seqs 1000000000 must be from 1 to 65536"),
        ({"block_size": 4096}, 64, "block_size 4096 must be from 1 to 1024"),
        (
            {"ccl_simple_threshold": -1},
            64,
            "ccl_simple_threshold -1 must be from 0 to 1099511627776 (bytes)",
        ),
        (
            {"gpu_memory_utilization": 1.2},
            64,
            "gpu_memory_utilization 1.2 must be from 0.05 to 1 (a fraction of VRAM, e.g. 0.95)",
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
            "capture_sizes must be a list of integers or null, not a list with int, str items",
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
