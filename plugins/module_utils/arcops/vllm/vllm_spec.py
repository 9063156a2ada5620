"""Typed vllm_service settings -> the exact container spec the vllm_service role deploys.

One function decides every flag, mount and environment variable, so the role, the CLI and the tests
agree on what runs. The defaults reproduce the docker run measured on two Arc Pro B60s
(graphs + MTP k=3, oneCCL thresholds, persisted compile and Triton caches); the guardrails refuse
the settings that hung, stalled or soft-locked a host there (docs/field-knowledge.md).
Stdlib only: shipped as module_utils.

The API key is only ever tested for truthiness: it reaches vLLM as VLLM_API_KEY from a root-only
env file the role writes, so it is in no spec, argv, log or error message.
"""

from __future__ import annotations

import difflib
import hashlib
import ipaddress
import json
import math
import posixpath
import re

from ..common.net import local_host, url_host
from . import exposure, residency_shim

PROFILES = ("graph_mtp", "compiled", "eager")
# Installed RAM (GiB) per profile and the share of it MemTotal shows: the preflight role's figures.
RAM_REQUIRED_GIB = {"graph_mtp": 64, "compiled": 32, "eager": 32}
VISIBLE_FACTOR = 0.94
CONTAINER_PORT = 8000
MODELS_DIR = "/models"
PREFIX = "vllm_service_"

# The measured run's splitting ops, in its order (docs/field-knowledge.md). vllm::all_reduce must
# stay: without the splitting ops the all-reduce landed inside the compiled graph and the output
# was garbage.
SPLITTING_OPS = [
    "vllm::unified_attention_with_output",
    "vllm::unified_mla_attention_with_output",
    "vllm::mamba_mixer2",
    "vllm::mamba_mixer",
    "vllm::short_conv",
    "vllm::linear_attention",
    "vllm::plamo2_mamba_mixer",
    "vllm::qwen_gdn_attention_core",
    "vllm::gdn_attention_core_xpu",
    "vllm::olmo_hybrid_gdn_full_forward",
    "vllm::kda_attention",
    "vllm::sparse_attn_indexer",
    "vllm::rocm_aiter_sparse_attn_indexer",
    "vllm::deepseek_v4_attention",
    "vllm::hpc_rope_norm_forward",
    "vllm::unified_kv_cache_update",
    "vllm::all_reduce",
]
ALL_REDUCE = "vllm::all_reduce"
CAPTURE_MULTIPLES = (1, 2, 4, 8)  # capture sizes are (k+1) x these for MTP with k tokens
CUDAGRAPH_MODES = ("NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE")
# Where the residency filter's folder (residency_filter_dir on the host) appears in the container.
FILTER_TARGET = "/opt/arcops/l0-residency"
CCL_THRESHOLDS = (
    "CCL_SYCL_ALLREDUCE_SIMPLE_THRESHOLD",
    "CCL_SYCL_ALLGATHERV_SIMPLE_THRESHOLD",
    "CCL_SYCL_REDUCE_SCATTER_SIMPLE_THRESHOLD",
)

