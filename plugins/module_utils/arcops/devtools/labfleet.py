"""The lab at other sizes: an inventory of N simulated boxes made from the lab's own.

``scripts/bench noop --boxes 2,4,8`` measures the no-op run against fleets of several sizes. The
boxes past the lab's own are made like its last one: the next name (arc-lab-3), the next address
on the lab's network and the next vLLM port, in the same group (the fleet wave). Smaller sizes
keep the lab's first boxes. The inventory's group_vars are the lab's own (a link), so every
setting stays in one place.
"""

from __future__ import annotations

import copy
import ipaddress
import re
from pathlib import Path

import yaml

# The per-box variables that must differ from box to box, and how the next box gets its own.
PER_BOX = {
    "ansible_host": lambda value, step: str(ipaddress.ip_address(value) + step),
    "vllm_service_port": lambda value, step: int(value) + step,
}


class LabFleetError(ValueError):
    """The lab's inventory cannot be grown (an unexpected shape, a name without a number)."""


def _hosts(tree: dict, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], str]]:
    """Every (group path, host name) of an inventory tree, in file order."""
    out = []
    for name, host_vars in (tree.get("hosts") or {}).items():
        if host_vars is not None and not isinstance(host_vars, dict):
            raise LabFleetError(f"host {name!r}: its variables are not a mapping")
        out.append((path, name))
    for group, sub in (tree.get("children") or {}).items():
        if not isinstance(sub, dict):
            raise LabFleetError(f"group {group!r} is not a mapping")
        out.extend(_hosts(sub, (*path, "children", group)))
    return out


def _group(tree: dict, path: tuple[str, ...]) -> dict:
    for key in path:
        tree = tree[key]
    return tree


def grow(inventory: dict, boxes: int) -> dict:
    """INVENTORY (the lab's hosts.yml, parsed) with exactly BOXES hosts."""
    root = inventory.get("all") if isinstance(inventory, dict) else None
    if not isinstance(root, dict):
        raise LabFleetError("the lab's inventory has no 'all' group")
    out = copy.deepcopy(inventory)
    hosts = _hosts(out["all"], ("all",))
    if not hosts:
        raise LabFleetError("the lab's inventory lists no host")
    for path, name in hosts[boxes:]:
        del _group(out, path)["hosts"][name]
    path, last = hosts[min(boxes, len(hosts)) - 1]
    match = re.fullmatch(r"(.*?)(\d+)", last)
    if match is None:
        raise LabFleetError(f"host {last!r}: no number at the end of its name to count on from")
    group = _group(out, path)["hosts"]
    template = group[last] or {}
    names = {name for _path, name in hosts}
    for step in range(1, boxes - len(hosts) + 1):
        name = f"{match[1]}{int(match[2]) + step}"
        if name in names:
            raise LabFleetError(f"host {name!r}: the next box's name is taken in the lab's inventory")
        box = dict(template)
        for key, following in PER_BOX.items():
            if key in template:
                box[key] = following(template[key], step)
        group[name] = box
    return out


def write_inventory(lab: Path, boxes: int, folder: Path) -> Path:
    """FOLDER/hosts.yml with BOXES lab boxes, beside a link to the lab's group_vars; FOLDER."""
    tree = yaml.safe_load((lab / "hosts.yml").read_text())
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "hosts.yml").write_text(
        f"# {boxes} lab boxes, made by scripts/bench noop from {lab}/hosts.yml: do not edit.\n"
        + yaml.safe_dump(grow(tree, boxes), sort_keys=False)
    )
    link = folder / "group_vars"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to((lab / "group_vars").resolve(), target_is_directory=True)
    return folder


def added(lab: Path, boxes: int) -> list[str]:
    """The names of the boxes a fleet of BOXES has beyond the lab's own."""
    tree = yaml.safe_load((lab / "hosts.yml").read_text())
    own = {name for _path, name in _hosts(tree.get("all") or {})}
    return [name for _path, name in _hosts(grow(tree, boxes)["all"]) if name not in own]
