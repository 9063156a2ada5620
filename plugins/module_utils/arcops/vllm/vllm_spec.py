"""Typed vllm_service settings -> the exact container spec the vllm_service role deploys.

One function decides every flag, mount and environment variable, so the role, the CLI and the tests
agree on what runs. The settings are declared in settings.py; spec_checks.py refuses the ones that
hung, stalled or soft-locked a host (docs/field-knowledge.md). Stdlib only: shipped as module_utils.

The API key is only ever tested for truthiness: it reaches vLLM as VLLM_API_KEY from a root-only
env file the role writes, so it is in no spec, argv, log or error message.
"""

from __future__ import annotations

import hashlib
import json
import math
import posixpath

from ..common.net import local_host, url_host
from ..common.settings_table import is_int
from . import exposure, peer_access, residency_shim, spec_checks
from .settings import BY_NAME, DEFAULTS, PREFIX, REQUIRED, settings_from_role_vars
from .spec_checks import (
    CCL_THRESHOLDS,
    PROFILES,
    RAM_REQUIRED_GIB,
    VISIBLE_FACTOR,
    capture_sizes_for,
    uses_ring,
)

# Names other modules and the tests read here, wherever they are declared.
__all__ = [
    "DEFAULTS",
    "PREFIX",
    "PROFILES",
    "RAM_REQUIRED_GIB",
    "VISIBLE_FACTOR",
    "SpecError",
    "capture_sizes_for",
    "docker_container_args",
    "endpoint",
    "render",
    "residency_probe",
    "settings_from_role_vars",
    "uses_ring",
]

CONTAINER_PORT = 8000
MODELS_DIR = "/models"
ALL_REDUCE = "vllm::all_reduce"
# Where the residency filter's folder (residency_filter_dir on the host) appears in the container.
FILTER_TARGET = "/opt/arcops/l0-residency"


class SpecError(ValueError):
    """The settings cannot make a safe container spec; the message lists every problem, one a line."""

    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


def _json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


def _argv(s: dict, sizes: list[int] | None) -> list[str]:
    """vLLM's arguments in the measured run's order; a null or false setting leaves its flag out.
    Each flag is the one the settings table names."""
    argv = [f"{MODELS_DIR}/{s['model']}"]

    def opt(key: str) -> None:
        flag, value = BY_NAME[key].flag, s[key]
        if isinstance(value, bool):
            argv.extend([flag] if value else [])
        elif value is not None:
            argv.extend([flag, str(value)])

    if s["quantization"] is not None:
        argv.append(f"{BY_NAME['quantization'].flag}={s['quantization']}")  # the report writes it with '='
    for key in ("tensor_parallel_size", "max_model_len", "kv_cache_dtype", "max_num_batched_tokens"):
        opt(key)
    for key in ("block_size", "trust_remote_code", "max_num_seqs", "enable_prefix_caching"):
        opt(key)
    if s["num_speculative_tokens"] > 0:
        # The drafter is always eager: the measured run kept it out of the graphs.
        spec = {
            "method": s["speculative_method"],
            "num_speculative_tokens": s["num_speculative_tokens"],
            "enforce_eager": True,
        }
        argv.extend(["--speculative-config", _json(spec)])
    for key in ("mamba_ssm_cache_dtype", "gpu_memory_utilization", "dtype"):
        opt(key)
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
    for key in ("enable_auto_tool_choice", "tool_call_parser", "reasoning_parser", "served_model_name"):
        opt(key)
    return argv + list(s["extra_args"])


def filter_active(s: dict) -> bool:
    """The filter runs with two or more GPUs: with one there is no peer to make memory resident on."""
    return bool(s["residency_filter"]) and s["tensor_parallel_size"] >= 2


def _env(s: dict, p2p: bool) -> dict[str, str]:
    env = {
        BY_NAME["multiproc_method"].env: s["multiproc_method"],
        BY_NAME["p2p"].env: "1" if p2p else "0",
    }
    if s["allow_long_max_model_len"]:
        env[BY_NAME["allow_long_max_model_len"].env] = "1"
    if s["profile"] == "graph_mtp":
        env["VLLM_XPU_ENABLE_XPU_GRAPH"] = "1"
    if s["ccl_simple_threshold"] is not None:
        env.update(dict.fromkeys(CCL_THRESHOLDS, str(s["ccl_simple_threshold"])))
    if filter_active(s):
        env[residency_shim.AUDIT_VAR] = posixpath.join(FILTER_TARGET, residency_shim.LIBRARY)
    # extra_env is not here: its values may be secrets, so they reach the container from the
    # root-only env file with the key (env_file), never through the spec, a task result or argv.
    return dict(sorted(env.items()))


def render(
    settings: dict,
    host_mem_total_gib: float | None,
    render_nodes: list[str] | None = None,
    p2p_pairs: list[dict] | None = None,
    box_gpus: list[dict] | None = None,
) -> dict:
    """The container spec for these settings, or SpecError listing every problem.

    host_mem_total_gib is the host's MemTotal in GiB (None: skip the RAM check); render_nodes
    the render nodes of the box's Arc GPUs (exposure.box_render_nodes), which empty devices
    stand for (None: not known here, so devices must be given); p2p_pairs what Linux allows
    between them (peer_access.pairs_by_node; None: not known here, so p2p auto is on); box_gpus
    the box's Arc GPUs by address and model (exposure.box_arc_gpus; None: not known here), which
    gpus names and empty devices must not mix.
    """
    problems: list[str] = []
    s, bad = spec_checks.typed(settings, problems)
    mem = host_mem_total_gib
    if mem is not None and not (is_int(mem) or (isinstance(mem, float) and math.isfinite(mem))):
        problems.append(f"host_mem_total_gib must be a finite number of GiB or None, not {mem!r}")
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
        spec_checks.check_image(s["image"], problems)
    host_ip = spec_checks.check_service(s, bad, problems)
    spec_checks.check_engine(s, problems)
    sizes = spec_checks.check_profile(s, problems)
    spec_checks.check_extras(s, problems)
    spec_checks.check_ram(s["profile"], mem, s["allow_low_ram"], problems)
    devices = list(s["devices"])
    tp_ok = "tensor_parallel_size" not in bad
    if "gpus" in bad:
        pass  # said already; no choice is made from a wrong one
    elif devices and s["gpus"]:
        problems.append("devices and gpus both choose the container's GPUs: give one of them")
    elif s["gpus"] and tp_ok:
        devices, problem = exposure.devices_by_address(s["gpus"], box_gpus, s["tensor_parallel_size"])
        problems += [problem] if problem else []
    elif not devices and tp_ok:
        devices, problem = exposure.devices_for(render_nodes, s["tensor_parallel_size"])
        problem = problem or exposure.mixed_models_problem(box_gpus, s["tensor_parallel_size"])
        problems += [problem] if problem else []
    elif "devices" not in bad and tp_ok:
        problems += exposure.devices_problem(devices, s["tensor_parallel_size"])
    p2p, problem = peer_access.decide(s["p2p"], devices, p2p_pairs, s["tensor_parallel_size"])
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
        "env": _env(s, p2p["enabled"]),
        # Whether the cards talk peer-to-peer, and why (the setting against the box's topology).
        "p2p": p2p,
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