DEFAULTS: dict[str, object] = {
    "image": None,
    "container_name": "vllm",
    "profile": "graph_mtp",
    "model_dir": "/srv/models",
    "model": None,
    "served_model_name": None,
    "cache_dir": "/var/cache/arcops/vllm",
    # Least privilege (docs/security.md): the render nodes of the GPUs in use ([] = found on the
    # box), an unprivileged container, a private IPC namespace; each wider setting is opt-in.
    "devices": [],
    "mount_dri_by_path": True,
    "privileged": False,
    "ipc": "private",
    "shm_size": "32g",
    "listen_address": "127.0.0.1",
    "port": 8000,
    "api_key": "",
    "api_key_env_file": "/etc/arcops/vllm/api-key.env",
    "allow_open_routes": False,
    "tensor_parallel_size": 2,
    "max_model_len": 262144,
    "allow_long_max_model_len": True,
    "quantization": "fp8",
    "kv_cache_dtype": "fp8_e4m3",
    "max_num_batched_tokens": 8192,
    "block_size": 64,
    "max_num_seqs": 8,
    "enable_prefix_caching": True,
    "trust_remote_code": False,
    "mamba_ssm_cache_dtype": "float16",
    "gpu_memory_utilization": 0.95,
    "dtype": "float16",
    "speculative_method": "qwen3_5_mtp",
    "num_speculative_tokens": 3,
    "capture_sizes": None,
    "cudagraph_mode": "PIECEWISE",
    "splitting_ops": SPLITTING_OPS,
    "multiproc_method": "spawn",
    "p2p": True,
    "ccl_simple_threshold": 1073741824,
    # The Level Zero residency filter (docs/host-ram.md): on wherever two or more GPUs serve.
    "residency_filter": True,
    "residency_filter_dir": "/opt/arcops/l0-residency",
    "enable_auto_tool_choice": True,
    "tool_call_parser": "qwen3_coder",
    "reasoning_parser": "qwen3",
    "extra_env": {},
    "extra_args": [],
    "allow_low_ram": False,
}
REQUIRED = ("image", "model_dir", "model")

# Type of each setting; a trailing "?" allows null (None), which leaves the flag out.
TYPES = {
    "image": "str",
    "container_name": "str",
    "profile": "str",
    "model_dir": "str",
    "model": "str",
    "served_model_name": "str?",
    "cache_dir": "str",
    "devices": "str_list",
    "mount_dri_by_path": "bool",
    "privileged": "bool",
    "ipc": "str",
    "shm_size": "str",
    "listen_address": "str",
    "port": "int",
    "api_key": "secret",
    "api_key_env_file": "str",
    "allow_open_routes": "bool",
    "tensor_parallel_size": "int",
    "max_model_len": "int?",
    "allow_long_max_model_len": "bool",
    "quantization": "str?",
    "kv_cache_dtype": "str?",
    "max_num_batched_tokens": "int?",
    "block_size": "int?",
    "max_num_seqs": "int?",
    "enable_prefix_caching": "bool",
    "trust_remote_code": "bool",
    "mamba_ssm_cache_dtype": "str?",
    "gpu_memory_utilization": "number",
    "dtype": "str?",
    "speculative_method": "str",
    "num_speculative_tokens": "int",
    "capture_sizes": "int_list?",
    "cudagraph_mode": "str",
    "splitting_ops": "str_list",
    "multiproc_method": "str",
    "p2p": "bool",
    "ccl_simple_threshold": "int?",
    "residency_filter": "bool",
    "residency_filter_dir": "str",
    "enable_auto_tool_choice": "bool",
    "tool_call_parser": "str?",
    "reasoning_parser": "str?",
    "extra_env": "str_dict",
    "extra_args": "str_list",
    "allow_low_ram": "bool",
}
_TYPE_TEXT = {
    "str": "a non-empty string",
    "bool": "true or false",
    "int": "an integer",
    "number": "a number",
    "secret": "a string or a boolean",
    "str_list": "a list of strings",
    "int_list": "a list of integers",
    "str_dict": "a mapping of strings to strings (quote numbers and booleans)",
}

