"""Peer-to-peer between the GPUs a vLLM container uses: the p2p setting (true, false, or null for
auto) against what Linux allows between them (the facts' p2p, arcops/box/p2p.py).

Auto turns P2P on where the kernel allows it between every pair of the GPUs used, and where this
box's topology is not known here (the measured default, docs/field-knowledge.md); it turns it off,
with a warning, where the kernel refuses a pair: all-reduce is then staged through host RAM, which
costs host RAM. True across a refused pair is refused: a runtime forced to P2P there moved data
wrongly without an error (compute-runtime #935).

Stdlib only: shipped as module_utils with vllm_spec.
"""

from __future__ import annotations

import re

from ..common.sysroot import SysRoot
from .exposure import box_arc_gpus, box_render_nodes

_RENDER_NODE = re.compile(r"/dev/dri/renderD[0-9]{1,4}")


def pairs_by_node(facts: dict) -> list[dict]:
    """The facts' p2p pairs named by render node as well:
    [{nodes: [render, render], addresses: [pci, pci], allowed, why}] (pairs without nodes left out)."""
    render = {g.get("address"): g.get("render") for g in facts.get("gpus") or [] if isinstance(g, dict)}
    out = []
    for pair in (facts.get("p2p") or {}).get("pairs") or []:
        if not isinstance(pair, dict) or not isinstance(pair.get("allowed"), bool):
            continue
        a, b = render.get(pair.get("a")), render.get(pair.get("b"))
        if a and b:
            out.append(
                {
                    "nodes": [a, b],
                    "addresses": [pair["a"], pair["b"]],
                    "allowed": pair["allowed"],
                    "why": str(pair.get("why") or ""),
                }
            )
    return out


def this_box(devices_given: bool) -> tuple[list[str] | None, list[dict], list[dict]]:
    """On the box this runs on: the render nodes that empty devices stand for (None when devices
    are given), what Linux allows between its GPUs (pairs_by_node) and its Arc GPUs
    (exposure.box_arc_gpus: what gpus names by address)."""
    from ..box import facts  # here, not at import: vllm_spec (which imports this) starts without it

    box = facts.collect(SysRoot("/"), read_journal=False)
    nodes = None if devices_given else box_render_nodes(box["gpus"])
    return nodes, pairs_by_node(box), box_arc_gpus(box["gpus"])


def used_nodes(devices: list[str]) -> set[str]:
    """The host render nodes the container's devices name one by one (host[:container[:perms]])."""
    return {d.split(":", 1)[0] for d in devices if _RENDER_NODE.fullmatch(d.split(":", 1)[0])}


def decide(
    setting: bool | None, devices: list[str], pairs: list[dict] | None, gpus: int
) -> tuple[dict, str | None]:
    """({setting, enabled, refused, warning}, the refusal or None) for SETTING, the container's
    DEVICES, the box's PAIRS (pairs_by_node; None: not known here) and its tensor-parallel GPUS."""
    used = used_nodes(devices)
    refused = [p for p in pairs or [] if gpus >= 2 and not p["allowed"] and set(p["nodes"]) <= used]
    said = "; ".join(
        f"{p['nodes'][0]} ({p['addresses'][0]}) and {p['nodes'][1]} ({p['addresses'][1]}): {p['why']}"
        for p in refused
    )
    word = {None: "auto", True: "on", False: "off"}[setting]
    out = {
        "setting": word,
        "enabled": setting is not False and not refused,
        "refused": refused,
        "warning": None,
    }
    if refused and setting is True:
        return out, (
            f"p2p is true, but Linux refuses peer-to-peer DMA between {said}. Forced P2P there moved data "
            "wrongly without an error (compute-runtime #935): leave p2p null (auto: off on this box) or set "
            "it false (all-reduce staged through host RAM, which costs host RAM)"
        )
    if refused and setting is None:
        out["warning"] = (
            f"p2p (auto) is off: Linux refuses peer-to-peer DMA between {said}. All-reduce is staged "
            "through host RAM instead, which costs host RAM (the field report's box grew it steadily): "
            "keep headroom, or put the cards below one PCIe switch"
        )
    return out, None
