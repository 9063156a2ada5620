"""vllm_service's p2p setting against what Linux allows between the GPUs it uses
(vllm/peer_access.py), on the simulated host trees' facts: auto follows the kernel, true across a
refused pair is refused, and the decision is in the spec."""

from __future__ import annotations

from pathlib import Path

import pytest
from arcops.box import facts
from arcops.common.sysroot import SysRoot
from arcops.vllm import exposure, peer_access
from arcops.vllm.vllm_spec import SpecError, render

from .helpers.vllm_settings import BASE

HOSTS = Path(__file__).parent / "fixtures" / "hosts"


def box(name: str) -> tuple[list[str], list[dict]]:
    """The render nodes and P2P pairs of a fixture host, as the module reads them on a box."""
    found = facts.collect(SysRoot(HOSTS / name), read_journal=False)
    return exposure.box_render_nodes(found["gpus"]), peer_access.pairs_by_node(found)


def test_auto_is_off_with_a_warning_where_linux_refuses_the_pair():
    nodes, pairs = box("dual-b70-intel-host")
    assert pairs[0]["nodes"] == nodes and pairs[0]["allowed"] is False
    spec = render(BASE, 128, nodes, pairs)
    assert spec["env"]["CCL_TOPO_P2P_ACCESS"] == "0"
    assert spec["p2p"]["setting"] == "auto" and spec["p2p"]["enabled"] is False
    assert spec["p2p"]["refused"][0]["addresses"] == ["0000:03:00.0", "0000:07:00.0"]
    warning = spec["p2p"]["warning"]
    assert "Linux refuses peer-to-peer DMA between /dev/dri/renderD128 (0000:03:00.0)" in warning
    assert "host RAM" in warning


def test_true_across_a_refused_pair_is_refused_with_the_kernels_reason():
    nodes, pairs = box("dual-b70-intel-host")
    with pytest.raises(SpecError) as e:
        render(BASE | {"p2p": True}, 128, nodes, pairs)
    (problem,) = e.value.problems
    assert problem.startswith("p2p is true, but Linux refuses peer-to-peer DMA between /dev/dri/renderD128")
    assert "8086:ae7f" in problem and "compute-runtime #935" in problem
    off = render(BASE | {"p2p": False}, 128, nodes, pairs)
    assert off["env"]["CCL_TOPO_P2P_ACCESS"] == "0" and off["p2p"]["warning"] is None


@pytest.mark.parametrize("host", ["dual-b60", "quad-b60-switch"])
def test_auto_is_on_where_linux_allows_every_pair(host):
    nodes, pairs = box(host)
    spec = render(BASE, 256, nodes, pairs)
    assert spec["env"]["CCL_TOPO_P2P_ACCESS"] == "1"
    assert spec["p2p"] == {"setting": "auto", "enabled": True, "refused": [], "warning": None}


def test_only_the_pairs_the_container_uses_count():
    nodes, pairs = box("dual-b70-intel-host")
    refused = {**pairs[0]}
    # One GPU (tensor parallel 1), or devices that do not name the refused pair's nodes: nothing
    # crosses that pair.
    one = render(
        BASE | {"tensor_parallel_size": 1, "devices": [f"{nodes[0]}:{nodes[0]}"]}, 128, nodes, [refused]
    )
    assert one["p2p"]["enabled"] is True
    other = peer_access.decide(None, ["/dev/null:/dev/dri/renderD128"], [refused], 2)
    assert other == ({"setting": "auto", "enabled": True, "refused": [], "warning": None}, None)


def test_unknown_topology_keeps_the_measured_default_and_false_stays_off():
    assert peer_access.decide(None, [], None, 2)[0]["enabled"] is True
    assert peer_access.decide(False, [], None, 2)[0] == {
        "setting": "off",
        "enabled": False,
        "refused": [],
        "warning": None,
    }


def test_pairs_by_node_leaves_out_what_it_cannot_name():
    found = {
        "gpus": [{"address": "a", "render": "/dev/dri/renderD128"}, {"address": "b", "render": None}, "junk"],
        "p2p": {"pairs": [{"a": "a", "b": "b", "allowed": False}, {"a": "a", "b": "a", "allowed": "yes"}, 7]},
    }
    assert peer_access.pairs_by_node(found) == []
    assert peer_access.pairs_by_node({}) == []


def test_a_p2p_of_the_wrong_type_is_named():
    with pytest.raises(SpecError, match=r"p2p must be true or false or null, not str"):
        render(BASE | {"p2p": "yes"}, 64, ["/dev/dri/renderD128", "/dev/dri/renderD129"])