_KEY_HINT = "api_key (the role writes the key to api_key_env_file, out of the spec and argv)"
# Environment the spec sets (or deliberately leaves out), and the setting that controls each.
MANAGED_ENV = {
    "VLLM_ALLOW_LONG_MAX_MODEL_LEN": "allow_long_max_model_len",
    "VLLM_WORKER_MULTIPROC_METHOD": "multiproc_method",
    "VLLM_XPU_ENABLE_XPU_GRAPH": "profile",
    "CCL_TOPO_P2P_ACCESS": "p2p",
    **dict.fromkeys(CCL_THRESHOLDS, "ccl_simple_threshold"),
    residency_shim.AUDIT_VAR: "residency_filter",
    residency_shim.PASS_ALL_VAR: "residency_filter",
    "VLLM_API_KEY": _KEY_HINT,
}
# vLLM flags the spec renders from settings; extra_args may not repeat them.
MANAGED_FLAGS = {
    "--enforce-eager": "profile",
    "--compilation-config": "profile",
    "-O": "profile",
    "--speculative-config": "speculative_method and num_speculative_tokens",
    "--api-key": _KEY_HINT,
    "-tp": "tensor_parallel_size",
    "--tensor-parallel-size": "tensor_parallel_size",
    "--host": "listen_address",
    "--port": "port",
    "--model": "model",
    "--served-model-name": "served_model_name",
}
_IPC = ("host", "private", "shareable", "none")
_NAME_RE = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_.-]+")
_TAG_RE = re.compile(r"\w[\w.-]{0,127}")
_SHM_RE = re.compile(r"[1-9][0-9]*(?:b|[kmgt]b?)?", re.IGNORECASE)
_ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class SpecError(ValueError):
    """The settings cannot make a safe container spec; the message lists every problem, one a line."""

    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


def settings_from_role_vars(vars: dict) -> dict:
    """The settings among role variables, prefix stripped.

    Other variables, the role's own included (engine, image digest, watchdog), are not container
    settings: a role vars file holds them too.
    """
    return {
        k[len(PREFIX) :]: v
        for k, v in vars.items()
        if isinstance(k, str) and k.startswith(PREFIX) and k[len(PREFIX) :] in DEFAULTS
    }


def capture_sizes_for(k: int) -> list[int]:
    """Each MTP decode step runs k+1 tokens per sequence, so graphs sized (k+1) x {1,2,4,8} fit exactly."""
    return [(k + 1) * m for m in CAPTURE_MULTIPLES]


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _type_ok(kind: str, v: object) -> bool:
    if kind == "str":
        return isinstance(v, str) and v != ""
    if kind == "bool":
        return isinstance(v, bool)
    if kind == "int":
        return _is_int(v)
    if kind == "number":
        return _is_int(v) or (isinstance(v, float) and math.isfinite(v))
    if kind == "secret":
        return isinstance(v, (str, bool))
    if kind == "str_list":
        return isinstance(v, list) and all(isinstance(x, str) for x in v)
    if kind == "int_list":
        return isinstance(v, list) and all(_is_int(x) for x in v)
    if kind == "str_dict":
        return isinstance(v, dict) and all(isinstance(a, str) and isinstance(b, str) for a, b in v.items())
    raise AssertionError(kind)


def _typed(settings: object, problems: list[str]) -> tuple[dict, set[str]]:
    """Settings merged over DEFAULTS, and the names of those of the wrong type (reported, then defaulted)."""
    if not isinstance(settings, dict):
        problems.append(
            f"settings must be a mapping of setting names to values, not {type(settings).__name__}"
        )
        settings = {}
    for key in settings:
        if key not in DEFAULTS:
            bare = key[len(PREFIX) :] if isinstance(key, str) and key.startswith(PREFIX) else None
            close = difflib.get_close_matches(str(key), list(DEFAULTS), n=1)
            if bare in DEFAULTS:
                hint = f": settings have no {PREFIX} prefix, use '{bare}'"
            else:
                hint = f": did you mean '{close[0]}'?" if close else ": remove it"
            problems.append(f"unknown setting '{key}'{hint}")
    s = {k: settings.get(k, v) for k, v in DEFAULTS.items()}
    bad = set()
    for key, kind in TYPES.items():
        nullable = kind.endswith("?")
        kind = kind.rstrip("?")
        v = s[key]
        if key in REQUIRED and v == "":
            s[key] = v = None  # the role's way of saying "set me"
        if v is None and (nullable or key in REQUIRED):
            continue
        if not _type_ok(kind, v):
            # Never the value itself: it may be the API key, or a secret in extra_env.
            what = _TYPE_TEXT[kind] + (" or null (leaves the flag out)" if nullable else "")
            problems.append(f"{key} must be {what}, not {_type_name(v)}")
            s[key] = DEFAULTS[key]
            bad.add(key)
    return s, bad


