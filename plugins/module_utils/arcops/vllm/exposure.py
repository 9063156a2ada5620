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


def box_arc_gpus(gpus: list[dict]) -> list[dict]:
    """The box's Arc GPUs on xe with a render node, in PCI address order: {address, model,
    render} (from arcops box facts' gpus; an iGPU or an unbound card is not one)."""
    found = [g for g in gpus if g.get("model") and g.get("driver") == "xe" and g.get("render")]
    return [
        {"address": str(g["address"]), "model": str(g["model"]), "render": str(g["render"])}
        for g in sorted(found, key=lambda g: str(g.get("address")))
    ]


def box_render_nodes(gpus: list[dict]) -> list[str]:
    """The render nodes of the box's Arc GPUs on xe, in PCI address order (arcops box facts' gpus)."""
    return [g["render"] for g in box_arc_gpus(gpus)]


def _listed(arc_gpus: list[dict]) -> str:
    return ", ".join(f"{g['address']} ({g['model']})" for g in arc_gpus) or "none"


def devices_by_address(
    addresses: list[str], arc_gpus: list[dict] | None, count: int
) -> tuple[list[str], str | None]:
    """The render nodes of the GPUs named by PCI address, in their order, for COUNT-way tensor
    parallelism; a problem when one is not an Arc GPU on xe here, or there are too few."""
    if arc_gpus is None:
        return [], "gpus names GPUs by PCI address, and this box's GPUs are not known here: run it on the box"
    by_address = {g["address"]: g for g in arc_gpus}
    unknown = [a for a in addresses if a not in by_address]
    if unknown:
        return [], (
            f"gpus: {', '.join(unknown)} is no Arc GPU on xe on this box (its Arc GPUs: {_listed(arc_gpus)})"
        )
    if len(set(addresses)) != len(addresses):
        return [], f"gpus: {', '.join(addresses)} names a GPU twice"
    if len(addresses) < count:
        return [], f"tensor_parallel_size {count} needs {count} GPUs; gpus names {len(addresses)}"
    return [f"{by_address[a]['render']}:{by_address[a]['render']}" for a in addresses], None


def mixed_models_problem(arc_gpus: list[dict] | None, count: int) -> str | None:
    """The refusal when the first COUNT Arc GPUs (what empty devices and gpus stand for) are not
    all one model: tensor parallelism splits the model evenly, and a B60 beside a B70 runs at the
    smaller card's memory and speed, or not at all."""
    first = (arc_gpus or [])[:count]
    models = sorted({g["model"] for g in first})
    if len(models) < 2:
        return None
    return (
        f"the first {count} Arc GPUs are not one model ({_listed(first)}): name the cards vLLM uses "
        f"in gpus, by PCI address (this box's Arc GPUs: {_listed(arc_gpus or [])})"
    )
