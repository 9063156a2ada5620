"""Which GPUs the vLLM container gets on a box with more than one kind (vllm_service_gpus and the
auto choice, vllm/exposure.py), on the simulated host trees' facts as the module reads them: an
iGPU beside two B60s, and a B60 beside two B70s. The container gets exactly the render nodes of
the cards named by PCI address, in their order; auto never mixes models."""

from __future__ import annotations

from pathlib import Path

import pytest
from arcops.box import facts
from arcops.common.sysroot import SysRoot
from arcops.vllm import exposure, peer_access
from arcops.vllm.vllm_spec import SpecError, render

from .helpers.vllm_settings import BASE

HOSTS = Path(__file__).parent / "fixtures" / "hosts"


def box(name: str) -> tuple[list[str], list[dict], list[dict]]:
    """What peer_access.this_box reads on a box, read from a fixture host."""
    found = facts.collect(SysRoot(HOSTS / name), read_journal=False)
    arc = exposure.box_arc_gpus(found["gpus"])
    return exposure.box_render_nodes(found["gpus"]), peer_access.pairs_by_node(found), arc


def _render(host: str, **settings):
    nodes, pairs, arc = box(host)
    return render(BASE | settings, 128, nodes, pairs, arc)


def test_the_igpu_is_never_one_of_vllm_s_gpus():
    _, _, arc = box("mixed-igpu-display")
    assert [g["address"] for g in arc] == ["0000:29:00.0", "0000:2d:00.0"]
    # The iGPU (i915, renderD128) is left out of auto and cannot be named.
    assert _render("mixed-igpu-display")["devices"] == [
        "/dev/dri/renderD129:/dev/dri/renderD129",
        "/dev/dri/renderD130:/dev/dri/renderD130",
    ]
    with pytest.raises(
        SpecError, match=r"gpus: 0000:00:02.0 is no Arc GPU on xe on this box \(its Arc GPUs: "
    ):
        _render("mixed-igpu-display", gpus=["0000:00:02.0", "0000:29:00.0"])


def test_auto_refuses_a_b60_beside_a_b70_and_says_which_cards_there_are():
    with pytest.raises(SpecError) as e:
        _render("b60-beside-b70s")
    assert e.value.problems == [
        "the first 2 Arc GPUs are not one model (0000:03:00.0 (Arc Pro B60), 0000:07:00.0 (Arc Pro B70 "
        "(BMG-G31))): name the cards vLLM uses in gpus, by PCI address (this box's Arc GPUs: "
        "0000:03:00.0 (Arc Pro B60), 0000:07:00.0 (Arc Pro B70 (BMG-G31)), 0000:0b:00.0 (Arc Pro B70 "
        "(BMG-G31)))"
    ]
    # One card needs no pairing: the B60 alone is fine.
    assert _render("b60-beside-b70s", tensor_parallel_size=1)["devices"] == [
        "/dev/dri/renderD128:/dev/dri/renderD128"
    ]


def test_the_cards_named_by_address_are_exactly_the_container_s_in_their_order():
    spec = _render("b60-beside-b70s", gpus=["0000:0b:00.0", "0000:07:00.0"])
    assert spec["devices"] == [
        "/dev/dri/renderD130:/dev/dri/renderD130",
        "/dev/dri/renderD129:/dev/dri/renderD129",
    ]
    # P2P is judged on the pair it uses (two root ports of an AMD Zen host: allowed).
    assert spec["p2p"]["enabled"] is True and spec["p2p"]["refused"] == []


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        ({"gpus": ["0000:07:00.0"]}, "tensor_parallel_size 2 needs 2 GPUs; gpus names 1"),
        ({"gpus": ["0000:07:00.0", "0000:07:00.0"]}, "gpus: 0000:07:00.0, 0000:07:00.0 names a GPU twice"),
        (
            {"gpus": ["0000:07:00.0", "0000:0b:00.0"], "devices": ["/dev/dri/renderD129"]},
            "devices and gpus both choose the container's GPUs: give one of them",
        ),
        ({"gpus": ["7:00.0"]}, "gpus entry '7:00.0' is not a PCI address as sysfs writes it"),
        ({"gpus": "0000:07:00.0"}, "gpus must be a list"),
    ],
)
def test_bad_choices_are_refused_by_name(settings, problem):
    with pytest.raises(SpecError) as e:
        _render("b60-beside-b70s", **settings)
    assert len(e.value.problems) == 1 and e.value.problems[0].startswith(problem), e.value.problems


def test_addresses_need_the_box():
    nodes = ["/dev/dri/renderD128", "/dev/dri/renderD129"]
    with pytest.raises(
        SpecError, match="gpus names GPUs by PCI address, and this box's GPUs are not known here"
    ):
        render(BASE | {"gpus": ["0000:07:00.0", "0000:0b:00.0"]}, 128, nodes, None, None)