def _type_name(v: object) -> str:
    if isinstance(v, list):
        return "a list with " + ", ".join(sorted({type(x).__name__ for x in v})) + " items"
    if isinstance(v, dict):
        return "a mapping with " + ", ".join(sorted({type(x).__name__ for x in v.values()})) + " values"
    if v == "":
        return "an empty string"
    return "null" if v is None else type(v).__name__


def _flag(arg: str) -> str | None:
    """The flag an extra argument sets, in vLLM's spelling (--x_y == --x-y, --x.sub == --x)."""
    if arg.startswith("--"):
        return arg.split("=", 1)[0].split(".", 1)[0].replace("_", "-")
    if arg.startswith("-O"):
        return "-O"
    if arg.startswith("-") and len(arg) > 1:
        return arg.split("=", 1)[0]
    return None


def _is_abs(path: str) -> bool:
    return path.startswith("/")


def _check_image(image: str, problems: list[str]) -> None:
    if "@" in image:
        problems.append(
            f"image '{image}' has a digest: give image as repo:tag and the digest in "
            "the role's vllm_service_image_digest"
        )
        return
    name, sep, tag = image.rpartition(":")
    if not sep or "/" in tag:
        problems.append(f"image '{image}' has no tag: pin a release, e.g. intel/llm-scaler-vllm:0.26.0-b2")
    elif tag == "latest":
        problems.append(
            f"image '{image}' uses tag latest, which moves under you (0.26.0-b1 gave wrong output): "
            "pin a release tag, e.g. 0.26.0-b2"
        )
    elif not name or not _TAG_RE.fullmatch(tag) or any(c.isspace() for c in image):
        problems.append(f"image '{image}' is not repo:tag: write it like intel/llm-scaler-vllm:0.26.0-b2")


def _check_paths(s: dict, problems: list[str]) -> None:
    for key in ("model_dir", "cache_dir", "api_key_env_file", "residency_filter_dir"):
        if s[key] is not None and not _is_abs(s[key]):
            problems.append(f"{key} '{s[key]}' is not an absolute path: give the full host path")
    model = s["model"]
    if model is not None:
        parts = model.split("/")
        if _is_abs(model):
            problems.append(
                f"model '{model}' is absolute: give its path under model_dir (mounted at /models)"
            )
        elif ".." in parts or "" in parts or "." in parts:
            problems.append(
                f"model '{model}' must be a plain path under model_dir, without '..', '.' or '//'"
            )
    for dev in s["devices"]:
        parts = dev.split(":")
        perms = parts[2] if len(parts) == 3 else "rwm"
        if len(parts) > 3 or not all(_is_abs(p) for p in parts[:2]) or not perms or set(perms) - set("rwm"):
            problems.append(
                f"devices entry '{dev}' is not host[:container[:perms]] with absolute paths and perms "
                "of r, w, m: write it like /dev/dri:/dev/dri"
            )


def _check_service(s: dict, bad: set[str], problems: list[str]) -> str:
    """Container and network settings; returns the host IP to publish on."""
    if not _NAME_RE.fullmatch(s["container_name"]):
        problems.append(
            f"container_name '{s['container_name']}' is not a container name: "
            "use letters, digits, '_', '.', '-' (2 characters or more)"
        )
    ipc = s["ipc"]
    if ipc not in _IPC and not (ipc.startswith("container:") and len(ipc) > len("container:")):
        problems.append(
            f"ipc '{ipc}' is not a docker IPC mode: use host (as measured, docs/field-knowledge.md)"
        )
    if not _SHM_RE.fullmatch(s["shm_size"]):
        problems.append(
            f"shm_size '{s['shm_size']}' is not a docker size: a positive number with an optional unit "
            "b, k, m, g or t, e.g. 32g"
        )
    if not 1 <= s["port"] <= 65535:
        problems.append(f"port {s['port']} is out of range: use a host port from 1 to 65535")
    host_ip, loopback = s["listen_address"], True
    if host_ip == "localhost":
        host_ip = "127.0.0.1"  # docker publishes on an IP, not a host name
    else:
        try:
            loopback = ipaddress.ip_address(host_ip).is_loopback
        except ValueError:
            problems.append(f"listen_address '{host_ip}' is not an IP address: use 127.0.0.1 or the NIC's IP")
    if not loopback and not s["api_key"] and "api_key" not in bad:
        problems.append(
            f"listen_address {host_ip} is not loopback and api_key is empty: anyone on the network could "
            "use the server; set api_key (keep it in a vault) or listen on 127.0.0.1"
        )
    elif not loopback and "api_key" not in bad:
        problem = exposure.open_routes_problem(host_ip, s["allow_open_routes"])
        problems += [problem] if problem else []
    return host_ip


