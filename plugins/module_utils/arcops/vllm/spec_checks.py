"""The guardrails of the vllm_service container spec: each setting's type, range and shape from the
settings table, then the rules between settings that hung, stalled or soft-locked a dual-B60 host
(docs/field-knowledge.md). Each check appends one-line problems; vllm_spec.render raises them all.

Messages name settings, flags and environment variable names, never a value that may be secret
(the API key, extra_env's values, extra_args).
Stdlib only: shipped as module_utils.
"""

from __future__ import annotations

import ipaddress
import re

from ..box import ram_rule
from ..common.settings_table import clean_text
from . import exposure, residency_shim, shapes
from .settings import BY_NAME, SETTINGS, TABLE

PROFILES = BY_NAME["profile"].choices
# Installed RAM (GiB) per profile and the share of it MemTotal shows: preflight's rule too.
RAM_REQUIRED_GIB = ram_rule.REQUIRED_GIB
VISIBLE_FACTOR = ram_rule.VISIBLE_FACTOR
CAPTURE_MULTIPLES = (1, 2, 4, 8)  # capture sizes are (k+1) x these for MTP with k tokens
CUDAGRAPH_MODES = ("NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE")
CCL_THRESHOLDS = (
    "CCL_SYCL_ALLREDUCE_SIMPLE_THRESHOLD",
    "CCL_SYCL_ALLGATHERV_SIMPLE_THRESHOLD",
    "CCL_SYCL_REDUCE_SCATTER_SIMPLE_THRESHOLD",
)
_KEY_HINT = "api_key (the role writes the key to api_key_env_file, out of the spec and argv)"
# Environment the spec sets (or deliberately leaves out), and the setting that controls each.
MANAGED_ENV = {
    **{s.env: s.name for s in SETTINGS if s.env},
    "VLLM_XPU_ENABLE_XPU_GRAPH": "profile",
    **dict.fromkeys(CCL_THRESHOLDS, "ccl_simple_threshold"),
    residency_shim.AUDIT_VAR: "residency_filter",
    residency_shim.PASS_ALL_VAR: "residency_filter",
    "VLLM_API_KEY": _KEY_HINT,
}
# vLLM flags the spec renders from settings; extra_args may not repeat them.
MANAGED_FLAGS = {
    **{s.flag: s.name for s in SETTINGS if s.flag},
    "--enforce-eager": "profile",
    "--compilation-config": "profile",
    "-O": "profile",
    "--speculative-config": "speculative_method and num_speculative_tokens",
    "--api-key": _KEY_HINT,
    "--tensor-parallel-size": "tensor_parallel_size",
    "--host": "listen_address",
    "--port": "port",
    "--model": "model",
}
_IPC = ("host", "private", "shareable", "none")
_TAG_RE = re.compile(r"\w[\w.-]{0,127}")
_SHM_RE = re.compile(r"[1-9][0-9]{0,15}(?:b|[kmgt]b?)?", re.IGNORECASE)
_ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def capture_sizes_for(k: int) -> list[int]:
    """Each MTP decode step runs k+1 tokens per sequence, so graphs sized (k+1) x {1,2,4,8} fit exactly."""
    return [(k + 1) * m for m in CAPTURE_MULTIPLES]


def typed(settings: object, problems: list[str]) -> tuple[dict, set[str]]:
    """Settings merged over the defaults, and the names of those of the wrong type or shape
    (reported, then defaulted so the later checks still run): the table's own checks."""
    return TABLE.typed(settings, problems)


def check_image(image: str, problems: list[str]) -> None:
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


def check_service(s: dict, bad: set[str], problems: list[str]) -> str:
    """Container and network settings; returns the host IP to publish on."""
    ipc = s["ipc"]
    if ipc not in _IPC and not (
        ipc.startswith("container:") and not shapes.CONTAINER_NAME.problem(ipc[len("container:") :])
    ):
        problems.append(
            f"ipc '{ipc}' is not a docker IPC mode: use host (as measured, docs/field-knowledge.md)"
        )
    if not _SHM_RE.fullmatch(s["shm_size"]):
        problems.append(
            f"shm_size '{s['shm_size']}' is not a docker size: a positive number with an optional unit "
            "b, k, m, g or t, e.g. 32g"
        )
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


def check_engine(s: dict, problems: list[str]) -> None:
    if s["enable_auto_tool_choice"] and s["tool_call_parser"] is None:
        problems.append(
            "enable_auto_tool_choice needs a tool_call_parser (vLLM refuses to start without one): "
            "set tool_call_parser, e.g. qwen3_coder, or enable_auto_tool_choice false"
        )


def check_profile(s: dict, problems: list[str]) -> list[int] | None:
    """Profile guardrails; returns the graph capture sizes for graph_mtp."""
    profile, k, sizes = s["profile"], s["num_speculative_tokens"], s["capture_sizes"]
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
    right = capture_sizes_for(k)
    if sizes is None:
        return right
    if not sizes or any(n < 1 or n > 4096 for n in sizes):
        problems.append(f"capture_sizes must be a non-empty list of integers from 1 to 4096: use {right}")
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


def _flag(arg: str) -> str | None:
    """The flag an extra argument sets, in vLLM's spelling (--x_y == --x-y, --x.sub == --x)."""
    if arg.startswith("--"):
        return arg.split("=", 1)[0].split(".", 1)[0].replace("_", "-")
    if arg.startswith("-O"):
        return "-O"
    if arg.startswith("-") and len(arg) > 1:
        return arg.split("=", 1)[0]
    return None


def check_extras(s: dict, problems: list[str]) -> None:
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
        elif not clean_text(value):
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


def check_ram(profile: str, mem: float | None, allow_low: bool, problems: list[str]) -> None:
    short = None if mem is None or allow_low else ram_rule.short_of(profile, mem)
    if short:
        problems.append(
            f"host RAM: {short}: add RAM, use profile eager, or set allow_low_ram to accept the risk"
        )
