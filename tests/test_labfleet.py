"""Lab inventories of other sizes (scripts/bench noop --boxes): made from the lab's own hosts.yml,
every setting from its group_vars, each added box with its own name, address and vLLM port."""

from __future__ import annotations

import pytest
import yaml
from arcops.devtools import labfleet
from arcops.devtools.labfleet import LabFleetError, grow
from hypothesis import given
from hypothesis import strategies as st

from .conftest import REPO
from .helpers.fuzz import FUZZ

LAB = REPO / "inventories" / "lab"


def _boxes(tree: dict) -> dict[str, dict]:
    """Every host of an inventory tree with its variables."""
    out = dict(tree.get("hosts") or {})
    for sub in (tree.get("children") or {}).values():
        out.update(_boxes(sub))
    return out


def lab() -> dict:
    return yaml.safe_load((LAB / "hosts.yml").read_text())


def test_more_boxes_are_made_like_the_labs_last_one_in_its_wave():
    tree = grow(lab(), 4)
    waves = tree["all"]["children"]["arc_servers"]["children"]
    assert list(waves["canary"]["hosts"]) == ["arc-lab-1"]
    assert list(waves["fleet"]["hosts"]) == ["arc-lab-2", "arc-lab-3", "arc-lab-4"]
    fourth = waves["fleet"]["hosts"]["arc-lab-4"]
    assert fourth == {"ansible_host": "10.89.250.14", "vllm_service_port": 18104}
    assert grow(lab(), 2) == lab()  # the lab itself, unchanged
    assert list(_boxes(grow(lab(), 1)["all"])) == ["arc-lab-1"]


@FUZZ
@given(st.integers(1, 30))
def test_every_size_has_that_many_boxes_each_with_its_own_address_and_port(boxes):
    hosts = _boxes(grow(lab(), boxes)["all"])
    assert len(hosts) == boxes
    assert len({h["ansible_host"] for h in hosts.values()}) == boxes
    assert len({h["vllm_service_port"] for h in hosts.values()}) == boxes


def test_the_inventory_takes_its_settings_from_the_labs_group_vars(tmp_path):
    folder = labfleet.write_inventory(LAB, 3, tmp_path / "boxes-3")
    assert (folder / "group_vars").resolve() == (LAB / "group_vars").resolve()
    assert len(_boxes(yaml.safe_load((folder / "hosts.yml").read_text())["all"])) == 3
    labfleet.write_inventory(LAB, 5, folder)  # again, over the first: the link is replaced
    assert len(_boxes(yaml.safe_load((folder / "hosts.yml").read_text())["all"])) == 5


@pytest.mark.parametrize(
    ("inventory", "message"),
    [
        ({}, "no 'all' group"),
        ({"all": {"hosts": {}}}, "lists no host"),
        ({"all": {"hosts": {"box": {}}}}, "no number at the end of its name"),
        ({"all": {"hosts": {"b1": {}}, "children": {"x": {"hosts": {"b0": {}}}}}}, "'b1'.*taken"),
        ({"all": {"hosts": {"b1": ["x"]}}}, "'b1': its variables are not a mapping"),
        ({"all": {"children": {"x": "y"}}}, "group 'x' is not a mapping"),
    ],
)
def test_an_inventory_that_cannot_grow_is_refused(inventory, message):
    with pytest.raises(LabFleetError, match=message):
        grow(inventory, 3)


def test_the_boxes_added_are_the_ones_past_the_labs_own():
    assert labfleet.added(LAB, 5) == ["arc-lab-3", "arc-lab-4", "arc-lab-5"]
    assert labfleet.added(LAB, 2) == labfleet.added(LAB, 1) == []