def _check_engine(s: dict, problems: list[str]) -> None:
    for key in (
        "tensor_parallel_size",
        "max_model_len",
        "max_num_batched_tokens",
        "block_size",
        "max_num_seqs",
    ):
        if s[key] is not None and s[key] < 1:
            problems.append(f"{key} {s[key]} must be 1 or more")
    if s["ccl_simple_threshold"] is not None and s["ccl_simple_threshold"] < 0:
        problems.append(f"ccl_simple_threshold {s['ccl_simple_threshold']} must be 0 or more (bytes)")
    if not 0 < s["gpu_memory_utilization"] <= 1:
        problems.append(
            f"gpu_memory_utilization {s['gpu_memory_utilization']} must be above 0 and at most 1 "
            "(a fraction of VRAM, e.g. 0.95)"
        )
    k = s["num_speculative_tokens"]
    if k < 0:
        problems.append(f"num_speculative_tokens {k} must be 0 (no MTP) or more")
    if s["multiproc_method"] not in ("spawn", "fork"):
        problems.append(
            f"multiproc_method '{s['multiproc_method']}' must be spawn "
            "(as measured, docs/field-knowledge.md) or fork"
        )
    if s["enable_auto_tool_choice"] and s["tool_call_parser"] is None:
        problems.append(
            "enable_auto_tool_choice needs a tool_call_parser (vLLM refuses to start without one): "
            "set tool_call_parser, e.g. qwen3_coder, or enable_auto_tool_choice false"
        )


def _check_profile(s: dict, problems: list[str]) -> list[int] | None:
    """Profile guardrails; returns the graph capture sizes for graph_mtp."""
    profile, k, sizes = s["profile"], s["num_speculative_tokens"], s["capture_sizes"]
    if profile not in PROFILES:
        problems.append(f"unknown profile '{profile}': use one of {', '.join(PROFILES)}")
        return None
    if sizes is not None and profile != "graph_mtp":
        problems.append(
            f"capture_sizes is set but profile {profile} captures no graphs: "
            "remove capture_sizes or use profile graph_mtp"
        )
    if profile != "graph_mtp":
        return None
    if k == 0:
        problems.append(
            "profile graph_mtp with num_speculative_tokens 0: XPU graphs without MTP stalled under load "
            "(0 tok/s, then a shm_broadcast timeout); use profile compiled, or num_speculative_tokens > 0"
        )
    if s["cudagraph_mode"] not in CUDAGRAPH_MODES or s["cudagraph_mode"] == "NONE":
        problems.append(
            f"cudagraph_mode '{s['cudagraph_mode']}' does not capture graphs for profile graph_mtp: "
            "use PIECEWISE (as measured, docs/field-knowledge.md), or profile compiled for no graphs"
        )
    if not s["splitting_ops"]:
        problems.append(
            "splitting_ops is empty: without them the all-reduce ends up inside the compiled graph and "
            "the output is garbage; keep the default list"
        )
    if k < 0:
        return None
    right = capture_sizes_for(k)
    if sizes is None:
        return right
    if not sizes or any(n < 1 for n in sizes):
        problems.append(f"capture_sizes must be a non-empty list of positive integers: use {right}")
    elif any(n % (k + 1) for n in sizes):
        problems.append(
            f"capture_sizes {sizes} are not all multiples of num_speculative_tokens + 1 = {k + 1}: "
            "each MTP decode step runs k+1 tokens per sequence, so other sizes pad every step "
            f"(5,10,20,40 with k=3 padded by 25%); use {right}"
        )
    return sorted(set(sizes))


