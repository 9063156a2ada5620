"""What a vLLM container may reach and who may reach it: the render nodes it is given, the
routes its API key does not guard, and the secrets that must stay out of its argv.
Stdlib only: shipped as module_utils with vllm_spec.

vLLM checks --api-key / VLLM_API_KEY on /v1/* only. Its other routes answer anybody who can
reach the port; on PyPI's vLLM CPU build 0.32 that is /invocations (a completion, the same
engine), /tokenize, /detokenize, /generative_scoring, /scale_elastic_ep, /metrics, /load,
/ping, /version and /health (tests/test_exposure.py asks a real server for every route in its
OpenAPI document). So a key does not close a port on the network: off loopback the spec is
refused unless the operator says, with allow_open_routes, that those routes may be open (or
puts a proxy that checks the key on every route in front, and keeps vLLM on loopback).
"""

from __future__ import annotations

from ..common.secrets import secret_flag
from . import shapes

# Routes vLLM serves without the key (the real server's behaviour, checked by the tests); the
# first one generates text.
OPEN_ROUTES = ("/invocations", "/tokenize", "/detokenize", "/scale_elastic_ep", "/metrics")
GUARDED_PREFIX = "/v1/"
# Render nodes for checking settings against no box in particular (a stack release).
PLANNING_NODES = [f"/dev/dri/renderD{128 + n}" for n in range(16)]


def open_routes_problem(host_ip: str, allowed: bool) -> str | None:
    """The refusal for a non-loopback bind whose open routes were not allowed, or None."""
    if allowed:
        return None
    return (
        f"listen_address {host_ip} is not loopback: vLLM checks api_key on {GUARDED_PREFIX}* only, and "
        f"{', '.join(OPEN_ROUTES)} (the first one generates) answer anybody on the network. Listen on "
        "127.0.0.1 behind a proxy that checks the key on every route, or set allow_open_routes: true "
        "to say those routes may be open"
    )


def secret_args_problems(args: list[str], where: str) -> list[str]:
    """Arguments that would put a secret in argv (readable by every user of the box through
    /proc and docker inspect): refused by flag, never by value."""
    return [
        f"{where} sets {arg.split('=', 1)[0]}, which carries a secret: argv is readable by every user "
        "of the box; pass it in extra_env (vLLM's container reads it from a root-only env file)"
        for arg in args
        if secret_flag(arg)
    ]


def devices_for(render_nodes: list[str] | None, count: int) -> tuple[list[str], str | None]:
    """The container's devices when none are given: the render nodes of the first COUNT GPUs
    (and no card nodes, no whole /dev/dri). A problem when the box's GPUs are unknown or fewer."""
    if render_nodes is None:
        return [], (
            "devices is empty (the render nodes of the GPUs vLLM uses) and this box's GPUs are not "
            "known here: give devices, e.g. [/dev/dri/renderD128, /dev/dri/renderD129]"
        )
    if len(render_nodes) < count:
        return [], (
            f"tensor_parallel_size {count} needs {count} Arc GPUs' render nodes; this box has "
            f"{len(render_nodes)} ({', '.join(render_nodes) or 'none'})"
        )
    return [f"{node}:{node}" for node in render_nodes[:count]], None


def devices_problem(devices: list[str], count: int) -> list[str]:
    """Given devices that name render nodes one by one must give at least COUNT of them."""
    given = shapes.render_nodes_given(devices)
    if given is None or given >= count:
        return []
    return [
        f"tensor_parallel_size {count} needs {count} GPUs' render nodes; devices give {given}: "
        f"add their /dev/dri/renderD* nodes or lower tensor_parallel_size"
    ]


def box_render_nodes(gpus: list[dict]) -> list[str]:
    """The render nodes of the box's Arc GPUs on xe, in PCI address order (arcops box facts' gpus)."""
    found = [g for g in gpus if g.get("model") and g.get("driver") == "xe" and g.get("render")]
    return [str(g["render"]) for g in sorted(found, key=lambda g: str(g.get("address")))]