def uses_ring(ccl_allreduce: str) -> bool:
    """Whether a CCL_ALLREDUCE value selects the ring algorithm anywhere. oneCCL takes one
    algorithm ("ring") or a list by message size ("direct:0-8192;ring:8193-max")."""
    return any(part.split(":", 1)[0].strip().lower() == "ring" for part in re.split(r"[;,]", ccl_allreduce))


def _check_extras(s: dict, problems: list[str]) -> None:
    # Name keys and flags only, never values: extra_env or extra_args may carry a secret.
    for key, value in s["extra_env"].items():
        if key.strip().upper() == "CCL_ALLREDUCE" and uses_ring(value):
            problems.append(
                "extra_env sets CCL_ALLREDUCE with the ring algorithm: on dual B60s the first concurrent "
                "request soft-locked the host for 15+ minutes and only a reboot cleared it; remove it"
            )
        elif key in MANAGED_ENV:
            problems.append(f"extra_env sets {key}, which the spec manages: set {MANAGED_ENV[key]} instead")
        elif not _ENV_NAME_RE.fullmatch(key):
            problems.append(
                f"extra_env key '{key}' is not an environment variable name: use letters, digits, _"
            )
        elif re.search(r"[\x00-\x1f\x7f]", value):
            problems.append(
                f"extra_env {key} holds a control character: one line per variable in the env file"
            )
    problems += exposure.secret_args_problems(s["extra_args"], "extra_args")
    for arg in s["extra_args"]:
        flag = _flag(arg)
        if flag and flag.startswith("--no-") and f"--{flag[5:]}" in MANAGED_FLAGS:
            flag = f"--{flag[5:]}"  # vLLM's boolean flags also take a --no- form
        if flag in MANAGED_FLAGS:
            problems.append(
                f"extra_args sets {flag}, which the spec manages: set {MANAGED_FLAGS[flag]} instead"
            )


def _check_ram(profile: str, mem: float | None, allow_low: bool, problems: list[str]) -> None:
    if mem is None or profile not in RAM_REQUIRED_GIB or allow_low:
        return
    need = RAM_REQUIRED_GIB[profile]
    if mem < need * VISIBLE_FACTOR:
        problems.append(
            f"host RAM: MemTotal {mem:.1f} GiB, profile {profile} needs {need} GB installed "
            f"(MemTotal {need * VISIBLE_FACTOR:g} GiB or more); with 32 GB one graph_mtp start in "
            "four hung with copy-engine resets: add RAM, use profile eager, or set allow_low_ram to "
            "accept the risk"
        )


def _json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


def _argv(s: dict, sizes: list[int] | None) -> list[str]:
    """vLLM's arguments in the measured run's order; a null or false setting leaves its flag out."""
    argv = [f"{MODELS_DIR}/{s['model']}"]

    def opt(flag: str, key: str) -> None:
        if s[key] is not None:
            argv.extend([flag, str(s[key])])

    if s["quantization"] is not None:
        argv.append(f"--quantization={s['quantization']}")  # the report writes it with '='
    opt("-tp", "tensor_parallel_size")
    opt("--max-model-len", "max_model_len")
    opt("--kv-cache-dtype", "kv_cache_dtype")
    opt("--max-num-batched-tokens", "max_num_batched_tokens")
    opt("--block-size", "block_size")
    if s["trust_remote_code"]:
        argv.append("--trust-remote-code")
    opt("--max-num-seqs", "max_num_seqs")
    if s["enable_prefix_caching"]:
        argv.append("--enable-prefix-caching")
    if s["num_speculative_tokens"] > 0:
        # The drafter is always eager: the measured run kept it out of the graphs.
        spec = {
            "method": s["speculative_method"],
            "num_speculative_tokens": s["num_speculative_tokens"],
            "enforce_eager": True,
        }
        argv.extend(["--speculative-config", _json(spec)])
    opt("--mamba-ssm-cache-dtype", "mamba_ssm_cache_dtype")
    opt("--gpu-memory-utilization", "gpu_memory_utilization")
    opt("--dtype", "dtype")
    if s["profile"] == "graph_mtp":
        ops = list(s["splitting_ops"])
        if ALL_REDUCE not in ops:
            ops.append(ALL_REDUCE)
        config = {
            "cudagraph_mode": s["cudagraph_mode"],
            "cudagraph_capture_sizes": sizes,
            "splitting_ops": ops,
        }
        argv.extend(["--compilation-config", _json(config)])
    elif s["profile"] == "compiled":
        argv.extend(["--compilation-config", _json({"cudagraph_mode": "NONE"})])
    else:
        argv.append("--enforce-eager")
    if s["enable_auto_tool_choice"]:
        argv.append("--enable-auto-tool-choice")
    opt("--tool-call-parser", "tool_call_parser")
    opt("--reasoning-parser", "reasoning_parser")
    opt("--served-model-name", "served_model_name")
    return argv + list(s["extra_args"])


def filter_active(s: dict) -> bool:
    """The filter runs with two or more GPUs: with one there is no peer to make memory resident on."""
    return bool(s["residency_filter"]) and s["tensor_parallel_size"] >= 2


def _env(s: dict) -> dict[str, str]:
    env = {
        "VLLM_WORKER_MULTIPROC_METHOD": s["multiproc_method"],
        "CCL_TOPO_P2P_ACCESS": "1" if s["p2p"] else "0",
    }
    if s["allow_long_max_model_len"]:
        env["VLLM_ALLOW_LONG_MAX_MODEL_LEN"] = "1"
    if s["profile"] == "graph_mtp":
        env["VLLM_XPU_ENABLE_XPU_GRAPH"] = "1"
    if s["ccl_simple_threshold"] is not None:
        env.update(dict.fromkeys(CCL_THRESHOLDS, str(s["ccl_simple_threshold"])))
    if filter_active(s):
        env[residency_shim.AUDIT_VAR] = posixpath.join(FILTER_TARGET, residency_shim.LIBRARY)
    # extra_env is not here: its values may be secrets, so they reach the container from the
    # root-only env file with the key (env_file), never through the spec, a task result or argv.
    return dict(sorted(env.items()))


def render(settings: dict, host_mem_total_gib: float | None, render_nodes: list[str] | None = None) -> dict:
    """The container spec for these settings, or SpecError listing every problem.

    host_mem_total_gib is the host's MemTotal in GiB (None: skip the RAM check); render_nodes
    the render nodes of the box's Arc GPUs (exposure.box_render_nodes), which empty devices
    stand for (None: not known here, so devices must be given).
    """
    problems: list[str] = []
    s, bad = _typed(settings, problems)
    mem = host_mem_total_gib
    if mem is not None and not (_is_int(mem) or isinstance(mem, float)):
        problems.append(f"host_mem_total_gib must be a number of GiB or None, not {type(mem).__name__}")
        mem = None
    for key in REQUIRED:
        if s[key] is None and key not in bad:
            problems.append(
                {
                    "image": "image is required: set it to repo:tag, e.g. intel/llm-scaler-vllm:0.26.0-b2",
                    "model_dir": "model_dir is required: set it to the host directory holding the model "
                    "(mounted read-only at /models)",
                    "model": "model is required: set it to the model's path under model_dir",
                }[key]
            )
    if s["image"] is not None:
        _check_image(s["image"], problems)
    _check_paths(s, problems)
    host_ip = _check_service(s, bad, problems)
    _check_engine(s, problems)
    sizes = _check_profile(s, problems)
    _check_extras(s, problems)
    _check_ram(s["profile"], mem, s["allow_low_ram"], problems)
    devices = list(s["devices"])
    if not devices and "tensor_parallel_size" not in bad:
        devices, problem = exposure.devices_for(render_nodes, s["tensor_parallel_size"])
        problems += [problem] if problem else []
    if problems:
        raise SpecError(problems)

    compile_cache = posixpath.join(s["cache_dir"], "vllm-compile")
    triton_cache = posixpath.join(s["cache_dir"], "triton")
    mounts = [{"source": "/dev/dri/by-path", "target": "/dev/dri/by-path", "read_only": True}]
    mounts = mounts if s["mount_dri_by_path"] else []
    mounts += [
        {"source": s["model_dir"], "target": MODELS_DIR, "read_only": True},
        # Persisted caches: without Triton's, every start recompiled kernels inside the first request.
        {"source": compile_cache, "target": "/root/.cache/vllm", "read_only": False},
        {"source": triton_cache, "target": "/root/.triton", "read_only": False},
    ]
    # The folder, not the file: a rebuilt library (a new inode) is what the next start sees.
    residency = None
    if filter_active(s):
        residency = {
            "dir": s["residency_filter_dir"],
            "library": posixpath.join(s["residency_filter_dir"], residency_shim.LIBRARY),
        }
        mounts.append({"source": s["residency_filter_dir"], "target": FILTER_TARGET, "read_only": True})
    spec = {
        "name": s["container_name"],
        "image": s["image"],
        "profile": s["profile"],
        "privileged": s["privileged"],
        "ipc": s["ipc"],
        "shm_size": s["shm_size"],
        "devices": devices,
        "mounts": mounts,
        "ports": [{"host_ip": host_ip, "host_port": s["port"], "container_port": CONTAINER_PORT}],
        "env": _env(s),
        # The key (VLLM_API_KEY) and extra_env reach vLLM from this root-only file, never through
        # the spec; the spec names what is in it, never a value.
        "env_file": s["api_key_env_file"] if s["api_key"] or s["extra_env"] else None,
        "env_file_keys": sorted((["VLLM_API_KEY"] if s["api_key"] else []) + list(s["extra_env"])),
        "argv": _argv(s, sizes),
        "caches": [compile_cache, triton_cache],
        # The Level Zero residency filter the role builds on the host (None: off, or one GPU).
        "residency_filter": residency,
    }
    spec["spec_hash"] = hashlib.sha256(
        json.dumps(spec, sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()
    return spec


def docker_container_args(spec: dict) -> dict:
    """The spec's mounts and ports in community.docker.docker_container's words: binds as
    source:target:ro|rw, ports as [ip:]host:container (an IPv6 address in brackets)."""
    binds = [f"{m['source']}:{m['target']}:{'ro' if m['read_only'] else 'rw'}" for m in spec["mounts"]]
    ports = []
    for p in spec["ports"]:
        ports.append(f"{url_host(p['host_ip'])}:{p['host_port']}:{p['container_port']}")
    return {"binds": binds, "published_ports": ports}


def endpoint(spec: dict) -> dict:
    """Where the box itself reaches the spec's API, and the model name vLLM serves it under
    (--served-model-name, else the model path as given): what the verify stage asks."""
    port = spec["ports"][0]
    host = local_host(port["host_ip"])
    argv = spec["argv"]
    model = argv[argv.index("--served-model-name") + 1] if "--served-model-name" in argv else argv[0]
    return {
        "url": f"http://{host}:{port['host_port']}",
        "model": model,
        "api_key_file": spec["env_file"] if "VLLM_API_KEY" in spec.get("env_file_keys", []) else "",
    }


def residency_probe(spec: dict) -> dict | None:
    """A process to start in the spec's running container that proves the residency filter loads
    there (its marker on stderr), or None when the spec has no filter. Every image arcops runs has
    python3; the filter comes from the container's own LD_AUDIT."""
    if spec["residency_filter"] is None:
        return None
    return {
        "argv": ["python3", "-c", "pass"],
        "env": {residency_shim.LOG_VAR: "1"},
        "expect": residency_shim.MARKER,
    }
